"""The MCP conformance suite against a reference server directly and through `registry proxy`.

    .venv/bin/python bench/proxy_conformance_bench.py [--rounds N] [--suite active] [--keep DIR]

1. `npm ci` of bench/conformance/ (the suite and the Node 22 it needs) and of
   tests/proxy/upstreams/ (`@modelcontextprotocol/server-everything`), when missing.
2. The upstream over streamable HTTP on a free port: server-everything (npm,
   nobody here wrote it) and/or bench/conformance_server.py's ungated twin (the
   suite's own tools); its tools saved as a toolset payload serving each as v1.
3. `registry proxy --upstream URL --toolset FILE` in front of it on another port.
4. `conformance server --url ...` against the server and the proxy, alternating
   round by round (interleaved: load drift reaches both alike).

Verdict: every check the server passes directly (in some round) the proxy
passes too (in some round); exit 0 then, 1 otherwise. The suite was written for
its own everything-server, so many checks fail against server-everything
directly too. One difference is by design and said as such: server-everything
answers a call of a tool it does not have (the suite's `test_simple_text`) with
an `isError` result, which two checks happen to pass; the proxy refuses a tool
outside the toolset with the protocol's -32602, as every gated server does and
the spec asks of an unknown tool. The suite never
declares `_meta.schemaVersion`: its calls go through the gate's version-less
branch (strict validation). tests/proxy/test_conformance.py runs one round of
the active suite in `make test`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from conformance_bench import install, process, run_suite, wait_http  # noqa: E402

from tests.ports import free_port  # noqa: E402
from tests.proxy.harness import UPSTREAMS, everything_command, toolset_bytes  # noqa: E402

NAMESPACE = "everything"


def install_upstreams() -> None:
    if not (UPSTREAMS / "node_modules" / "@modelcontextprotocol" / "server-everything").is_dir():
        subprocess.run(
            ["npm", "ci", "--prefix", str(UPSTREAMS), "--no-audit", "--no-fund", "--silent"],
            check=True,
            timeout=600,
        )


async def live_tools(url: str) -> list[dict[str, object]]:
    from mcp import Client

    async with Client(url, mode="legacy", read_timeout_seconds=30) as client:
        listing = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True) for t in listing.tools]


def unknown_tool_refusals(workdirs: list[Path]) -> set[str]:
    """Checks the proxy failed because it refused a tool the upstream does not have as
    the protocol's -32602 (the spec's and the gate's unknown-tool error), where the
    upstream itself answers an `isError` result that the suite happens to pass."""
    found = set()
    for workdir in workdirs:
        for checks in workdir.glob("results/**/checks.json"):
            scenario = re.sub(r"^server-|-\d{4}-\d{2}-\d{2}T.*$", "", checks.parent.name)
            for check in json.loads(checks.read_text()):
                if "Unknown tool:" in (check.get("errorMessage") or ""):
                    found.add(f"{scenario}: {check['id']}")
    return found


def compare(
    direct: dict[str, list[str]], proxied: dict[str, list[str]], rounds: int, by_design: set[str]
) -> int:
    def passed(statuses: list[str]) -> int:
        return sum(status == "SUCCESS" for status in statuses)

    lost = []
    print(f"{'check (SUCCESS in rounds run)':<70}{'direct':>8}{'proxy':>8}")
    for check in sorted(set(direct) | set(proxied)):
        a, b = direct.get(check, []), proxied.get(check, [])
        mark = ""
        if passed(a) and not passed(b):
            if check in by_design:
                mark = "  (unknown tool: -32602 by design)"
            else:
                lost.append(check)
                mark = "  <- lost"
        shown = [f"{passed(x)}/{len(x)}" if x else "-" for x in (a, b)]
        print(f"{check:<70}{shown[0]:>8}{shown[1]:>8}{mark}")
    ever = [sum(passed(x) > 0 for x in tally.values()) for tally in (direct, proxied)]
    print(
        f"checks passed (in at least one of {rounds} rounds): direct {ever[0]} of {len(direct)}, "
        f"through the proxy {ever[1]} of {len(proxied)}; passed directly and never through "
        f"the proxy: {len(lost)}"
    )
    return 0 if direct and not lost else 1


def upstream_command(
    which: str, port: int
) -> tuple[list[str], dict[str, str], Callable[[str], list[dict[str, Any]]]]:
    """The server's command, its environment, and how to read its tools."""
    if which == "everything":
        node_20, script, _ = everything_command()
        return (
            [node_20, script, "streamableHttp"],
            {"PORT": str(port)},
            lambda url: asyncio.run(live_tools(url)),
        )
    twin = [sys.executable, str(ROOT / "bench" / "conformance_server.py")]

    def printed(_url: str) -> list[dict[str, Any]]:
        listed = subprocess.run(
            [*twin, "--print-tools"], check=True, capture_output=True, cwd=ROOT, timeout=120
        )
        tools: list[dict[str, Any]] = json.loads(listed.stdout)
        return tools

    return [*twin, "--port", str(port)], {}, printed


