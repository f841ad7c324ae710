"""`registry lint`: named rules over tool definitions, and the repository's
`mcp-registry.yaml` that turns them on, off and ignores them.

    config = find(None)                              # the nearest mcp-registry.yaml
    for manifest, finding in lint_manifests(manifests, config):
        print(manifest.path, finding.rule, finding.pointer, finding.message)

rules.py holds the catalogue (one function per rule, each with an example),
config.py the configuration file. Base install only.
"""

from __future__ import annotations

from collections.abc import Iterable

from registry.lint.config import CONFIG_NAME, Config, ConfigError, find
from registry.lint.rules import (
    CATEGORIES,
    DEFAULT_CATEGORIES,
    RULES,
    Finding,
    Rule,
    lint_definition,
)
from registry.manifests import Manifest

__all__ = [
    "CATEGORIES",
    "CONFIG_NAME",
    "DEFAULT_CATEGORIES",
    "RULES",
    "Config",
    "ConfigError",
    "Finding",
    "Rule",
    "find",
    "lint_definition",
    "lint_manifests",
]


def lint_manifests(manifests: Iterable[Manifest], config: Config) -> list[tuple[Manifest, Finding]]:
    """The findings of the configured rules on each manifest's tool, less those ignored."""
    rules = config.rules()
    return [
        (manifest, finding)
        for manifest in manifests
        for finding in lint_definition(manifest.tool, iter(rules))
        if not config.ignored(finding.rule, manifest.path)
    ]
