// The TypeScript gate's accepted calls in two builds of the package, measured in
// one run, interleaved: this checkout's sdk-ts/dist against another build.
//
//   node bench/ts_gate_ab.mjs --before /path/to/other/sdk-ts/dist/src/index.js [--rounds 400] [--batch 2000]
//
// (A build of another revision: `git archive REV sdk-ts | tar -x -C /tmp/before`,
// link this checkout's sdk-ts/node_modules there, `npx tsc -p /tmp/before/sdk-ts`.)
// Cases: seed 000's db.query v4 declared current, version-less, declared v3 and
// converted (v3 still served), and an 8-property tool (github-mcp-server's
// create_issue) declared current. Each round times one batch of each case on
// each build, the order swapped every round; every case is warmed first with
// many short batches (as ts_gate_bench.mjs does). Prints p50 and p90 per call
// on each side and the ratio after / before.

import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { issueArgs, issueBodyOf } from "./ts_create_issue.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}
const BEFORE = option("before", null);
if (BEFORE === null) throw new Error("--before PATH (the index.js of the baseline build) is required");
const ROUNDS = Number(option("rounds", 400));
const BATCH = Number(option("batch", 2000));

const golden = JSON.parse(readFileSync(resolve(ROOT, "tests/golden/gate_decisions.json"), "utf8"));
const v4 = { query: "SELECT 1", timeout: 5000, mode: "read" };
const v3 = { query: "SELECT 1", timeout_ms: 5000, mode: "read" };

function build(sdk) {
  const body = issueBodyOf(sdk);
  const seed = new sdk.Gate(sdk.Toolset.fromPayload(golden.toolsets.seed_000));
  const served = new sdk.Gate(sdk.Toolset.fromPayload(golden.toolsets.seed_000_v3_served));
  const issue = new sdk.Gate(sdk.Toolset.fromPayload({ ...body, digest: sdk.payloadDigest(body) }));
  return {
    "declared current": () => seed.check("db.query", v4, { schemaVersion: "v4" }),
    "version-less": () => seed.check("db.query", v4, null),
    "declared v3, converted": () => served.check("db.query", v3, { schemaVersion: "v3" }),
    "create_issue, declared": () => issue.check("create_issue", issueArgs, { schemaVersion: "v1" }),
  };
}

const sides = {
  before: build(await import(resolve(BEFORE))),
  after: build(await import(resolve(ROOT, "sdk-ts/dist/src/index.js"))),
};
const names = Object.keys(sides.after);
let sink = 0;
const run = (call, n) => {
  for (let i = 0; i < n; i++) sink += call().accepted ? 1 : 0;
};
for (const side of Object.values(sides)) for (const name of names) if (!side[name]().accepted) throw new Error(`${name} is refused`);
for (let round = 0; round < 2000; round++) for (const side of Object.values(sides)) for (const name of names) run(side[name], 8);
const samples = { before: {}, after: {} };
for (const side of Object.keys(sides)) for (const name of names) samples[side][name] = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ["before", "after"] : ["after", "before"];
  for (const name of names) {
    for (const side of order) {
      const started = process.hrtime.bigint();
      run(sides[side][name], BATCH);
      samples[side][name].push(Number(process.hrtime.bigint() - started) / BATCH);
    }
  }
}

function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
console.log(`node ${process.version}, ${ROUNDS} rounds x ${BATCH} calls, interleaved (ns per call), load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
for (const name of names) {
  const [b50, a50] = [quantile(samples.before[name], 0.5), quantile(samples.after[name], 0.5)];
  const [b90, a90] = [quantile(samples.before[name], 0.9), quantile(samples.after[name], 0.9)];
  console.log(
    `  ${name.padEnd(24)} p50 ${b50.toFixed(1).padStart(7)} -> ${a50.toFixed(1).padStart(7)} (${(a50 / b50).toFixed(2)}x)` +
      `   p90 ${b90.toFixed(1).padStart(7)} -> ${a90.toFixed(1).padStart(7)} (${(a90 / b90).toFixed(2)}x)`,
  );
}
if (sink === 0) console.log("");
