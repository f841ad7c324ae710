/**
 * Converter operations applied to call arguments, exactly as the Python SDK
 * applies them (registry/compat/converters.py `apply`): in order, on a deep
 * copy; `rename` moves a value (creating missing parents), `fill` sets a value
 * only where the caller sent none, `drop` removes, `map` replaces enum values
 * (in a list, each item), `reject` refuses a call carrying one of its values.
 *
 *     apply([{op: "rename", from: "/timeout_ms", to: "/timeout"}], {timeout_ms: 5000})
 *     // {timeout: 5000}
 */

import { canonicalJson } from "./canonical.js";
import { unescape } from "./pointers.js";
import type { Json, JsonObject } from "./toolset.js";

export type Op =
  | { readonly op: "rename"; readonly from: string; readonly to: string }
  | { readonly op: "fill"; readonly path: string; readonly value: Json }
  | { readonly op: "drop"; readonly path: string }
  | { readonly op: "map"; readonly path: string; readonly values: JsonObject }
  | { readonly op: "reject"; readonly path: string; readonly values: readonly Json[]; readonly message: string };

export class ConverterError extends Error {
  override name = "ConverterError";
}

/** A `reject` operation refused the call's arguments. */
export class ConversionRejected extends Error {
  override name = "ConversionRejected";
  constructor(
    readonly path: string,
    readonly value: unknown,
    readonly detail: string,
  ) {
    super(`value ${JSON.stringify(value)} at ${path} is refused: ${detail}`);
  }
}

/** RFC 6901 tokens of a JSON Pointer into the arguments object. */
export function parsePointer(pointer: string): string[] {
  if (typeof pointer !== "string" || !pointer.startsWith("/")) {
    throw new ConverterError(`'${pointer}' is not a JSON Pointer (it must start with '/')`);
  }
  const tokens = pointer.slice(1).split("/");
  for (const token of tokens) {
    if (token.replaceAll("~0", "").replaceAll("~1", "").includes("~")) {
      throw new ConverterError(`'${pointer}' is not a JSON Pointer ('~' must be ~0 or ~1)`);
    }
  }
  return tokens.map(unescape);
}

type Doc = Record<string, unknown>;

function isObject(value: unknown): value is Doc {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

const own = (node: Doc, key: string): boolean => Object.prototype.hasOwnProperty.call(node, key);

function parent(document: Doc, tokens: readonly string[]): Doc | undefined {
  let node: unknown = document;
  for (const token of tokens.slice(0, -1)) {
    if (!isObject(node) || !own(node, token)) return undefined;
    node = node[token];
  }
  return isObject(node) ? node : undefined;
}

function take(document: Doc, tokens: readonly string[]): [boolean, unknown] {
  const holder = parent(document, tokens);
  const last = tokens[tokens.length - 1]!;
  if (holder === undefined || !own(holder, last)) return [false, undefined];
  const value = holder[last];
  delete holder[last];
  return [true, value];
}

function put(document: Doc, tokens: readonly string[], value: unknown): void {
  let node = document;
  for (const token of tokens.slice(0, -1)) {
    if (!own(node, token)) node[token] = {};
    const child = node[token];
    if (!isObject(child)) return;
    node = child;
  }
  node[tokens[tokens.length - 1]!] = value;
}

function mapped(value: unknown, table: JsonObject): unknown {
  if (Array.isArray(value)) return value.map((v) => mapped(v, table));
  if (typeof value === "string" && own(table, value)) return structuredClone(table[value]);
  return value;
}

/** A key with JSON equality (1 == 1.0, 1 != true, keys in any order). */
function jsonKey(value: unknown): string {
  try {
    return canonicalJson(value);
  } catch {
    return JSON.stringify(value) ?? "";
  }
}

function refuse(value: unknown, op: Extract<Op, { op: "reject" }>): void {
  const refused = new Set(op.values.map(jsonKey));
  for (const candidate of Array.isArray(value) ? value : [value]) {
    if (refused.has(jsonKey(candidate))) throw new ConversionRejected(op.path, candidate, op.message);
  }
}

/** Run `ops` over call arguments: a new object, the input untouched. Throws ConversionRejected. */
export function apply(ops: readonly Op[], argumentsObject: Doc): Doc {
  const result = structuredClone(argumentsObject);
  for (const op of ops) {
    switch (op.op) {
      case "rename": {
        const [found, value] = take(result, parsePointer(op.from));
        if (found) put(result, parsePointer(op.to), value);
        break;
      }
      case "fill": {
        const tokens = parsePointer(op.path);
        const holder = parent(result, tokens);
        const last = tokens[tokens.length - 1]!;
        if (holder !== undefined && !own(holder, last)) holder[last] = structuredClone(op.value);
        break;
      }
      case "drop":
        take(result, parsePointer(op.path));
        break;
      case "map": {
        const tokens = parsePointer(op.path);
        const holder = parent(result, tokens);
        const last = tokens[tokens.length - 1]!;
        if (holder !== undefined && own(holder, last)) holder[last] = mapped(holder[last], op.values);
        break;
      }
      case "reject": {
        const tokens = parsePointer(op.path);
        const holder = parent(result, tokens);
        const last = tokens[tokens.length - 1]!;
        if (holder !== undefined && own(holder, last)) refuse(holder[last], op);
        break;
      }
    }
  }
  return result;
}
