"""What a large anonymous body costs the service, against the same body from a token.

    .venv/bin/python bench/anonymous_body_bench.py [--rounds 5] [--parallel 16]

Runs `registry serve` (granian, embedded PostgreSQL in a temporary directory)
and, each round, sends `--parallel` POSTs of a ~4 MiB JSON array of objects to
`/v1/apply` at once: anonymous (refused 401 before the body is read: issue 18
item 1), then the same with the admin token (read and parsed, then refused
422). During each burst it asks `/healthz` in a loop. Reported per kind: the
median time of a burst and of a `/healthz` answer during it, and the ratio of
the anonymous figures to the authenticated ones measured in the same run
(rounds alternate the order).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402

TOKEN = "bench-bootstrap-token"
BODY = b"[" + b",".join([b'{"a": 1, "b": [1, 2, 3]}'] * 150_000) + b"]"  # ~3.8 MiB


async def _burst(url: str, parallel: int, token: str | None) -> tuple[float, list[float]]:
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    health: list[float] = []
    limits = httpx.Limits(max_connections=parallel + 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def post() -> int:
            return (await client.post("/v1/apply", content=BODY, headers=headers)).status_code

        started = time.perf_counter()
        posts = [asyncio.ensure_future(post()) for _ in range(parallel)]
        while not all(p.done() for p in posts):
            before = time.perf_counter()
            await client.get("/healthz")
            health.append(time.perf_counter() - before)
        statuses = {p.result() for p in posts}
        took = time.perf_counter() - started
    expected = {401} if token is None else {400, 422}
    assert statuses <= expected, statuses
    return took, health


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=16)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="anon-body-bench-"))
    port = free_port()
    env = {**os.environ, "REGISTRY_BOOTSTRAP_TOKEN": TOKEN}
    registry = Path(sys.executable).parent / "registry"
    proc = subprocess.Popen(
        [str(registry), "serve", "--data-dir", str(data_dir / "data"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        figures: dict[str, tuple[list[float], list[float]]] = {
            "anonymous": ([], []),
            "token": ([], []),
        }
        for round_ in range(args.rounds):
            kinds = ["anonymous", "token"] if round_ % 2 == 0 else ["token", "anonymous"]
            for kind in kinds:
                took, health = asyncio.run(
                    _burst(url, args.parallel, None if kind == "anonymous" else TOKEN)
                )
                figures[kind][0].append(took)
                figures[kind][1].extend(health)
                print(f"round {round_ + 1} {kind:9} burst {took:6.2f} s", file=sys.stderr)
        print(f"{args.parallel} parallel POSTs of {len(BODY):,} bytes, {args.rounds} rounds")
        for kind, (bursts, health) in figures.items():
            print(
                f"{kind:9} burst median {statistics.median(bursts):6.3f} s, "
                f"/healthz during it median {statistics.median(health) * 1000:7.1f} ms "
                f"(max {max(health) * 1000:.1f} ms, {len(health)} asked)"
            )
        (anon_bursts, anon_health), (token_bursts, token_health) = (
            figures["anonymous"],
            figures["token"],
        )
        burst_ratio = statistics.median(anon_bursts) / statistics.median(token_bursts)
        health_ratio = statistics.median(anon_health) / statistics.median(token_health)
        print(f"anonymous / token: burst x{burst_ratio:.3f}, /healthz x{health_ratio:.3f}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
