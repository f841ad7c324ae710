"""The wire shape of a change report (docs/contract.md): `ChangeReport` and `Change`."""

from __future__ import annotations

from typing import Any

import msgspec

from registry.compat.kinds import Kind, Severity

__all__ = ["Change", "ChangeReport", "ClassificationError"]


class ClassificationError(ValueError):
    """A definition or schema the engine refuses: not an object, a `$ref` to a
    missing or remote target, nesting past the depth limit, too many nodes.

    `pointer` is the JSON Pointer of the offending place in the definition.
    """

    def __init__(self, message: str, pointer: str = "") -> None:
        self.message = message
        self.pointer = pointer
        super().__init__(f"{message} (at {pointer})" if pointer else message)


class Change(msgspec.Struct, kw_only=True, omit_defaults=False):
    """One change of a report. As JSON, `old` and `new` are the values before and
    after, left out where there is none (a property added has no `old`); `null`
    is a JSON null. In Python, `old_value` / `new_value` are `msgspec.UNSET`
    where there is none, and `old` / `new` read that as None."""

    kind: Kind
    severity: Severity
    path: str
    message: str
    old_value: Any = msgspec.field(default=msgspec.UNSET, name="old")
    new_value: Any = msgspec.field(default=msgspec.UNSET, name="new")
    witness: Any = None
    suggested_op: dict[str, Any] | None = None

    @property
    def old(self) -> Any:
        return None if self.old_value is msgspec.UNSET else self.old_value

    @property
    def new(self) -> Any:
        return None if self.new_value is msgspec.UNSET else self.new_value


class ChangeReport(msgspec.Struct, kw_only=True):
    severity: Severity
    changes: list[Change] = msgspec.field(default_factory=list)

    @property
    def breaking(self) -> list[Change]:
        return [c for c in self.changes if c.severity is Severity.BREAKING]

    def kinds(self) -> set[Kind]:
        return {c.kind for c in self.changes}
