"""The MCP conformance suite against server-everything directly and through `registry proxy`.

One round of the active suite (bench/proxy_conformance_bench.py --upstream
everything, ~20 s): every check the reference server passes directly passes
through the proxy, the one difference by design said as such (an unknown tool
is the protocol's -32602 through the proxy). The suite's own tools behind the
proxy (`--upstream twin`), several rounds, run with `make conformance-proxy`.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.proxy.harness import ROOT

SUITE = ROOT / "bench" / "conformance" / "node_modules" / ".bin" / "conformance"


def test_no_check_passed_directly_is_lost_through_the_proxy() -> None:
    if not SUITE.exists():
        pytest.fail(
            "the conformance suite is not installed: `make test` installs it "
            "(npm ci --prefix bench/conformance)"
        )
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "proxy_conformance_bench.py"),
            "--upstream",
            "everything",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    found = re.search(
        r"direct (\d+) of \d+, through the proxy (\d+) of \d+; passed directly and never "
        r"through the proxy: (\d+)",
        run.stdout,
    )
    assert found is not None, run.stdout
    direct, proxied, lost = (int(n) for n in found.groups())
    assert lost == 0 and direct >= 10 and proxied >= direct - 2, run.stdout
    assert "tools-list: tools-list" in run.stdout
