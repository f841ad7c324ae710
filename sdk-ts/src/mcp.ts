/**
 * Adapters for the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`,
 * 1.32): gate a server in a few lines, as registry/sdk/mcp_adapter.py does for Python.
 *
 *     // high-level: the McpServer's own tools receive the gated, converted arguments
 *     const server = new McpServer({ name: "billing", version: "1.0.0" });
 *     server.registerTool("db.query", { inputSchema: { query: z.string() } }, runQuery);
 *     gateMcpServer(server, watcher);       // watcher: a ToolsetWatcher (or a Toolset)
 *
 *     // low-level: one handler per tool (exactly the gate's `decision.arguments`)
 *     gateServer(server, toolset, { handlers: { "db.query": async (args) => ({ rows: [] }) } });
 *
 * Gate before `connect`. What the adapter does to the server:
 * - `tools/list` answers from the toolset: every tool's current definition by
 *   name, `pageSize` per page (every page of one listing from the same
 *   snapshot: the cursor names it), `_meta.schemaVersion` ("v4") and
 *   `_meta.schemaHash` on each. Aliases are not listed (seed 002: a fresh
 *   listing leads to the current tool), but their calls are gated and converted.
 * - `tools/call` runs `Gate.check` on the request's arguments and `_meta`
 *   before anything binds them. Refusals follow `refusals`: with "auto" a
 *   refusal of the arguments themselves is, from 2025-11-25 on, an `isError`
 *   result (text for the model, `structuredContent`), every other refusal a
 *   JSON-RPC error with the gate's code, message and data; "result" answers
 *   arguments refusals as results on every revision, "jsonrpc" never does.
 * - listings and results carry only the fields of the session's negotiated revision.
 * - `tools.listChanged` is declared and `notifications/tools/list_changed` sent
 *   to every gated server on each toolset swap (a source with `subscribe`, the
 *   watcher, is followed; otherwise call `gated.update(toolset)`).
 */

import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { normalizeObjectSchema } from "@modelcontextprotocol/sdk/server/zod-compat.js";
import { toJsonSchemaCompat } from "@modelcontextprotocol/sdk/server/zod-json-schema-compat.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, ToolSchema } from "@modelcontextprotocol/sdk/types.js";

import { type Decision, Gate, type GateError, type OnDecision } from "./gate.js";
import { compareHandlers, type HandlerCheck, type HandlerReport } from "./handlers.js";
import { type Logger, stderrLogger } from "./logging.js";
import { structuredContent } from "./refusals.js";
import { projectCallResult, projectTool, revisionOf } from "./revisions.js";
import { type Toolset, ToolsetError } from "./toolset.js";

export type Refusals = "auto" | "jsonrpc" | "result";

/** The revision from which refusals of arguments are tool results (SEP-1303). */
export const MODEL_FACING_SINCE = "2025-11-25";
const KEEP_SNAPSHOTS = 8;

/** Anything that holds the latest toolset (the sync watcher, a test double). */
export interface ToolsetSource {
  readonly current: Toolset;
  subscribe?(callback: (toolset: Toolset) => void | Promise<void>): () => void;
}

/** `async (args) => result`: a CallToolResult, an object (structured content, also sent as JSON text), a string, or nothing. */
export type ToolHandler = (args: Record<string, unknown>) => unknown;

export interface GateOptions {
  pageSize?: number;
  listChanged?: boolean;
  refusals?: Refusals;
  onDecision?: OnDecision;
  logger?: Logger;
}

