/**
 * A gated server on stdio that ends when its input ends.
 *
 *     await serveStdio(server, { watcher, usage });   // resolves once stdin has ended and all is closed
 *
 * An MCP client ends a stdio server by closing its stdin (and signals it only
 * if it lingers). The official SDK's `StdioServerTransport` does not notice an
 * end of input, and the watcher's long-poll keeps the process alive, so a
 * server that only connects never exits. `serveStdio` connects the transport,
 * and when stdin ends (or SIGTERM comes) stops the usage reporter with a last
 * report, stops the watcher, closes the server, and resolves: the process then
 * exits on its own (the package holds nothing open).
 */

import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

export interface StdioOptions {
  /** Stopped at the end (the sync watcher). */
  watcher?: { stop(): Promise<void> };
  /** Stopped at the end, after a last report (a UsageReporter). */
  usage?: { stop(options?: { timeout?: number }): Promise<void> };
  /** Seconds the last usage report may take; default 2. */
  lastReportTimeout?: number;
}

export async function serveStdio(server: McpServer | Server, options: StdioOptions = {}): Promise<void> {
  const ended = new Promise<string>((resolve) => {
    process.stdin.once("end", () => resolve("end"));
    process.stdin.once("close", () => resolve("close"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  await server.connect(new StdioServerTransport());
  await ended;
  await options.usage?.stop({ timeout: options.lastReportTimeout ?? 2 });
  await options.watcher?.stop();
  await server.close();
  process.stdin.destroy();
}
