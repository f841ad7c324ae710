"""Release-pipeline verbs: `registry plan DIR`, `registry apply DIR`, `registry check DIR`.

    registry plan tools/                         # what applying tools/ would do (exit 1: refused)
    registry apply tools/                        # all of it lands, or none of it (re-run: no-op)
    registry check tools/ --format github        # a CI gate: exit 1 on an undecided breaking change
    registry check tools/ --against-file toolset.json   # the same gate, offline
    registry check tools/ --against main         # against DIR's last release in git

`plan` and `check` send the manifests of DIR (`registry.manifests`) to
`POST {url}/v1/apply?plan=true`; `apply` sends them to `POST {url}/v1/apply`,
which applies the bundle in one transaction. `check --against-file` needs no
network: it rebuilds each tool's stored state from a saved toolset
(`registry.cli.offline`) and runs the same planner locally; `check --against
REF` does the same against the manifests of DIR at a git revision
(`registry.cli.revision`).

Output (`--format`, `registry.cli.render`): `text` (a table and a line per
change), `json` (the `PlanAnswer`, `schemas/plan.schema.json`), `github`
(workflow commands, `::error file=...,line=...` at the manifest line of the
changed property; with `GITHUB_STEP_SUMMARY` set, the markdown report is
appended there too), `markdown` (a pull-request comment). DIR may hold
namespace policy manifests too: they go with the bundle (`policies`), and every
format shows them and the breaking changes accepted on purpose, as accepted.

DIR (or a live server's listing) is each namespace's whole set of tools: a tool
the namespace serves that it no longer holds is `tool-removed` (or
`tool-renamed`), a breaking change without a decision, unless `--retire-removed`
retires it in the same bundle (registry/cli/releases.py); `apply` applies
nothing while one is undecided. Where the release names its `serverInfo.version`
(the live server, DIR's `initialize.json`, the manifests' `server_version`),
its bump is compared with the change; `--fail-on semver` makes a mismatch fail.

Every format lists each new definition's risk findings (registry.risks) beside
its changes, and the versions the namespace's review policy would hold
(`pending`); `--fail-on risk` makes a finding fail `check` and `plan`.

Exit codes: 0 ok; 1 a breaking change lacks its decision (a tool removed
included), the registry refused the bundle (409), (`--fail-on semver`) the
version bump does not match the change, or (`--fail-on risk`) a risk finding;
2 bad manifests, a bad toolset file, an unreachable registry, or any other
problem answer (401, 403, 422, 5xx).

Base install only: httpx and msgspec, no service imports.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import msgspec

from registry.cli.capture import (
    checked_namespace,
    fail_on_argument,
    live_manifests,
    namespace_argument,
    read_server,
    server_of,
)
from registry.cli.common import (
    EXIT_BREAKING,
    EXIT_OK,
    PROG,
    Failed,
    InputError,
    Verb,
    located,
    one_line,
    registry_token,
    registry_url,
)
from registry.cli.live import LiveServer, Surface
from registry.cli.offline import answer_against, offline_answer, read_toolset
from registry.cli.releases import (
    NamespaceState,
    captured_initialize,
    held_names,
    missing,
    release_versions,
    retirements,
    served_offline,
    served_online,
    with_release,
)
from registry.cli.render import (
    FORMATS,
    Mode,
    Report,
    append_step_summary,
    display_path,
    github_command,
    new_namespaces,
    render,
)
from registry.manifests import Manifest, ManifestError, PolicyManifest, collect_bundle
from registry.policy.plan import ApplyRequest, PlanAnswer

if TYPE_CHECKING:
    import httpx

    from registry.lint import Config

__all__ = ["PIPELINE_VERBS", "run_apply", "run_check", "run_plan"]

_DEFAULT_TIMEOUT = 30.0


def _input_error(message: str) -> NoReturn:
    raise InputError(one_line(message))


# -- arguments ---------------------------------------------------------------------------


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "A live server instead of DIR: --namespace NS --from-server -- COMMAND [ARGS...] "
        "(stdio; the server runs with this environment), or --from-server URL "
        "(streamable HTTP)."
    )
    parser.add_argument(
        "directory",
        metavar="DIR",
        nargs="?",
        help="the manifests: a directory searched recursively for *.yaml, *.yml and *.json "
        "(hidden files and directories skipped), or one manifest file",
    )
    parser.add_argument(
        "--from-server",
        metavar="URL",
        nargs="?",
        const="",
        help="instead of DIR, the tools a live MCP server lists (needs --namespace and the "
        "[mcp] extra): its command after `--` (stdio), or its streamable HTTP URL, given "
        "here or as --url (the registry's URL then comes from REGISTRY_URL)",
    )
    namespace_argument(parser, required=False)
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument(
        "--token",
        help="a bearer token with <namespace>:publish for every namespace of DIR "
        "(env REGISTRY_TOKEN)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: a table; json: schemas/plan.schema.json; github: workflow commands "
        "at the manifest lines; markdown: a pull-request comment (default text)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT_TIMEOUT,
        help="seconds to wait for the registry, and for the server with --from-server "
        f"(default {_DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--create-namespace",
        metavar="NS",
        action="append",
        default=[],
        help="create namespace NS if it does not exist (needs NS:admin; repeatable), as "
        "`create_namespace: true` in a manifest does; without either, a namespace that "
        "does not exist is refused (namespace-not-found), so a typo is never created",
    )
    parser.add_argument(
        "--retire-removed",
        action="store_true",
        help="retire, in the same bundle, every served version of each tool the namespace "
        "serves that DIR (or the server) no longer holds; without it such a tool is a "
        "breaking change without a decision (tool-removed)",
    )


def _gate_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    fail_on_argument(parser, lint=True)
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="the repository's settings (default: the nearest mcp-registry.yaml): DIR "
        "from `manifests`, --namespace from `namespace`, and `fail_on`",
    )


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    _gate_arguments(parser)
    parser.add_argument(
        "--against-file",
        metavar="TOOLSET",
        help="check offline against a saved toolset (the payload of "
        "GET /v1/namespaces/{ns}/toolset, e.g. from `registry sync NS -o toolset.json`); "
        "no network is used",
    )
    parser.add_argument(
        "--against",
        metavar="REF",
        help="check offline against DIR as it is at a git revision of its repository "
        "(main, v1.4.0, HEAD~1, or .git#branch=main): the last release, no registry",
    )


# -- the verbs -----------------------------------------------------------------------------


def run_plan(args: argparse.Namespace) -> int:
    return _run(args, "plan")


def run_apply(args: argparse.Namespace) -> int:
    return _run(args, "apply")


def run_check(args: argparse.Namespace) -> int:
    return _run(args, "check")


def _run(args: argparse.Namespace, mode: Mode) -> int:
    out, err = sys.stdout, sys.stderr
    config = _configured(args)
    against = getattr(args, "against_file", None)
    revision = getattr(args, "against", None)
    if against and revision:
        _input_error("--against and --against-file: name one")
    retire = bool(args.retire_removed)
    server = _live_server(args)
    surface: Surface | None = None
    try:
        policies: list[PolicyManifest] = []
        if server is None:
            manifests, policies = _load(args.directory, args.format, out)
        if revision:
            if server is not None:
                _input_error("--against reads DIR at a git revision: give DIR, not --from-server")
            answer, states, bundle = _against_revision(
                args.directory, revision, manifests, policies, retire
            )
            refusal = None
        elif against:
            if server is not None:
                surface, manifests = _read_live(args, server)
            saved = read_toolset(against)
            states = served_offline(*saved)
            bundle = [*manifests, *(retirements(states, manifests) if retire else [])]
            answer = offline_answer(bundle, against, policies, saved)
            refusal = None
        else:
            url, token = _endpoint(args, server)
            if server is not None:
                surface, manifests = _read_live(args, server)
            client = _Client(url, token, args.timeout)
            names = {m.namespace for m in manifests}
            states = served_online(client.get_json, names, held_names(manifests))
            bundle = [*manifests, *(retirements(states, manifests) if retire else [])]
            # a tool left without a decision: nothing is applied, the plan says why
            applying = mode == "apply" and (retire or not missing(states, manifests))
            if applying and err.isatty():
                noun = "manifest" if len(bundle) == 1 else "manifests"
                print(f"{PROG}: applying {len(bundle)} {noun} to {url} ...", file=err)
            answer, refusal = client.apply(
                bundle, policies, plan=not applying, create=args.create_namespace
            )
    except Failed as failed:
        for line in failed.lines:
            print(f"{PROG}: {line}", file=err)
        return failed.code
    answer = _with_release(args, answer, manifests, states, surface, retire)
    live = server.label if server is not None else None
    report = Report(
        mode,
        answer,
        bundle,
        offline=bool(against or revision),
        live=live,
        policies=policies,
        fail_on_semver="semver" in getattr(args, "fail_on", []),
        fail_on_risk="risk" in getattr(args, "fail_on", []),
    )
    render(report, args.format, out)
    if args.format == "github":
        append_step_summary(report)
    if mode == "apply" and err.isatty():
        _progress(answer, err)
    if refusal is not None:
        print(f"{PROG}: {refusal}", file=err)
    if mode == "apply":
        if answer.applied and surface is not None:
            return _store_capabilities(client, args.namespace, surface.initialize)
        captured = captured_initialize(args.directory, manifests) if answer.applied else None
        if captured is not None:
            return _store_capabilities(client, captured[0], captured[1])
        return EXIT_OK if answer.applied else EXIT_BREAKING
    linted = _lint(args, config, manifests, out, err) if "lint" in args.fail_on else True
    if report.semver_failed() or report.risk_failed() or not linted:
        return EXIT_BREAKING
    return EXIT_OK if answer.accepted else EXIT_BREAKING


def _configured(args: argparse.Namespace) -> Config:
    """mcp-registry.yaml (or --config): DIR, --namespace and `fail_on` where the command
    line leaves them out."""
    from registry.lint import ConfigError, find

    try:
        config = find(getattr(args, "config", None))
    except ConfigError as error:
        _input_error(str(error))
    if args.directory is None and args.from_server is None:
        folders = config.manifest_folders()
        if len(folders) > 1:
            _input_error(
                f"mcp-registry.yaml names {len(folders)} manifest folders: give DIR, one of "
                + ", ".join(folders)
            )
        args.directory = folders[0] if folders else None
    if args.from_server is not None and args.namespace is None:
        args.namespace = config.namespace
    wanted = {*getattr(args, "fail_on", []), *(f for f in config.fail_on if f != "breaking")}
    args.fail_on = sorted(wanted & {"semver", "lint", "risk"})
    return config


def _lint(
    args: argparse.Namespace, config: Config, manifests: list[Manifest], out: TextIO, err: TextIO
) -> bool:
    """`fail_on: lint`: the configured lint rules over the manifests, their findings
    after the report (on stderr beside JSON, whose document stays the plan's)."""
    from registry.cli.lint import write_findings
    from registry.lint import lint_manifests

    found = lint_manifests(manifests, config)
    if found:
        where = err if args.format == "json" else out
        write_findings(found, "github" if args.format == "github" else "text", where)
        count = f"{len(found)} lint finding{'s' if len(found) != 1 else ''}"
        print(f"{PROG}: {count} (fail_on: lint)", file=err)
    return not found


def _against_revision(
    directory: str,
    text: str,
    manifests: list[Manifest],
    policies: list[PolicyManifest],
    retire: bool,
) -> tuple[PlanAnswer, dict[str, NamespaceState], list[Manifest]]:
    """The plan of DIR against DIR at the git revision `text`, one namespace at a time;
    the namespaces' states as the revision has them; the bundle planned."""
    from registry.cli.revision import parse_ref, released_manifests, released_toolsets

    ref = parse_ref(text)
    released = released_manifests(directory, ref)
    _, toolsets = released_toolsets(manifests, released)
    states: dict[str, NamespaceState] = {}
    for namespace, raw in toolsets.items():
        states.update(served_offline(namespace, raw))
    bundle = [*manifests, *(retirements(states, manifests) if retire else [])]
    changed, toolsets = released_toolsets(bundle, released)
    answers = [
        answer_against(
            [m for m in changed if m.namespace == namespace],
            namespace,
            raw,
            [p for p in policies if p.namespace == namespace],
            f"{directory} at {ref}",
        )
        for namespace, raw in toolsets.items()
    ]
    answer = PlanAnswer(
        accepted=all(a.accepted for a in answers),
        applied=False,
        tools=[plan for a in answers for plan in a.tools],
        namespaces=[n for a in answers for n in a.namespaces],
        policies=[p for a in answers for p in a.policies],
    )
    return answer, states, bundle


def _with_release(
    args: argparse.Namespace,
    answer: PlanAnswer,
    manifests: list[Manifest],
    states: dict[str, NamespaceState],
    surface: Surface | None,
    retire: bool,
) -> PlanAnswer:
    """The answer with the tools the manifests no longer hold and each version bump."""
    live = None
    if surface is not None:
        version = surface.initialize.get("serverInfo", {}).get("version")
        live = (args.namespace, version) if isinstance(version, str) else None
    directory = args.directory if surface is None else None
    versions = release_versions(manifests, directory, live)
    return with_release(answer, manifests, states, versions, retired=retire)


def _live_server(args: argparse.Namespace) -> LiveServer | None:
    """The server of --from-server, or None for DIR; the flags checked together."""
    command = getattr(args, "server_command", None)
    if args.from_server is None:
        if command is not None:
            _input_error("a command after -- names a server to read: add --from-server")
        if args.namespace is not None:
            _input_error("--namespace goes with --from-server (a manifest names its namespace)")
        if not args.directory:
            _input_error("give DIR (a directory of manifests) or --from-server")
        return None
    if args.directory:
        _input_error(f"give DIR ({args.directory}) or --from-server, not both")
    checked_namespace(args.namespace)
    url = args.from_server or None
    if url is None and not command and args.url:
        # `--from-server --url URL`, capture's spelling: --url is the server
        url, args.url = args.url, None
    return server_of(args, url)


def _read_live(args: argparse.Namespace, server: LiveServer) -> tuple[Surface, list[Manifest]]:
    def as_manifests(surface: Surface) -> tuple[Surface, list[Manifest]]:
        return surface, live_manifests(args.namespace, surface)  # as the server exits

    try:
        return read_server(server, args.timeout, as_manifests)
    except Failed as failed:
        raise Failed([f"{server.label}: {line}" for line in failed.lines]) from None


def _store_capabilities(client: _Client, namespace: str, initialize: Any) -> int:
    """After an applied --from-server (or a DIR holding a captured initialize.json):
    the server's initialize result, as `PUT /v1/namespaces/{ns}/capabilities`
    takes it (seed 004); the next release's version bump is compared with it."""
    try:
        line = client.put_capabilities(namespace, msgspec.to_builtins(initialize))
    except Failed as failed:
        for text in failed.lines:
            print(f"{PROG}: the tools were applied, but {text}", file=sys.stderr)
        return failed.code
    print(f"{PROG}: {line}", file=sys.stderr)
    return EXIT_OK


def _endpoint(args: argparse.Namespace, server: LiveServer | None) -> tuple[str, str | None]:
    url = registry_url(args)
    if not url:
        hint = " (or check offline with --against-file)" if hasattr(args, "against_file") else ""
        if server is not None and server.url is not None and args.from_server == "":
            hint += "; with --from-server --url, --url names the server"
        _input_error(f"no registry URL: pass --url or set REGISTRY_URL{hint}")
    if not url.startswith(("http://", "https://")):
        _input_error(f"registry URL {url!r} must start with http:// or https://")
    if args.timeout <= 0:
        _input_error("--timeout must be positive")
    return url.rstrip("/"), registry_token(args)


def _load(
    directory: str, output_format: str, out: TextIO
) -> tuple[list[Manifest], list[PolicyManifest]]:
    manifests, policies, errors = collect_bundle(directory)
    if errors:
        if output_format == "github":
            for error in errors:
                out.write(_manifest_error_command(error))
        raise Failed([one_line(str(error)) for error in errors])
    return manifests, policies


def _manifest_error_command(error: ManifestError) -> str:
    props = {"file": display_path(error.path)}
    if error.line is not None:
        props["line"] = str(error.line)
        if error.column is not None:
            props["col"] = str(error.column)
    props["title"] = "invalid manifest"
    message = f"{error.pointer}: {error.message}" if error.pointer else error.message
    return github_command("error", props, message)


def _progress(answer: PlanAnswer, err: TextIO) -> None:
    for name in new_namespaces(answer):
        print(f"namespace {name}: {'created' if answer.applied else 'not created'}", file=err)
    for step in answer.policies:
        if step.action == "set":
            done = "set" if answer.applied else "not set"
            print(f"namespace {step.namespace}: policy {done}", file=err)
    total = len(answer.tools)
    for index, tool in enumerate(answer.tools, 1):
        if not answer.applied:
            status = "refused" if not tool.accepted else "not applied"
        elif tool.state == "pending" and tool.action != "unchanged":
            status = f"v{tool.version} held for review (pending)"
        elif tool.action == "create":
            status = f"created v{tool.version}"
        elif tool.action == "new-version":
            status = f"published v{tool.version}"
        elif tool.lifecycle or any(a.action != "unchanged" for a in tool.aliases):
            status = f"v{tool.version} unchanged, lifecycle and aliases updated"
        else:
            status = f"v{tool.version} unchanged"
        print(f"[{index}/{total}] {tool.namespace}/{tool.tool}: {status}", file=err)


# -- the registry -----------------------------------------------------------------------------


class _Client:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        self.url = url
        self.token = token
        self.timeout = timeout

    def apply(
        self,
        manifests: Sequence[Manifest],
        policies: Sequence[PolicyManifest],
        *,
        plan: bool,
        create: Sequence[str] = (),
    ) -> tuple[PlanAnswer, str | None]:
        """The plan (or the applied plan); a 409 refusal answers its plan and a line
        saying why. Any other failure raises `Failed` (exit 2)."""
        endpoint = f"{self.url}/v1/apply" + ("?plan=true" if plan else "")
        headers = {"Accept": "application/json, application/problem+json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        bundle = ApplyRequest(
            manifests=[m.to_body() for m in manifests],
            policies=[p.to_body() for p in policies] if policies else msgspec.UNSET,
            create_namespaces=list(dict.fromkeys(create)),
        )
        body = msgspec.json.encode(bundle)
        headers["Content-Type"] = "application/json"
        response = self._send("POST", endpoint, content=body, headers=headers)
        if response.status_code == 200:
            return _decode_answer(endpoint, response.content), None
        problem = _problem(response)
        if response.status_code == 409:
            reports = problem.get("reports")
            if isinstance(reports, dict):
                answer = _decode_answer(endpoint, json.dumps(reports).encode())
                return answer, _problem_line(endpoint, response, problem, manifests, policies)
            line = _problem_line(endpoint, response, problem, manifests, policies)
            raise Failed([line], code=1)
        line = _problem_line(endpoint, response, problem, manifests, policies)
        if response.status_code == 401 and not self.token:
            line += " (pass --token or set REGISTRY_TOKEN)"
        raise Failed([line])

    def get_json(self, path: str) -> Any:
        """GET `path` of the registry: its JSON, None for a 404; any other answer
        raises Failed (exit 2)."""
        endpoint = f"{self.url}{path}"
        headers = {"Accept": "application/json, application/problem+json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        response = self._send("GET", endpoint, headers=headers)
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            line = _problem_line(endpoint, response, _problem(response), [])
            if response.status_code == 401 and not self.token:
                line += " (pass --token or set REGISTRY_TOKEN)"
            raise Failed([line])
        try:
            return response.json()
        except ValueError:
            raise Failed([f"{endpoint}: not JSON: {one_line(response.text)[:200]}"]) from None

    def put_capabilities(self, namespace: str, initialize: dict[str, Any]) -> str:
        """Store an initialize result; answers the line to print, raises Failed."""
        endpoint = f"{self.url}/v1/namespaces/{namespace}/capabilities"
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        response = self._send("PUT", endpoint, json=initialize, headers=headers)
        if response.status_code not in (200, 201):
            problem = _problem(response)
            raise Failed([_problem_line(endpoint, response, problem, [])])
        seq = response.json().get("seq")
        done = "stored" if response.status_code == 201 else "unchanged"
        return f"capabilities of {namespace} (the server's initialize result): {done}, record {seq}"

    def _send(self, method: str, endpoint: str, **request: Any) -> httpx.Response:
        import httpx  # imported here: the verbs that never reach a registry start faster

        try:
            with httpx.Client(timeout=self.timeout, follow_redirects=False) as client:
                return client.request(method, endpoint, **request)
        except httpx.HTTPError as exc:
            reason = one_line(str(exc)) or type(exc).__name__
            raise Failed([f"cannot reach the registry at {endpoint}: {reason}"]) from None


def _decode_answer(endpoint: str, content: bytes) -> PlanAnswer:
    try:
        return msgspec.json.decode(content, type=PlanAnswer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Failed([f"{endpoint}: not a plan answer: {one_line(str(exc))}"]) from None


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        problem = response.json()
    except ValueError:
        return {"detail": one_line(response.text)[:200]}
    return problem if isinstance(problem, dict) else {"detail": one_line(str(problem))[:200]}


def _problem_line(
    endpoint: str,
    response: httpx.Response,
    problem: dict[str, Any],
    manifests: Sequence[Manifest],
    policies: Sequence[PolicyManifest] = (),
) -> str:
    """`URL answered 422 (converter-unverified): file:line:col: /pointer: detail`."""
    status = response.status_code
    kind = str(problem.get("type") or "").rsplit("/", 1)[-1] or response.reason_phrase
    detail = one_line(str(problem.get("detail") or problem.get("title") or ""))
    where = ""
    pointer = problem.get("pointer")
    files: Sequence[Manifest | PolicyManifest] = manifests
    prefix, fallback = "/manifests/", "/tool/name"
    if isinstance(pointer, str) and pointer.startswith("/policies/"):
        files, prefix, fallback = policies, "/policies/", "/policy"
    if isinstance(pointer, str) and pointer.startswith(prefix):
        index_text, _, rest = pointer.removeprefix(prefix).partition("/")
        if index_text.isdigit() and int(index_text) < len(files):
            manifest = files[int(index_text)]
            inner = f"/{rest}" if rest else ""
            detail = detail.removeprefix(f"{manifest.path}: ").removeprefix(f"{pointer}: ")
            where = located(manifest, inner or fallback) + (f": {inner}" if inner else "")
    text = f"{endpoint} answered {status} ({kind})"
    if where:
        text += f": {where}"
    return f"{text}: {detail}" if detail else text


# -- the verbs, for registry.cli -------------------------------------------------------------------


PIPELINE_VERBS: list[Verb] = [
    Verb(
        "plan",
        "show what applying the manifests of DIR would do (POST /v1/apply?plan=true); "
        "exit 1 when something would be refused",
        _gate_arguments,
        run_plan,
        takes_command=True,
    ),
    Verb(
        "apply",
        "apply the manifests of DIR in one transaction: all of it lands or none of it "
        "does; re-running is a no-op",
        _common_arguments,
        run_apply,
        takes_command=True,
    ),
    Verb(
        "check",
        "exit 1 when a manifest of DIR (or a tool of a live server, --from-server) carries "
        "a breaking change without its decision (online, or offline with --against-file)",
        _check_arguments,
        run_check,
        takes_command=True,
    ),
]
