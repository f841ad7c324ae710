"""deploy/proxy/: the proxy as a sidecar, checked without a cluster or a container engine.

The manifest validates strictly (kubernetes-validate), the proxy container runs
`registry proxy` in front of the server's localhost port with the flags the
CLI takes, its probes ask the proxy's own `/healthz`, the Service reaches the
proxy and never the server, the token comes from a Secret; hadolint passes the
Dockerfile.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from registry.cli import main
from tests.proxy.harness import ROOT
from tests.test_deploy import K8S_VERSIONS, hadolint

SIDECAR = ROOT / "deploy" / "proxy" / "sidecar.yaml"
DOCKERFILE = ROOT / "deploy" / "proxy" / "Dockerfile"

__all__ = ["hadolint"]


def documents() -> dict[str, dict[str, Any]]:
    return {d["kind"]: d for d in yaml.safe_load_all(SIDECAR.read_text()) if d}


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_sidecar_manifest_validates_strictly(version: str) -> None:
    for document in documents().values():
        kubernetes_validate.validate(document, version, strict=True)


def test_the_proxy_stands_in_front_of_the_server_and_the_service_reaches_only_the_proxy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = documents()
    pod = found["Deployment"]["spec"]["template"]["spec"]
    server, proxy = pod["containers"]
    assert "127.0.0.1" in server["args"] and "ports" not in server
    args = dict(a.removeprefix("--").split("=", 1) for a in proxy["args"])
    upstream_port = server["args"][server["args"].index("--port") + 1]
    assert args["upstream"] == f"http://127.0.0.1:{upstream_port}/mcp"
    (port,) = proxy["ports"]
    assert int(args["port"]) == port["containerPort"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert proxy[probe]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    token = next(e for e in proxy["env"] if e["name"] == "REGISTRY_TOKEN")
    assert "secretKeyRef" in token["valueFrom"]
    assert found["Service"]["spec"]["ports"][0]["targetPort"] == port["name"]
    # the flags are the CLI's own: it parses them (and then stops at the missing registry)
    local = ["--host", "127.0.0.1", "--port", "0", "--init-timeout", "0.1"]  # later flags win
    assert main(["proxy", *proxy["args"], *local]) == 1
    assert "unrecognized arguments" not in capsys.readouterr().err


def test_hadolint_passes_the_proxy_dockerfile(hadolint: str) -> None:
    run = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_image_installs_the_proxy_extra() -> None:
    text = DOCKERFILE.read_text()
    assert "'./[proxy]'" in text and 'ENTRYPOINT ["registry", "proxy"]' in text
    assert Path(ROOT / "pyproject.toml").read_text().count("proxy = [") == 1
