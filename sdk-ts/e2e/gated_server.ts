// A TypeScript MCP server on the official SDK's McpServer, gated by this
// package: boot sync from a registry (the cache when it is down), a watcher
// that follows publishes, usage reports, stdio transport (the server exits
// when its input ends). Nothing but the protocol on stdout.
//
//   REGISTRY_URL=http://127.0.0.1:8080 REGISTRY_TOKEN=... REGISTRY_NAMESPACE=billing \
//   REGISTRY_CACHE=.cache/billing.json REGISTRY_WAIT=30 node dist/e2e/gated_server.js
//
// REGISTRY_USAGE_INTERVAL (seconds, default 10; 0: no reports) and
// REGISTRY_SERVER_NAME (default `<namespace>-ts@<host>`) as examples/gated_server.py.
// The toy db.query answers with the arguments it received, exactly as the
// gate passed them and the SDK parsed them: its zod shape takes what both
// versions of seed 000 accept (v3's timeout_ms and mode "write", v4's timeout),
// as a server deployed across the cutover must (the adapter refuses to start
// on a shape that would strip what the current version accepts).

import { hostname } from "node:os";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

import { gateMcpServer, serveStdio, syncToolset, UsageReporter, watchToolset } from "../src/index.js";

const url = process.env.REGISTRY_URL ?? "http://127.0.0.1:8080";
const namespace = process.env.REGISTRY_NAMESPACE ?? "billing";
const cache = process.env.REGISTRY_CACHE ?? `.registry-cache/${namespace}.toolset.json`;
const wait = Number(process.env.REGISTRY_WAIT ?? "30");
const token = process.env.REGISTRY_TOKEN;
const interval = Number(process.env.REGISTRY_USAGE_INTERVAL ?? "10");
const serverName = process.env.REGISTRY_SERVER_NAME || `${namespace}-ts@${hostname()}`;

const server = new McpServer({ name: "gated-ts-example", version: "0.1.0" });
server.registerTool(
  "db.query",
  {
    description: "Run a SQL query (a toy: it shows what it received).",
    inputSchema: {
      query: z.string(),
      timeout: z.number().int().optional(),
      timeout_ms: z.number().int().optional(),
      mode: z.enum(["read", "write"]).optional(),
    },
  },
  async (args) => {
    const received = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== undefined));
    const result = { rows: [], received };
    return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result };
  },
);

const toolset = await syncToolset(url, namespace, { cache, ...(token ? { token } : {}) });
const watcher = watchToolset(toolset, { wait });
const usage =
  interval > 0 ? new UsageReporter(url, namespace, { server: serverName, source: watcher, interval, ...(token ? { token } : {}) }).start() : undefined;
gateMcpServer(server, watcher, usage !== undefined ? { onDecision: usage.record } : {});
await serveStdio(server, { watcher, ...(usage !== undefined ? { usage } : {}) });