/** A refusal sent as a JSON-RPC error: the SDK answers with its `code`, `message` and `data` as they are. */
export class RefusalError extends Error {
  override name = "RefusalError";
  constructor(
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}

interface Snapshot {
  readonly toolset: Toolset;
  readonly gate: Gate;
  readonly listed: readonly Record<string, unknown>[];
  readonly byRevision: Map<string, readonly Record<string, unknown>[]>;
  /** Tools whose handler's framework would not take what current accepts (handlers.ts); empty without a framework parse. */
  handlers: ReadonlyMap<string, HandlerCheck>;
}

type Handler = (request: unknown, extra: unknown) => Promise<unknown>;

/** The SDK keeps its handlers private; the adapter wraps two of them (initialize, tools/call). */
function handlersOf(server: Server): Map<string, Handler> {
  const handlers = (server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) {
    throw new TypeError("this @modelcontextprotocol/sdk Server keeps no request handler map: the adapter needs 1.32.x");
  }
  return handlers as Map<string, Handler>;
}

function listedTools(toolset: Toolset): Record<string, unknown>[] {
  return [...toolset.tools]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((entry) => {
      const current = entry.versions[0]!;
      const definition = structuredClone(current.definition) as Record<string, unknown>;
      const meta = definition._meta;
      definition._meta = {
        ...(meta !== null && typeof meta === "object" && !Array.isArray(meta) ? meta : {}),
        schemaVersion: `v${current.version}`,
        schemaHash: current.digest,
      };
      const checked = ToolSchema.safeParse(definition);
      if (!checked.success) {
        throw new ToolsetError(`${entry.name} v${current.version} is not a Tool the MCP SDK can list: ${checked.error.message}`);
      }
      return definition;
    });
}

function encodeCursor(digest: string, offset: number): string {
  return Buffer.from(JSON.stringify({ d: digest, o: offset })).toString("base64url");
}

function decodeCursor(cursor: string): [string, number] {
  try {
    const body = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { d?: unknown; o?: unknown };
    if (typeof body.d === "string" && Number.isInteger(body.o) && (body.o as number) >= 0) return [body.d, body.o as number];
  } catch {
    // below
  }
  throw new RefusalError(ErrorCode.InvalidParams, "Invalid cursor", { reason: "invalid_cursor" });
}

/** A handler's return value as a `tools/call` result. */
function asResult(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return { content: [] };
  if (typeof value === "string") return { content: [{ type: "text", text: value }] };
  if (typeof value === "object" && !Array.isArray(value) && Array.isArray((value as { content?: unknown }).content)) {
    return value as Record<string, unknown>;
  }
  if (typeof value === "object" && !Array.isArray(value)) {
    return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
  }
  return { content: [{ type: "text", text: JSON.stringify(value) }] };
}

/** A refusal as the session should see it: an `isError` result (returned) or a JSON-RPC error (thrown). */
export function refusal(error: GateError, protocolVersion: string | undefined, mode: Refusals): Record<string, unknown> {
  const revision = revisionOf(protocolVersion);
  if (error.modelText !== null && (mode === "result" || (mode === "auto" && revision >= MODEL_FACING_SINCE))) {
    return projectCallResult(
      {
        content: [{ type: "text", text: error.modelText }],
        structuredContent: structuredContent(error),
        isError: true,
        resultType: "complete",
      },
      revision,
    );
  }
  throw new RefusalError(error.code, error.message, error.data);
}

/**
 * The gate as an MCP server sees it: snapshot, listing, call gating, change
 * notifications. One per server: a server per HTTP session gets its own
 * (`gateMcpServer` in the session's setup), which stops following the
 * source's changes when its server closes, so sessions that come and go leave
 * no callback behind on the watcher.
 */
export class GatedTools {
  private readonly source: ToolsetSource;
  private readonly pageSize: number;
  private readonly listChanged: boolean;
  private readonly refusals: Refusals;
  private readonly onDecision: OnDecision | undefined;
  private readonly logger: Logger;
  private readonly snapshots = new Map<string, Snapshot>();
  private readonly servers = new Set<Server>();
  private readonly negotiated = new WeakMap<Server, string>();
  /** The input schemas a framework's own parse holds the handlers to (null: no parse). */
  private handlerSchemas: Readonly<Record<string, unknown>> | null = null;
  /** The tools a low-level server has handlers for (null: its own tools/call handler). */
  private handlerNames: ReadonlySet<string> | null = null;
  private current: Snapshot;
  private announced: string;
  private unsubscribe: (() => void) | null = null;

  constructor(source: Toolset | ToolsetSource, options: GateOptions = {}) {
    const pageSize = options.pageSize ?? 100;
    if (!Number.isInteger(pageSize) || pageSize < 1) throw new RangeError("pageSize must be at least 1");
    const refusals = options.refusals ?? "auto";
    if (!["auto", "jsonrpc", "result"].includes(refusals)) {
      throw new RangeError(`refusals must be 'auto', 'jsonrpc' or 'result', not '${String(refusals)}'`);
    }
    this.source = "current" in source ? source : { current: source as Toolset };
    this.pageSize = pageSize;
    this.listChanged = options.listChanged ?? true;
    this.refusals = refusals;
    this.onDecision = options.onDecision;
    this.logger = options.logger ?? stderrLogger;
    this.current = this.compile(this.source.current); // a bad boot toolset throws
    this.announced = this.current.toolset.digest;
    if (typeof this.source.subscribe === "function") {
      this.unsubscribe = this.source.subscribe(async () => {
        await this.update();
      });
    }
  }

