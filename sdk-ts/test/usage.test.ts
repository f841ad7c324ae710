// The usage reporter's counter and what a failed report keeps or loses, as
// registry/sdk/usage.py (tests/sdk/test_usage.py): a local HTTP server answers
// each report with the status the test sets.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";

import { Gate, Toolset, UsageCounter, UsageReporter } from "../src/index.js";
import { REPO } from "./paths.js";

const GOLDEN = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as { toolsets: Record<string, unknown> };
const silent = { debug() {}, info() {}, warn() {}, error() {} };

async function registry(statuses: number[]): Promise<{ url: string; bodies: string[]; close: () => Promise<void> }> {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      bodies.push(body);
      response.writeHead(statuses.shift() ?? 200, { "content-type": "application/json" });
      response.end('{"detail": "as the test says"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function gated(reporter: UsageReporter): Gate {
  return new Gate(Toolset.fromPayload(GOLDEN.toolsets.seed_000_v3_served), { onDecision: reporter.record, logger: silent });
}

test("the counter is bounded: a new key past the bound is counted as dropped", () => {
  const counter = new UsageCounter(1);
  const gate = new Gate(Toolset.fromPayload(GOLDEN.toolsets.seed_000), { onDecision: counter.record, logger: silent });
  gate.check("db.query", { query: "q" }, { schemaVersion: "v4" });
  gate.check("db.query", { query: "q" }, { schemaVersion: "v4" });
  gate.check("db.query", { query: "q", timeout_ms: 1 }, null); // refused: a second key
  gate.check("db.drop", {}, null); // no tool: not counted
  const [counts, dropped] = counter.take();
  assert.deepEqual(counts.map(([key, calls]) => [key.decision, calls]), [["accepted", 2]]);
  assert.equal(dropped, 1);
  assert.equal(counter.pending, 0);
});

test("a report the registry does not take (503) is kept; a refused one (422) is dropped and said", async () => {
  const server = await registry([503, 200, 422]);
  const events: string[] = [];
  const logger = { ...silent, warn: (e: string) => void events.push(e), error: (e: string) => void events.push(e) };
  const reporter = new UsageReporter(server.url, "billing", { server: "ts-1", source: Toolset.fromPayload(GOLDEN.toolsets.seed_000_v3_served), logger });
  const gate = gated(reporter);
  gate.check("db.query", { query: "q", timeout_ms: 5 }, { schemaVersion: "v3" });
  assert.equal(await reporter.flush(), false); // 503: kept
  assert.equal(reporter.counter.pending, 1);
  gate.check("db.query", { query: "q" }, { schemaVersion: "v4" });
  assert.equal(await reporter.flush(), true);
  const landed = JSON.parse(server.bodies[1]!) as { server: string; counts: unknown[]; dropped: number };
  assert.deepEqual(landed.counts, [
    { tool: "db.query", version: 3, decision: "converted", calls: 1 },
    { tool: "db.query", version: 4, decision: "accepted", calls: 1 },
  ]);
  gate.check("db.query", { query: "q" }, { schemaVersion: "v4" });
  assert.equal(await reporter.flush(), false); // 422: dropped
  assert.equal(reporter.counter.pending, 0);
  assert.equal(reporter.lostCalls, 1);
  assert.deepEqual(events, ["usage.report.failed", "usage.report.recovered", "usage.report.refused"]);
  await reporter.stop();
  await server.close();
});

test("a registry that cannot be reached loses nothing; a bad server name is refused at once", async () => {
  const server = await registry([]);
  await server.close(); // nothing listens there now
  const reporter = new UsageReporter(server.url, "billing", { server: "ts-1", source: () => "sha256:" + "0".repeat(64), logger: silent });
  gated(reporter).check("db.query", { query: "q" }, null);
  assert.equal(await reporter.flush(), false);
  assert.equal(reporter.counter.pending, 1);
  assert.throws(() => new UsageReporter(server.url, "billing", { server: "bad name", source: () => "x" }), RangeError);
});
