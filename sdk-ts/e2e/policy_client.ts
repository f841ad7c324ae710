// The official MCP TypeScript client against the gated TypeScript server
// (e2e/gated_server.ts) while the namespace's policy turns gating off and on
// again. Run by tests/e2e_ts/test_ts_gating_off.py.
//
// Input (argv[2], JSON): the server to spawn and a list of steps, each either
//   {"name": ..., "call": {"name", "arguments", "_meta"?}}        a tools/call
//   {"name": ..., "put": {"url", "token", "body"}}                 a registry PUT, then
//                                                                  wait for list_changed
// Output: one JSON report on stdout: each step's outcome by name.

import { outcome, reportOn, type ServerCommand, session, within } from "./harness.js";

interface Step {
  name: string;
  call?: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> };
  put?: { url: string; token: string; body: unknown };
}

interface Input {
  server: ServerCommand;
  steps: Step[];
}

const WAIT_MS = 60000;
const input = JSON.parse(process.argv[2] ?? "{}") as Input;
const report: Record<string, unknown> = {};
const outcomes: Record<string, unknown> = {};
const run = session(input.server, "policy-ts-client");
const { client, listChanged, nextListChanged } = run;
report.outcomes = outcomes;

async function put(step: NonNullable<Step["put"]>): Promise<Record<string, unknown>> {
  const changed = nextListChanged();
  const answer = await fetch(step.url, {
    method: "PUT",
    headers: { authorization: `Bearer ${step.token}`, "content-type": "application/json" },
    body: JSON.stringify(step.body),
  });
  const body = await answer.text();
  if (answer.ok) await within(changed, WAIT_MS, "notifications/tools/list_changed");
  return { status: answer.status, body, listChanged: listChanged(), listed: (await client.listTools()).tools };
}

await reportOn(run, report, async () => {
  report.listed = (await client.listTools()).tools;
  for (const step of input.steps) {
    outcomes[step.name] =
      step.call !== undefined
        ? await outcome(within(client.callTool(step.call), WAIT_MS, `tools/call ${step.call.name}`))
        : await put(step.put!);
  }
});
