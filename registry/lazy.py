"""A package face whose names are imported from their modules when first asked for.

    __getattr__, __dir__ = lazy_face(__name__, {"Gate": "gate"}, globals(), __all__)

PEP 562: a module-level `__getattr__` is called for a name the module does
not hold. Importing the package then costs nothing beyond itself, and a
submodule (an adapter) loads only what it imports in turn.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_face"]


def lazy_face(
    package: str,
    homes: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: `homes` maps each name to the
    submodule holding it; `namespace` is the package's `globals()`, where a name
    is kept once asked for; `names` its `__all__`."""
    listed = frozenset(names)

    def attribute(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value  # asked once: later reads find it here
        return value

    def listing() -> list[str]:
        return sorted({*namespace, *listed})

    return attribute, listing
