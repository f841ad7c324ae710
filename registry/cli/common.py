"""What every verb module shares: exit codes, the one-line error, the `Verb` record,
the registry's URL and token from flags or the environment, one request to the
registry, and atomic writes.

Imports nothing from the other verb modules, so that none of them imports another's
package `__init__` (where `VERBS` is assembled) and no import circle forms.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

    from registry.manifests import Manifest, PolicyManifest

__all__ = [
    "EXIT_BREAKING",
    "EXIT_OK",
    "EXIT_USAGE",
    "NAMESPACE_PATTERN",
    "PROG",
    "Failed",
    "InputError",
    "Verb",
    "compact",
    "located",
    "one_line",
    "quiet_logs",
    "registry_request",
    "registry_token",
    "registry_url",
    "required_registry_url",
    "write_atomically",
]

EXIT_OK = 0
EXIT_BREAKING = 1
EXIT_USAGE = 2

PROG = "registry"
NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"  # registry.api.params (the [server] extra)


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
    """`takes_command`: what follows `--` on the command line is a server's command
    (`args.server_command`), never parsed as the verb's own arguments."""

    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    takes_command: bool = False


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def located(manifest: Manifest | PolicyManifest, pointer: str) -> str:
    """`file:line:column` of the value at `pointer` (or of its nearest ancestor)."""
    position = manifest.position(pointer, nearest=True)
    return f"{manifest.path}:{position[0]}:{position[1]}" if position else manifest.path


def registry_url(args: argparse.Namespace) -> str | None:
    """`--url`, else `REGISTRY_URL`."""
    return getattr(args, "url", None) or os.environ.get("REGISTRY_URL") or None


def registry_token(args: argparse.Namespace) -> str | None:
    """`--token`, else `REGISTRY_TOKEN`."""
    return getattr(args, "token", None) or os.environ.get("REGISTRY_TOKEN") or None


def required_registry_url(args: argparse.Namespace) -> str:
    """`registry_url(args)`; InputError when neither `--url` nor `REGISTRY_URL` gives one."""
    url = registry_url(args)
    if not url:
        raise InputError("no registry URL: pass --url or set REGISTRY_URL")
    return url


def registry_request(
    method: str, target: str, token: str | None, body: Any = None
) -> httpx.Response:
    """One request to the registry (JSON body, bearer token, 30 s); InputError naming
    `target` when it cannot be reached. The status is the caller's to judge."""
    import httpx  # imported here: the verbs that never reach a registry start faster

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        return httpx.request(method, target, json=body, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        raise InputError(f"{target}: {type(error).__name__}: {error}") from None


def quiet_logs() -> None:
    """Warnings and errors on stderr: stdout carries the verb's output only."""
    import logging

    from registry.logging_setup import configure_logging

    configure_logging(json=False, level=logging.WARNING)


def write_atomically(path: str, data: bytes) -> None:
    import tempfile  # the verbs that write files only: a `diff` never needs it

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
