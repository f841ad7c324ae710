/**
 * The refusal catalogue: what every refusal of the gate says, read from one
 * data file, `refusals.json` at the package's root, a byte-identical copy of
 * the Python SDK's registry/sdk/refusals.json (tests/e2e_ts checks the two
 * shipped files are the same bytes). Per reason: the JSON-RPC code, the
 * surface (`rpc`, or `arg`: an `isError` result from 2025-11-25 on), and per
 * variant the action and the words (`message`, `model_text`, `detail`).
 * tests/golden/gate_decisions.json pins what both SDKs say.
 *
 * The values the templates name are built as registry/sdk/refusals.py builds
 * them: one line per problem in the caller's terms, sorted; what changed from
 * an older version in the engine's words; the strict schema to retry under.
 */

import { readFileSync } from "node:fs";

import { split, unescape } from "./pointers.js";
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

/** A longer input schema is shown as the properties the refusal names. */
export const SCHEMA_CHARS = 4000;

export type Surface = "rpc" | "arg";

/** One variant of a refusal: its code, surface, action and templates. */
export interface Entry {
  readonly reason: string;
  readonly variant: string;
  readonly code: number;
  readonly surface: Surface;
  readonly action: string | null;
  readonly message: string;
  readonly modelText: string | null;
  readonly detail: string | null;
}

interface Document {
  reasons: Record<
    string,
    {
      code: number;
      surface: Surface;
      variants: Record<string, { action: string | null; message: string; model_text?: string; detail?: string }>;
    }
  >;
  fragments: Record<string, string>;
}

/** The catalogue file as shipped (dist/src/ -> the package root). */
export const CATALOGUE_TEXT = readFileSync(new URL("../../refusals.json", import.meta.url), "utf8");

const DOCUMENT = JSON.parse(CATALOGUE_TEXT) as Document;
const ENTRIES = new Map<string, Entry>();
for (const [reason, spec] of Object.entries(DOCUMENT.reasons)) {
  for (const [variant, words] of Object.entries(spec.variants)) {
    ENTRIES.set(`${reason}/${variant}`, {
      reason,
      variant,
      code: spec.code,
      surface: spec.surface,
      action: words.action,
      message: words.message,
      modelText: words.model_text ?? null,
      detail: words.detail ?? null,
    });
  }
}
const FRAGMENTS = DOCUMENT.fragments;

export function catalogueEntry(reason: string, variant: string): Entry {
  const found = ENTRIES.get(`${reason}/${variant}`);
  if (found === undefined) throw new Error(`no refusal ${reason}/${variant} in the catalogue`);
  return found;
}

export function entries(): Entry[] {
  return [...ENTRIES.values()];
}

/** `template` with each `{name}` replaced by `values[name]` (a missing one is a bug: it throws). */
export function render(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`refusal template value {${name}} missing`);
    return value;
  });
}

export function fragment(which: string, values: Readonly<Record<string, string>> = {}): string {
  return render(FRAGMENTS[which]!, values);
}

/** A value as the refusal texts write it: compact JSON (the Python SDK writes the same). */
export function show(value: unknown): string {
  return JSON.stringify(value) ?? "null";
}

// ---------------------------------------------------------------- problems

/** A JSON Pointer (plus a key below it) as the caller writes it: `filters.tags[0]`. */
export function callerName(path: string, key?: string): string {
  const tokens = split(path);
  if (key !== undefined) tokens.push(key);
  let out = "";
  for (const part of tokens) out += /^\d+$/.test(part) ? `[${part}]` : out ? `.${part}` : part;
  return out;
}

