"""`mcp-registry.yaml`: a repository's settings for `lint`, `check`, `plan` and `apply`.

```yaml
version: 1
namespace: billing            # the namespace of --from-server and of manifests without one
manifests: [tools]            # folders of manifests, relative to this file
lint:
  use: [correctness, docs]    # categories or rule names (this is the default)
  except: [property-description-missing]
  ignore:                     # findings not reported, by rule and/or path (a glob)
    - {rule: default-invalid, path: tools/legacy/*.yaml}
    - {path: tools/generated/**}
fail_on: [breaking, lint]     # what fails a pipeline, beside breaking changes
```

Looked up as `--config FILE`, else `mcp-registry.yaml` in the current directory
or the nearest parent, stopping at the repository's root (the folder holding
`.git`). Every problem is one `ConfigError` line, `mcp-registry.yaml:4:9:
/lint/use/1: unknown rule or category 'doc' (did you mean 'docs'?)`.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from registry.documents import DocumentError, locate, parse_document, read_source
from registry.lint.rules import CATEGORIES, DEFAULT_CATEGORIES, RULES, Rule

__all__ = ["CONFIG_NAME", "FAIL_ON", "Config", "ConfigError", "Ignore", "LintSettings", "find"]

CONFIG_NAME = "mcp-registry.yaml"
FAIL_ON = ("breaking", "lint", "risk", "semver")


class ConfigError(ValueError):
    """A configuration file that cannot be used: one line naming the file and place."""


class Ignore(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    rule: str | None = None
    path: str | None = None


class LintSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    use: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_CATEGORIES))
    except_: list[str] = msgspec.field(default_factory=list, name="except")
    ignore: list[Ignore] = msgspec.field(default_factory=list)


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A loaded configuration; `root` is the folder of its file (paths are relative to it)."""

    version: int = 1
    namespace: str | None = None
    manifests: list[str] = msgspec.field(default_factory=list)
    lint: LintSettings = msgspec.field(default_factory=LintSettings)
    fail_on: list[str] = msgspec.field(default_factory=lambda: ["breaking"])
    root: str = "."

    def rules(self) -> list[Rule]:
        """The rules `lint.use` turns on, less `lint.except`, in catalogue order."""
        chosen = {
            rule.name
            for name in self.lint.use
            for rule in RULES.values()
            if name in (rule.name, rule.category)
        }
        dropped = set(self.lint.except_)
        return [
            rule
            for rule in RULES.values()
            if rule.name in chosen and rule.name not in dropped and rule.category not in dropped
        ]

    def ignored(self, rule: str, path: str) -> bool:
        """Whether a finding of `rule` in the file at `path` is left out."""
        relative = _relative(path, self.root)
        return any(
            (entry.rule is None or entry.rule == rule)
            and (entry.path is None or fnmatch.fnmatchcase(relative, entry.path))
            for entry in self.lint.ignore
        )

    def manifest_folders(self) -> list[str]:
        return [os.path.join(self.root, folder) for folder in self.manifests]


DEFAULT = Config()


def find(explicit: str | None, start: str | os.PathLike[str] = ".") -> Config:
    """The configuration `explicit` names, else the nearest `mcp-registry.yaml` from
    `start` up to the repository root, else the defaults."""
    if explicit is not None:
        return load(Path(explicit))
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / CONFIG_NAME).is_file():
            return load(candidate / CONFIG_NAME)
        if (candidate / ".git").exists():
            break
    return DEFAULT


def load(path: Path) -> Config:
    name = os.fspath(path)
    try:
        raw = read_source(name)
        document = parse_document(raw, name)
    except DocumentError as error:
        raise ConfigError(str(error)) from None
    if document is None:
        document = {}
    try:
        config = msgspec.convert(document, Config)
    except msgspec.ValidationError as error:
        raise ConfigError(_where(name, raw, str(error))) from None
    config = msgspec.structs.replace(config, root=os.fspath(path.parent))
    for problem in _problems(config):
        raise ConfigError(_located(name, raw, *problem))
    return config


def _problems(config: Config) -> Iterator[tuple[str, str]]:
    if config.version != 1:
        yield "/version", f"version {config.version} is not known (this registry reads 1)"
    known = [*CATEGORIES, *RULES]
    for field, names in (("use", config.lint.use), ("except", config.lint.except_)):
        for index, name in enumerate(names):
            if name not in known:
                yield f"/lint/{field}/{index}", _unknown("rule or category", name, known)
    for index, entry in enumerate(config.lint.ignore):
        if entry.rule is not None and entry.rule not in RULES:
            yield f"/lint/ignore/{index}/rule", _unknown("rule", entry.rule, list(RULES))
        if entry.rule is None and entry.path is None:
            yield f"/lint/ignore/{index}", "an ignore names a rule, a path or both"
    for index, name in enumerate(config.fail_on):
        if name not in FAIL_ON:
            yield f"/fail_on/{index}", _unknown("fail_on value", name, list(FAIL_ON))


def _unknown(what: str, name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
    return f"unknown {what} {name!r}{hint}"


def _located(name: str, raw: bytes, pointer: str, message: str) -> str:
    position = locate(raw, pointer)
    where = f"{name}:{position[0]}:{position[1]}" if position else name
    return f"{where}: {pointer}: {message}"


def _where(name: str, raw: bytes, message: str) -> str:
    """msgspec's `... - at `$.lint.use[0]``, as `file:line:col: /lint/use/0: ...`."""
    text, _, at = message.partition(" - at `$")
    if not at:
        return f"{name}: {message}"
    pointer = "/" + at.rstrip("`").lstrip(".").replace("[", ".").replace("]", "").replace(".", "/")
    return _located(name, raw, pointer.replace("//", "/"), text)


def _relative(path: str, root: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
