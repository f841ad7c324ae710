"""Adversarial schemas for the engine's work bounds (issue 24), shared by
tests/test_engine_limits.py and bench/engine_adversarial_bench.py."""

from __future__ import annotations

from typing import Any

__all__ = ["package_json_like", "ref_chain", "union_of_objects", "wide_object"]


def package_json_like(scripts: int = 120) -> dict[str, Any]:
    """A schema shaped like a package.json schema of a public schema collection
    (draft-07, `definitions`, exports that recurse through `oneOf` and arrays,
    overrides that recurse through `anyOf`), about 24 KB."""

    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/definitions/{name}"}

    conditions = ["require", "import", "node", "default", "types"]
    definitions = {
        "person": {
            "type": ["object", "string"],
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "url": {"type": "string", "format": "uri"},
                "email": {"type": "string", "format": "email"},
            },
        },
        "dependency": {"type": "object", "additionalProperties": {"type": "string"}},
        "entryPath": {"type": ["string", "null"], "pattern": "^\\./"},
        "entry": {"oneOf": [ref("entryPath"), ref("entryObject")]},
        "entryObject": {
            "type": "object",
            "properties": {name: ref("entryOrFallback") for name in conditions},
            "patternProperties": {"^[^.0-9]+$": ref("entryOrFallback")},
            "additionalProperties": False,
        },
        "entryOrFallback": {"oneOf": [ref("entry"), ref("fallback")]},
        "fallback": {
            "type": "array",
            "minItems": 1,
            "items": {"oneOf": [ref("entry"), ref("fallback")]},
        },
        "exports": {
            "anyOf": [
                ref("entryPath"),
                {"type": "object", "patternProperties": {"^\\./.+": ref("entryOrFallback")}},
                ref("entryObject"),
                ref("fallback"),
            ]
        },
        "overrides": {
            "type": "object",
            "additionalProperties": {"anyOf": [{"type": "string"}, ref("overrides")]},
        },
    }
    lifecycle = {
        f"script{i}": {
            "type": "string",
            "description": f"Run by 'npm run' at lifecycle event number {i} of the package, "
            "described at length as such descriptions are",
        }
        for i in range(scripts)
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": definitions,
        "properties": {
            "name": {"type": "string", "maxLength": 214, "minLength": 1},
            "author": ref("person"),
            "contributors": {"type": "array", "items": ref("person")},
            "exports": ref("exports"),
            "overrides": ref("overrides"),
            "dependencies": ref("dependency"),
            "scripts": {
                "type": "object",
                "properties": lifecycle,
                "additionalProperties": {"type": "string"},
            },
        },
    }


def union_of_objects(count: int, value_type: str, offset: int = 0) -> dict[str, Any]:
    """An object whose `v` is an `anyOf` of `count` closed one-property objects."""
    branches = [
        {
            "type": "object",
            "properties": {f"key_{i + offset}": {"type": value_type}},
            "required": [f"key_{i + offset}"],
            "additionalProperties": False,
        }
        for i in range(count)
    ]
    return {"type": "object", "properties": {"v": {"anyOf": branches}}}


def ref_chain(links: int, value_type: str = "string") -> dict[str, Any]:
    """`links` definitions, each an object whose `next` refers to the next, in a cycle."""
    definitions = {
        f"n{i}": {
            "type": "object",
            "properties": {
                "next": {"$ref": f"#/$defs/n{(i + 1) % links}"},
                "v": {"type": value_type},
            },
        }
        for i in range(links)
    }
    return {"type": "object", "properties": {"root": {"$ref": "#/$defs/n0"}}, "$defs": definitions}


def wide_object(count: int) -> dict[str, Any]:
    """An object of `count` described string properties."""
    return {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": f"d{i}"} for i in range(count)},
    }
