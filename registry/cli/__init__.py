"""The `registry` command line (also `python -m registry`).

Each verb is one `Verb`: a name, a one-line summary, a function that adds its
arguments to its subparser, and a function that runs it and returns the exit
code. The verbs live by group, each module listing its own (`MODULES` below
says which module holds which verb, so that a run imports only its own):

    diff_digest.py  diff, digest                    (base install)
    lifecycle.py  history, show, deprecate, retire, alias, converter, and diff on a
                  registry (base install; remote.py holds what they share)
    service.py    serve, migrate, token             ([server] extra, imported inside)
    client.py     sync, capabilities, namespace     (base install)
    usage.py      usage                             (base install)
    review.py     review list|show|approve|reject   (base install)
    pipeline.py   plan, apply, check                (base install; render.py, offline.py)
    lint.py       lint (registry/lint/: rules and mcp-registry.yaml) (base install)
    capture.py    capture                           ([mcp] extra, imported in live.py)
    transfer.py   export, import, mode              (database verbs need [server])
    doctor.py     doctor                            ([server] extra)
    proxy.py      proxy                             ([proxy] extra, imported inside)

Every verb module imports only `common.py` and its own helpers, never this package's
`__init__`, so there is no import circle.

Exit codes (docs/contract.md): 0 ok, 1 breaking change found or refused, 2 usage or
input error. Bad input is reported as one line on stderr,
`registry: new.json:4:12: /inputSchema/properties/x/$ref: $ref to missing target '#/$defs/Nope'`,
never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from registry import __version__
from registry.cli.common import EXIT_BREAKING, EXIT_OK, EXIT_USAGE, PROG, InputError, Verb

__all__ = ["EXIT_BREAKING", "EXIT_OK", "EXIT_USAGE", "VERBS", "InputError", "Verb", "main"]

# Which module holds each verb, in the order `--help` lists them. `main` imports only
# the module of the verb it runs: a pre-commit hook runs `registry check` on every
# commit, and `capture`'s MCP client costs more than a `diff`. tests/test_cli.py
# checks this table against the modules' own lists.
MODULES: dict[str, tuple[str, ...]] = {
    "diff_digest": ("diff", "digest"),
    "service": ("serve", "migrate", "token"),
    "client": ("sync", "capabilities", "namespace"),
    "lifecycle": ("history", "show", "deprecate", "retire", "alias", "converter"),
    "review": ("review",),
    "usage": ("usage",),
    "pipeline": ("plan", "apply", "check"),
    "lint": ("lint",),
    "capture": ("capture",),
    "transfer": ("export", "import", "mode"),
    "doctor": ("doctor",),
    "proxy": ("proxy",),
}
_MODULE_OF = {verb: module for module, verbs in MODULES.items() for verb in verbs}


def module_verbs(module: str) -> list[Verb]:
    """The verbs a module of this package lists (`VERBS`, or the pipeline's own name)."""
    loaded = importlib.import_module(f"registry.cli.{module}")
    verbs: list[Verb] = getattr(loaded, "VERBS", None) or loaded.PIPELINE_VERBS
    return verbs


def all_verbs() -> list[Verb]:
    return [verb for module in MODULES for verb in module_verbs(module)]


def __getattr__(name: str) -> Any:
    # `VERBS`, every verb (importing every module), for tests and tools that list them
    if name == "VERBS":
        return all_verbs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    named = next((arg for arg in given if not arg.startswith("-")), None)
    module = _MODULE_OF.get(named or "")
    verbs = module_verbs(module) if module is not None else all_verbs()
    parser = _build_parser(verbs)
    own, command = _split_command(given, verbs)
    try:
        args = parser.parse_args(own)
    except SystemExit as exit_:  # argparse exits on --help and on usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    args.server_command = command
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except InputError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE


def _split_command(argv: list[str], verbs: list[Verb]) -> tuple[list[str], list[str] | None]:
    """For a verb that takes a server's command (`capture`, `plan`, `apply`, `check`),
    everything after the first `--` is that command, untouched by the parser."""
    verb = next((arg for arg in argv if not arg.startswith("-")), None)
    if "--" not in argv or verb not in {v.name for v in verbs if v.takes_command}:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def _build_parser(verbs: list[Verb]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MCP tool schema registry: versioned tool definitions and their changes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in verbs:
        subparser = subparsers.add_parser(verb.name, help=verb.summary, description=verb.summary)
        verb.add_arguments(subparser)
        subparser.set_defaults(run=verb.run)
    return parser
