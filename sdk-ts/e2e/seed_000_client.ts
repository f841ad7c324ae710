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

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

interface Input {
  mode?: "story" | "list";
  server: { command: string; args: string[]; env: Record<string, string>; cwd: string };
  publish?: { url: string; token: string; body: unknown };
  stale: Record<string, unknown>;
  current: Record<string, unknown>;
}

const input = JSON.parse(process.argv[2] ?? "{}") as Input;
const report: Record<string, unknown> = { steps: {} };
const steps = report.steps as Record<string, unknown>;

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function outcome(call: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    return { result: await call };
  } catch (error) {
    if (error instanceof McpError) return { error: { code: error.code, message: error.message, data: error.data ?? null } };
    throw error;
  }
}

const transport = new StdioClientTransport({ ...input.server, stderr: "pipe" });
let serverStderr = "";
transport.stderr?.on("data", (chunk: Buffer) => {
  serverStderr += chunk.toString();
});
const client = new Client({ name: "seed-000-ts-client", version: "0.1.0" });
const transportErrors: string[] = [];
client.onerror = (error) => transportErrors.push(String(error));
let listChanged = 0;
let changed: () => void = () => {};
const changedOnce = new Promise<void>((resolve) => {
  changed = resolve;
});
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  listChanged += 1;
  changed();
});

try {
  await within(client.connect(transport), 30000, "connect");
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
    report.listChanged = listChanged;
    report.listedAfter = (await client.listTools()).tools;
    steps.staleDeclared = await outcome(client.callTool({ name: "db.query", arguments: input.stale, _meta: { schemaVersion: "v3" } }));
    steps.currentDeclared = await outcome(client.callTool({ name: "db.query", arguments: input.current, _meta: { schemaVersion: "v4" } }));
    steps.staleVersionless = await outcome(client.callTool({ name: "db.query", arguments: input.stale }));
  }
  report.ok = true;
} catch (error) {
  report.ok = false;
  report.error = String((error as Error)?.stack ?? error);
} finally {
  await client.close().catch(() => {});
  report.transportErrors = transportErrors;
  report.serverStderr = serverStderr;
  process.stdout.write(JSON.stringify(report) + "\n");
}
