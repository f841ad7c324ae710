// A namespace whose policy turned gating off (`"gating": false` in the payload):
// `new Gate(toolset)` is the pass-through UngatedGate, as the Python SDK's
// `Gate(toolset)` is (tests/sdk/test_gate_policy.py tells the same cases), and
// a served toolset swapped from gated to ungated and back changes what the
// official client's calls meet.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

import {
  type Decision,
  type Declared,
  Gate,
  gateServer,
  type LogFields,
  type Logger,
  payloadDigest,
  Toolset,
  ToolsetError,
  UngatedGate,
} from "../src/index.js";
import { connected } from "./connected.js";
import { REPO } from "./paths.js";

const GOLDEN = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
  toolsets: Record<string, Record<string, unknown>>;
};
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A golden payload as the registry serves it, with `gating` set (or dropped) and the digest recomputed. */
function payload(name: string, gating?: unknown): Record<string, unknown> {
  const { digest: _, ...content } = structuredClone(GOLDEN.toolsets[name]!);
  if (gating !== undefined) content.gating = gating;
  return { ...content, digest: payloadDigest(content) };
}

const gated = (name: string): Toolset => Toolset.fromPayload(payload(name));
const ungated = (name: string): Toolset => Toolset.fromPayload(payload(name, false));

/** A logger that keeps its warnings. */
function recording(): { logger: Logger; warnings: [string, LogFields | undefined][] } {
  const warnings: [string, LogFields | undefined][] = [];
  const warn = (event: string, fields?: LogFields): void => {
    warnings.push([event, fields]);
  };
  return { logger: { ...silent, warn }, warnings };
}

test("the payload's gating: absent or true gates, false turns gating off, anything else is refused by name", () => {
  assert.equal(gated("seed_000").gating, true);
  assert.equal(Toolset.fromPayload(payload("seed_000", true)).gating, true);
  assert.equal(ungated("seed_000").gating, false);
  for (const [value, kind] of [["no", "str"], [0, "int"], [null, "null"], [{}, "object"]] as const) {
    assert.throws(
      () => Toolset.fromPayload(payload("seed_000", value)),
      (error: unknown) =>
        error instanceof ToolsetError &&
        error.message === `invalid toolset payload: Expected \`bool\`, got \`${kind}\` - at \`$.gating\``,
    );
  }
  // the key is under the payload digest: dropping it from an ungated payload is tampering
  const { gating: _, ...stripped } = payload("seed_000", false);
  assert.throws(() => Toolset.fromPayload(stripped), /toolset digest mismatch/);
});

test("new Gate(toolset) is the strict Gate when gated, the UngatedGate with one warning when not", () => {
  const strict = recording();
  const gate = new Gate(gated("seed_000"), { logger: strict.logger });
  assert.equal(Object.getPrototypeOf(gate), Gate.prototype);
  assert.deepEqual(strict.warnings, []);

  const off = recording();
  const pass = new Gate(ungated("seed_000"), { logger: off.logger });
  assert.ok(pass instanceof UngatedGate && pass instanceof Gate);
  assert.equal(pass.toolset.gating, false);
  assert.deepEqual(off.warnings, [
    ["gate.gating_off", { namespace: "billing", detail: "the namespace policy turned gating off: calls are not checked" }],
  ]);
  pass.check("db.query", { query: "q" }, { schemaVersion: "v3" });
  assert.equal(off.warnings.length, 1); // at load, never per call
});

test("gating off: every declared version is served with the caller's own object, usage hears what it declared", () => {
  const seen: [Decision, Declared][] = [];
  const gate = new Gate(ungated("seed_000"), { logger: silent, onDecision: (d, x) => seen.push([d, x]) });
  const v3 = GOLDEN.toolsets.seed_000!.tools as { retired: { digest: string }[] }[];
  const call = { query: "SELECT 1", timeout_ms: 5000, mode: "write" }; // v3's arguments, v3 retired
  const metas: unknown[] = [
    { schemaVersion: "v3" },
    { schemaVersion: "v99" },
    { schemaVersion: "garbage" },
    { schemaHash: "x" },
    { schemaHash: v3[0]!.retired[0]!.digest },
    {},
    undefined,
    null,
  ];
  for (const meta of metas) {
    const decision = gate.check("db.query", call, meta);
    assert.equal(decision.accepted, true, JSON.stringify(decision.error));
    assert.equal(decision.arguments, call); // the very object: nothing converted, filled or dropped
    assert.equal(decision.version, 4);
    assert.equal(decision.tool, "db.query");
  }
  assert.deepEqual(
    seen.map(([, declared]) => declared.version),
    [3, 99, null, null, 3, null, null, null],
  );
  assert.deepEqual(seen[0]![1], { version: 3, schemaVersion: "v3", schemaHash: null, alias: null });
  assert.deepEqual(seen[3]![1], { version: null, schemaVersion: undefined, schemaHash: "x", alias: null });
  assert.ok(seen.every(([decision]) => decision.accepted));
});

