// The golden table's `delivered` rows through the TypeScript adapters, driven by
// the official TypeScript client on every revision it speaks: an McpServer whose
// tools declare current's every property as a zod shape, and a low-level Server
// with one handler per tool. Each handler answers with what it received. Run by
// tests/e2e_ts/test_delivered.py, which compares the outcomes with the golden
// rows and with the Python adapters', field for field and word for word.
//
// Input: argv[2], the golden file's path. Output: one JSON object on stdout,
// {adapter: {revision: {row name: outcome}}} (outcome: see `outcome` below).

import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

import { gateMcpServer, gateServer, Toolset } from "../src/index.js";

interface Row {
  name: string;
  toolset: string;
  tool: string;
  arguments: Record<string, unknown>;
  meta: Record<string, unknown> | null;
}

const REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const golden = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { toolsets: Record<string, unknown>; delivered: Row[] };

function answer(args: Record<string, unknown>): { content: Array<{ type: "text"; text: string }>; structuredContent: Record<string, unknown> } {
  const received = { received: args };
  return { content: [{ type: "text", text: JSON.stringify(received) }], structuredContent: received };
}

/** The McpServer of a server author who declares current's every property (db.query v4, search v2). */
function mcpServer(toolset: Toolset): Server {
  const server = new McpServer({ name: "billing", version: "1.0.0" });
  server.registerTool(
    "db.query",
    { inputSchema: { query: z.string(), timeout: z.number().int().optional(), mode: z.enum(["read"]).optional() } },
    async (args) => answer(args),
  );
  server.registerTool(
    "search",
    { inputSchema: { query: z.string(), filters: z.record(z.unknown()), limit: z.number().int().optional() } },
    async (args) => answer(args),
  );
  gateMcpServer(server, toolset, { logger: silent });
  return server.server;
}

function lowLevel(toolset: Toolset): Server {
  const server = new Server({ name: "billing", version: "1.0.0" });
  const echo = async (args: Record<string, unknown>) => ({ received: args });
  gateServer(server, toolset, { logger: silent, handlers: { "db.query": echo, search: echo } });
  return server;
}

/** The official client, its `initialize` offering `revision` (it offers its newest otherwise). */
async function connect(server: Server, revision: string): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const send = clientSide.send.bind(clientSide);
  clientSide.send = async (message: JSONRPCMessage, options) => {
    if ("method" in message && message.method === "initialize" && message.params !== undefined) {
      message = { ...message, params: { ...message.params, protocolVersion: revision } };
    }
    return send(message, options);
  };
  await server.connect(serverSide);
  const client = new Client({ name: "delivered", version: "0" });
  await client.connect(clientSide);
  if (client.getServerVersion() === undefined) throw new Error("no initialize result");
  return client;
}

/** A result or an error in the terms both languages compare. */
function outcome(result: Record<string, unknown> | null, error: McpError | null): Record<string, unknown> {
  if (error !== null) return { error: { code: error.code, message: error.message.replace(/^MCP error -?\d+: /, ""), data: error.data ?? null } };
  const r = result!;
  const fields = Object.keys(r)
    .filter((k) => k === "content" || k === "structuredContent" || (k === "isError" && r.isError === true))
    .sort();
  const content = r.content as Array<{ type: string; text: string }>;
  if (r.isError === true) {
    return { fields, text: content[0]!.text, structuredContent: r.structuredContent ?? null };
  }
  const said = JSON.parse(content[0]!.text) as { received: unknown };
  return { fields, received: said.received, structuredContent: r.structuredContent ?? null };
}

const report: Record<string, Record<string, Record<string, unknown>>> = {};
for (const [adapter, build] of [
  ["ts-mcpserver", mcpServer],
  ["ts-lowlevel", lowLevel],
] as const) {
  report[adapter] = {};
  for (const revision of REVISIONS) {
    const outcomes: Record<string, unknown> = {};
    for (const name of new Set(golden.delivered.map((row) => row.toolset))) {
      const server = build(Toolset.fromPayload(golden.toolsets[name]));
      const client = await connect(server, revision);
      for (const row of golden.delivered.filter((r) => r.toolset === name)) {
        const call = { name: row.tool, arguments: row.arguments, ...(row.meta !== null ? { _meta: row.meta } : {}) };
        try {
          outcomes[row.name] = outcome((await client.callTool(call)) as Record<string, unknown>, null);
        } catch (error) {
          if (!(error instanceof McpError)) throw error;
          outcomes[row.name] = outcome(null, error);
        }
      }
      await client.close();
    }
    report[adapter]![revision] = outcomes;
  }
}
process.stdout.write(JSON.stringify(report) + "\n");
