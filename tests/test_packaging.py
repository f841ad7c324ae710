"""What pyproject.toml promises its users: extras pinned to the majors the code is written for."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _extra(name: str) -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    requirements = [Requirement(line) for line in project["optional-dependencies"][name]]
    return {r.name: r for r in requirements}


def test_the_mcp_extra_pins_the_major_the_adapters_are_written_for() -> None:
    """`pip install mcp-tool-registry[mcp]` must never pull a next major of the `mcp`
    SDK, whose API the adapters (`registry/sdk/mcp_adapter.py`) were not written for."""
    spec = _extra("mcp")["mcp"].specifier
    installed = Version(version("mcp"))
    assert installed in spec, f"the tested SDK {installed} is outside {spec}"
    assert Version(f"{installed.major + 1}.0") not in spec, f"{spec} admits the next major"
    assert Version(f"{installed.major - 1}.999") not in spec, f"{spec} admits the last major"
