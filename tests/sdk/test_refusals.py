"""The refusal catalogue (registry/sdk/refusals.json): one file, its rules, its copies.

The words themselves are pinned row by row by the golden table (test_golden.py
and sdk-ts/test/golden.test.ts); here: the catalogue is coherent (one code and
one surface per reason, a text for the model exactly on the arguments surface,
the gate's public code constants), docs/contract.md names every reason with
its code, and the copy the npm package ships is the same bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from registry.sdk import gate
from registry.sdk.refusals import CATALOGUE_BYTES, entries, render

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads(CATALOGUE_BYTES)
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def test_one_code_and_one_surface_per_reason_and_a_model_text_exactly_on_arguments() -> None:
    seen: dict[str, tuple[int, str]] = {}
    for entry in entries():
        assert seen.setdefault(entry.reason, (entry.code, entry.surface)) == (
            entry.code,
            entry.surface,
        )
        assert entry.surface in ("rpc", "arg")
        assert (entry.model_text is not None) == (entry.surface == "arg"), entry
        assert entry.action in (None, "relist"), entry
    assert seen == {
        "unknown_tool": (gate.INVALID_PARAMS, "rpc"),
        "schema_version_retired": (gate.SCHEMA_VERSION_RETIRED, "rpc"),
        "schema_version_unknown": (gate.SCHEMA_VERSION_UNKNOWN, "rpc"),
        "strict_validation_failed": (gate.STRICT_VALIDATION_FAILED, "arg"),
        "invalid_arguments": (gate.INVALID_PARAMS, "arg"),
        "conversion_rejected": (gate.CONVERSION_REJECTED, "arg"),
        "schema_version_mismatch": (gate.SCHEMA_VERSION_MISMATCH, "rpc"),
        "handler_mismatch": (gate.SCHEMA_VERSION_MISMATCH, "rpc"),
    }


def test_the_contract_names_every_reason_with_its_code() -> None:
    contract = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    part = " ".join(contract.split("### The refusal catalogue", 1)[1].split("\n## ", 1)[0].split())
    for reason, spec in DOCUMENT["reasons"].items():
        assert f"`{reason}` ({spec['code']}, {spec['surface']})" in part, reason


def test_no_model_text_tells_a_model_to_set_meta() -> None:
    """A model behind a stock host cannot set `_meta`: the text says what to send."""
    for entry in entries():
        assert "_meta" not in (entry.model_text or ""), entry
    for name, text in DOCUMENT["fragments"].items():
        assert "_meta" not in text, name


def test_a_template_renders_only_with_every_value_it_names() -> None:
    for entry in entries():
        for template in (entry.message, entry.model_text, entry.detail):
            if template is None:
                continue
            names = set(PLACEHOLDER.findall(template))
            assert render(template, dict.fromkeys(names, "x")).count("{") == 0
            for name in names:
                try:
                    render(template, dict.fromkeys(names - {name}, "x"))
                except KeyError:
                    continue
                raise AssertionError(f"{entry.reason}/{entry.variant} renders without {name}")


def test_the_npm_package_s_copy_is_the_same_bytes() -> None:
    assert (ROOT / "sdk-ts" / "refusals.json").read_bytes() == CATALOGUE_BYTES
    package = json.loads((ROOT / "sdk-ts" / "package.json").read_text(encoding="utf-8"))
    assert "refusals.json" in package["files"]
