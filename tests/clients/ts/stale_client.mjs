// A stale client written with the official MCP TypeScript SDK, as a stock host
// drives a server: it never sets _meta.schemaVersion. Run by
// tests/e2e/test_clients.py against a gated stdio server and a live registry:
//
//   1. connect over stdio (the server configured no logging: any byte it wrote
//      to stdout besides the protocol would break this client), list the tools;
//   2. call db.query version-less with the arguments it knows (v3's), accepted;
//   3. publish the breaking version (the request is given), wait for
//      notifications/tools/list_changed;
//   4. call again with the same arguments: an isError result;
//   5. read the result's text as a model would, rewrite the arguments it
//      implies (every "`a` was renamed to `b`"; every property "not part of"
//      the current version dropped), and retry once.
//
// Input: one JSON object on argv[2] (server command, args, env; publish url,
// token, body; the stale arguments). Output: one JSON report on stdout.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const input = JSON.parse(process.argv[2]);
const report = { steps: [] };
const QUOTED = "[`'\"]([^`'\"]+)[`'\"]";
const RENAMED = new RegExp(`${QUOTED} was renamed to ${QUOTED}`, "g");
const NOT_PART = new RegExp(`${QUOTED} is not part of `, "g");

function textOf(result) {
  return (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
}

// what the refusal's text tells a model to change
function impliedArguments(text, stale) {
  const next = { ...stale };
  for (const [, from, to] of text.matchAll(RENAMED)) {
    if (from in next) {
      next[to] = next[from];
      delete next[from];
    }
  }
  for (const [, name] of text.matchAll(NOT_PART)) {
    if (name in next) delete next[name];
  }
  return next;
}

async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const transport = new StdioClientTransport({
  command: input.server.command,
  args: input.server.args,
  env: input.server.env,
  cwd: input.server.cwd,
  stderr: "pipe",
});
let serverStderr = "";
transport.stderr?.on("data", (chunk) => {
  serverStderr += chunk.toString();
});

const client = new Client({ name: "stale-ts-client", version: "0.1.0" });
report.transportErrors = [];
client.onerror = (error) => report.transportErrors.push(String(error));
let listChanged = 0;
let changed;
const changedOnce = new Promise((resolve) => {
  changed = resolve;
});
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  listChanged += 1;
  changed();
});

try {
  await withTimeout(client.connect(transport), 30000, "connect");
  report.serverCapabilities = client.getServerCapabilities();
  const listing = await client.listTools();
  report.listedBefore = listing.tools.map((t) => ({ name: t.name, meta: t._meta }));

  const before = await client.callTool({ name: input.tool, arguments: input.stale });
  report.steps.push({ step: "before", isError: before.isError ?? false, text: textOf(before) });

  const published = await fetch(input.publish.url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${input.publish.token}`,
      "content-type": "application/json",
    },
    body: JSON.stringify(input.publish.body),
  });
  report.publishStatus = published.status;
  await withTimeout(changedOnce, 30000, "notifications/tools/list_changed");
  report.listChanged = listChanged;

  const stale = await client.callTool({ name: input.tool, arguments: input.stale });
  report.steps.push({
    step: "stale",
    isError: stale.isError ?? false,
    text: textOf(stale),
    structuredContent: stale.structuredContent ?? null,
  });

  const implied = impliedArguments(textOf(stale), input.stale);
  const retry = await client.callTool({ name: input.tool, arguments: implied });
  report.steps.push({
    step: "retry",
    arguments: implied,
    isError: retry.isError ?? false,
    text: textOf(retry),
    structuredContent: retry.structuredContent ?? null,
  });
  report.listedAfter = (await client.listTools()).tools.map((t) => ({ name: t.name, meta: t._meta }));
  report.ok = true;
} catch (error) {
  report.ok = false;
  report.error = String(error?.stack ?? error);
} finally {
  await client.close().catch(() => {});
  report.serverStderr = serverStderr;
  process.stdout.write(JSON.stringify(report) + "\n");
}
