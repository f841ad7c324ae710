// Seed 000's story told by the official MCP TypeScript client against a
// TypeScript server gated by this package (e2e/gated_server.ts) and a live
// registry. Run by tests/e2e_ts/test_ts_gate.py:
//
//   1. list (db.query at v3), call declaring v3: served;
//   2. publish v4 retiring v1..v3; wait for notifications/tools/list_changed;
//   3. call declaring v3: refused, JSON-RPC -31001 with data;
//   4. call declaring v4 with v4's arguments: served;
//   5. call without a version with v3's arguments: an isError result naming the rename.
//
// Input: one JSON object on argv[2]; output: one JSON report on stdout.
// With input.mode "list": connect, list, and report the listing only.

import { outcome, reportOn, type ServerCommand, session, within } from "./harness.js";

interface Input {
  mode?: "story" | "list";
  server: ServerCommand;
  publish?: { url: string; token: string; body: unknown };
  stale: Record<string, unknown>;
  current: Record<string, unknown>;
}

const input = JSON.parse(process.argv[2] ?? "{}") as Input;
const report: Record<string, unknown> = { steps: {} };
const steps = report.steps as Record<string, unknown>;

const run = session(input.server, "seed-000-ts-client");
const { client, listChanged } = run;
const changedOnce = run.nextListChanged();

await reportOn(run, report, async () => {
  report.serverCapabilities = client.getServerCapabilities();
  report.listedBefore = (await client.listTools()).tools;
  if (input.mode !== "list") {
    steps.declaredV3 = await outcome(client.callTool({ name: "db.query", arguments: input.stale, _meta: { schemaVersion: "v3" } }));
    const published = await fetch(input.publish!.url, {
      method: "POST",
      headers: { authorization: `Bearer ${input.publish!.token}`, "content-type": "application/json" },
      body: JSON.stringify(input.publish!.body),
    });
    report.publishStatus = published.status;
    await within(changedOnce, 30000, "notifications/tools/list_changed");
    report.listChanged = listChanged();
    report.listedAfter = (await client.listTools()).tools;
    steps.staleDeclared = await outcome(client.callTool({ name: "db.query", arguments: input.stale, _meta: { schemaVersion: "v3" } }));
    steps.currentDeclared = await outcome(client.callTool({ name: "db.query", arguments: input.current, _meta: { schemaVersion: "v4" } }));
    steps.staleVersionless = await outcome(client.callTool({ name: "db.query", arguments: input.stale }));
  }
});
