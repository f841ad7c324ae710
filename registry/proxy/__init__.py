"""`registry proxy`: the gate in front of an MCP server nobody here wrote (docs/proxy.md).

* `front`: the toolset's listing and gate as the proxy serves them (the SDK's).
* `pin`: pin mode's comparison of live definitions with served versions (-31005).
* `access`: registry access (boot sync, cache, watcher, usage), as a gated server has it.
* `stdio`: the stdio relay; `http`: the streamable-HTTP relay; `sse`: SSE framing.
* `serve`: options and wiring.

Needs the `[mcp]` extra.
"""

from registry.proxy.access import ProxyError, RegistryAccess
from registry.proxy.pin import TOOL_DEFINITION_UNAPPROVED
from registry.proxy.serve import ProxyOptions, serve_http, serve_stdio

__all__ = [
    "TOOL_DEFINITION_UNAPPROVED",
    "ProxyError",
    "ProxyOptions",
    "RegistryAccess",
    "serve_http",
    "serve_stdio",
]
