"""docs/review.md's transcripts, run as written against a live `registry serve` (the
README's harness, tests/test_readme.py: the registry's address in the text becomes the
port this test got; what each command prints must match). Its data directory is the
guide's `./.registry`, so `registry token create` finds it as the guide says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.readme_transcripts import parse, run_against
from tests.test_readme import README_TOKEN, README_URL

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "review.md"


@pytest.mark.timeout(300)
def test_the_review_guide_runs_as_written(spawn: Any, tmp_path: Path) -> None:
    served = spawn(
        "--data-dir", str(tmp_path / ".registry"), ready=60.0, REGISTRY_BOOTSTRAP_TOKEN=README_TOKEN
    )
    text = GUIDE.read_text(encoding="utf-8")
    commands = [c.text for c in parse(text, "docs/review.md")]
    for verb in ("review list", "review show", "review reject", "--fail-on risk"):
        assert any(verb in command for command in commands), verb
    mismatches = run_against(
        text, README_URL, served.url, tmp_path, tmp_path, timeout=240, source="docs/review.md"
    )
    assert not mismatches, "\n".join(str(m) for m in mismatches)
