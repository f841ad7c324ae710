"""registry/store/: one module per aggregate behind the package's face.

No module reaches into another store module's private names (`_audit`, `_land`,
...): what store modules share is public in the module that holds it
(`rows`, `audit`, `channel`, `locks`, ...), and callers outside the package use
the face (`registry.store`) or a public module, never `registry.store._db`. Each
store module stays under 600 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "registry" / "store"
MAX_LINES = 600
SCANNED = ("registry", "tests", "bench", "examples")


def _python_files() -> Iterator[Path]:
    for top in SCANNED:
        # npm packages the tests install (node_modules) ship Python files of their own
        yield from sorted(p for p in (ROOT / top).rglob("*.py") if "node_modules" not in p.parts)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _store_modules() -> set[str]:
    return {_module_name(p) for p in STORE.glob("*.py")}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reaches(path: Path, source: str, store_modules: set[str]) -> list[str]:
    """Where the module at `path` (its text `source`) uses a private name of another
    registry.store module: `from registry.store.x import _y`, `from registry.store._db
    import ...` outside the package, or `x._y` on a store module it imported."""
    here = _module_name(path)
    inside = here == "registry.store" or here.startswith("registry.store.")
    found: list[str] = []
    bound: dict[str, str] = {}  # local name -> the store module it names
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = node.module
            for alias in node.names:
                full = f"{module}.{alias.name}"
                if full in store_modules:
                    bound[alias.asname or alias.name] = full
                elif module in store_modules and module != here and _is_private(alias.name):
                    found.append(f"line {node.lineno}: from {module} import {alias.name}")
            if (
                module in store_modules
                and not inside
                and any(_is_private(part) for part in module.split("."))
            ):
                found.append(f"line {node.lineno}: from {module} import ...")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in store_modules:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    if not inside and any(_is_private(p) for p in alias.name.split(".")):
                        found.append(f"line {node.lineno}: import {alias.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and isinstance(node.value, ast.Name)
            and bound.get(node.value.id, here) != here
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_a_private_name_of_another_store_module() -> None:
    store_modules = _store_modules()
    assert {"registry.store", "registry.store.rows", "registry.store.publishing"} <= store_modules
    reaches = {
        str(path.relative_to(ROOT)): found
        for path in _python_files()
        if (found := private_reaches(path, path.read_text(encoding="utf-8"), store_modules))
    }
    assert reaches == {}


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("registry/store/modes.py", "from registry.store.repository import _audit\n"),
        ("registry/store/reviews.py", "from registry.store.publishing import land, _hold\n"),
        ("registry/api/apply.py", "from registry.store._db import transaction\n"),
        ("tests/x.py", "from registry.store import locks\nlocks._private(1)\n"),
        ("tests/x.py", "from registry import store\nstore._db.connection\n"),
        ("tests/x.py", "import registry.store.locks as l\nl._x\n"),
    ],
)
def test_the_check_finds_each_kind_of_reach(path: str, source: str) -> None:
    """What the layout looked like before the split (repository.py's helpers imported by
    its siblings) is found, as are the other ways to reach a private name."""
    store_modules = _store_modules() | {"registry.store.repository"}
    assert private_reaches(ROOT / path, source, store_modules) != []


def test_a_store_module_may_use_the_package_s_db_and_public_helpers() -> None:
    source = (
        "from registry.store._db import connection\n"
        "from registry.store.rows import record_of\n"
        "from registry.store import locks\n"
        "locks.lock_tool\n"
    )
    assert private_reaches(STORE / "tokens.py", source, _store_modules()) == []


def test_each_store_module_stays_under_the_line_budget() -> None:
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in STORE.glob("*.py")}
    assert "publishing.py" in sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_face_exports_what_callers_use() -> None:
    """`registry.store` names each aggregate's public functions, and each is the
    function of the module that holds it (no copy, no shim)."""
    from registry import store
    from registry.store import aliases, namespaces, publishing, tokens, versions

    assert not (STORE / "repository.py").exists()
    for name in store.__all__:
        assert hasattr(store, name), name
    assert store.publish is publishing.publish
    assert store.lookup_token is tokens.lookup_token
    assert store.get_version is versions.get_version
    assert store.load_namespace is namespaces.load_namespace
    assert store.set_alias is aliases.set_alias
