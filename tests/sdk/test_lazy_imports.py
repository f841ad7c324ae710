"""What a server's start loads: importing the SDK or an adapter, and reading a
toolset, load neither the validators' engines nor the sync client's HTTP stack;
the first compiled toolset loads the engines, and the gate then decides as it
always did (bench/startup_bench.py measures the time this saves; the tests
assert modules, not time)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import types
from pathlib import Path

import msgspec

import registry.sdk
from tests.sdk import seed_000

ROOT = Path(__file__).resolve().parents[2]

# What an import of the gate used to load: python-jsonschema and what it imports,
# jsonschema-rs, RE2, the engine, httpx (and the CLI libraries httpx imports).
HEAVY = {
    "jsonschema",
    "jsonschema_rs",
    "referencing",
    "re2",
    "registry.patterns",
    "registry.compat.classifier",
    "httpx",
    "rich",
    "registry.sdk.sync",
}


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running `statement`."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_sdk_loads_none_of_its_modules() -> None:
    loaded = _loaded_after("import registry.sdk")
    assert {m for m in loaded if m.startswith("registry.sdk.")} == set()


def test_importing_an_adapter_loads_no_engine_jsonschema_re2_or_httpx() -> None:
    loaded = _loaded_after("import registry.sdk.mcp_adapter")
    assert "registry.sdk.gate" in loaded  # the adapter's own imports are there
    assert loaded & HEAVY == set()


def test_importing_the_fastmcp_adapter_loads_no_engine_jsonschema_re2_or_httpx() -> None:
    loaded = _loaded_after("import registry.sdk.fastmcp_adapter")
    assert "fastmcp" in loaded
    assert loaded & (HEAVY - {"rich"}) == set()  # FastMCP itself logs through rich


def test_reading_a_toolset_loads_no_validator() -> None:
    body = msgspec.json.encode(seed_000()).decode()
    statement = f"from registry.sdk import Toolset\nToolset.from_json({body!r}.encode())"
    loaded = _loaded_after(statement)
    assert "registry.sdk.toolset" in loaded
    assert loaded & HEAVY == set()


def test_the_first_compiled_toolset_loads_the_engines_and_the_gate_decides() -> None:
    body = msgspec.json.encode(seed_000()).decode()
    statement = (
        "from registry.sdk import Gate, Toolset\n"
        f"gate = Gate(Toolset.from_json({body!r}.encode()))\n"
        "assert gate.check('db.query', {'query': 'q'}, {'schemaVersion': 'v4'}).accepted\n"
        "refused = gate.check('db.query', {'query': 'q', 'timeout_ms': 1}, None)\n"
        "assert not refused.accepted and refused.error.code == -31003, refused\n"
    )
    loaded = _loaded_after(statement)
    assert {"jsonschema", "jsonschema_rs", "re2", "registry.patterns"} <= loaded
    assert "httpx" not in loaded


def test_a_cache_read_loads_no_httpx(tmp_path: Path) -> None:
    from registry.sdk import Toolset, write_cache

    cache = tmp_path / "billing.json"
    write_cache(cache, Toolset.from_json(msgspec.json.encode(seed_000())), url="http://x")
    loaded = _loaded_after(f"from registry.sdk import read_cache\nread_cache({str(cache)!r})")
    assert "registry.sdk.sync" in loaded
    assert "httpx" not in loaded


def test_every_name_of_the_face_is_its_modules_object() -> None:
    """A submodule named like a name of the face would shadow it once imported: none is."""
    for name in registry.sdk.__all__:
        value = getattr(registry.sdk, name)
        assert not isinstance(value, types.ModuleType), name
        home = importlib.import_module(f"registry.sdk.{registry.sdk._HOME[name]}")
        assert value is getattr(home, name), name
    assert set(registry.sdk._HOME) == set(registry.sdk.__all__)
    assert set(dir(registry.sdk)) >= set(registry.sdk.__all__)


def test_a_diff_of_two_json_files_loads_no_yaml(tmp_path: Path) -> None:
    """`registry diff` on JSON (a pre-commit hook's every commit) needs no PyYAML."""
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    old.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    schema["required"] = ["q"]
    new.write_text(json.dumps({"name": "t", "inputSchema": schema}))
    statement = (
        "import sys\nfrom registry.cli import main\n"
        f"code = main(['diff', {str(old)!r}, {str(new)!r}])\n"
        "assert code == 1, code  # breaking: q is now required\n"
    )
    loaded = _loaded_after(statement)
    assert "registry.cli.diff_digest" in loaded
    assert "yaml" not in loaded
    assert "registry.yaml_documents" not in loaded
