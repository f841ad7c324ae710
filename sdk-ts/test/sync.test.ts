// Boot sync against faults a live registry cannot be made to show (a 500, a
// garbage body, a wrong ETag, a 401): a stand-in HTTP server on 127.0.0.1
// answers them; the live registry path (ETag, cache, watcher) is the e2e test
// (tests/e2e_ts). Says so because it is the one stand-in in these tests.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, readFile } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { Backoff, CACHE_FORMAT, readCache, syncToolset, SyncError } from "../src/index.js";
import { REPO } from "./paths.js";

const GOLDEN = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
  toolsets: Record<string, { digest: string; namespace: string }>;
};
const BODY = GOLDEN.toolsets.seed_000!;
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const quick = new Backoff(0.001, 0.002, 0.002);

type Answer = (response: ServerResponse) => void;
const valid: Answer = (r) => {
  r.writeHead(200, { ETag: `"${BODY.digest}"`, "content-type": "application/json" });
  r.end(JSON.stringify(BODY));
};

async function registry(answers: Answer[], always?: Answer): Promise<{ url: string; close: () => void; seen: () => number }> {
  let seen = 0;
  const server = createServer((_request, response) => {
    const answer = answers[seen] ?? always ?? valid;
    seen += 1;
    answer(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => server.close(), seen: () => seen };
}

test("a 500, a garbage body and a wrong ETag are retried; the valid answer is cached", async () => {
  const stand = await registry([
    (r) => r.writeHead(500).end("down"),
    (r) => r.writeHead(200, { ETag: `"${BODY.digest}"` }).end("{not json"),
    (r) => r.writeHead(200, { ETag: '"sha256:0"' }).end(JSON.stringify(BODY)),
  ]);
  const cache = join(await mkdtemp(join(tmpdir(), "gate-")), "billing.json");
  try {
    const toolset = await syncToolset(stand.url, "billing", { cache, retries: 3, backoff: quick, logger: silent });
    assert.equal(toolset.digest, BODY.digest);
    assert.equal(stand.seen(), 4);
    const written = JSON.parse(await readFile(cache, "utf8")) as Record<string, unknown>;
    assert.equal(written.format, CACHE_FORMAT);
    assert.equal((await readCache(cache)).toolset.digest, BODY.digest);
  } finally {
    stand.close();
  }
});

test("an outage boots from the cache, and says so; without one, SyncError names the registry", async () => {
  const cache = join(await mkdtemp(join(tmpdir(), "gate-")), "billing.json");
  const first = await registry([]);
  await syncToolset(first.url, "billing", { cache, logger: silent });
  first.close();
  const down = await registry([], (r) => r.writeHead(503).end());
  const errors: string[] = [];
  const logger = { ...silent, error: (event: string) => void errors.push(event) };
  try {
    const booted = await syncToolset(down.url, "billing", { cache, retries: 1, backoff: quick, logger });
    assert.equal(booted.digest, BODY.digest);
    assert.deepEqual(errors, ["toolset.sync.from_cache"]);
    await assert.rejects(
      syncToolset(down.url, "billing", { retries: 1, backoff: quick, logger: silent }),
      (error: unknown) => error instanceof SyncError && error.message.includes(down.url) && error.message.includes("HTTP 503"),
    );
  } finally {
    down.close();
  }
});

test("a 401 fails at once, with no retry and no cache fallback", async () => {
  const stand = await registry([], (r) =>
    r.writeHead(401, { "content-type": "application/problem+json" }).end(JSON.stringify({ title: "Unauthorized", detail: "bad token" })),
  );
  try {
    await assert.rejects(
      syncToolset(stand.url, "billing", { retries: 3, backoff: quick, logger: silent }),
      (error: unknown) => error instanceof SyncError && error.status === 401 && error.message.includes("bad token"),
    );
    assert.equal(stand.seen(), 1);
  } finally {
    stand.close();
  }
});
