"""schemathesis against openapi.yaml: no 5xx, every response conforms to the spec.

The app runs under uvicorn in a thread of its own (schemathesis calls are
synchronous) on a fresh database seeded with the seed 000 and 002 stories, so
generated requests also meet existing namespaces, tools and versions. The
example count per operation is bounded to keep `make test` short; raise
`REGISTRY_FUZZ_EXAMPLES` for a longer run.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
import yaml
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from registry.api.app import asgi
from registry.api.settings import Settings
from tests.api.conftest import ADMIN_TOKEN, free_port
from tests.conftest import PostgresServer, _create_database, _drop_database
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4, SEARCH_V1

SPEC = Path(__file__).resolve().parents[2] / "openapi.yaml"
EXAMPLES = int(os.environ.get("REGISTRY_FUZZ_EXAMPLES", "12"))
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

schema = schemathesis.openapi.from_path(str(SPEC))
# POST /v1/import takes an export file (JSON Lines): generated strings are sent as text
schemathesis.serializer.alias("application/jsonl", "text/plain")


@pytest.fixture(scope="module")
def served(postgres_server: PostgresServer, migrated_template: str) -> Iterator[str]:
    name = asyncio.run(_create_database(postgres_server, migrated_template))
    settings_ = Settings(
        database_url=postgres_server.dsn(name),
        port=free_port(),
        bootstrap_token=ADMIN_TOKEN,
        pool_min=1,
        pool_max=10,
    )
    server = uvicorn.Server(
        uvicorn.Config(asgi(settings_), host="127.0.0.1", port=settings_.port, log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{settings_.port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.02)
    with httpx.Client(base_url=url, headers=AUTH) as client:
        for ns, definition in (("billing", DB_QUERY_V3), ("docs", SEARCH_V1)):
            tool = definition["name"]
            client.put(f"/v1/namespaces/{ns}").raise_for_status()
            client.post(
                f"/v1/namespaces/{ns}/tools/{tool}/versions", json={"definition": definition}
            ).raise_for_status()
        client.post(
            "/v1/namespaces/billing/tools/db.query/versions",
            json={"definition": DB_QUERY_V4, "retire": [1]},
        ).raise_for_status()
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        asyncio.run(_drop_database(postgres_server, name))


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_api_conforms_to_openapi(case: schemathesis.Case, served: str) -> None:
    if case.path == "/v1/namespaces/{ns}/toolset" and case.query:
        case.query.pop("wait", None)  # a long-poll per example would only add waiting
    # Every check but one: "a schema-valid request must be accepted" cannot hold
    # for a registry, whose rules (tool-name match, meta-schema validity, routes)
    # go beyond what a JSON Schema of the body can say; those answer 4xx problems.
    response = case.call(base_url=served, headers=AUTH)
    case.validate_response(response, excluded_checks=[positive_data_acceptance])
    assert_a_documented_problem(case.method, case.path, response)


SPEC_DOCUMENT = yaml.safe_load(SPEC.read_text(encoding="utf-8"))


def documented_problems(method: str, path: str, status: int) -> set[str]:
    """The problem `type`s openapi.yaml says this operation answers with `status`."""
    responses = SPEC_DOCUMENT["paths"][path][method.lower()]["responses"]
    answer = responses.get(str(status))
    if answer is None:
        return set()
    schema = answer["content"]["application/problem+json"]["schema"]
    name = schema["$ref"].rsplit("/", 1)[-1]
    kind = SPEC_DOCUMENT["components"]["schemas"][name]["properties"]["type"]
    return set(kind["enum"]) if "enum" in kind else {kind["const"]}


def assert_a_documented_problem(method: str, path: str, response: Any) -> None:
    """Each operation lists exactly the problems it answers: a problem answered
    must be one of those documented for that operation and status."""
    headers = {name.lower(): value for name, value in response.headers.items()}
    content_type = headers.get("content-type", "")
    if isinstance(content_type, list):  # schemathesis' response keeps each header's values
        content_type = content_type[0]
    if content_type.startswith("application/problem+json"):
        kind = response.json()["type"]
        if response.status_code in (404, 405) and kind.endswith(
            ("/not-found", "/method-not-allowed")
        ):
            return  # no route matched: the router's answer, not the operation's
        assert kind in documented_problems(method, path, response.status_code), (
            f"{method} {path} answered {response.status_code} {kind}, which openapi.yaml "
            "does not list for it"
        )


def test_an_undocumented_problem_is_caught() -> None:
    class Answer:
        status_code = 404
        headers = {"content-type": "application/problem+json"}

        def json(self) -> dict[str, str]:
            return {"type": "https://mcp-tool-registry.dev/problems/breaking-change"}

    with pytest.raises(AssertionError, match="does not list"):
        assert_a_documented_problem("GET", "/v1/namespaces/{ns}/tools", Answer())
    assert "https://mcp-tool-registry.dev/problems/namespace-not-found" in documented_problems(
        "GET", "/v1/namespaces/{ns}/tools", 404
    )
    assert documented_problems("GET", "/healthz", 401) == set()
