"""Adversarial requests against the service, and another namespace's reads meanwhile (issue 24).

    python bench/adversarial_bench.py                        # embedded PostgreSQL, temp dir
    python bench/adversarial_bench.py --isolation threads    # the analysis in threads instead
    python bench/adversarial_bench.py --caps off             # caps raised: the budget decides

Cases, each sent `--parallel` times at once by one read-and-publish token:

* wide: `POST .../check` of a 30,000-property schema (~1.5 MB);
* unions: a stored 1,000-branch `anyOf` (published with caps raised), then a
  check with another 1,000-branch `anyOf`;
* deep: a check of a schema whose `$ref`s recurse 60 definitions deep.

For each: its wall time and answers, and the latency (p50/p99/max) of
`GET /v1/namespaces/quiet/tools` with another token, polled without pause
while it runs, against a baseline measured in the same run just before.
The server runs in its own process (uvicorn); `--isolation threads` swaps the
analysis workers for threads (the GIL comparison).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-bootstrap-token"
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402

SERVER = r"""
import sys, uvicorn
from registry.api.app import asgi
from registry.api.budget import Budget
from registry.api.settings import Settings
settings = Settings.from_env()
app = asgi(settings)
svc = app.app.state.services
if sys.argv[1] == "threads":
    svc.budget = Budget(workers=settings.analysis_workers, seconds=settings.analysis_seconds,
                        per_token=settings.analysis_per_token, metrics=svc.metrics,
                        limits=svc.limit_log, threads=True)
uvicorn.run(app, host="127.0.0.1", port=settings.port, log_level="warning")
"""


def wide(n: int) -> dict[str, Any]:
    props = {f"field_{i:05d}": {"type": "string", "description": f"field {i}"} for i in range(n)}
    return {"name": "wide", "inputSchema": {"type": "object", "properties": props}}


def union(n: int, tag: str) -> dict[str, Any]:
    branches = [
        {
            "type": "object",
            "properties": {f"{tag}{i}": {"const": f"{tag}{i}"}},
            "required": [f"{tag}{i}"],
        }
        for i in range(n)
    ]
    return {
        "name": "u",
        "inputSchema": {"type": "object", "properties": {"x": {"anyOf": branches}}},
    }


def deep(n: int) -> dict[str, Any]:
    defs: dict[str, Any] = {
        f"n{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/n{i + 1}"}}}
        for i in range(n)
    }
    defs[f"n{n}"] = {"type": "object", "properties": {"back": {"$ref": "#/$defs/n0"}}}
    return {
        "name": "d",
        "inputSchema": {
            "type": "object",
            "$defs": defs,
            "properties": {"root": {"$ref": "#/$defs/n0"}},
        },
    }


async def token(dsn: str, scope: str) -> str:
    """A token of its own for each side, as `registry token create` stores one."""
    import secrets

    import asyncpg

    from registry.store import repository

    secret = "mtr_bench_" + secrets.token_urlsafe(12)
    conn = await asyncpg.connect(dsn)
    try:
        await repository.create_token(
            conn, repository.hash_token(secret), [scope], actor=None, request_id=None
        )
    finally:
        await conn.close()
    return secret


def stats(values: list[float]) -> str:
    if not values:
        return "no reads"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
        f"max {ordered[-1] * 1000:.1f} ms ({len(ordered)} reads)"
    )


class Reader(threading.Thread):
    """Reads another namespace's tools without pause until stopped."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=url, timeout=120, headers={"Authorization": f"Bearer {token}"}
        )
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            assert self.client.get("/v1/namespaces/quiet/tools").status_code == 200
            self.latencies.append(time.perf_counter() - started)


def during(url: str, reader_token: str, work: Any) -> tuple[float, Any, list[float]]:
    reader = Reader(url, reader_token)
    reader.start()
    started = time.perf_counter()
    try:
        result = work()
    finally:
        elapsed = time.perf_counter() - started
        reader.stop.set()
        reader.join()
    return elapsed, result, reader.latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--isolation", choices=("processes", "threads"), default="processes")
    parser.add_argument("--caps", choices=("on", "off"), default="on")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--baseline", type=float, default=3.0, help="seconds of baseline reads")
    args = parser.parse_args()

    from registry.server import start_embedded

    embedded = None
    dsn = args.database_url
    if dsn is None:
        embedded, dsn = start_embedded(tempfile.mkdtemp(prefix="adversarial-bench-"))
    port = free_port()
    env = {
        **os.environ,
        "REGISTRY_DATABASE_URL": dsn,
        "REGISTRY_PORT": str(port),
        "REGISTRY_BOOTSTRAP_TOKEN": TOKEN,
        "REGISTRY_ANALYSIS_PER_TOKEN": "4",
    }
    raised = {
        "REGISTRY_DEFINITION_MAX_BYTES": "8388608",
        "REGISTRY_DEFINITION_MAX_NODES": "1000000",
        "REGISTRY_DEFINITION_MAX_PROPERTIES": "100000",
        "REGISTRY_DEFINITION_MAX_BRANCHES": "100000",
    }
    if args.caps == "off":
        env.update(raised)
    server = subprocess.Popen([sys.executable, "-c", SERVER, args.isolation], env=env, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    admin = httpx.Client(base_url=url, timeout=600, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        for _ in range(300):
            try:
                if admin.get("/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        for ns in ("loud", "quiet"):
            admin.put(f"/v1/namespaces/{ns}")
        admin.post(
            "/v1/namespaces/quiet/tools/q/versions",
            json={"definition": {"name": "q", "inputSchema": {"type": "object"}}},
        )
        reader_token = asyncio.run(token(dsn, "quiet:read"))
        attacker = httpx.Client(
            base_url=url,
            timeout=600,
            headers={"Authorization": f"Bearer {asyncio.run(token(dsn, 'loud:read'))}"},
        )
        print(f"isolation: {args.isolation}, caps: {args.caps}, parallel: {args.parallel}")
        _, _, base = during(url, reader_token, lambda: time.sleep(args.baseline))
        print(f"baseline reads of another namespace: {stats(base)}")

        def burst(path: str, body: dict[str, Any]) -> list[int]:
            with ThreadPoolExecutor(args.parallel) as pool:
                answers = list(
                    pool.map(lambda _: attacker.post(path, json=body), range(args.parallel))
                )
            return [a.status_code for a in answers]

        cases: list[tuple[str, str, dict[str, Any]]] = [
            (
                "wide (30,000 properties)",
                "/v1/namespaces/loud/tools/wide/check",
                {"definition": wide(30_000)},
            ),
            (
                "unions (1,000 vs 1,000 branches)",
                "/v1/namespaces/loud/tools/u/check",
                {"definition": union(1000, "b")},
            ),
            (
                "deep recursive $ref (60)",
                "/v1/namespaces/loud/tools/d/check",
                {"definition": deep(60)},
            ),
        ]
        print(f"wide body: {len(json.dumps(cases[0][2])):,} bytes")
        stored = admin.post(
            "/v1/namespaces/loud/tools/u/versions", json={"definition": union(1000, "a")}
        )
        print(f"stored 1,000-branch union: {stored.status_code}")
        for name, path, body in cases:
            elapsed, statuses, reads = during(url, reader_token, lambda p=path, b=body: burst(p, b))
            print(
                f"{name}: {elapsed:.2f} s, answers {sorted(statuses)}; "
                f"reads meanwhile: {stats(reads)}"
            )
        attacker.close()
    finally:
        admin.close()
        server.terminate()
        server.wait(timeout=30)
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    main()
