"""The compatibility engine: pure functions over MCP tool definitions, no I/O.

    from registry.compat import classify
    report = classify(old_definition, new_definition)
    report.severity            # identical | cosmetic | additive | breaking
    report.changes[0].kind     # e.g. "property-renamed"

Converters: `apply(ops, arguments)` runs a converter on call arguments;
`verify(ops, old, new)` proves a converter repairs every breaking change;
`suggested_converter(ops)` orders a report's suggested operations into one;
`repair(report, old, new)` is that converter where `verify` proves it, and the
changes no operation repairs. `toolset_changes(old_tools, new_tools)` names the
tools a new set no longer holds (`tool-removed`, `tool-renamed`). `Limits`
bounds the work of one classification (docs/contract.md); `LIMITS` are the
defaults.

Each name is imported from its module when first asked for (PEP 562): the
gate, which needs `apply`, `Op` and `ConversionRejected` on every call, never
loads the classifier, python-jsonschema or RE2 to start a server.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.compat.classifier import LIMITS, classify, classify_schemas
    from registry.compat.converters import (
        ConversionRejected,
        ConverterError,
        Drop,
        Fill,
        Map,
        Op,
        Reject,
        Rename,
        apply,
        parse_ops,
    )
    from registry.compat.kinds import Kind, Severity, Side
    from registry.compat.repairs import Repair, Unrepairable, repair, suggested_converter, verify
    from registry.compat.report import Change, ChangeReport, ClassificationError
    from registry.compat.rules_toolset import toolset_changes
    from registry.compat.schema import Limits

# name -> the module of this package that holds it
_HOME = {
    "LIMITS": "classifier",
    "classify": "classifier",
    "classify_schemas": "classifier",
    "ConversionRejected": "converters",
    "ConverterError": "converters",
    "Drop": "converters",
    "Fill": "converters",
    "Map": "converters",
    "Op": "converters",
    "Reject": "converters",
    "Rename": "converters",
    "apply": "converters",
    "parse_ops": "converters",
    "Kind": "kinds",
    "Severity": "kinds",
    "Side": "kinds",
    "Repair": "repairs",
    "Unrepairable": "repairs",
    "repair": "repairs",
    "suggested_converter": "repairs",
    "verify": "repairs",
    "Change": "report",
    "ChangeReport": "report",
    "ClassificationError": "report",
    "toolset_changes": "rules_toolset",
    "Limits": "schema",
}

__all__ = [
    "LIMITS",
    "Change",
    "ChangeReport",
    "ClassificationError",
    "ConversionRejected",
    "ConverterError",
    "Drop",
    "Fill",
    "Kind",
    "Limits",
    "Map",
    "Op",
    "Reject",
    "Rename",
    "Repair",
    "Severity",
    "Side",
    "Unrepairable",
    "apply",
    "classify",
    "classify_schemas",
    "parse_ops",
    "repair",
    "suggested_converter",
    "toolset_changes",
    "verify",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once: later reads find it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
