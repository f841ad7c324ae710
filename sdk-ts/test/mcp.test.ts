// The adapters on the official SDK, over its in-memory transport with its own
// Client: a low-level Server with handlers, and an McpServer whose tool
// receives the converted arguments.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

import { gateMcpServer, gateServer, refusal, Toolset } from "../src/index.js";
import { connected } from "./connected.js";
import { REPO } from "./paths.js";

const GOLDEN = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
  toolsets: Record<string, unknown>;
};
const toolset = (name: string): Toolset => Toolset.fromPayload(GOLDEN.toolsets[name]);
const silent = { debug() {}, info() {}, warn() {}, error() {} };


test("low-level Server: listing with _meta, served, refused per surface, list_changed on a swap", async () => {
  const server = new Server({ name: "t", version: "0" });
  const received: unknown[] = [];
  const gated = gateServer(server, toolset("seed_000_v3_served"), {
    logger: silent,
    handlers: {
      "db.query": async (args) => {
        received.push(args);
        return { rows: [] };
      },
    },
  });
  const { client, changes } = await connected(server);
  assert.equal(gated.protocolVersion(server), "2025-11-25");
  assert.equal(client.getServerCapabilities()?.tools?.listChanged, true);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => [t.name, t._meta?.schemaVersion]), [["db.query", "v4"]]);
  assert.match(String(tools[0]!._meta?.schemaHash), /^sha256:[0-9a-f]{64}$/);

  // declared v3: converted (fill, then rename), the handler gets exactly that
  const served = await client.callTool({ name: "db.query", arguments: { query: "q" }, _meta: { schemaVersion: "v3" } });
  assert.equal(served.isError, undefined);
  assert.deepEqual(received.at(-1), { query: "q", timeout: 30000 });
  assert.deepEqual(served.structuredContent, { rows: [] });

  // a version-less stale call on 2025-11-25: an isError result for the model
  const stale = await client.callTool({ name: "db.query", arguments: { query: "q", timeout_ms: 5 } });
  assert.equal(stale.isError, true);
  const structured = stale.structuredContent as Record<string, unknown>;
  assert.equal(structured.code, -31003);
  assert.equal(structured.inferredVersion, "v3");
  const text = (stale.content as { text: string }[])[0]!.text;
  assert.match(text, /`timeout_ms` is not part of db\.query v4/);
  assert.match(text, /property 'timeout_ms' was renamed to 'timeout'/);

  // a version never served: a JSON-RPC error with the gate's code and data
  await assert.rejects(
    client.callTool({ name: "db.query", arguments: { query: "q" }, _meta: { schemaVersion: "v99" } }),
    (error: unknown) =>
      error instanceof McpError && error.code === -31002 && (error.data as Record<string, unknown>).reason === "schema_version_unknown",
  );

  // a swap: list_changed, and the new listing
  assert.equal(await gated.update(toolset("seed_000")), true);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(changes(), 1);
  await assert.rejects(
    client.callTool({ name: "db.query", arguments: { query: "q" }, _meta: { schemaVersion: "v3" } }),
    (error: unknown) => error instanceof McpError && error.code === -31001,
  );
  assert.equal(await gated.update(toolset("seed_000")), false);
  await client.close();
});

test("McpServer: its own tool receives the alias call converted along the route", async () => {
  const server = new McpServer({ name: "t", version: "0" });
  const received: unknown[] = [];
  server.registerTool(
    "search",
    { inputSchema: { query: z.string(), filters: z.record(z.unknown()), limit: z.number().optional() } },
    async (args) => {
      received.push(args);
      return { content: [{ type: "text", text: "ok" }] };
    },
  );
  gateMcpServer(server, toolset("seed_002_routed"), { logger: silent });
  const { client } = await connected(server.server);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["search"]); // the alias is not listed
  const answer = await client.callTool({ name: "search_v1", arguments: { query: "foo" } });
  assert.equal(answer.isError, undefined, JSON.stringify(answer));
  assert.deepEqual(received, [{ query: "foo", filters: {}, limit: 20 }]);
  await client.close();
});

test("refusals before 2025-11-25, or with refusals: jsonrpc, are JSON-RPC errors", () => {
  const error = { code: -31003, message: "m", data: { reason: "strict_validation_failed" }, modelText: "for the model" };
  assert.throws(() => refusal(error, "2025-06-18", "auto"), (e: unknown) => (e as { code: number }).code === -31003);
  assert.throws(() => refusal(error, "2025-11-25", "jsonrpc"));
  const result = refusal(error, "2025-06-18", "result");
  assert.equal(result.isError, true);
  assert.equal((result.structuredContent as Record<string, unknown>).code, -31003);
  // a revision without structuredContent gets the text alone
  const older = refusal(error, "2025-03-26", "result");
  assert.deepEqual(older, { content: [{ type: "text", text: "for the model" }], isError: true });
});