test("gating off still refuses unknown names and non-object arguments, in the gate's refusal shape", () => {
  const seen: Decision[] = [];
  const gate = new Gate(ungated("seed_000"), { logger: silent, onDecision: (d) => seen.push(d) });
  const unknown = gate.check("db.querry", {}, undefined);
  assert.equal(unknown.accepted, false);
  assert.deepEqual(unknown.error, {
    code: -32602,
    message: "Unknown tool: db.querry",
    data: { reason: "unknown_tool", tool: "db.querry" },
    modelText: null,
  });
  for (const args of [["SELECT 1"], "SELECT 1", 3, true]) {
    const refused = gate.check("db.query", args, { schemaVersion: "v4" });
    assert.equal(refused.accepted, false);
    assert.deepEqual(refused.error, {
      code: -32602,
      message: "Invalid arguments for db.query: arguments must be a JSON object",
      data: { reason: "invalid_arguments", tool: "db.query" },
      modelText: "db.query refused this call: its arguments must be a JSON object.",
    });
    assert.equal(refused.version, 4);
  }
  assert.equal(seen.length, 5); // refusals are heard too
  const none = gate.check("db.query", undefined, undefined);
  assert.ok(none.accepted);
  assert.deepEqual(none.arguments, {});
});

test("gating off dispatches an alias to its target, unconverted", () => {
  const seen: Declared[] = [];
  const gate = new Gate(ungated("seed_002_routed"), { logger: silent, onDecision: (_, x) => seen.push(x) });
  const call = { query: "q" };
  const decision = gate.check("search_v1", call, { schemaVersion: "v7" });
  assert.ok(decision.accepted);
  assert.equal(decision.tool, "search");
  assert.equal(decision.version, 2);
  assert.equal(decision.arguments, call); // the strict gate would fill filters and limit
  assert.deepEqual(seen, [{ version: 1, schemaVersion: undefined, schemaHash: null, alias: "search_v1" }]);
  assert.deepEqual(new Gate(gated("seed_002_routed"), { logger: silent }).check("search_v1", { query: "q" }).arguments, {
    query: "q",
    filters: {},
    limit: 20,
  });
});

test("a served toolset swapped from gated to ungated and back: list_changed, and the stale call refused, served, refused", async () => {
  const server = new Server({ name: "t", version: "0" });
  const received: unknown[] = [];
  const { logger, warnings } = recording();
  const served = gateServer(server, gated("seed_000"), {
    logger,
    handlers: {
      "db.query": async (args) => {
        received.push(args);
        return { rows: [] };
      },
    },
  });
  const { client, changes } = await connected(server);
  const stale = { name: "db.query", arguments: { query: "q", timeout_ms: 5 }, _meta: { schemaVersion: "v3" } };
  const retired = (error: unknown): boolean => error instanceof McpError && error.code === -31001;
  const settled = async (count: number): Promise<void> => {
    for (let i = 0; i < 1000 && changes() < count; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(changes(), count);
  };

  await assert.rejects(client.callTool(stale), retired);
  assert.equal(await served.update(ungated("seed_000")), true);
  await settled(1);
  assert.ok(served.gate instanceof UngatedGate);
  assert.equal(warnings.filter(([event]) => event === "gate.gating_off").length, 1);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => [t.name, t._meta?.schemaVersion]), [["db.query", "v4"]]);
  const answer = await client.callTool(stale);
  assert.equal(answer.isError, undefined, JSON.stringify(answer));
  assert.deepEqual(received, [{ query: "q", timeout_ms: 5 }]); // the caller's arguments, as sent

  assert.equal(await served.update(gated("seed_000")), true);
  await settled(2);
  assert.equal(Object.getPrototypeOf(served.gate), Gate.prototype);
  await assert.rejects(client.callTool(stale), retired);
  assert.equal(received.length, 1);
  await client.close();
});
