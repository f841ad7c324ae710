"""Export and import of a large registry: time, peak memory at two sizes, digest verification.

    .venv/bin/python bench/transfer_bench.py             # 10,000 tools x 5 versions, and 2,000
    .venv/bin/python bench/transfer_bench.py --tools 1000 --small 200 --rounds 1   # quick

A script, not a test (tests assert no time). On an embedded PostgreSQL started
here (throwaway settings: fsync off), for each size:

* the file: an export of TOOLS tools x VERSIONS versions, each version a
  distinct definition of a few properties with its publish audit event, written
  with the export format's own writer; then the rate at which an import
  verifies it (`ImportCheck`: each line decoded, each digest recomputed from
  its definition, the file's SHA-256), in-process;
* `registry import FILE --database-url` and `registry export --database-url`
  as subprocesses, each timed, with its peak resident memory (`wait4`), against
  the baseline measured in the same run, interleaved round by round:
  `pg_restore` and `pg_dump --format=custom` of the same database;
* the same through the HTTP API of a `registry serve` subprocess
  (`POST /v1/import`, `GET /v1/export` streamed to nowhere), with the server's
  peak resident memory above what it held before (sampled every 20 ms).

Bounded memory shows as peaks that do not grow with the registry: the last
lines print each peak at the large size over the one at the small size, beside
the ratio of the registry sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402
import httpx  # noqa: E402
import msgspec  # noqa: E402
import psutil  # noqa: E402

from registry.canonical import digest  # noqa: E402
from registry.export_format import (  # noqa: E402
    AuditRecord,
    ExportWriter,
    ImportCheck,
    NamespaceRecord,
    ToolRecord,
    VersionRecord,
    split_lines,
)
from registry.store.embedded import EmbeddedPostgres, postgres_bin_dir  # noqa: E402
from registry.store.migrations import migrate  # noqa: E402
from tests.ports import free_port  # noqa: E402

REGISTRY = [str(Path(sys.executable).parent / "registry")]
FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
AT = datetime(2026, 12, 1, tzinfo=UTC)
ADMIN = "bench-admin"
MiB = 1024 * 1024


def definition(tool: int, version: int) -> dict[str, Any]:
    """A tool's definition at a version: its properties grow one by one (additive)."""
    properties: dict[str, Any] = {
        "query": {"type": "string", "description": f"What tool {tool} looks up."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500},
    }
    for field in range(version):
        properties[f"field_{field}"] = {"type": "string", "maxLength": 64 + field}
    return {
        "name": f"tool-{tool:05d}",
        "description": f"Tool {tool} of the bench namespace, version {version}.",
        "inputSchema": {"type": "object", "properties": properties, "required": ["query"]},
        "annotations": {"readOnlyHint": True},
    }


def write_file(path: Path, tools: int, versions: int) -> int:
    """An export file of `tools` x `versions` in one namespace; its size in bytes."""
    writer = ExportWriter()
    event = 0
    with path.open("wb") as out:
        out.write(
            writer.header(
                namespaces=["bench"],
                scope="namespaces",
                usage=False,
                exported_at=AT,
                registry_version="bench",
            )
        )
        out.write(writer.line(NamespaceRecord(name="bench", created_at=AT)))
        for tool in range(tools):
            out.write(
                writer.line(ToolRecord(namespace="bench", name=f"tool-{tool:05d}", created_at=AT))
            )
        audit: list[bytes] = []
        for tool in range(tools):
            for version in range(1, versions + 1):
                body = definition(tool, version)
                out.write(
                    writer.line(
                        VersionRecord(
                            namespace="bench",
                            tool=body["name"],
                            version=version,
                            digest=digest(body),
                            definition=msgspec.Raw(msgspec.json.encode(body)),
                            state="active",
                            sunset=None,
                            created_at=AT,
                            acceptances=msgspec.Raw(b"[]"),
                        )
                    )
                )
                event += 1
                audit.append(
                    msgspec.json.encode(
                        AuditRecord(
                            id=event,
                            at=AT,
                            actor="tok_bench",
                            action="version.publish",
                            namespace="bench",
                            tool=body["name"],
                            version=version,
                            request_id=None,
                            detail=msgspec.Raw(b'{"severity": "additive"}'),
                        )
                    )
                )
        for line in audit:  # the writer counts and hashes them in file order
            out.write(writer.line(msgspec.json.decode(line, type=AuditRecord)))
        out.write(writer.end())
    return path.stat().st_size


def verification_rate(path: Path) -> tuple[float, float, int]:
    """(versions per second, MiB per second, versions) of `ImportCheck` over the file."""
    check = ImportCheck()
    began = time.perf_counter()
    with path.open("rb") as handle:
        for number, line in split_lines(iter(lambda: handle.read(1 << 18), b"")):
            check.read(number, line)
    check.finish()
    took = time.perf_counter() - began
    return check.verified_digests / took, path.stat().st_size / MiB / took, check.verified_digests


class Cluster:
    def __init__(self, root: Path) -> None:
        self.server = EmbeddedPostgres(root / "pg", settings=FAST)
        self.server.start()

    def new_database(self, migrated: bool = True) -> str:
        name = f"bench_{uuid.uuid4().hex[:12]}"

        async def create() -> None:
            admin = await asyncpg.connect(self.server.dsn())
            try:
                await admin.execute(f'CREATE DATABASE "{name}"')
            finally:
                await admin.close()
            if migrated:
                await migrate(self.server.dsn(name))

        asyncio.run(create())
        return self.server.dsn(name)


def timed(command: list[str], **kwargs: Any) -> tuple[float, float]:
    """(seconds, peak resident MiB) of a subprocess, which must succeed. The peak is sampled
    (every 20 ms): `wait4`'s ru_maxrss would count the pages the child shared with this
    process between fork and exec."""
    began = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kwargs)
    with Sampler(process.pid, relative=False) as sampled:
        _, err = process.communicate()
    took = time.perf_counter() - began
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {err.decode()}")
    return took, sampled.peak / MiB


