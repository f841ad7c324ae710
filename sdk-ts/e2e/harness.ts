// What the e2e clients share: the official TypeScript client on a stdio server
// (its stderr kept, transport errors counted, list_changed counted), a timeout
// and a call's outcome as a result or a JSON-RPC error.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

export interface ServerCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
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

export async function outcome(call: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    return { result: await call };
  } catch (error) {
    if (error instanceof McpError) return { error: { code: error.code, message: error.message, data: error.data ?? null } };
    throw error;
  }
}

export interface Session {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  readonly transportErrors: string[];
  serverStderr(): string;
  listChanged(): number;
  /** Resolves on the next notifications/tools/list_changed after this call. */
  nextListChanged(): Promise<void>;
}

/** A client for `server`, not yet connected (connect with `session.client.connect(session.transport)`). */
export function session(server: ServerCommand, name: string): Session {
  const transport = new StdioClientTransport({ ...server, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const client = new Client({ name, version: "0.1.0" });
  const transportErrors: string[] = [];
  client.onerror = (error) => transportErrors.push(String(error));
  let changes = 0;
  let waiting: (() => void)[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    changes += 1;
    const woken = waiting;
    waiting = [];
    for (const wake of woken) wake();
  });
  return {
    client,
    transport,
    transportErrors,
    serverStderr: () => stderr,
    listChanged: () => changes,
    nextListChanged: () => new Promise<void>((resolve) => waiting.push(resolve)),
  };
}

/** Connect, run `steps`, and write `report` (with ok, error, transport errors, the server's stderr) as one JSON line on stdout. */
export async function reportOn(run: Session, report: Record<string, unknown>, steps: () => Promise<void>): Promise<void> {
  try {
    await within(run.client.connect(run.transport), 60000, "connect");
    await steps();
    report.ok = true;
  } catch (error) {
    report.ok = false;
    report.error = String((error as Error)?.stack ?? error);
  } finally {
    await run.client.close().catch(() => {});
    report.transportErrors = run.transportErrors;
    report.serverStderr = run.serverStderr();
    process.stdout.write(JSON.stringify(report) + "\n");
  }
}
