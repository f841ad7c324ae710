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

import {
  gateMcpServer,
  gateServer,
  HandlerMismatchError,
  type Logger,
  payloadDigest,
  refusal,
  Toolset,
  type ToolsetSource,
} from "../src/index.js";
import { connected } from "./connected.js";
import { REPO } from "./paths.js";

const GOLDEN = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
  toolsets: Record<string, unknown>;
};
const toolset = (name: string): Toolset => Toolset.fromPayload(GOLDEN.toolsets[name]);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** seed_000_v3_served with v3 as current: its definition, its digest; v4 gone. */
function toolsetWithCurrentV3(): unknown {
  const body = structuredClone(GOLDEN.toolsets.seed_000_v3_served) as {
    tools: Array<{ current: number; versions: Array<Record<string, unknown>>; retired: unknown[] }>;
  } & Record<string, unknown>;
  const tool = body.tools[0]!;
  const v3 = tool.versions.find((v) => v.version === 3)!;
  tool.current = 3;
  tool.versions = [{ ...v3, state: "active", sunset: null, route: [] }];
  delete tool.versions[0]!.changes;
  delete body.digest;
  return { ...body, digest: payloadDigest(body) };
}


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

/** A source like the watcher: `current`, `subscribe` (counted), and a swap that calls the subscribers. */
function watched(start: Toolset): { source: ToolsetSource; swap: (next: Toolset) => Promise<void>; subscribers: () => number } {
  const callbacks = new Set<(toolset: Toolset) => void | Promise<void>>();
  const source = {
    current: start,
    subscribe(callback: (toolset: Toolset) => void | Promise<void>) {
      callbacks.add(callback);
      return () => callbacks.delete(callback);
    },
  };
  return {
    source,
    swap: async (next) => {
      source.current = next;
      for (const callback of [...callbacks]) await callback(next);
    },
    subscribers: () => callbacks.size,
  };
}

function recorder(): { logger: Logger; events: Array<[string, string, Record<string, unknown>]> } {
  const events: Array<[string, string, Record<string, unknown>]> = [];
  const at =
    (level: string) =>
    (event: string, fields: Record<string, unknown> = {}) =>
      void events.push([level, event, fields]);
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warning"), error: at("error") }, events };
}

test("McpServer: a zod shape lacking what current declares refuses to start, one line per property (the README's old snippet)", () => {
  const server = new McpServer({ name: "billing", version: "1.0.0" });
  server.registerTool("db.query", { inputSchema: { query: z.string() } }, async () => ({ content: [] }));
  assert.throws(
    () => gateMcpServer(server, toolset("seed_000"), { logger: silent }),
    (error: unknown) => {
      assert.ok(error instanceof HandlerMismatchError);
      assert.deepEqual(String(error.message).split("\n").slice(1), [
        "- db.query: the handler's input schema has no `timeout`, which db.query v4 declares: the framework would drop or refuse it",
        "- db.query: the handler's input schema has no `mode`, which db.query v4 declares: the framework would drop or refuse it",
      ]);
      return true;
    },
  );
});

test("McpServer: names on one side only are warned at start, as the Python adapters do", () => {
  const { logger, events } = recorder();
  const server = new McpServer({ name: "billing", version: "1.0.0" });
  const shape = { query: z.string(), timeout: z.number().int().optional(), mode: z.enum(["read"]).optional() };
  server.registerTool("db.query", { inputSchema: shape }, async () => ({ content: [] }));
  server.registerTool("admin.reset", {}, async () => ({ content: [] }));
  gateMcpServer(server, toolset("seed_000"), { logger });
  const warned = events.filter(([level]) => level === "warning").map(([, event, fields]) => [event, fields.message]);
  assert.deepEqual(warned, [
    [
      "mcp.gate.tools_not_in_registry",
      "this server implements admin.reset, which the registry's toolset of namespace billing does not hold (not listed; calls refused as unknown tools, -32602)",
    ],
  ]);
});

test("McpServer: a swap the shape cannot take is logged per mismatch, and only the calls it would strip are refused", async () => {
  const { logger, events } = recorder();
  const server = new McpServer({ name: "billing", version: "1.0.0" });
  const received: unknown[] = [];
  // v3's shape: timeout_ms and mode read|write; v4 renames timeout_ms to timeout
  const shape = { query: z.string(), timeout_ms: z.number().int().optional(), mode: z.enum(["read", "write"]).optional() };
  server.registerTool("db.query", { inputSchema: shape }, async (args) => {
    received.push(args);
    return { content: [{ type: "text", text: "ok" }] };
  });
  const v3 = Toolset.fromPayload(toolsetWithCurrentV3());
  const { source, swap } = watched(v3);
  gateMcpServer(server, source, { logger });
  const { client } = await connected(server.server);
  await swap(toolset("seed_000"));
  const logged = events.filter(([, event]) => event === "mcp.gate.handler_mismatch").map(([, , f]) => f.message);
  assert.deepEqual(logged, [
    "db.query: the handler's input schema has no `timeout`, which db.query v4 declares: the framework would drop or refuse it",
  ]);
  const taken = await client.callTool({ name: "db.query", arguments: { query: "q" }, _meta: { schemaVersion: "v4" } });
  assert.equal(taken.isError, undefined);
  await assert.rejects(
    client.callTool({ name: "db.query", arguments: { query: "q", timeout: 5 }, _meta: { schemaVersion: "v4" } }),
    (error: unknown) =>
      error instanceof McpError &&
      error.code === -31004 &&
      (error.data as Record<string, unknown>).reason === "handler_mismatch" &&
      (error.data as Record<string, unknown>).action === undefined,
  );
  assert.deepEqual(received, [{ query: "q" }]); // the refused call never reached the handler, nothing was dropped
  await client.close();
});

test("McpServer per session: each closed session lets go of the watcher (20 sessions, no callback kept)", async () => {
  const { source, swap, subscribers } = watched(toolset("seed_000"));
  const shape = { query: z.string(), timeout: z.number().int().optional(), mode: z.enum(["read"]).optional() };
  const before = subscribers();
  for (let i = 0; i < 20; i++) {
    const server = new McpServer({ name: "billing", version: "1.0.0" });
    server.registerTool("db.query", { inputSchema: shape }, async () => ({ content: [] }));
    gateMcpServer(server, source, { logger: silent });
    const { client } = await connected(server.server);
    await client.callTool({ name: "db.query", arguments: { query: "q" } });
    await client.close();
    await server.close();
  }
  assert.equal(subscribers(), before);
  await swap(toolset("seed_000_v3_served")); // no closed session hears it
});