def run_one(which: str, node: Path, suite: Path, args: argparse.Namespace, work: Path) -> int:
    server_port, proxy_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{server_port}/mcp"
    proxied_url = f"http://127.0.0.1:{proxy_port}/mcp"
    command, env, tools_of = upstream_command(which, server_port)
    direct: dict[str, list[str]] = {}
    proxied: dict[str, list[str]] = {}
    with process(command, work / f"{which}-server.log", env):
        wait_http(upstream)
        toolset = work / f"{which}-toolset.json"
        toolset.write_bytes(toolset_bytes(NAMESPACE, tools_of(upstream)))
        proxy = [
            str(Path(sys.executable).parent / "registry"),
            "proxy",
            "--namespace",
            NAMESPACE,
            "--toolset",
            str(toolset),
            "--upstream",
            upstream,
            "--port",
            str(proxy_port),
        ]
        with process(proxy, work / f"{which}-proxy.log"):
            wait_http(f"http://127.0.0.1:{proxy_port}/healthz")
            chosen = ["--scenario", args.scenario] if args.scenario else ["--suite", args.suite]
            for n in range(args.rounds):  # interleaved: load drift reaches both alike
                for name, url, tally in (
                    ("direct", upstream, direct),
                    ("proxy", proxied_url, proxied),
                ):
                    results = run_suite(node, suite, url, work / f"{which}-{name}{n}", chosen)
                    for check, status in results.items():
                        tally.setdefault(check, []).append(status)
    print(f"== {which}: directly and through registry proxy")
    by_design = unknown_tool_refusals([work / f"{which}-proxy{n}" for n in range(args.rounds)])
    return compare(direct, proxied, args.rounds, by_design)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="keep logs and results here")
    parser.add_argument("--suite", default="active", help="active (default), all or pending")
    parser.add_argument("--scenario", help="one scenario instead of a suite")
    parser.add_argument("--rounds", type=int, default=1, help="run the suite N times on each")
    parser.add_argument(
        "--upstream",
        choices=["everything", "twin", "both"],
        default="both",
        help="server-everything (npm), the suite's tools (bench/conformance_server.py), or both",
    )
    args = parser.parse_args(argv)
    node, suite = install()
    install_upstreams()
    work = args.keep or Path(tempfile.mkdtemp(prefix="proxy-conformance-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    chosen = ["everything", "twin"] if args.upstream == "both" else [args.upstream]
    verdict = max(run_one(which, node, suite, args, work) for which in chosen)
    print(f"{time.monotonic() - started:.0f} s; logs and results in {work}")
    if args.keep is None and verdict == 0:
        shutil.rmtree(work, ignore_errors=True)
    return verdict


if __name__ == "__main__":
    sys.exit(main())
