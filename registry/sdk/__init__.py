"""The server-side SDK: the toolset snapshot and the call gate.

    from registry.sdk import Gate, Toolset
    gate = Gate(Toolset.from_json(body))
    decision = gate.check(name, arguments, meta)

Importing it needs the base install only (no `[server]` extra).
"""

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
