"""Adversarial requests against the service, and another namespace's reads meanwhile (issue 24).

    python bench/adversarial_bench.py                        # embedded PostgreSQL, temp dir
    python bench/adversarial_bench.py --isolation threads    # the analysis in threads instead
    python bench/adversarial_bench.py --caps off             # caps raised: the budget decides

Cases, each sent `--parallel` times at once (`--bursts` times in a row) by one read token
of another namespace:

* wide: `POST .../check` of a 30,000-property schema (~1.9 MB, past the body limit of
  a definition route: refused from its Content-Length);
* wide, compact: 30,000 properties `{}` (~0.4 MB, within the body limit, past the
  properties cap: parsed and refused in a worker);
* largest allowed: 1,000 properties with long descriptions (~0.5 MB, within every
  cap): checked in full;
* unions: a stored 1,000-branch `anyOf` (published with caps raised), then a
  check with another 1,000-branch `anyOf`;
* deep: a check of a schema whose `$ref`s recurse 60 definitions deep.

For each: its wall time and answers, and the latency (p50/p99/max) of
`GET /v1/namespaces/quiet/tools` with another token, polled without pause by a
process of its own while it runs, against a baseline measured in the same run
just before. Bodies are encoded once, before the clock starts. The server is
`registry serve`'s (granian) in a process of its own; `--isolation threads`
swaps the analysis workers for threads (the GIL comparison).
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
import functools, sys
import registry.api.app as app_module
from registry.api.budget import Budget
from registry.api.settings import Settings
from registry.server import run_server
if sys.argv[1] == "threads":  # the comparison: every analysis in a thread of this process
    app_module.Budget = functools.partial(Budget, threads=True)
run_server(Settings.from_env())
"""

READER = r"""
import json, sys, threading, time, httpx
url, token = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
latencies = []
with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {token}"}) as c:
    for _ in range(20):  # a kept-alive connection, warm: only the reads are measured
        assert c.get("/v1/namespaces/quiet/tools").status_code == 200
    print("ready", flush=True)
    while not stop.is_set():
        started = time.perf_counter()
        assert c.get("/v1/namespaces/quiet/tools").status_code == 200
        latencies.append(time.perf_counter() - started)
print(json.dumps(latencies))
"""


def wide(n: int) -> dict[str, Any]:
    props = {f"field_{i:05d}": {"type": "string", "description": f"field {i}"} for i in range(n)}
    return {"name": "wide", "inputSchema": {"type": "object", "properties": props}}


def compact(n: int) -> dict[str, Any]:
    props = {f"p{i}": {} for i in range(n)}
    return {"name": "wide", "inputSchema": {"type": "object", "properties": props}}


def largest(n: int) -> dict[str, Any]:
    """Within every default cap, near the byte cap: n properties of ~480 bytes each."""
    props = {
        f"field_{i:05d}": {"type": "string", "description": f"field {i} " + "d" * 450}
        for i in range(n)
    }
    return {"name": "wide", "inputSchema": {"type": "object", "properties": props}}


def encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


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

    from registry import store

    secret = "mtr_bench_" + secrets.token_urlsafe(12)
    conn = await asyncpg.connect(dsn)
    try:
        await store.create_token(
            conn, store.hash_token(secret), [scope], actor=None, request_id=None
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


def during(url: str, reader_token: str, work: Any) -> tuple[float, Any, list[float]]:
    """`work()` timed, while a process of its own reads another namespace without pause."""
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, url, reader_token],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    try:
        result = work()
    finally:
        elapsed = time.perf_counter() - started
        out, _ = reader.communicate("stop", timeout=120)
    return elapsed, result, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--isolation", choices=("processes", "threads"), default="processes")
    parser.add_argument("--caps", choices=("on", "off"), default="on")
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--bursts", type=int, default=5, help="bursts of --parallel per case")
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
    log = Path(tempfile.mkdtemp(prefix="adversarial-bench-log-")) / "serve.log"
    with log.open("wb") as out:  # the server's request lines, apart from the figures
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, args.isolation],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
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

        def burst(path: str, body: bytes) -> list[int]:
            """`--parallel` at once, `--bursts` times in a row: the statuses."""
            headers = {"content-type": "application/json"}
            statuses: list[int] = []
            with ThreadPoolExecutor(args.parallel) as pool:
                for _ in range(args.bursts):
                    answers = pool.map(
                        lambda _: attacker.post(path, content=body, headers=headers),
                        range(args.parallel),
                    )
                    statuses += [a.status_code for a in answers]
            return statuses

        cases: list[tuple[str, str, bytes]] = [
            (
                "wide (30,000 properties)",
                "/v1/namespaces/loud/tools/wide/check",
                encoded({"definition": wide(30_000)}),
            ),
            (
                "wide, compact (30,000 properties {})",
                "/v1/namespaces/loud/tools/wide/check",
                encoded({"definition": compact(30_000)}),
            ),
            (
                "largest allowed (1,000 long properties)",
                "/v1/namespaces/loud/tools/wide/check",
                encoded({"definition": largest(1_000)}),
            ),
            (
                "unions (1,000 vs 1,000 branches)",
                "/v1/namespaces/loud/tools/u/check",
                encoded({"definition": union(1000, "b")}),
            ),
            (
                "deep recursive $ref (60)",
                "/v1/namespaces/loud/tools/d/check",
                encoded({"definition": deep(60)}),
            ),
        ]
        stored = admin.post(
            "/v1/namespaces/loud/tools/u/versions", json={"definition": union(1000, "a")}
        )
        print(f"stored 1,000-branch union: {stored.status_code}")
        for name, path, body in cases:
            elapsed, statuses, reads = during(url, reader_token, lambda p=path, b=body: burst(p, b))
            answers = ", ".join(f"{statuses.count(s)} x {s}" for s in sorted(set(statuses)))
            print(
                f"{name}, {len(body):,} bytes: {elapsed / args.bursts:.2f} s a burst, "
                f"answers {answers}; reads meanwhile: {stats(reads)}"
            )
        attacker.close()
        print(f"the server's log: {log}")
    finally:
        admin.close()
        server.terminate()
        server.wait(timeout=30)
        if embedded is not None:
            embedded.stop()


if __name__ == "__main__":
    main()
