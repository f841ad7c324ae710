"""`registry.compat`'s face is lazy (PEP 562): each name is imported from its
module when first asked for, so the gate, which needs `apply`, `Op` and
`ConversionRejected`, starts a server without the classifier,
python-jsonschema or RE2 (bench/startup_bench.py measures what that saves)."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
import types

from registry import compat


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running `statement`."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(json.loads(done.stdout))


HEAVY = {"jsonschema", "re2", "registry.compat.classifier", "registry.compat.repairs"}


def test_what_the_gate_imports_loads_no_classifier_jsonschema_or_re2() -> None:
    loaded = _loaded_after("from registry.compat import ConversionRejected, Op, apply")
    assert loaded & HEAVY == set()


def test_a_gated_server_starts_without_the_engine() -> None:
    """The engine is loaded by the first refusal that needs its report, not at start."""
    loaded = _loaded_after("import registry.sdk.mcp_adapter")
    assert "registry.compat.classifier" not in loaded


def test_every_name_of_the_face_is_its_modules_object_even_with_every_module_loaded() -> None:
    """A module named like a name of the face (`classify.py` beside `classify`)
    would shadow the name once imported: none is."""
    for module in pkgutil.iter_modules(compat.__path__):
        importlib.import_module(f"registry.compat.{module.name}")
    for name in compat.__all__:
        value = getattr(compat, name)
        assert not isinstance(value, types.ModuleType), name
        home = importlib.import_module(f"registry.compat.{compat._HOME[name]}")
        assert value is getattr(home, name), name
    assert set(compat._HOME) == set(compat.__all__)
    assert set(dir(compat)) >= set(compat.__all__)