  private compile(toolset: Toolset): Snapshot {
    const snapshot: Snapshot = {
      toolset,
      gate: new Gate(toolset, { ...(this.onDecision ? { onDecision: this.onDecision } : {}), logger: this.logger }),
      listed: listedTools(toolset),
      byRevision: new Map(),
      handlers: new Map(),
    };
    if (this.handlerSchemas !== null) snapshot.handlers = this.judgeHandlers(toolset).checks;
    if (this.handlerNames !== null) this.checkHandlerNames(toolset);
    this.remember(snapshot);
    return snapshot;
  }

  private remember(snapshot: Snapshot): void {
    this.snapshots.delete(snapshot.toolset.digest);
    this.snapshots.set(snapshot.toolset.digest, snapshot);
    while (this.snapshots.size > KEEP_SNAPSHOTS) this.snapshots.delete(this.snapshots.keys().next().value!);
  }

  /** A swap cannot stop the server: one error per mismatch (its calls the handlers cannot take are refused), one warning per side's extra names. */
  private judgeHandlers(toolset: Toolset): HandlerReport {
    const report = compareHandlers(toolset, this.handlerSchemas!);
    for (const [tool, lines] of Object.entries(report.mismatches)) {
      for (const line of lines) {
        this.logger.error("mcp.gate.handler_mismatch", { message: `${tool}: ${line}`, namespace: toolset.namespace, tool });
      }
    }
    this.warnNames(report);
    return report;
  }

  private warnNames(report: HandlerReport): void {
    for (const [event, message] of report.warnings()) {
      this.logger.warn(`mcp.gate.${event}`, { message, namespace: report.namespace });
    }
  }

  /** A low-level server's handlers against the toolset, as the Python adapter names them. */
  private checkHandlerNames(toolset: Toolset): void {
    const names = new Set(toolset.tools.map((t) => t.name));
    const missing = [...names].filter((name) => !this.handlerNames!.has(name)).sort();
    if (missing.length > 0) this.logger.warn("mcp.gate.handlers_missing", { namespace: toolset.namespace, tools: missing });
    const unused = [...this.handlerNames!].filter((name) => !names.has(name)).sort();
    if (unused.length > 0) this.logger.info("mcp.gate.handlers_not_in_toolset", { namespace: toolset.namespace, tools: unused });
  }

  /**
   * Hold the handlers to the input schemas the server's framework parses each
   * tool's arguments with (tool name -> JSON Schema, as the framework lists
   * it): throws `HandlerMismatchError` (one line per mismatch) when a handler
   * would strip, refuse or change arguments the toolset's current version
   * accepts; on later swaps such calls are refused instead (handlers.ts).
   */
  holdHandlersTo(schemas: Readonly<Record<string, unknown>>): void {
    this.handlerSchemas = { ...schemas };
    const snapshot = this.snapshot;
    const report = compareHandlers(snapshot.toolset, this.handlerSchemas);
    report.throwIfMismatched();
    this.warnNames(report);
    snapshot.handlers = report.checks;
  }

  /** The snapshot of `source.current`, compiled once per swap; a toolset that does not compile is logged and the last good one kept. */
  get snapshot(): Snapshot {
    const toolset = this.source.current;
    if (toolset === this.current.toolset) return this.current;
    const known = this.snapshots.get(toolset.digest);
    if (known !== undefined) {
      this.current = known;
      return known;
    }
    try {
      this.current = this.compile(toolset);
    } catch (error) {
      if (!(error instanceof ToolsetError)) throw error;
      this.logger.error("mcp.gate.toolset_rejected", {
        digest: toolset.digest,
        serving: this.current.toolset.digest,
        error: error.message,
      });
    }
    return this.current;
  }

  get toolset(): Toolset {
    return this.snapshot.toolset;
  }

  get gate(): Gate {
    return this.snapshot.gate;
  }

  /** `Gate.check` on the current snapshot. */
  check(name: string, args: unknown, meta?: unknown): Decision {
    return this.gate.check(name, args, meta);
  }

