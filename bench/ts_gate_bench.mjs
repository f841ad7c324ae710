// The TypeScript gate's accepted declared call against a bare Ajv validate on
// the same schema, measured in one run, interleaved (issue 17: p50 within 2x).
//
//   make bench-ts                       # installs and builds sdk-ts first
//   node bench/ts_gate_bench.mjs [--rounds 400] [--batch 2000]
//
// Each round times one batch of `batch` gate.check calls (db.query declaring
// "v4", seed 000's current schema) and one batch of bare validate calls (Ajv
// 2020, the schema compiled once), in alternating order; the per-call time of
// a batch is its time / batch. Prints p50 and p90 per call and their ratio.
// Both sides get the same arguments object; the bare validate is checked to be
// the very code Ajv generates for the gate (same schema, same source text).
// Every case is first warmed with many short batches, so that it is optimized
// as a function, as the gate is in a server (called once per request), and not
// only on-stack-replaced inside its first long batch (which made runs bimodal).
// Also: the version-less accepted call (the strict form of v4), the same pair on
// a tool schema of the size real servers list (8 properties), and two tools
// called in turn through one gate (its tool lookup never hits the last-tool
// entry) against the two bare validates in turn, for reference.
// The last line says whether the seed 000 ratio is within 2x.

import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { CREATE_ISSUE, issueArgs, issueBodyOf } from "./ts_create_issue.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const sdk = await import(resolve(ROOT, "sdk-ts/dist/src/index.js"));
// the very Ajv the gate runs on (sdk-ts's own dependency)
const require = createRequire(resolve(ROOT, "sdk-ts/package.json"));
const Ajv2020 = require("ajv/dist/2020.js").default;
// the gate's own compiler, to check that the bare validate is the code the gate runs
const { Compiler } = await import(resolve(ROOT, "sdk-ts/dist/src/validators.js"));

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
}
const ROUNDS = option("rounds", 400);
const BATCH = option("batch", 2000);

const DB_QUERY_V3 = {
  name: "db.query",
  description: "Run a SQL query.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string" },
      timeout_ms: { type: "integer", default: 30000 },
      mode: { type: "string", enum: ["read", "write"] },
    },
    required: ["query"],
  },
};
const DB_QUERY_V4 = {
  name: "db.query",
  description: "Run a SQL query.",
  inputSchema: {
    type: "object",
    properties: { query: { type: "string" }, timeout: { type: "integer" }, mode: { type: "string", enum: ["read"] } },
    required: ["query"],
    additionalProperties: true,
  },
};
const body = {
  namespace: "billing",
  tools: [
    {
      name: "db.query",
      current: 4,
      versions: [
        { version: 4, digest: sdk.digest(DB_QUERY_V4), state: "active", sunset: null, definition: DB_QUERY_V4, route: [] },
      ],
      retired: [{ version: 3, digest: sdk.digest(DB_QUERY_V3), definition: DB_QUERY_V3 }],
    },
  ],
  aliases: [],
};
const toolset = sdk.Toolset.fromPayload({ ...body, digest: sdk.payloadDigest(body) });
const gate = new sdk.Gate(toolset);
// the gate runs the strict form of the version a call speaks: so does the bare side
const validate = new Ajv2020({ strict: false }).compile(sdk.strictSchema(DB_QUERY_V4.inputSchema));

const issueBody = issueBodyOf(sdk);
const issueGate = new sdk.Gate(sdk.Toolset.fromPayload({ ...issueBody, digest: sdk.payloadDigest(issueBody) }));
const issueValidate = new Ajv2020({ strict: false }).compile(sdk.strictSchema(CREATE_ISSUE.inputSchema));
// one gate serving both tools: called in turn, its lookup by name misses the last-tool entry every time
const bothBody = { namespace: "both", tools: [...body.tools, ...issueBody.tools], aliases: [] };
const bothGate = new sdk.Gate(sdk.Toolset.fromPayload({ ...bothBody, digest: sdk.payloadDigest(bothBody) }));
const issueMeta = { schemaVersion: "v1" };

const args = { query: "SELECT 1", timeout: 5000, mode: "read" };
const meta = { schemaVersion: "v4" };

