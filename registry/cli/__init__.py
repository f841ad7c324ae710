"""The `registry` command line (also `python -m registry`).

Each verb is one `Verb` in `VERBS`: a name, a one-line summary, a function
that adds its arguments to its subparser, and a function that runs it and
returns the exit code. The verbs live by group, each module listing its own:

    engine.py     diff, digest                      (base install)
    service.py    serve, migrate, token             ([server] extra, imported inside)
    client.py     sync, capabilities, namespace     (base install)
    usage.py      retire, usage                     (base install)
    pipeline.py   plan, apply, check                (base install; render.py, offline.py)
    capture.py    capture                           ([mcp] extra, imported in live.py)
    proxy.py      proxy                             ([mcp] extra, imported inside)

Every verb module imports only `common.py` and its own helpers, never this package's
`__init__`, so there is no import circle.

Exit codes (docs/contract.md): 0 ok, 1 breaking change found or refused, 2 usage or
input error. Bad input is reported as one line on stderr,
`registry: new.json:4:12: /inputSchema/properties/x/$ref: $ref to missing target '#/$defs/Nope'`,
never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from registry import __version__
from registry.cli import capture, client, engine, pipeline, proxy, service, usage
from registry.cli.common import EXIT_BREAKING, EXIT_OK, EXIT_USAGE, PROG, InputError, Verb

__all__ = ["EXIT_BREAKING", "EXIT_OK", "EXIT_USAGE", "VERBS", "InputError", "Verb", "main"]

VERBS: list[Verb] = [
    *engine.VERBS,
    *service.VERBS,
    *client.VERBS,
    *usage.VERBS,
    *pipeline.PIPELINE_VERBS,
    *capture.VERBS,
    *proxy.VERBS,
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    own, command = _split_command(list(sys.argv[1:] if argv is None else argv))
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


def _split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """For a verb that takes a server's command (`capture`, `plan`, `apply`, `check`),
    everything after the first `--` is that command, untouched by the parser."""
    verb = next((arg for arg in argv if not arg.startswith("-")), None)
    if "--" not in argv or verb not in {v.name for v in VERBS if v.takes_command}:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MCP tool schema registry: versioned tool definitions and their changes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in VERBS:
        subparser = subparsers.add_parser(verb.name, help=verb.summary, description=verb.summary)
        verb.add_arguments(subparser)
        subparser.set_defaults(run=verb.run)
    return parser