  /**
   * `Gate.check` on the current snapshot, then the handler check where the
   * server's framework parses the arguments again (`holdHandlersTo`): an
   * accepted call the handler's framework would drop, refuse or change is
   * refused (-31004 handler_mismatch).
   */
  decide(name: string, args: unknown, meta?: unknown): Decision {
    const snapshot = this.snapshot;
    const decision = snapshot.gate.check(name, args, meta);
    if (!decision.accepted || snapshot.handlers.size === 0) return decision;
    const error = snapshot.handlers.get(decision.tool)?.refusal(decision.arguments) ?? null;
    if (error === null) return decision;
    return { accepted: false, tool: decision.tool, version: decision.version, arguments: null, error };
  }

  /** One page of the listing as the session's revision defines it; a cursor continues the snapshot it came from. */
  listTools(cursor: string | undefined, protocolVersion: string | undefined): Record<string, unknown> {
    let snapshot: Snapshot;
    let offset = 0;
    if (cursor === undefined) {
      snapshot = this.snapshot;
    } else {
      const [digest, at] = decodeCursor(cursor);
      const found = this.snapshots.get(digest);
      if (found === undefined) {
        throw new RefusalError(
          ErrorCode.InvalidParams,
          "Invalid cursor: the toolset it pages through is no longer held; re-issue tools/list without a cursor",
          { reason: "cursor_expired", action: "relist" },
        );
      }
      snapshot = found;
      offset = at;
    }
    const revision = revisionOf(protocolVersion);
    let listing = snapshot.byRevision.get(revision);
    if (listing === undefined) {
      listing = snapshot.listed.map((tool) => projectTool(tool, revision));
      snapshot.byRevision.set(revision, listing);
    }
    const page = listing.slice(offset, offset + this.pageSize);
    const result: Record<string, unknown> = { tools: page };
    if (offset + page.length < listing.length) result.nextCursor = encodeCursor(snapshot.toolset.digest, offset + page.length);
    return result;
  }

  /** Take the latest toolset (`toolset` replaces a static one) and, if it differs from the one last announced, notify. */
  async update(toolset?: Toolset): Promise<boolean> {
    if (toolset !== undefined) {
      if (typeof this.source.subscribe !== "function") (this.source as { current: Toolset }).current = toolset;
      else if (toolset !== this.source.current) {
        this.logger.warn("mcp.gate.update_ignored", { reason: "the source decides the toolset", given: toolset.digest });
      }
    }
    const digest = this.snapshot.toolset.digest;
    if (digest === this.announced) return false;
    this.announced = digest;
    this.logger.info("mcp.gate.toolset_changed", { digest });
    await this.notifyToolsChanged();
    return true;
  }

  /** Send `notifications/tools/list_changed` on every gated server that is connected. */
  async notifyToolsChanged(): Promise<void> {
    if (!this.listChanged) return;
    for (const server of this.servers) {
      if (server.transport === undefined) continue;
      try {
        await server.sendToolListChanged();
      } catch (error) {
        this.logger.warn("mcp.list_changed.send_failed", { error: String(error) });
      }
    }
  }

  /** Stop following the source's change callbacks. */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  /** The protocol revision `server`'s session negotiated (undefined before initialize). */
  protocolVersion(server: Server): string | undefined {
    return this.negotiated.get(server);
  }

