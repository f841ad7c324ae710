/**
 * What each MCP revision defines of tools: the projection of listings and
 * results on a session's negotiated revision (registry/sdk/revisions.py, the
 * same tables: the property names of each definition in the specification's
 * published schema per revision). A tool's `_meta` is kept on every revision
 * (the gate's schemaVersion and schemaHash live there); a content block the
 * revision lacks becomes a text block holding its JSON.
 */

type Fields = ReadonlySet<string>;
type Table = Readonly<Record<string, Fields>>;

const set = (...names: string[]): Fields => new Set(names);
const plus = (base: Fields, ...names: string[]): Fields => new Set([...base, ...names]);

const RESOURCE_2024 = set("uri", "mimeType");
const CONTENT_2024: Table = {
  TextContent: set("type", "text", "annotations"),
  ImageContent: set("type", "data", "mimeType", "annotations"),
  EmbeddedResource: set("type", "resource", "annotations"),
  Annotations: set("audience", "priority"),
  TextResourceContents: plus(RESOURCE_2024, "text"),
  BlobResourceContents: plus(RESOURCE_2024, "blob"),
};
const HINTS = set("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint");
const TOOL_2025_06 = set("name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta");
const CONTENT_2025_06: Table = {
  TextContent: plus(CONTENT_2024.TextContent!, "_meta"),
  ImageContent: plus(CONTENT_2024.ImageContent!, "_meta"),
  AudioContent: set("type", "data", "mimeType", "annotations", "_meta"),
  ResourceLink: set("type", "uri", "name", "title", "description", "mimeType", "size", "annotations", "_meta"),
  EmbeddedResource: plus(CONTENT_2024.EmbeddedResource!, "_meta"),
  Annotations: set("audience", "priority", "lastModified"),
  TextResourceContents: plus(CONTENT_2024.TextResourceContents!, "_meta"),
  BlobResourceContents: plus(CONTENT_2024.BlobResourceContents!, "_meta"),
};
const ICON = set("src", "mimeType", "sizes", "theme");

export const DEFINITIONS: Readonly<Record<string, Table>> = {
  "2024-11-05": {
    Tool: set("name", "description", "inputSchema"),
    CallToolResult: set("content", "isError", "_meta"),
    ListToolsResult: set("tools", "nextCursor", "_meta"),
    ...CONTENT_2024,
  },
  "2025-03-26": {
    Tool: set("name", "description", "inputSchema", "annotations"),
    ToolAnnotations: HINTS,
    CallToolResult: set("content", "isError", "_meta"),
    ListToolsResult: set("tools", "nextCursor", "_meta"),
    ...CONTENT_2024,
    AudioContent: set("type", "data", "mimeType", "annotations"),
  },
  "2025-06-18": {
    Tool: TOOL_2025_06,
    ToolAnnotations: HINTS,
    CallToolResult: set("content", "structuredContent", "isError", "_meta"),
    ListToolsResult: set("tools", "nextCursor", "_meta"),
    ...CONTENT_2025_06,
  },
  "2025-11-25": {
    Tool: plus(TOOL_2025_06, "icons", "execution"),
    ToolAnnotations: HINTS,
    ToolExecution: set("taskSupport"),
    Icon: ICON,
    CallToolResult: set("content", "structuredContent", "isError", "_meta"),
    ListToolsResult: set("tools", "nextCursor", "_meta"),
    ...CONTENT_2025_06,
    ResourceLink: plus(CONTENT_2025_06.ResourceLink!, "icons"),
  },
  "2026-07-28": {
    Tool: plus(TOOL_2025_06, "icons"),
    ToolAnnotations: HINTS,
    Icon: ICON,
    CallToolResult: set("content", "structuredContent", "isError", "_meta", "resultType"),
    ListToolsResult: set("tools", "nextCursor", "_meta", "resultType", "ttlMs", "cacheScope"),
    ...CONTENT_2025_06,
    ResourceLink: plus(CONTENT_2025_06.ResourceLink!, "icons"),
  },
};

export const KNOWN_REVISIONS: readonly string[] = Object.keys(DEFINITIONS).sort();

const NESTED: Readonly<Record<string, string>> = {
  "Tool.annotations": "ToolAnnotations",
  "Tool.execution": "ToolExecution",
  "Tool.icons": "[Icon]",
  "ResourceLink.icons": "[Icon]",
  "ListToolsResult.tools": "[Tool]",
  "CallToolResult.content": "[ContentBlock]",
  "TextContent.annotations": "Annotations",
  "ImageContent.annotations": "Annotations",
  "AudioContent.annotations": "Annotations",
  "ResourceLink.annotations": "Annotations",
  "EmbeddedResource.annotations": "Annotations",
  "EmbeddedResource.resource": "ResourceContents",
};
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  text: "TextContent",
  image: "ImageContent",
  audio: "AudioContent",
  resource_link: "ResourceLink",
  resource: "EmbeddedResource",
};

/** The session's revision for projecting: the newest known at or before it; the oldest for anything unreadable. */
export function revisionOf(protocolVersion: string | null | undefined): string {
  if (typeof protocolVersion !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(protocolVersion)) return KNOWN_REVISIONS[0]!;
  const known = KNOWN_REVISIONS.filter((r) => r <= protocolVersion);
  return known[known.length - 1] ?? KNOWN_REVISIONS[0]!;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function project(value: unknown, definition: string, table: Table): unknown {
  if (definition.startsWith("[")) {
    return Array.isArray(value) ? value.map((item) => project(item, definition.slice(1, -1), table)) : value;
  }
  if (!isRecord(value)) return value;
  if (definition === "ContentBlock") return contentBlock(value, table);
  if (definition === "ResourceContents") definition = "blob" in value ? "BlobResourceContents" : "TextResourceContents";
  const fields = table[definition] ?? new Set<string>();
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (!fields.has(key)) continue;
    const nested = NESTED[`${definition}.${key}`];
    out[key] = nested === undefined ? item : project(item, nested, table);
  }
  return out;
}

function contentBlock(block: Record<string, unknown>, table: Table): unknown {
  const definition = CONTENT_TYPES[String(block.type)];
  if (definition === undefined || !(definition in table)) {
    // a block this revision cannot carry: its JSON as text, so nothing is lost
    return project({ type: "text", text: JSON.stringify(block) }, "TextContent", table);
  }
  return project(block, definition, table);
}

/** A Tool definition with only the fields of `revision`; `_meta` is kept. */
export function projectTool(definition: Record<string, unknown>, revision: string): Record<string, unknown> {
  const out = project(definition, "Tool", DEFINITIONS[revisionOf(revision)]!) as Record<string, unknown>;
  if ("_meta" in definition) out._meta = definition._meta;
  return out;
}

/** A `tools/call` result with only what `revision` defines. */
export function projectCallResult(result: Record<string, unknown>, revision: string): Record<string, unknown> {
  return project(result, "CallToolResult", DEFINITIONS[revisionOf(revision)]!) as Record<string, unknown>;
}
