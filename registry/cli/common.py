"""What every verb module shares: exit codes, the one-line error, the `Verb` record,
the registry's URL and token from flags or the environment, and atomic writes.

Imports nothing from the other verb modules, so that none of them imports another's
package `__init__` (where `VERBS` is assembled) and no import circle forms.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from registry.manifests import Manifest

__all__ = [
    "EXIT_BREAKING",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "Failed",
    "InputError",
    "Verb",
    "compact",
    "located",
    "one_line",
    "quiet_logs",
    "registry_token",
    "registry_url",
    "write_atomically",
]

EXIT_OK = 0
EXIT_BREAKING = 1
EXIT_USAGE = 2

PROG = "registry"


class InputError(Exception):
    """Bad input to a verb: printed as `registry: <one line>`, exit code 2."""


class Failed(Exception):
    """One or more `registry: ...` lines on stderr, then an exit code."""

    def __init__(self, lines: Sequence[str], code: int = EXIT_USAGE) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)
        self.code = code


@dataclass(frozen=True)
class Verb:
    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def located(manifest: Manifest, pointer: str) -> str:
    """`file:line:column` of the value at `pointer` (or of its nearest ancestor)."""
    position = manifest.position(pointer, nearest=True)
    return f"{manifest.path}:{position[0]}:{position[1]}" if position else manifest.path


def registry_url(args: argparse.Namespace) -> str | None:
    """`--url`, else `REGISTRY_URL`."""
    return getattr(args, "url", None) or os.environ.get("REGISTRY_URL") or None


def registry_token(args: argparse.Namespace) -> str | None:
    """`--token`, else `REGISTRY_TOKEN`."""
    return getattr(args, "token", None) or os.environ.get("REGISTRY_TOKEN") or None


def quiet_logs() -> None:
    """Warnings and errors on stderr: stdout carries the verb's output only."""
    import logging

    from registry.logging_setup import configure_logging

    configure_logging(json=False, level=logging.WARNING)


def write_atomically(path: str, data: bytes) -> None:
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, target)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None
