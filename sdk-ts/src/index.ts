/**
 * @mcp-tool-registry/gate: the MCP tool registry's gate for TypeScript MCP servers.
 *
 *     import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
 *     import { gateMcpServer, syncToolset, watchToolset } from "@mcp-tool-registry/gate";
 *
 *     const toolset = await syncToolset(REGISTRY_URL, "billing", { cache: ".cache/billing.json", token });
 *     const watcher = watchToolset(toolset);            // long-polls, swaps, backs off
 *     gateMcpServer(server, watcher);                   // gated tools/call, tools/list, list_changed
 */

export { canonicalJson, digest, DigestError, payloadDigest } from "./canonical.js";
export { apply, ConversionRejected, ConverterError, type Op, parsePointer } from "./converters.js";
export {
  CONVERSION_REJECTED,
  type Decision,
  type Declared,
  Gate,
  type GateError,
  type GateOptions,
  INVALID_PARAMS,
  type OnDecision,
  SCHEMA_VERSION_MISMATCH,
  SCHEMA_VERSION_RETIRED,
  SCHEMA_VERSION_UNKNOWN,
  STRICT_VALIDATION_FAILED,
  UngatedGate,
} from "./gate.js";
export {
  compareHandlers,
  HandlerCheck,
  handlerCheck,
  HandlerMismatchError,
  handlerMismatches,
  HandlerReport,
} from "./handlers.js";
export { type LogFields, type Logger, stderrLogger } from "./logging.js";
export { CATALOGUE_TEXT, catalogueEntry, type Entry as RefusalEntry, STRUCTURED_FIELDS, structuredContent } from "./refusals.js";
export { strictSchema } from "./strict.js";
export {
  type AliasEntry,
  type ContractChange,
  type Json,
  type JsonObject,
  type RetiredVersion,
  type RouteStep,
  type ToolEntry,
  Toolset,
  ToolsetError,
  type ToolsetPayload,
  type VersionEntry,
} from "./toolset.js";
export type { ErrorDetail } from "./validators.js";
export {
  gateMcpServer,
  GatedTools,
  type GateOptions as AdapterOptions,
  gateServer,
  MODEL_FACING_SINCE,
  RefusalError,
  refusal,
  type Refusals,
  type ToolHandler,
  type ToolsetSource,
} from "./mcp.js";
export { KNOWN_REVISIONS, projectCallResult, projectTool, revisionOf } from "./revisions.js";
export { serveStdio, type StdioOptions } from "./stdio.js";
export {
  MAX_COUNTS,
  MAX_KEYS,
  type Outcome as UsageOutcome,
  reportOf,
  type UsageCount,
  UsageCounter,
  type UsageReport,
  UsageReporter,
  type UsageReporterOptions,
  usageUrl,
} from "./usage.js";
export {
  Backoff,
  BOOT_BACKOFF,
  CACHE_FORMAT,
  type CachedToolset,
  type OnChange,
  originOf,
  readCache,
  syncToolset,
  SyncError,
  type SyncOptions,
  type SyncSource,
  toolsetUrl,
  WATCH_BACKOFF,
  type WatchOptions,
  watchToolset,
  ToolsetWatcher,
  writeCache,
} from "./sync.js";
