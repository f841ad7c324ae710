"""The compatibility engine: pure functions over MCP tool definitions, no I/O.

    from registry.compat import classify
    report = classify(old_definition, new_definition)
    report.severity            # identical | cosmetic | additive | breaking
    report.changes[0].kind     # e.g. "property-renamed"

Converters: `apply(ops, arguments)` runs a converter on call arguments;
`verify(ops, old, new)` proves a converter repairs every breaking change;
`suggested_converter(ops)` orders a report's suggested operations into one.
`toolset_changes(old_tools, new_tools)` names the tools a new set no longer
holds (`tool-removed`, `tool-renamed`). `Limits` bounds the work of one
classification (docs/contract.md); `LIMITS` are the defaults.
"""

from registry.compat.classify import LIMITS, classify, classify_schemas
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
    suggested_converter,
    verify,
)
from registry.compat.kinds import Kind, Severity, Side
from registry.compat.report import Change, ChangeReport, ClassificationError
from registry.compat.rules_toolset import toolset_changes
from registry.compat.schema import Limits

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
    "Severity",
    "Side",
    "apply",
    "classify",
    "classify_schemas",
    "parse_ops",
    "suggested_converter",
    "toolset_changes",
    "verify",
]
