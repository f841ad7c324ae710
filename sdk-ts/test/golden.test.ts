// Every row of tests/golden/gate_decisions.json against the TypeScript gate:
// the same file and the same comparison rules as tests/sdk/test_golden.py
// (the file's `description`).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { type Decision, Gate, handlerCheck, handlerMismatches, strictSchema, Toolset } from "../src/index.js";
import { REPO } from "./paths.js";

interface Case {
  row: number;
  name: string;
  toolset: string;
  tool: string;
  arguments: unknown;
  meta: unknown;
  expect: Record<string, unknown>;
}

const DOCUMENT = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
  toolsets: Record<string, unknown>;
  cases: Case[];
};

function pick(item: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in item).map((k) => [k, item[k]]));
}

function observed(gate: Gate, decision: Decision): Record<string, unknown> {
  const out: Record<string, unknown> = { accepted: decision.accepted, tool: decision.tool, version: decision.version };
  if (decision.accepted) {
    out.arguments = decision.arguments;
    return out;
  }
  const error = decision.error;
  const skip = new Set(["errors", "changes", "inputSchema"]);
  const data: Record<string, unknown> = Object.fromEntries(Object.entries(error.data).filter(([k]) => !skip.has(k)));
  if ("errors" in error.data) {
    data.errors = (error.data.errors as Record<string, unknown>[]).map((e) => pick(e, ["path", "keyword", "unexpected"]));
  }
  if ("changes" in error.data) {
    data.changes = (error.data.changes as Record<string, unknown>[]).map((c) => pick(c, ["kind", "path", "old", "new"]));
  }
  if ("inputSchema" in error.data) data.inputSchemaOf = schemaOf(gate, decision.tool, error.data);
  Object.assign(out, {
    code: error.code,
    data,
    surface: error.modelText !== null ? "arg" : "rpc",
    message: error.message,
    modelText: error.modelText,
  });
  return out;
}

/** Whose strict input schema `data.inputSchema` is: current's, or the declared version's (an alias's contract). */
function schemaOf(gate: Gate, tool: string, data: Record<string, unknown>): string {
  const entry = gate.toolset.tool(tool)!;
  const same = (schema: unknown): boolean => JSON.stringify(data.inputSchema) === JSON.stringify(strictSchema(schema));
  if (same(entry.versions[0]!.definition.inputSchema)) return "current";
  let declared = gate.toolset.alias(String(data.tool))?.definition ?? null;
  for (const version of [...entry.versions, ...entry.retired]) {
    if (`v${version.version}` === data.declaredVersion && version.definition !== null) declared = version.definition;
  }
  return declared !== null && same(declared.inputSchema) ? "declared" : "other";
}

/** `errors` and `changes` compared as sets; objects with keys in any order. */
function unordered(value: Record<string, unknown>): unknown {
  const sortKeys = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sortKeys)
      : v !== null && typeof v === "object"
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]))
        : v;
  const out = sortKeys(structuredClone(value)) as Record<string, unknown>;
  const data = out.data as Record<string, unknown> | undefined;
  for (const key of ["errors", "changes"]) {
    if (data !== undefined && key in data) {
      data[key] = (data[key] as unknown[]).map((item) => JSON.stringify(item)).sort();
    }
  }
  return out;
}

test("every row of the decision table has a case", () => {
  const rows = new Set(DOCUMENT.cases.map((c) => c.row));
  assert.deepEqual([...rows].sort((a, b) => a - b), Array.from({ length: 19 }, (_, i) => i + 1));
});

for (const golden of DOCUMENT.cases) {
  test(`row ${golden.row}: ${golden.name}`, () => {
    const toolset = Toolset.fromJson(JSON.stringify(DOCUMENT.toolsets[golden.toolset]));
    const gate = new Gate(toolset);
    const decision = gate.check(golden.tool, structuredClone(golden.arguments), structuredClone(golden.meta));
    assert.deepEqual(unordered(observed(gate, decision)), unordered(golden.expect));
    if (!decision.accepted && decision.error.modelText !== null && "inputSchema" in decision.error.data) {
      // one retry schema: the text shows the very schema `data` carries
      assert.ok(decision.error.modelText.includes(JSON.stringify(decision.error.data.inputSchema)));
    }
  });
}

test("one gate deciding the rows in turn (its last-tool entry set by the row before) decides each as a fresh gate", () => {
  const gates = new Map<string, Gate>();
  for (const golden of [...DOCUMENT.cases, ...[...DOCUMENT.cases].reverse()]) {
    let gate = gates.get(golden.toolset);
    if (gate === undefined) {
      gate = new Gate(Toolset.fromJson(JSON.stringify(DOCUMENT.toolsets[golden.toolset])));
      gates.set(golden.toolset, gate);
      // the entry starts empty: a call named "" is no tool's
      const nameless = gate.check("", {}, null);
      assert.equal(nameless.accepted ? null : nameless.error.data.reason, "unknown_tool");
    }
    const decision = gate.check(golden.tool, structuredClone(golden.arguments), structuredClone(golden.meta));
    assert.deepEqual(unordered(observed(gate, decision)), unordered(golden.expect), `row ${golden.row}: ${golden.name}`);
    const unknown = gate.check(`${golden.tool}.unknown`, {}, null);
    assert.equal(unknown.accepted ? null : unknown.error.data.reason, "unknown_tool");
  }
});

interface HandlerRow {
  name: string;
  tool: string;
  current: string;
  handler: unknown;
  registry: unknown;
  lines: string[];
  calls?: Array<{ arguments: Record<string, unknown>; refused: boolean }>;
}

for (const row of (DOCUMENT as unknown as { handlers: HandlerRow[] }).handlers) {
  test(`handler check: ${row.name}`, () => {
    const lines = handlerMismatches(row.tool, row.current, row.handler, row.registry);
    assert.deepEqual(lines, row.lines);
    const check = handlerCheck(row.tool, Number(row.current.slice(1)), row.handler, row.registry);
    assert.equal(check === null, row.lines.length === 0);
    for (const call of row.calls ?? []) {
      const error = check!.refusal(call.arguments);
      assert.equal(error !== null, call.refused, JSON.stringify(call));
      if (error !== null) {
        assert.deepEqual([error.code, error.data.reason, error.modelText], [-31004, "handler_mismatch", null]);
        assert.ok(error.message.includes(lines[0]!), error.message);
      }
    }
  });
}
