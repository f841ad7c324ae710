/**
 * Refusals written for the model: the text and `structuredContent` of an
 * `isError` result (registry/sdk/refusals.py, the same templates). From the
 * 2025-11-25 revision on (SEP-1303) a refusal of the arguments themselves is
 * answered as a tool result the model reads, so that its next call can be right.
 */

import type { CompiledTool } from "./compiled.js";
import { wire } from "./compiled.js";
import type { ContractChange } from "./toolset.js";
import type { ErrorDetail } from "./validators.js";

/** The keys of `structuredContent`, always present (null or [] when empty). */
export const STRUCTURED_FIELDS = [
  "code",
  "reason",
  "tool",
  "declaredVersion",
  "currentVersion",
  "inferredVersion",
  "changes",
  "action",
  "errors",
  "inputSchema",
] as const;

const SCHEMA_CHARS = 4000;

function unescape(part: string): string {
  return part.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** A JSON Pointer (plus a key below it) as the caller writes it: `filters.tags[0]`. */
function callerName(path: string, key?: string): string {
  const parts = path.split("/").slice(1).map(unescape);
  if (key !== undefined) parts.push(key);
  let out = "";
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out ? `.${part}` : part;
  return out;
}

/** One line per validation error, in the caller's terms. */
export function problems(tool: string, version: number, errors: readonly ErrorDetail[]): string[] {
  const lines: string[] = [];
  for (const error of errors) {
    if (error.unexpected !== undefined && error.unexpected.length > 0) {
      for (const key of error.unexpected) {
        lines.push(`\`${callerName(error.path, key)}\` is not part of ${tool} ${wire(version)}`);
      }
    } else if (error.path) {
      lines.push(`\`${callerName(error.path)}\`: ${error.message}`);
    } else {
      lines.push(String(error.message));
    }
  }
  return lines;
}

/** The property a change's path points into: `/inputSchema/properties/a/properties/b/enum` -> `a.b`. */
function propertyOf(path: string): string {
  const parts = path.split("/").slice(2).map(unescape);
  let out = "";
  let i = 0;
  while (i < parts.length) {
    const part = parts[i]!;
    if (part === "properties" && i + 1 < parts.length) {
      out += out ? `.${parts[i + 1]}` : parts[i + 1];
      i += 2;
    } else if ((part === "items" || part === "additionalProperties") && out) {
      out += "[]";
      i += 1;
    } else {
      break;
    }
  }
  return out;
}

/** The engine's message, led by the property it is about unless it names it. */
export function changeLine(change: ContractChange): string {
  const message = String(change.message);
  const where = propertyOf(String(change.path ?? ""));
  let leaf = where.split(".").pop() ?? "";
  if (leaf.endsWith("[]")) leaf = leaf.slice(0, -2);
  if (!where || message.includes(`'${leaf}'`)) return message;
  return `\`${where}\`: ${message}`;
}

function topName(name: string): string {
  return name.split(".")[0]!.split("[")[0]!;
}

function named(errors: readonly ErrorDetail[], changes: readonly ContractChange[]): Set<string> {
  const names = new Set<string>();
  for (const error of errors) {
    for (const key of error.unexpected ?? []) names.add(key);
    names.add(topName(callerName(String(error.path ?? ""))));
  }
  for (const change of changes) {
    names.add(topName(propertyOf(String(change.path ?? ""))));
    if (change.kind === "property-renamed" && typeof change.new === "string") names.add(change.new);
  }
  names.delete("");
  return names;
}

function schemaShown(
  tool: CompiledTool,
  version: number,
  errors: readonly ErrorDetail[],
  changes: readonly ContractChange[],
  strict = false,
): string {
  const text = tool.schemaText(version, strict);
  const what = strict ? "its input schema, closed as calls without a version are checked" : "its input schema";
  if (text.length <= SCHEMA_CHARS) return `${what}: ${text}`;
  const schema = tool.schema(version, strict) as Record<string, unknown>;
  const properties = (schema !== null && typeof schema === "object" ? schema.properties ?? {} : {}) as Record<
    string,
    unknown
  >;
  const names = [...named(errors, changes)].filter((n) => n in properties).sort();
  const requiredNames = Array.isArray(schema?.required) ? schema.required.filter((r) => typeof r === "string") : [];
  const part = {
    type: "object",
    properties: Object.fromEntries(names.map((n) => [n, properties[n]])),
    required: requiredNames,
  };
  return (
    `the part of ${what} that matters here (${names.length} of ${Object.keys(properties).length} ` +
    `properties, every required name): ${JSON.stringify(part)}`
  );
}

function bullets(lines: Iterable<string>): string {
  let out = "";
  for (const line of lines) out += `\n- ${line}`;
  return out;
}

/** A version-less call that fails strict validation against current. */
export function versionlessText(
  tool: CompiledTool,
  errors: readonly ErrorDetail[],
  inferred: number | null,
  changes: readonly ContractChange[],
): string {
  const current = tool.current.version;
  let out =
    `${tool.name} refused this call: its arguments do not match ${tool.name} ` +
    `${wire(current)}, the current version.` +
    bullets(problems(tool.name, current, errors));
  if (inferred !== null) {
    const where = tool.retired.has(inferred)
      ? "which this server no longer serves (retired)"
      : "an older version this server still serves to clients that declare it " +
        `(_meta.schemaVersion "${wire(inferred)}")`;
    out += `\nThey match ${tool.name} ${wire(inferred)}, ${where}.`;
    if (changes.length > 0) {
      out += ` What changed from ${wire(inferred)} to ${wire(current)}:` + bullets(changes.map(changeLine));
    }
  }
  out +=
    `\nCall ${tool.name} once more with arguments valid under ${wire(current)}; ` +
    schemaShown(tool, current, errors, changes, true);
  return out;
}

/** Arguments invalid under the version the call declares (or its alias speaks). */
export function invalidArgumentsText(
  tool: CompiledTool,
  version: number,
  errors: readonly ErrorDetail[],
  alias: string | null,
): string {
  const called = alias ?? tool.name;
  const declared = alias
    ? `${tool.name} ${wire(version)}, the contract ${alias} speaks`
    : `${tool.name} ${wire(version)}, the version the call declares`;
  const shown = tool.definitions.has(version) ? schemaShown(tool, version, errors, []) : "see the tool's listing";
  return (
    `${called} refused this call: its arguments do not match ${declared}.` +
    bullets(problems(tool.name, version, errors)) +
    `\nCall ${called} once more with arguments valid under ${wire(version)}; ${shown}`
  );
}

/** A value a converter's `reject` operation refuses. */
export function conversionRejectedText(
  tool: CompiledTool,
  version: number,
  path: string,
  value: unknown,
  detail: string,
  alias: string | null,
): string {
  const called = alias ?? tool.name;
  return (
    `${called} refused this call: the value ${JSON.stringify(value)} of \`${callerName(path)}\` is no longer ` +
    `accepted: ${detail}. (The call speaks ${tool.name} ${wire(version)}; the current ` +
    `version is ${wire(tool.current.version)}.)\nCall ${called} once more without this value.`
  );
}

/** The machine fields of a refusal, as `structuredContent` carries them. */
export function structuredContent(error: { code: number; data: Record<string, unknown> }): Record<string, unknown> {
  const out: Record<string, unknown> = { code: error.code };
  for (const key of STRUCTURED_FIELDS.slice(1)) {
    const fallback = key === "changes" || key === "errors" ? [] : null;
    out[key] = key in error.data ? error.data[key] : fallback;
  }
  return out;
}