function isNode(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The value a validation error's schema path points at (local `$ref`s followed). */
function resolve(schema: unknown, schemaPath: string): [boolean, unknown] {
  let node = schema;
  for (const part of split(schemaPath)) {
    if (part === "$ref" && isNode(node) && typeof node.$ref === "string") {
      const ref = node.$ref;
      if (ref === "#") {
        node = schema;
        continue;
      }
      if (!ref.startsWith("#/")) return [false, null];
      const [found, target] = resolve(schema, ref.slice(1));
      if (!found) return [false, null];
      node = target;
      continue;
    }
    if (isNode(node) && Object.hasOwn(node, part)) node = node[part];
    else if (Array.isArray(node) && /^\d+$/.test(part) && Number(part) < node.length) node = node[Number(part)];
    else return [false, null];
  }
  return [true, node];
}

function at(instance: unknown, path: string): unknown {
  let node = instance;
  for (const part of split(path)) {
    if (isNode(node)) node = Object.hasOwn(node, part) ? node[part] : undefined;
    else if (Array.isArray(node) && /^\d+$/.test(part) && Number(part) < node.length) node = node[Number(part)];
    else return undefined;
  }
  return node;
}

function typeWords(expected: unknown): string {
  return Array.isArray(expected) ? expected.map(String).join(FRAGMENTS.type_separator!) : String(expected);
}

function problem(tool: string, version: string, error: ErrorDetail, schema: unknown, instance: unknown): string[] {
  const path = String(error.path ?? "");
  const keyword = String(error.keyword ?? "");
  if (error.unexpected !== undefined && error.unexpected.length > 0) {
    return error.unexpected.map((key) => fragment("problem_unexpected", { name: callerName(path, key), tool, version }));
  }
  const [found, expected] = resolve(schema, String(error.schemaPath ?? ""));
  if (keyword === "required" && found && Array.isArray(expected)) {
    const node = at(instance, path);
    if (isNode(node)) {
      return expected
        .filter((n): n is string => typeof n === "string" && !Object.hasOwn(node, n))
        .map((n) => fragment("problem_missing", { name: callerName(path, n) }));
    }
  }
  if (!path) {
    if (keyword === "type") return [fragment("problem_root_type")];
    return [fragment("problem_root_other", { keyword, expected: found ? show(expected) : "its schema" })];
  }
  const name = callerName(path);
  if (keyword === "type" && found) return [fragment("problem_type", { name, expected: typeWords(expected) })];
  if ((keyword === "enum" || keyword === "const") && found) {
    return [fragment(`problem_${keyword}`, { name, expected: show(expected) })];
  }
  return [fragment("problem_other", { name, keyword, expected: found ? show(expected) : "its schema" })];
}

/** Python's sorted() on str: by code point (JavaScript's default sort compares UTF-16 units). */
export function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/**
 * One line per problem of `instance` under `schema` (`tool` `version`, wire
 * form), in the caller's terms, sorted, each once. A non-object is one line.
 */
export function problems(
  tool: string,
  version: string,
  errors: readonly ErrorDetail[],
  schema: unknown,
  instance: unknown,
): string[] {
  if (!isNode(instance)) return [fragment("problem_root_type")];
  const lines = new Set<string>();
  for (const error of errors) for (const line of problem(tool, version, error, schema, instance)) lines.add(line);
  return [...lines].sort(byCodePoint);
}

/** The first problem, and how many more (a JSON-RPC message's one line). */
export function summary(lines: readonly string[]): string {
  if (lines.length === 0) return "refused";
  if (lines.length === 1) return lines[0]!;
  return fragment("more", { first: lines[0]!, count: String(lines.length - 1) });
}

export function bullets(lines: Iterable<string>): string {
  let out = "";
  for (const line of lines) out += fragment("bullet", { line });
  return out;
}

// ---------------------------------------------------------------- changes

/** The property a change's path points into: `/inputSchema/properties/a/properties/b/enum` -> `a.b`. */
function propertyOf(path: string): string {
  const tokens = path.split("/").slice(2).map(unescape);
  let out = "";
  let i = 0;
  while (i < tokens.length) {
    const part = tokens[i]!;
    if (part === "properties" && i + 1 < tokens.length) {
      out += out ? `.${tokens[i + 1]}` : tokens[i + 1];
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
  return fragment("change_at", { where, message });
}

/** What changed from `inferred` to `current`, as a sentence and bullets ("" for none). */
export function changeLines(inferred: string, current: string, changes: readonly ContractChange[]): string {
  if (changes.length === 0) return "";
  return fragment("changes", { inferred, current, lines: bullets(changes.map(changeLine)) });
}

// ---------------------------------------------------------------- the schema to retry under

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

/**
 * The input schema to retry under (`text`: its compact JSON), whole when
 * short, else the properties the errors and changes name plus every required name.
 */
export function schemaShown(
  schema: unknown,
  text: string,
  errors: readonly ErrorDetail[],
  changes: readonly ContractChange[],
): string {
  if ([...text].length <= SCHEMA_CHARS) return fragment("schema_whole", { schema: text });
  const node = isNode(schema) ? schema : {};
  const properties = (isNode(node.properties) ? node.properties : {}) as Record<string, unknown>;
  const names = [...named(errors, changes)].filter((n) => Object.hasOwn(properties, n)).sort(byCodePoint);
  const required = Array.isArray(node.required) ? node.required.filter((r) => typeof r === "string") : [];
  const part = {
    type: "object",
    properties: Object.fromEntries(names.map((n) => [n, properties[n]])),
    required,
  };
  return fragment("schema_part", {
    shown: String(names.length),
    total: String(Object.keys(properties).length),
    schema: show(part),
  });
}

// ---------------------------------------------------------------- structuredContent

/** The machine fields of a refusal, as `structuredContent` carries them. */
export function structuredContent(error: { code: number; data: Record<string, unknown> }): Record<string, unknown> {
  const out: Record<string, unknown> = { code: error.code };
  for (const key of STRUCTURED_FIELDS.slice(1)) {
    const fallback = key === "changes" || key === "errors" ? [] : null;
    out[key] = key in error.data ? error.data[key] : fallback;
  }
  return out;
}