class Sampler:
    """The peak resident memory of a process while the block runs (`growth`: above its
    level before; `relative=False`: from nothing, for a process just started)."""

    def __init__(self, pid: int, *, relative: bool = True) -> None:
        self.process = psutil.Process(pid)
        self.before = self.process.memory_info().rss if relative else 0
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:  # it has exited
                return
            time.sleep(0.02)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> float:
        return (self.peak - self.before) / MiB


def serve(database_url: str, root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env["REGISTRY_BOOTSTRAP_TOKEN"] = ADMIN
    process = subprocess.Popen(
        [*REGISTRY, "serve", "--database-url", database_url, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=(root / f"serve-{port}.log").open("wb"),
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("serve did not start")


def http_import(url: str, path: Path) -> float:
    began = time.perf_counter()

    def chunks() -> Iterator[bytes]:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 18):
                yield chunk

    answer = httpx.post(
        url + "/v1/import",
        content=chunks(),
        headers={"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/jsonl"},
        timeout=3600,
    )
    if answer.status_code != 201:
        raise SystemExit(f"HTTP import: {answer.status_code} {answer.text[:300]}")
    return time.perf_counter() - began


def http_export(url: str) -> tuple[float, int]:
    began = time.perf_counter()
    size = 0
    with httpx.stream(
        "GET", url + "/v1/export", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=3600
    ) as answer:
        for chunk in answer.iter_bytes():
            size += len(chunk)
    return time.perf_counter() - began, size


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(
    cluster: Cluster, root: Path, tools: int, versions: int, rounds: int
) -> dict[str, float]:
    path = root / f"export-{tools}.jsonl"
    size = write_file(path, tools, versions)
    rate, mib_rate, verified = verification_rate(path)
    print(
        f"\n{tools:,} tools x {versions} versions: file {size / MiB:.1f} MiB; import verifies "
        f"{rate:,.0f} digests/s ({mib_rate:.1f} MiB/s of file, {verified:,} digests)"
    )
    bin_dir = postgres_bin_dir()
    source = cluster.new_database()
    took, _ = timed([*REGISTRY, "import", str(path), "--database-url", source])  # the source
    rows: dict[str, list[float]] = {name: [] for name in (
        "import", "import_rss", "pg_restore", "export", "export_rss", "pg_dump",
    )}  # fmt: skip
    dump = root / f"dump-{tools}.custom"
    for _ in range(rounds):
        took, rss = timed(
            [*REGISTRY, "export", "-o", str(root / "out.jsonl"), "--database-url", source]
        )
        rows["export"].append(took)
        rows["export_rss"].append(rss)
        took, _ = timed([str(bin_dir / "pg_dump"), "--format=custom", "--file", str(dump), source])
        rows["pg_dump"].append(took)
        took, rss = timed(
            [*REGISTRY, "import", str(path), "--database-url", cluster.new_database()]
        )
        rows["import"].append(took)
        rows["import_rss"].append(rss)
        took, _ = timed(
            [str(bin_dir / "pg_restore"), "--dbname", cluster.new_database(False), str(dump)]
        )
        rows["pg_restore"].append(took)
    found = {name: median(values) for name, values in rows.items()}
    print(f"  {'':28} {'median s':>9} {'baseline s':>10} {'ratio':>6} {'peak RSS':>9}")
    for ours, theirs, rss in (
        ("export", "pg_dump", "export_rss"),
        ("import", "pg_restore", "import_rss"),
    ):
        print(
            f"  registry {ours:<19} {found[ours]:9.2f} {found[theirs]:10.2f} "
            f"{found[ours] / found[theirs]:5.2f}x {found[rss]:7.0f} MiB   ({theirs} the baseline)"
        )
    print(
        f"  ({verified / found['import']:,.0f} versions/s imported, "
        f"{verified / found['export']:,.0f} versions/s exported, CLI on the database)"
    )
    process, url = serve(cluster.new_database(), root)
    try:
        with Sampler(process.pid) as imported:
            took_in = http_import(url, path)
        with Sampler(process.pid) as exported:
            took_out, sent = http_export(url)
    finally:
        process.terminate()
        process.wait(timeout=60)
    print(
        f"  HTTP: POST /v1/import {took_in:.2f} s, server +{imported.growth:.1f} MiB peak; "
        f"GET /v1/export {took_out:.2f} s ({sent / MiB:.1f} MiB), "
        f"server +{exported.growth:.1f} MiB peak"
    )
    found.update(
        http_import_growth=imported.growth,
        http_export_growth=exported.growth,
        versions=float(verified),
        rate=rate,
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--small", type=int, default=2_000, help="tools at the smaller size")
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="transfer-bench-") as temp:
        root = Path(temp)
        cluster = Cluster(root)
        try:
            small = measure(cluster, root, args.small, args.versions, args.rounds)
            large = measure(cluster, root, args.tools, args.versions, args.rounds)
        finally:
            cluster.server.stop()
    growth = large["versions"] / small["versions"]
    print(f"\npeak memory, {args.tools:,} tools over {args.small:,} ({growth:.0f}x the registry):")
    for name, label in (
        ("export_rss", "registry export (process peak)"),
        ("import_rss", "registry import (process peak)"),
        ("http_export_growth", "GET /v1/export (server growth)"),
        ("http_import_growth", "POST /v1/import (server growth)"),
    ):
        ratio = large[name] / small[name] if small[name] > 0.5 else float("nan")
        print(f"  {label:<34} {small[name]:7.1f} -> {large[name]:7.1f} MiB  ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