  /**
   * Take over `tools/list` and gate `tools/call` on a low-level Server (before
   * `connect`). Calls go to `handlers` when given, else to the `tools/call`
   * handler already registered (with `name` the target tool and `arguments` the converted ones).
   */
  install(server: Server, handlers?: Readonly<Record<string, ToolHandler>>): void {
    const map = handlersOf(server);
    server.registerCapabilities({ tools: this.listChanged ? { listChanged: true } : {} });
    const initialize = map.get("initialize");
    if (initialize !== undefined) {
      map.set("initialize", async (request, extra) => {
        const result = (await initialize(request, extra)) as { protocolVersion?: string };
        if (typeof result?.protocolVersion === "string") this.negotiated.set(server, result.protocolVersion);
        return result;
      });
    }
    let dispatch: (decision: Decision & { accepted: true }, request: { params: Record<string, unknown> }, extra: unknown) => Promise<unknown>;
    if (handlers !== undefined) {
      this.handlerNames = new Set(Object.keys(handlers));
      this.checkHandlerNames(this.snapshot.toolset);
      dispatch = async (decision) => {
        const handler = handlers[decision.tool];
        if (handler === undefined) {
          throw new RefusalError(ErrorCode.InternalError, `${decision.tool} is in the toolset but this server has no handler for it`, {
            reason: "no_handler",
            tool: decision.tool,
          });
        }
        try {
          return asResult(await handler(decision.arguments));
        } catch (error) {
          if (error instanceof RefusalError) throw error;
          // a tool failure is a result the model can read, not a protocol error; its text stays in the server log
          this.logger.error("mcp.tool.failed", { tool: decision.tool, error: String(error) });
          return { content: [{ type: "text", text: `Error executing tool ${decision.tool}` }], isError: true };
        }
      };
    } else {
      const original = map.get("tools/call");
      if (original === undefined) {
        throw new TypeError("the server has no tools/call handler: register its tools first, or pass handlers");
      }
      dispatch = (decision, request, extra) =>
        original(
          { ...request, method: "tools/call", params: { ...request.params, name: decision.tool, arguments: decision.arguments } },
          extra,
        );
    }
    server.setRequestHandler(ListToolsRequestSchema, (request) =>
      this.listTools(request.params?.cursor, this.negotiated.get(server)),
    );
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const params = request.params as Record<string, unknown>;
      const decision = this.decide(String(params.name), params.arguments, params._meta);
      const protocolVersion = this.negotiated.get(server);
      if (!decision.accepted) return refusal(decision.error, protocolVersion, this.refusals) as never;
      const result = (await dispatch(decision, { params }, extra)) as Record<string, unknown>;
      return projectCallResult(result, revisionOf(protocolVersion)) as never;
    });
    this.servers.add(server);
    // the server closing ends what it needs from the source: no callback outlives a session
    const onclose = server.onclose;
    server.onclose = () => {
      this.uninstall(server);
      onclose?.();
    };
  }

  /** Stop announcing changes to `server` (its connection closed); the last one gone, stop following the source. */
  uninstall(server: Server): void {
    this.servers.delete(server);
    if (this.servers.size === 0) this.close();
  }
}

/** Gate a low-level `Server` with a toolset (a Toolset, or a source such as the sync watcher). */
export function gateServer(
  server: Server,
  source: Toolset | ToolsetSource,
  options: GateOptions & { handlers?: Readonly<Record<string, ToolHandler>> } = {},
): GatedTools {
  const gated = new GatedTools(source, options);
  gated.install(server, options.handlers);
  return gated;
}

/** The input schema `McpServer` parses each registered tool's arguments with, as it lists it. */
function mcpServerSchemas(server: McpServer): Record<string, unknown> {
  const registered = (server as unknown as { _registeredTools?: unknown })._registeredTools;
  if (registered === null || typeof registered !== "object") {
    throw new TypeError("this @modelcontextprotocol/sdk McpServer keeps no registered tools: the adapter needs 1.32.x");
  }
  const schemas: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(registered as Record<string, { enabled?: boolean; inputSchema?: unknown }>)) {
    if (tool.enabled === false) continue;
    const shape = normalizeObjectSchema(tool.inputSchema as Parameters<typeof normalizeObjectSchema>[0]);
    // what McpServer's own tools/list says (a tool without a shape gets no arguments at all)
    schemas[name] = shape ? toJsonSchemaCompat(shape, { strictUnions: true, pipeStrategy: "input" }) : { type: "object", properties: {} };
  }
  return schemas;
}

/**
 * Gate a high-level `McpServer`: its tools (registered under the toolset's
 * names, before this call) receive the calls the gate accepts, parsed by the
 * SDK with each tool's zod shape from the converted arguments. A shape that
 * would strip, refuse or change arguments the toolset's current version
 * accepts (a property it lacks: zod strips it) throws `HandlerMismatchError`,
 * one line per mismatch: declare the full shape. After a swap such calls are
 * refused (-31004 `handler_mismatch`). One per server (a server per HTTP
 * session: one each; it lets go of the source when its server closes).
 */
export function gateMcpServer(server: McpServer, source: Toolset | ToolsetSource, options: GateOptions = {}): GatedTools {
  const gated = new GatedTools(source, options);
  try {
    gated.holdHandlersTo(mcpServerSchemas(server));
  } catch (error) {
    gated.close();
    throw error;
  }
  gated.install(server.server);
  return gated;
}
