"""Running node and npm for the TypeScript tests."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any


def run(argv: list[str], *, cwd: Path, timeout: float = 300) -> str:
    """Run a command to its end; its stdout (a failure shows the end of its stderr)."""
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=str(cwd)
    )
    assert done.returncode == 0, (argv, done.stderr[-4000:])
    return done.stdout


async def spawn(argv: list[str], *, cwd: Path, env: dict[str, str], stdin: int) -> Any:
    """A process with stdout and stderr piped (asyncio's `Process`)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=env,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
