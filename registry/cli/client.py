"""Client verbs (base install): `registry sync NS`, `registry capabilities check NS`,
`registry namespace create|list`. They speak to a registry at `--url` / `REGISTRY_URL`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from registry.cli.common import (
    EXIT_BREAKING,
    EXIT_OK,
    InputError,
    Verb,
    one_line,
    quiet_logs,
    registry_request,
    registry_token,
    required_registry_url,
    write_atomically,
)

__all__ = ["VERBS", "run_capabilities", "run_namespace", "run_sync"]

# -- sync (a client verb: base install) ----------------------------------------------------


def _sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("namespace", metavar="NAMESPACE", help="the namespace to pull")
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument("--token", help="a bearer token with NAMESPACE:read (env REGISTRY_TOKEN)")
    parser.add_argument(
        "--cache",
        metavar="PATH",
        help="toolset cache file: written after a sync, used (digest-checked) when the "
        "registry cannot be reached",
    )
    parser.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="where to write the payload (default stdout)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per attempt (default 10)"
    )
    parser.add_argument(
        "--retries", type=int, default=3, help="retries after a failed attempt (default 3)"
    )


def run_sync(args: argparse.Namespace) -> int:
    import asyncio

    from registry.sdk import Toolset
    from registry.sdk.sync import SyncError
    from registry.sdk.toolset import ToolsetError

    url = required_registry_url(args)
    token = registry_token(args)
    if args.timeout <= 0 or args.retries < 0:
        raise InputError("--timeout must be positive and --retries at least 0")
    # The SDK's log lines (e.g. "running from cache") go to stderr, never into the payload.
    quiet_logs()
    try:
        toolset = asyncio.run(
            Toolset.sync(
                url,
                args.namespace,
                cache=args.cache,
                token=token,
                timeout=args.timeout,
                retries=args.retries,
            )
        )
    except SyncError as error:
        # the library's words name its keyword (cache=PATH); here it is the flag
        fallback = error.cache_problem or (
            "no --cache FILE given (with one, sync falls back to the last good toolset)"
        )
        attempts = f"{args.retries + 1} attempt{'s' if args.retries else ''}"
        raise InputError(
            f"cannot sync the toolset of namespace {error.namespace!r} from registry "
            f"{error.url} after {attempts}: {one_line(error.cause)}; {fallback}"
        ) from None
    except (ToolsetError, ValueError) as error:
        raise InputError(f"{url}: {one_line(str(error))}") from None
    payload = toolset.to_json()
    if args.output == "-":
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
    else:
        write_atomically(args.output, payload)
    return EXIT_OK


# -- capabilities ------------------------------------------------------------------


def _capabilities_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="which of these methods the namespace's captured capabilities do not support",
    )
    check.add_argument("namespace", metavar="NAMESPACE")
    check.add_argument(
        "--methods",
        nargs="+",
        required=True,
        metavar="METHOD",
        help="MCP methods a client needs (tools/list resources/subscribe ...)",
    )
    check.add_argument("--format", choices=["text", "json"], default="text")
    check.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    check.add_argument("--token", help="a bearer token with NAMESPACE:read (env REGISTRY_TOKEN)")


def run_capabilities(args: argparse.Namespace) -> int:
    """`capabilities check`: exit 0 when every method is met, 1 when one is not."""
    url = required_registry_url(args)
    token = registry_token(args)
    target = f"{url.rstrip('/')}/v1/namespaces/{args.namespace}/capabilities/check"
    response = _request("POST", target, token, (200,), body={"methods": args.methods})
    answer = response.json()
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        for entry in answer["unmet"]:
            sys.stdout.write(
                f"unmet  {entry['method']}  requires {entry['side']} capability "
                f"{entry['requires']}: {entry['reason']}\n"
            )
        for entry in answer["met"]:
            sys.stdout.write(f"met    {entry['method']}  ({entry['reason']})\n")
    return EXIT_BREAKING if answer["unmet"] else EXIT_OK


# -- namespace (a client verb: base install) ------------------------------------------------


def _namespace_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser(
        "create", help="create a namespace (needs NAMESPACE:admin); an existing one is kept"
    )
    create.add_argument("namespace", metavar="NAMESPACE")
    listing = actions.add_parser("list", help="the namespaces the token may read")
    for sub in (create, listing):
        sub.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
        sub.add_argument("--token", help="a bearer token (env REGISTRY_TOKEN)")


def run_namespace(args: argparse.Namespace) -> int:
    url = required_registry_url(args)
    token = registry_token(args)
    base = f"{url.rstrip('/')}/v1/namespaces"
    target = f"{base}/{args.namespace}" if args.action == "create" else base
    method = "PUT" if args.action == "create" else "GET"
    response = _request(method, target, token, (200, 201))
    if args.action == "create":
        done = "created" if response.status_code == 201 else "exists already"
        print(f"namespace {args.namespace}: {done}")
    else:
        for entry in response.json()["namespaces"]:
            print(entry["name"])
    return EXIT_OK


def _request(
    method: str, target: str, token: str | None, ok: tuple[int, ...], body: Any = None
) -> Any:
    """The response of one request; a transport failure or another status: InputError."""
    response = registry_request(method, target, token, body)
    if response.status_code not in ok:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise InputError(f"{target}: HTTP {response.status_code}: {one_line(str(detail))}")
    return response


VERBS: list[Verb] = [
    Verb(
        "sync",
        "pull a namespace's toolset from the registry and write its payload",
        _sync_arguments,
        run_sync,
    ),
    Verb(
        "capabilities",
        "check MCP methods against a namespace's captured initialize result (seed 004)",
        _capabilities_arguments,
        run_capabilities,
    ),
    Verb(
        "namespace",
        "create a namespace (namespaces are explicit: publishing never creates one) or list them",
        _namespace_arguments,
        run_namespace,
    ),
]
