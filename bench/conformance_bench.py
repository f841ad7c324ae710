"""The MCP conformance suite against a gated server and its ungated twin.

    .venv/bin/python bench/conformance_bench.py [--keep DIR]

1. `npm ci` of bench/conformance/ (pinned: `@modelcontextprotocol/conformance`
   and the Node 22 it needs, the npm package `node`); not part of `make test`.
2. `registry serve` on a free port (embedded PostgreSQL in a temporary data
   directory, a bootstrap token); namespace `conformance`; every tool the
   twin lists (bench/conformance_server.py --print-tools) published as v1.
3. The twin (ungated) and the gated server (same code, `gate_mcpserver` on
   the toolset synced from that registry), streamable HTTP on free ports.
4. `conformance server --url ... --suite active` (`--suite all` adds the
   pending scenarios) against each; the checks of both side by side.

Verdict: every check the twin passes (in any of `--rounds`), the gated server
passes (in some round too); exit 0 then, 1 otherwise. Each check's SUCCESS
count per server is printed: a server-initiated request (sampling) times out
now and then under load on either server alike. The suite's clients never
declare `_meta.schemaVersion`, so every call it makes goes through the gate's
version-less branch (strict validation).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import free_port  # noqa: E402

SUITE = ROOT / "bench" / "conformance"
SERVER = ROOT / "bench" / "conformance_server.py"
TOKEN = "conformance-bench-token"
NAMESPACE = "conformance"


def install() -> tuple[Path, Path]:
    if not (SUITE / "node_modules" / ".bin" / "conformance").exists():
        subprocess.run(
            ["npm", "ci", "--prefix", str(SUITE), "--no-audit", "--no-fund", "--silent"],
            check=True,
            timeout=600,
        )
    bin_dir = SUITE / "node_modules" / ".bin"
    return bin_dir / "node", bin_dir / "conformance"


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"conformance_bench: {url} did not answer within {timeout} s")


@contextmanager
def process(args: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env={**os.environ, **(env or {})}
        )
        try:
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def publish_listing(registry: str) -> list[str]:
    listed = subprocess.run(
        [sys.executable, str(SERVER), "--print-tools"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    tools: list[dict[str, Any]] = json.loads(listed.stdout)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=registry, headers=headers, timeout=30) as http:
        made = http.put(f"/v1/namespaces/{NAMESPACE}")
        assert made.status_code in (200, 201), made.text
        for tool in tools:
            landed = http.post(
                f"/v1/namespaces/{NAMESPACE}/tools/{tool['name']}/versions",
                json={"definition": tool},
            )
            assert landed.status_code in (200, 201), (tool["name"], landed.text)
    return [t["name"] for t in tools]


def run_suite(node: Path, suite: Path, url: str, workdir: Path, which: list[str]) -> dict[str, str]:
    workdir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(node), str(suite), "server", "--url", url, *which, "-o", "results"],
        cwd=workdir,
        stdout=(workdir / "stdout.txt").open("wb"),
        stderr=subprocess.STDOUT,
        timeout=900,
        check=False,
    )
    statuses: dict[str, str] = {}
    for checks in sorted(workdir.glob("results/**/checks.json")):
        scenario = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T.*$", "", checks.parent.name)
        for check in json.loads(checks.read_text()):
            if check["status"] != "INFO":
                statuses[f"{scenario}: {check['id']}"] = check["status"]
    return statuses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep logs and results here")
    parser.add_argument("--suite", default="active", help="active (default), all or pending")
    parser.add_argument("--scenario", help="one scenario instead of a suite")
    parser.add_argument("--rounds", type=int, default=1, help="run the suite N times on each")
    args = parser.parse_args(argv)
    node, suite = install()
    work = args.keep or Path(tempfile.mkdtemp(prefix="conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    registry_port, twin_port, gated_port = free_port(), free_port(), free_port()
    registry = f"http://127.0.0.1:{registry_port}"
    serve = [
        str(Path(sys.executable).parent / "registry"),
        "serve",
        "--port",
        str(registry_port),
        "--data-dir",
        str(work / "registry-data"),
    ]
    started = time.monotonic()
    twin: dict[str, list[str]] = {}
    gated: dict[str, list[str]] = {}
    with process(serve, work / "registry.log", {"REGISTRY_BOOTSTRAP_TOKEN": TOKEN}):
        wait_http(f"{registry}/healthz", timeout=120)
        names = publish_listing(registry)
        server = [sys.executable, str(SERVER)]
        gated_args = ["--registry", registry, "--token", TOKEN, "--namespace", NAMESPACE]
        with (
            process([*server, "--port", str(twin_port)], work / "twin.log"),
            process([*server, "--port", str(gated_port), *gated_args], work / "gated.log"),
        ):
            wait_http(f"http://127.0.0.1:{twin_port}/mcp")
            wait_http(f"http://127.0.0.1:{gated_port}/mcp")
            which = ["--scenario", args.scenario] if args.scenario else ["--suite", args.suite]
            for n in range(args.rounds):  # interleaved: load drift reaches both alike
                for name, port, tally in (("twin", twin_port, twin), ("gated", gated_port, gated)):
                    url = f"http://127.0.0.1:{port}/mcp"
                    for check, status in run_suite(
                        node, suite, url, work / f"{name}{n}", which
                    ).items():
                        tally.setdefault(check, []).append(status)
    print(f"published {len(names)} tools to {NAMESPACE}: {', '.join(names)}")
    print(f"{'check (SUCCESS in rounds run)':<70}{'twin':>8}{'gated':>8}")
    lost = []

    def passed(statuses: list[str]) -> int:
        return sum(status == "SUCCESS" for status in statuses)

    for check in sorted(set(twin) | set(gated)):
        a, b = twin.get(check, []), gated.get(check, [])
        if passed(a) and not passed(b):
            lost.append(check)
        shown = [f"{passed(x)}/{len(x)}" if x else "-" for x in (a, b)]
        print(f"{check:<70}{shown[0]:>8}{shown[1]:>8}{'  <- lost' if check in lost else ''}")
    ever = [sum(passed(x) > 0 for x in tally.values()) for tally in (twin, gated)]
    print(
        f"checks passed (in at least one of {args.rounds} rounds): twin {ever[0]} of {len(twin)}, "
        f"gated {ever[1]} of {len(gated)}; passed by the twin and never by the gated server: "
        f"{len(lost)}"
    )
    print(f"{time.monotonic() - started:.0f} s; logs and results in {work}")
    if args.keep is None and not lost:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if not lost and twin else 1


if __name__ == "__main__":
    sys.exit(main())
