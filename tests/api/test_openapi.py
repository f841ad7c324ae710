"""openapi.yaml at the repository root is the app's spec: regenerate with `make openapi`."""

from __future__ import annotations

from pathlib import Path

from registry.api.openapi import openapi_document, openapi_yaml

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"

DESIGN_TABLE = {
    ("get", "/v1/namespaces"),
    ("put", "/v1/namespaces/{ns}"),
    ("get", "/v1/namespaces/{ns}/tools"),
    ("post", "/v1/namespaces/{ns}/tools/{tool}/versions"),
    ("post", "/v1/namespaces/{ns}/tools/{tool}/check"),
    ("get", "/v1/namespaces/{ns}/tools/{tool}/versions"),
    ("get", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}"),
    ("get", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/diff"),
    ("post", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/deprecate"),
    ("post", "/v1/namespaces/{ns}/tools/{tool}/versions/{n}/retire"),
    ("post", "/v1/namespaces/{ns}/tools/{tool}/converters"),
    ("put", "/v1/namespaces/{ns}/aliases/{alias}"),
    ("get", "/v1/namespaces/{ns}/toolset"),
    ("get", "/v1/digests/{digest}"),
    ("post", "/v1/namespaces/{ns}/verify"),
    ("get", "/v1/audit"),
    ("post", "/v1/apply"),
    ("put", "/v1/namespaces/{ns}/capabilities"),
    ("get", "/v1/namespaces/{ns}/capabilities"),
    ("post", "/v1/namespaces/{ns}/capabilities/check"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
}


def test_openapi_yaml_matches_the_app() -> None:
    # Compared as text: schemathesis, loaded in the same process, changes how
    # PyYAML resolves some scalars, and the file is what users and tools read.
    assert SPEC.read_text(encoding="utf-8") == openapi_yaml(), (
        "openapi.yaml is stale: run `make openapi`"
    )


def test_every_endpoint_of_the_design_table_is_in_the_spec() -> None:
    document = openapi_document()
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    assert operations >= DESIGN_TABLE, sorted(DESIGN_TABLE - operations)


def test_each_operation_lists_only_its_own_problems() -> None:
    """A status's problem schema names just that operation's problem types."""
    document = openapi_document()
    schemas = document["components"]["schemas"]

    def types(method: str, path: str) -> set[str]:
        found: set[str] = set()
        for answer in document["paths"][path][method]["responses"].values():
            media = answer.get("content", {}).get("application/problem+json")
            if media is not None:
                kind = schemas[media["schema"]["$ref"].rsplit("/", 1)[-1]]["properties"]["type"]
                found |= {t.rsplit("/", 1)[-1] for t in kind.get("enum", [kind.get("const")])}
        return found

    assert types("get", "/healthz") == {"internal-error"}
    assert types("get", "/v1/namespaces/{ns}/toolset") >= {"namespace-not-found", "forbidden"}
    assert "breaking-change" not in types("get", "/v1/namespaces/{ns}/toolset")
    assert "breaking-change" in types("post", "/v1/namespaces/{ns}/tools/{tool}/versions")
    assert "invalid-json" not in types("get", "/v1/namespaces/{ns}/tools")
