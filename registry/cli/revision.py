"""`registry check DIR --against REF`: check manifests against their own last release in
git, without a registry, as `buf breaking --against '.git#branch=main'` does.

    registry check tools/ --against main
    registry check tools/ --against v1.4.0 --format github
    registry check tools/ --against '.git#branch=main'     # buf's spelling works too

The manifests of DIR as they are at REF (`git archive`, nothing checked out) are the
released tools: each is the served version of its tool, and the planner runs offline
against them (offline.py), with the same report, formats and exit codes as against a
registry. A manifest's decisions are history once released: only the decisions the
change adds (converters, retirements, deprecations, acceptances not in the manifest
at REF) are read, against the released version, whose number is the one those new
decisions name (1 when they name none). A tool at REF that DIR no longer holds is
left to the planner's view of the namespace (see offline.py).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from registry.cli.common import Failed, InputError, located
from registry.manifests import Manifest, PolicyManifest, collect_bundle

__all__ = ["Released", "parse_ref", "released_manifests", "released_toolsets"]


def parse_ref(text: str) -> str:
    """A git revision: as written (`main`, `v1.2.0`, `HEAD~1`), or buf's `.git#branch=main`,
    `.git#tag=v1`, `.git#ref=abc123`."""
    if text.startswith(".git#"):
        key, _, value = text.removeprefix(".git#").partition("=")
        if key not in ("branch", "tag", "ref", "commit") or not value:
            raise InputError(
                f"--against {text!r}: write .git#branch=NAME, .git#tag=NAME or a revision"
            )
        return value
    if not text or text.startswith("-"):
        raise InputError(f"--against {text!r} is not a git revision")
    return text


def _git(folder: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", "-C", str(folder), *argv], capture_output=True, check=False, timeout=60
        )
    except FileNotFoundError:
        raise InputError("--against needs git on PATH") from None


class Released(msgspec.Struct, frozen=True):
    """The manifests and policies of DIR at REF; `label` is what messages call REF."""

    manifests: list[Manifest]
    policies: list[PolicyManifest]
    label: str

    def find(self, key: tuple[str, str]) -> Manifest | None:
        return next((m for m in self.manifests if m.key == key), None)


def released_manifests(directory: str, ref: str) -> Released:
    """DIR's manifests as they are at `ref`, their paths written `REF:path`."""
    target = Path(directory).resolve()
    folder = target if target.is_dir() else target.parent
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise InputError(f"--against {ref}: {directory} is not in a git repository")
    root = Path(top.stdout.decode().strip())
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit.returncode != 0:
        raise InputError(f"--against {ref}: no such revision in {root}")
    relative = target.relative_to(root).as_posix()
    archive = _git(root, "archive", "--format=tar", ref, "--", relative or ".")
    if archive.returncode != 0:
        # DIR did not exist at REF: every tool is new
        return Released([], [], ref)
    with tempfile.TemporaryDirectory(prefix="registry-against-") as scratch:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(scratch, filter="data")
        manifests, policies, errors = collect_bundle(os.path.join(scratch, relative))
    prefix = scratch + os.sep

    def renamed(path: str) -> str:
        return f"{ref}:{path.removeprefix(prefix)}"

    if errors:
        raise Failed([f"{renamed(error.path)}: {error.message}" for error in errors])
    return Released(
        [msgspec.structs.replace(m, path=renamed(m.path)) for m in manifests],
        [msgspec.structs.replace(p, path=renamed(p.path)) for p in policies],
        ref,
    )


def released_toolsets(
    manifests: Sequence[Manifest], released: Released
) -> tuple[list[Manifest], dict[str, dict[str, Any]]]:
    """(the manifests with only the decisions the change adds, a toolset payload per
    namespace holding each released tool as its one served version)."""
    changed = [_added_decisions(m, released.find(m.key)) for m in manifests]
    numbers = {m.key: _released_number(m, released.label) for m in changed}
    toolsets: dict[str, dict[str, Any]] = {
        namespace: {"namespace": namespace, "tools": []}
        for namespace in sorted({m.namespace for m in (*manifests, *released.manifests)})
    }
    for old in released.manifests:
        version = {
            "version": numbers.get(old.key, 1),
            "digest": old.digest,
            "state": "active",
            "definition": old.tool,
            "route": [],
        }
        toolsets[old.namespace]["tools"].append(
            {"name": old.name, "versions": [version], "retired": []}
        )
    return changed, toolsets


def _added_decisions(manifest: Manifest, old: Manifest | None) -> Manifest:
    """The manifest with the decisions it held at REF taken out (they were applied then)."""
    if old is None:
        return manifest
    return msgspec.structs.replace(
        manifest,
        retire=[n for n in manifest.retire if n not in old.retire],
        deprecate=[d for d in manifest.deprecate if d not in old.deprecate],
        converters=[c for c in manifest.converters if c not in old.converters],
        accept=[a for a in manifest.accept if a not in old.accept],
        aliases=[a for a in manifest.aliases if a not in old.aliases],
    )


def _released_number(manifest: Manifest, label: str) -> int:
    named = {
        *manifest.retire,
        *(d.version for d in manifest.deprecate),
        *(c.from_ for c in manifest.converters),
    }
    if len(named) > 1:
        versions = " and ".join(str(n) for n in sorted(named))
        raise Failed(
            [
                f"{located(manifest, '/converters')}: the change's decisions name versions "
                f"{versions}, and {label} holds one released version of {manifest.name}: "
                "check against the registry (--url) instead"
            ]
        )
    return named.pop() if named else 1
