"""Cheap size caps on the definitions of a request, checked before any other work.

    caps = Caps.of(settings)
    caps.check(definition, pointer="/definition")    # ApiError 422 definition-too-large

One pass over the parsed definition (no schema semantics, no `$ref`), so a
refusal costs what reading the body cost. What it counts is what the
engine's and the meta-schema check's cost grows with (measured for issue 24:
validation is linear in the schema's nodes, about 0.2 ms each; comparing two
objects' properties and two unions' branches grows with the product of
their counts, 200 branches against 200 took 2.2 s):

    bytes        the definition as compact JSON
    nodes        JSON objects and arrays in it
    properties   entries of one `properties` object
    branches     entries of one `anyOf`, `oneOf` or `allOf`
    depth        nesting of objects and arrays

Past a cap: 422 `definition-too-large`, naming the cap, its limit, what was
found and where. The time budget (`registry.api.budget`) bounds whatever the
caps let through. Integers beyond what a JSON number holds exactly
(+-(2**53 - 1), RFC 8785's I-JSON domain) are refused here too, as 422
`invalid-definition` with their pointer: a digest could not be taken of them
and a JavaScript client would read another number.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from registry.api.problems import ApiError
from registry.pointers import escape

__all__ = ["MAX_SAFE_INTEGER", "Caps"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
_UNIONS: Final = frozenset({"anyOf", "oneOf", "allOf"})
_ENCODER: Final = msgspec.json.Encoder()


class Caps(msgspec.Struct, frozen=True, kw_only=True):
    max_bytes: int = 512 * 1024
    max_nodes: int = 20_000
    max_properties: int = 1_000
    max_branches: int = 256
    max_depth: int = 160

    @classmethod
    def of(cls, settings: Any) -> Caps:
        return cls(
            max_bytes=settings.definition_max_bytes,
            max_nodes=settings.definition_max_nodes,
            max_properties=settings.definition_max_properties,
            max_branches=settings.definition_max_branches,
            max_depth=settings.definition_max_depth,
        )

    def check(self, definition: Any, pointer: str, *, integers: str = "invalid-definition") -> None:
        """ApiError naming the first cap `definition` passes (see the module docstring);
        `integers`: the problem type of an integer out of range (for what is no definition,
        `invalid-body`)."""
        size = len(_ENCODER.encode(definition))
        if size > self.max_bytes:
            raise _too_large("definition_max_bytes", self.max_bytes, size, pointer, "bytes of JSON")
        nodes = 0
        stack: list[tuple[Any, str, int]] = [(definition, pointer, 1)]
        while stack:
            value, where, depth = stack.pop()
            if isinstance(value, dict):
                items: Any = value.items()
            elif isinstance(value, list):
                items = enumerate(value)
            else:
                if type(value) is int and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
                    raise ApiError(
                        integers,
                        f"the integer {value} is beyond +-(2**53 - 1), what a JSON number "
                        "holds exactly (RFC 8785): write it as a string, or a smaller number",
                        pointer=where,
                    )
                continue
            nodes += 1
            if nodes > self.max_nodes:
                raise _too_large(
                    "definition_max_nodes", self.max_nodes, nodes, pointer, "objects and arrays"
                )
            if depth > self.max_depth:
                raise _too_large("definition_max_depth", self.max_depth, depth, where, "levels")
            if isinstance(value, dict):
                found = value.get("properties")
                if isinstance(found, dict) and len(found) > self.max_properties:
                    raise _too_large(
                        "definition_max_properties",
                        self.max_properties,
                        len(found),
                        f"{where}/properties",
                        "properties in one object",
                    )
                for keyword in _UNIONS.intersection(value):
                    branches = value[keyword]
                    if isinstance(branches, list) and len(branches) > self.max_branches:
                        raise _too_large(
                            "definition_max_branches",
                            self.max_branches,
                            len(branches),
                            f"{where}/{keyword}",
                            f"branches in one {keyword}",
                        )
            for key, child in items:
                if isinstance(child, dict | list | int):
                    stack.append((child, f"{where}/{escape(str(key))}", depth + 1))


def _too_large(name: str, limit: int, found: int, where: str, unit: str) -> ApiError:
    return ApiError(
        "definition-too-large",
        f"the definition at {where or '/'} has {found:,} {unit} where at most {limit:,} are "
        f"allowed (REGISTRY_{name.upper()}); nothing was analysed",
        pointer=where,
        limit={"name": name, "maximum": limit, "found": found},
    )
