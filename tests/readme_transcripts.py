"""Run the shell transcripts of a Markdown file and compare what they print.

A transcript is a fenced block whose info string is `console`:

    $ registry namespace create billing          <- a command
    namespace billing: created                   <- what it prints (stdout and stderr)
    $ cat > tools/x.yaml <<'EOF'                 <- a command spanning lines:
    > namespace: search                             each further line starts with "> "
    > EOF
    $ registry check tools
    ...                                          <- a line "..." stands for any lines
    check failed: ... lacks a decision; ...      <- "..." in a line stands for any text
    [1]                                          <- a non-zero exit status, last

Every transcript of the file runs, in order, in one bash process (so `export`
and files carry from one block to the next), in `workdir`.

`python_block` gives the first ```python block after a heading, for tests that
run the README's snippets as written.

Written here rather than taken from a library (cram, doctest): both want their
own file formats, and the README must read as a README.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Command", "Mismatch", "parse", "python_block", "run", "run_against"]

_FENCE = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Command:
    text: str  # what runs (continuation lines joined with newlines)
    expected: list[str]  # the lines shown after it, `[N]` included
    line: int  # where the command starts in the file (1-based)
    source: str = "README.md"  # the file it is written in


@dataclass(frozen=True)
class Mismatch:
    command: Command
    actual: list[str]

    def __str__(self) -> str:
        expected = "\n".join(self.command.expected) or "(nothing)"
        actual = "\n".join(self.actual) or "(nothing)"
        return (
            f"{self.command.source} line {self.command.line}: $ {self.command.text}\n"
            f"--- expected\n{expected}\n--- actual\n{actual}\n"
        )


def parse(markdown: str, source: str = "README.md") -> list[Command]:
    commands: list[Command] = []
    for block in _FENCE.finditer(markdown):
        first_line = markdown.count("\n", 0, block.start(1)) + 1
        current: list[str] | None = None
        expected: list[str] = []
        start = 0
        for offset, line in enumerate(block.group(1).splitlines()):
            if line.startswith("$ "):
                if current is not None:
                    commands.append(Command("\n".join(current), expected, start, source))
                current, expected, start = [line[2:]], [], first_line + offset
            elif line.startswith("> ") and current is not None and not expected:
                current.append(line[2:])
            elif current is not None:
                expected.append(line.rstrip())
        if current is not None:
            commands.append(Command("\n".join(current), expected, start, source))
    return commands


def run(
    commands: list[Command], workdir: Path, env: Mapping[str, str], timeout: float
) -> list[Mismatch]:
    """Run every command in one bash; the commands whose output differs."""
    marker = "@@readme-transcript@@"
    script = [f"cd {_quote(str(workdir))}", "exec 2>&1"]
    for index, command in enumerate(commands):
        script.append(f"printf '\\n{marker} start {index}\\n'")
        script.append(command.text)
        script.append(f"printf '\\n{marker} exit {index} %d\\n' $?")
    done = subprocess.run(
        ["bash", "--noprofile", "--norc"],
        input="\n".join(script) + "\n",
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=timeout,
        check=False,
    )
    outputs: dict[int, list[str]] = {}
    statuses: dict[int, int] = {}
    current: list[str] = []
    for line in done.stdout.splitlines():
        if line.startswith(f"{marker} start "):
            current = outputs.setdefault(int(line.split()[-1]), [])
        elif line.startswith(f"{marker} exit "):
            _, _, index, status = line.split()
            statuses[int(index)] = int(status)
        else:
            current.append(line.rstrip())
    mismatches = []
    for index, command in enumerate(commands):
        actual = _trimmed(outputs.get(index, ["(never ran)"]))
        status = statuses.get(index)
        if status is None:
            actual.append("(did not finish)")
        elif status != 0:
            actual.append(f"[{status}]")
        if not _matches(command.expected, actual):
            mismatches.append(Mismatch(command, actual))
    return mismatches


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start]:
        start += 1
    while end > start and not lines[end - 1]:
        end -= 1
    return lines[start:end]


def _line_pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.split("...")) + r"\Z")


def _matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` against `actual`, a line "..." matching any number of lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(_matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    return (
        bool(actual) and bool(_line_pattern(head).match(actual[0])) and _matches(rest, actual[1:])
    )


def python_block(markdown: str, heading: str) -> str:
    """The first ```python block after `heading` (its text, without the fences)."""
    return markdown.split(heading, 1)[1].split("```python\n", 1)[1].split("```", 1)[0]


def run_against(
    markdown: str,
    address: str,
    url: str,
    workdir: Path,
    home: Path,
    timeout: float,
    source: str = "README.md",
) -> list[Mismatch]:
    """Every transcript of `markdown` (the file `source`), the registry's `address` as
    written replaced by `url` (a registry this test serves), with the virtual
    environment's `bin` first on PATH as `. .venv/bin/activate` leaves it."""
    import os
    import sys

    from tests.serving import env_with

    commands = [
        Command(c.text.replace(address, url), c.expected, c.line, c.source)
        for c in parse(markdown, source)
    ]
    env = env_with(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        HOME=str(home),
        NO_COLOR="1",
    )
    return run(commands, workdir, env, timeout=timeout)
