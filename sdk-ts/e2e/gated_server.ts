// A TypeScript MCP server on the official SDK's McpServer, gated by this
// package: boot sync from a registry (the cache when it is down), a watcher
// that follows publishes, stdio transport. Nothing but the protocol on stdout.
//
//   REGISTRY_URL=http://127.0.0.1:8080 REGISTRY_TOKEN=... REGISTRY_NAMESPACE=billing \
//   REGISTRY_CACHE=.cache/billing.json REGISTRY_WAIT=30 node dist/e2e/gated_server.js
//
// The toy db.query answers with the arguments it received, exactly as the
// gate passed them (and the SDK bound them: the zod shape below).

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

import { gateMcpServer, syncToolset, watchToolset } from "../src/index.js";

const url = process.env.REGISTRY_URL ?? "http://127.0.0.1:8080";
const namespace = process.env.REGISTRY_NAMESPACE ?? "billing";
const cache = process.env.REGISTRY_CACHE ?? `.registry-cache/${namespace}.toolset.json`;
const wait = Number(process.env.REGISTRY_WAIT ?? "30");
const token = process.env.REGISTRY_TOKEN;

const server = new McpServer({ name: "gated-ts-example", version: "0.1.0" });
server.registerTool(
  "db.query",
  {
    description: "Run a SQL query (a toy: it shows what it received).",
    inputSchema: {
      query: z.string(),
      timeout: z.number().int().optional(),
      timeout_ms: z.number().int().optional(),
      mode: z.string().optional(),
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
gateMcpServer(server, watcher);
await server.connect(new StdioServerTransport());

const shutdown = async (): Promise<void> => {
  await watcher.stop();
  await server.close();
  process.exit(0);
};
process.stdin.on("close", () => void shutdown());
process.on("SIGTERM", () => void shutdown());
