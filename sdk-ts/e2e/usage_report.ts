// The golden table's decision rows through a gate whose `onDecision` is a
// UsageReporter, one report per toolset, POSTed to the URL given: run by
// tests/e2e_ts/test_usage_ts.py, which sends the same calls through the
// Python SDK's reporter and compares the two bodies byte for byte.
//
// Input: argv[2] the golden file, argv[3] the base URL to report to.

import { readFileSync } from "node:fs";

import { Gate, Toolset, UsageReporter } from "../src/index.js";

interface Case {
  toolset: string;
  tool: string;
  arguments: unknown;
  meta: unknown;
}

const golden = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { toolsets: Record<string, unknown>; cases: Case[] };
const url = process.argv[3]!;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

for (const [name, body] of Object.entries(golden.toolsets)) {
  const toolset = Toolset.fromPayload(body);
  const reporter = new UsageReporter(url, name.replaceAll("_", "-"), { server: "wire-test", source: toolset, logger: silent });
  const gate = new Gate(toolset, { onDecision: reporter.record, logger: silent });
  for (const row of golden.cases.filter((c) => c.toolset === name)) {
    gate.check(row.tool, structuredClone(row.arguments), structuredClone(row.meta));
  }
  if (!(await reporter.flush())) throw new Error(`the report of ${name} did not land`);
}
