"""pytest hooks that keep the corpus tests honest on CI (imported by tests/conftest.py).

A test that reads the corpus carries `@pytest.mark.corpus`. Under `CI` (set by
`.ci/run`) such a test never skips: a skip is turned into a failure naming its
reason. And a whole-suite run on CI in which no corpus test passed fails, so
the corpus tests cannot silently stop running.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

_passed: list[str] = []


def _on_ci() -> bool:
    return bool(os.environ.get("CI"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[Any]:
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("corpus") is None:
        return
    if report.passed and report.when == "call":
        _passed.append(item.nodeid)
    elif report.skipped and _on_ci():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"a corpus test may not skip on CI: {reason}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    whole_suite = not config.args or config.args == [str(config.rootpath / "tests")]
    filtered = config.getoption("keyword") or config.getoption("markexpr")
    if _on_ci() and whole_suite and not filtered and session.testscollected and not _passed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("FAILED: no corpus test ran (tests marked `corpus`)", red=True)