// the bare side is the gate's own generated validator (of the strict form), compiled apart (Ajv numbers its names per instance)
const compiler = new Compiler();
const code = (validateFunction) => validateFunction.toString().replace(/\b([A-Za-z_]+)\d+\b/g, "$1");
for (const [bare, definition] of [
  [validate, DB_QUERY_V4],
  [issueValidate, CREATE_ISSUE],
]) {
  if (code(bare) !== code(compiler.validator(sdk.strictSchema(definition.inputSchema), definition.name).validate)) {
    throw new Error(`the bare validate of ${definition.name} is not the code the gate runs`);
  }
}

// the calls must do what is measured
if (
  !gate.check("db.query", args, meta).accepted ||
  !validate(args) ||
  !gate.check("db.query", args, null).accepted ||
  !issueGate.check("create_issue", issueArgs, issueMeta).accepted ||
  !issueValidate(issueArgs) ||
  !bothGate.check("db.query", args, meta).accepted ||
  !bothGate.check("create_issue", issueArgs, issueMeta).accepted
) {
  throw new Error("the measured calls are not accepted");
}

let sink = 0;
const cases = {
  gate_declared: (n) => {
    for (let i = 0; i < n; i++) sink += gate.check("db.query", args, meta).accepted ? 1 : 0;
  },
  ajv_validate: (n) => {
    for (let i = 0; i < n; i++) sink += validate(args) ? 1 : 0;
  },
  gate_versionless: (n) => {
    for (let i = 0; i < n; i++) sink += gate.check("db.query", args, null).accepted ? 1 : 0;
  },
  issue_gate_declared: (n) => {
    for (let i = 0; i < n; i++) sink += issueGate.check("create_issue", issueArgs, issueMeta).accepted ? 1 : 0;
  },
  issue_ajv_validate: (n) => {
    for (let i = 0; i < n; i++) sink += issueValidate(issueArgs) ? 1 : 0;
  },
  in_turn_gate: (n) => {
    for (let i = 0; i < n; i += 2) {
      sink += bothGate.check("db.query", args, meta).accepted ? 1 : 0;
      sink += bothGate.check("create_issue", issueArgs, issueMeta).accepted ? 1 : 0;
    }
  },
  in_turn_ajv: (n) => {
    for (let i = 0; i < n; i += 2) {
      sink += validate(args) ? 1 : 0;
      sink += issueValidate(issueArgs) ? 1 : 0;
    }
  },
};
const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const names = Object.keys(cases);
// warm: many short calls first, so each case is optimized as a function (as the gate is in a
// server, called once per request) rather than only on-stack-replaced inside its first long batch
for (let round = 0; round < 2000; round++) for (const name of names) cases[name](8);
for (let round = 0; round < ROUNDS; round++) {
  // alternate the order so neither side always runs warm
  const order = round % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    const started = process.hrtime.bigint();
    cases[name](BATCH);
    samples[name].push(Number(process.hrtime.bigint() - started) / BATCH);
  }
}

function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
const p50 = Object.fromEntries(names.map((n) => [n, quantile(samples[n], 0.5)]));
const p90 = Object.fromEntries(names.map((n) => [n, quantile(samples[n], 0.9)]));
console.log(
  `node ${process.version}, ${ROUNDS} rounds x ${BATCH} calls, interleaved (ns per call), ` +
    `load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`,
);
for (const n of names) console.log(`  ${n.padEnd(19)} p50 ${p50[n].toFixed(1).padStart(8)}   p90 ${p90[n].toFixed(1).padStart(8)}`);
const ratio = p50.gate_declared / p50.ajv_validate;
console.log(`accepted declared call / bare Ajv validate, p50: ${ratio.toFixed(2)}x (target: within 2x)`);
console.log(`version-less accepted call / bare Ajv validate, p50: ${(p50.gate_versionless / p50.ajv_validate).toFixed(2)}x`);
console.log(
  `create_issue (8 properties): accepted declared call / bare Ajv validate, p50: ` +
    `${(p50.issue_gate_declared / p50.issue_ajv_validate).toFixed(2)}x`,
);
console.log(
  `db.query and create_issue in turn through one gate / the two bare validates in turn, p50: ` +
    `${(p50.in_turn_gate / p50.in_turn_ajv).toFixed(2)}x`,
);
if (sink === 0) console.log("");
console.log(ratio <= 2 ? "within 2x" : "NOT within 2x");
