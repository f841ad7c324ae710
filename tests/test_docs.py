"""docs/contract.md, the README and the guides under docs/ stay true to the code:
names, tables, links, snippets; and the README stays a front door (<= 400 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from registry.api.problems import PROBLEMS
from registry.cli import VERBS
from registry.compat import (
    ConversionRejected,
    ConverterError,
    apply,
    classify,
    parse_ops,
    suggested_converter,
    verify,
)
from registry.compat.kinds import SEVERITY, Kind
from registry.sdk import gate
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.readme_transcripts import python_block

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
# the README and every guide beside the contract, each with its own path
PAGES = {
    path: path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}
ENGINE_GUIDE = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|", re.MULTILINE)


def _rows(heading: str) -> dict[str, tuple[str, str]]:
    """`| \\`name\\` | a | b |` rows of the first table after `heading`."""
    table = CONTRACT.split(heading, 1)[1].split("\n\n", 1)[0]
    return {name: (a, b) for name, a, b in _ROW.findall(table)}


def test_every_kind_is_in_the_contract_with_its_severities() -> None:
    rows = _rows("| kind | in inputSchema | in outputSchema |")
    expected = {kind.value: (SEVERITY[kind][0].value, SEVERITY[kind][1].value) for kind in Kind}
    assert rows == expected


def test_every_problem_type_is_in_the_contract_with_its_status() -> None:
    rows = _rows("| code | status | meaning |")
    assert {name: int(status) for name, (status, _) in rows.items()} == {
        code: kind.status for code, kind in PROBLEMS.items()
    }


def test_every_route_of_the_api_is_in_the_contract() -> None:
    spec = yaml.safe_load((ROOT / "openapi.yaml").read_text(encoding="utf-8"))
    missing = []
    for path, operations in spec["paths"].items():
        for method in operations:
            named = f"{method.upper()} {path}"
            if method in {"get", "post", "put", "delete", "patch"} and named not in CONTRACT:
                missing.append(named)
    assert not missing, f"docs/contract.md does not name: {missing}"


def test_every_cli_verb_is_in_the_contract() -> None:
    cli = CONTRACT.split("## CLI", 1)[1].split("\n## ", 1)[0]
    assert [v.name for v in VERBS if f"| `{v.name}" not in cli] == []


def test_every_gate_code_is_in_the_contract() -> None:
    codes = {
        gate.SCHEMA_VERSION_RETIRED: "schema_version_retired",
        gate.SCHEMA_VERSION_UNKNOWN: "schema_version_unknown",
        gate.STRICT_VALIDATION_FAILED: "strict_validation_failed",
        gate.SCHEMA_VERSION_MISMATCH: "schema_version_mismatch",
    }
    for code, reason in codes.items():
        assert f"| {code} | `{reason}` |" in CONTRACT


def test_the_readme_is_a_front_door() -> None:
    assert README.count("\n") <= 400
    for guide in (ROOT / "docs").glob("*.md"):
        assert f"](docs/{guide.name})" in README, f"the README does not link {guide.name}"


def test_the_docs_link_only_what_a_clone_has() -> None:
    """Relative links resolve inside the repository; nothing points above it."""
    for source, text in PAGES.items():
        assert "../shared" not in text
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            resolved = (source.parent / target).resolve()
            assert resolved.is_relative_to(ROOT), target
            assert resolved.exists(), f"{source.name} links {target}, which does not exist"


def test_the_readme_says_how_to_create_a_namespace_and_declare_a_version() -> None:
    assert "registry namespace create" in README or "PUT /v1/namespaces/" in README
    assert "_meta.schemaVersion" in README
    assert "docs/contract.md" in README


@pytest.mark.parametrize("page", sorted(PAGES), ids=lambda path: path.name)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    """A path in backticks under one of the repository's top-level directories is there."""
    top = {
        entry.name
        for entry in ROOT.iterdir()
        if entry.is_dir() and entry.name not in {".venv", "test-artifacts"}
    }
    named = {
        token.split(":", 1)[0]
        for token in re.findall(r"`([\w.-]+/[^`\s<>{}*]*)`", PAGES[page])
        if token.split("/", 1)[0] in top
    }
    assert [path for path in sorted(named) if not (ROOT / path).exists()] == []


def test_the_engine_guide_snippet_runs_on_seed_000() -> None:
    scope: dict[str, object] = {"old_definition": DB_QUERY_V3, "new_definition": DB_QUERY_V4}
    exec(python_block(ENGINE_GUIDE, "## `registry.compat`"), scope)  # the guide's own text
    report = classify(DB_QUERY_V3, DB_QUERY_V4)
    assert scope["report"] == report
    assert report.severity == "breaking"
    assert {"property-renamed", "default-removed", "enum-narrowed"} <= {
        change.kind for change in report.changes
    }


def test_the_engine_guide_converter_functions_run_as_described() -> None:
    """`parse_ops` feeds `apply` and `verify`; the quoted ordering error is the one raised."""
    report = classify(DB_QUERY_V3, DB_QUERY_V4)
    suggested = suggested_converter(c.suggested_op for c in report.changes if c.suggested_op)
    ops = parse_ops(suggested)
    assert verify(ops, DB_QUERY_V3, DB_QUERY_V4).severity != "breaking"
    assert apply(ops, {"query": "q", "timeout_ms": 5}) == {"query": "q", "timeout": 5}
    with pytest.raises(ConversionRejected):
        apply(ops, {"query": "q", "mode": "write"})

    reject, rename, fill = suggested
    assert (reject["op"], rename["op"], fill["op"]) == ("reject", "rename", "fill")
    with pytest.raises(ConverterError) as misordered:
        verify(parse_ops([reject, fill, rename]), DB_QUERY_V3, DB_QUERY_V4)
    assert f"(`{misordered.value}`)" in " ".join(ENGINE_GUIDE.split())
