"""The server-side SDK: the toolset snapshot and the call gate.

    from registry.sdk import Gate, Toolset
    gate = Gate(Toolset.from_json(body))
    decision = gate.check(name, arguments, meta)

Importing it needs the base install only (no `[server]` extra).

Each name is imported from its module when first asked for (PEP 562), as in
`registry.compat`: importing an adapter (`registry.sdk.mcp_adapter`) loads
the gate, not the sync client's httpx; the gate's first compiled toolset
loads python-jsonschema, jsonschema-rs and RE2, not its import
(tests/sdk/test_lazy_imports.py, bench/startup_bench.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.lazy import lazy_face

if TYPE_CHECKING:
    from registry.sdk.gate import Decision, Declared, Gate, GateError, strict_schema
    from registry.sdk.sync import (
        Backoff,
        CachedToolset,
        SyncError,
        ToolsetWatcher,
        read_cache,
        write_cache,
    )
    from registry.sdk.toolset import Toolset, ToolsetError, payload_digest

# name -> the module of this package that holds it
_HOME = {
    "Backoff": "sync",
    "CachedToolset": "sync",
    "Decision": "gate",
    "Declared": "gate",
    "Gate": "gate",
    "GateError": "gate",
    "SyncError": "sync",
    "Toolset": "toolset",
    "ToolsetError": "toolset",
    "ToolsetWatcher": "sync",
    "payload_digest": "toolset",
    "read_cache": "sync",
    "strict_schema": "gate",
    "write_cache": "sync",
}

__all__ = [
    "Backoff",
    "CachedToolset",
    "Decision",
    "Declared",
    "Gate",
    "GateError",
    "SyncError",
    "Toolset",
    "ToolsetError",
    "ToolsetWatcher",
    "payload_digest",
    "read_cache",
    "strict_schema",
    "write_cache",
]


__getattr__, __dir__ = lazy_face(__name__, _HOME, globals(), __all__)
