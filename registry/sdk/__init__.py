"""The server-side SDK: the toolset snapshot and the call gate.

    from registry.sdk import Gate, Toolset
    gate = Gate(Toolset.from_json(body))
    decision = gate.check(name, arguments, meta)

Importing it needs the base install only (no `[server]` extra).
"""

from registry.sdk.gate import Decision, Declared, Gate, GateError, strict_schema
from registry.sdk.toolset import Toolset, ToolsetError, payload_digest

__all__ = [
    "Decision",
    "Declared",
    "Gate",
    "GateError",
    "Toolset",
    "ToolsetError",
    "payload_digest",
    "strict_schema",
]
