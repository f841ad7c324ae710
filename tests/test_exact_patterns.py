"""Patterns that guard input outside the API match whole (issue 18, item 3).

Python's `re.match` with `^...$` (and `re.search`, which python-jsonschema's
`pattern` uses) accepts a trailing newline, and its `\\d` any Unicode digit.
Manifests, the CLI's scopes, the SDK's namespace, the store's own name checks
and the protocol revision dates refuse a trailing newline, a NUL and a
non-ASCII lookalike.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from registry.cli import main
from registry.manifests import ManifestError, load_manifest
from registry.policy.capabilities import CapabilityError, parse_initialize
from registry.sdk import Toolset
from registry.sdk.revisions import RevisionError, revision_of

BAD_NAMESPACES = ["billing\n", "billing\x00", "bill\u0456ng"]
BAD_REVISIONS = ["2025-06-18\n", "2025-06-18\x00", "2025-06-1\uff18"]
TOOL = {"name": "a", "inputSchema": {"type": "object"}}


def _manifest(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"namespace": "billing", "tool": TOOL, **fields}))
    return path


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_a_manifest_namespace_is_matched_whole(tmp_path: Path, namespace: str) -> None:
    with pytest.raises(ManifestError, match=r"/namespace: .* does not match"):
        load_manifest(_manifest(tmp_path, namespace=namespace))


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"tool": {**TOOL, "name": "a\n"}}, "does not match"),
        (
            {"deprecate": [{"version": 1, "sunset": "2027-06-01T00:00:00Z\n"}]},
            "is not an RFC 3339 date-time",
        ),
        (
            {"deprecate": [{"version": 1, "sunset": "2027-06-01T00:00:0\uff10Z"}]},
            "is not an RFC 3339 date-time",
        ),
        ({"retire": [2147483648]}, "must be at most 2147483647"),
    ],
)
def test_manifest_fields_are_matched_whole(
    tmp_path: Path, fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(ManifestError, match=says):
        load_manifest(_manifest(tmp_path, **fields))


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_a_token_scope_is_matched_whole(namespace: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            *("token", "create", "--scope", f"{namespace}:read"),
            *("--database-url", "postgresql://127.0.0.1:1/x"),
        ]
    )
    assert code == 2
    assert "is not a namespace" in capsys.readouterr().err


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_the_sdk_refuses_a_namespace_before_any_request(namespace: str) -> None:
    with pytest.raises(ValueError, match="invalid namespace"):
        asyncio.run(Toolset.sync("http://127.0.0.1:1", namespace))


@pytest.mark.parametrize("namespace", BAD_NAMESPACES)
def test_the_store_checks_names_whole(namespace: str) -> None:
    from registry import store

    # The check comes before the database is touched (None would fail after it).
    with pytest.raises(ValueError, match="invalid namespace name"):
        asyncio.run(store.create_namespace(None, namespace, actor=None, request_id=None))  # type: ignore[arg-type]


@pytest.mark.parametrize("revision", BAD_REVISIONS)
def test_a_protocol_revision_is_matched_whole(revision: str) -> None:
    with pytest.raises(RevisionError, match="is not a revision date"):
        revision_of(revision)
    captured = {"protocolVersion": revision, "capabilities": {}, "serverInfo": {"name": "s"}}
    with pytest.raises(CapabilityError, match="is not a revision date"):
        parse_initialize(captured)
