"""docs/releases.md's transcripts, run as written against a live `registry serve`
(the README's harness, tests/test_readme.py: the registry's address in the text
becomes the port this test got; what each command prints must match)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.readme_transcripts import parse, run_against
from tests.test_readme import README_TOKEN, README_URL

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "releases.md"


@pytest.mark.timeout(300)
def test_the_releases_guide_runs_as_written(spawn: Any, tmp_path: Path) -> None:
    served = spawn(
        "--data-dir", str(tmp_path / "data"), ready=60.0, REGISTRY_BOOTSTRAP_TOKEN=README_TOKEN
    )
    text = GUIDE.read_text(encoding="utf-8")
    assert any("--retire-removed" in c.text for c in parse(text))
    mismatches = run_against(text, README_URL, served.url, tmp_path, tmp_path, timeout=240)
    assert not mismatches, "\n".join(str(m) for m in mismatches)
