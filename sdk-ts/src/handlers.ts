/**
 * What a framework's own parsing would do to the gated arguments: the handler
 * check of registry/sdk/handlers.py, the same rules and words (the golden
 * table's `handlers` rows pin both).
 *
 *     handlerMismatches("db.query", "v4", handlerSchema, registrySchema)   // one line per mismatch
 *     compareHandlers(toolset, { "db.query": handlerSchema }).throwIfMismatched();
 *
 * The official SDK's `McpServer` parses every call's arguments with the
 * tool's zod shape and strips what the shape lacks. The adapter refuses to
 * start (`HandlerMismatchError`, one line per mismatch) when the handler's
 * input schema, as `McpServer` lists it, would strip, reject or change an
 * argument object the registry's current version accepts: a property current
 * declares that the handler lacks, a name the handler requires that current
 * does not, a type or an enum the handler narrows, a default the handler
 * fills that current does not have, a map's keys the handler does not take.
 * On a live toolset swap it logs one error per mismatch and refuses (-31004,
 * reason `handler_mismatch`) only the calls the handler's schema would drop,
 * refuse or change. The low-level `Server` has no parse: nothing here applies.
 */

import { Compiler, type SchemaValidator } from "./validators.js";
import { errorDetails, wire } from "./compiled.js";
import { type GateError, refusalError } from "./gate.js";
import { unescape } from "./pointers.js";
import { fragment, show, summary } from "./refusals.js";
import { strictSchema } from "./strict.js";
import { type Toolset, ToolsetError } from "./toolset.js";

type Node = Record<string, unknown>;

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** The server's handlers do not take what the registry's current versions accept; one line per mismatch. */
export class HandlerMismatchError extends Error {
  override name = "HandlerMismatchError";
  constructor(
    readonly namespace: string,
    readonly mismatches: Readonly<Record<string, readonly string[]>>,
  ) {
    let count = 0;
    let lines = "";
    for (const tool of Object.keys(mismatches).sort()) {
      for (const line of mismatches[tool]!) {
        count += 1;
        lines += fragment("mismatch_line", { tool, line });
      }
    }
    super(fragment("mismatch_refused", { namespace, count: String(count), lines }));
  }
}

// ---------------------------------------------------------------- the comparison

/** `node` with local `$ref`s (and single-branch `allOf`s) followed, a few hops at most. */
function deref(root: unknown, node: unknown): unknown {
  for (let hop = 0; hop < 16; hop++) {
    if (!isNode(node)) return node;
    const ref = node.$ref;
    if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) {
      let target: unknown = root;
      for (const raw of ref === "#" ? [] : ref.slice(2).split("/")) {
        const part = unescape(raw);
        if (!isNode(target) || !Object.hasOwn(target, part)) return node;
        target = target[part];
      }
      node = target;
      continue;
    }
    const allOf = node.allOf;
    if (Array.isArray(allOf) && allOf.length === 1 && !node.properties) {
      node = allOf[0];
      continue;
    }
    return node;
  }
  return node;
}

function branches(node: Node): unknown[] | null {
  for (const key of ["anyOf", "oneOf"]) {
    const found = node[key];
    if (Array.isArray(found)) return found;
  }
  return null;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string") return "string";
  return Array.isArray(value) ? "array" : "object";
}

/** The JSON types a schema admits; null for any. */
function types(root: unknown, raw: unknown): Set<string> | null {
  const node = deref(root, raw);
  if (!isNode(node)) return node === false ? new Set() : null;
  const kind = node.type;
  if (typeof kind === "string") return new Set([kind]);
  if (Array.isArray(kind)) return new Set(kind.filter((k): k is string => typeof k === "string"));
  if ("const" in node) return new Set([jsonType(node.const)]);
  if (Array.isArray(node.enum)) return new Set(node.enum.map(jsonType));
  const union = branches(node);
  if (union !== null) {
    const found = new Set<string>();
    for (const branch of union) {
      const some = types(root, branch);
      if (some === null) return null;
      for (const t of some) found.add(t);
    }
    return found;
  }
  return null;
}

function covers(handler: Set<string> | null, registry: Set<string> | null): boolean {
  if (handler === null) return true;
  if (registry === null) return false;
  return [...registry].every((t) => handler.has(t) || (t === "integer" && handler.has("number")));
}

function typeWords(found: Set<string> | null): string {
  if (found === null) return fragment("type_any");
  return [...found].sort().join(fragment("type_separator"));
}

/** The values a schema restricts to (`enum`, `const`, unions of them); null for any. */
function values(root: unknown, raw: unknown): unknown[] | null {
  const node = deref(root, raw);
  if (!isNode(node)) return null;
  if ("const" in node) return [node.const];
  if (Array.isArray(node.enum)) return [...node.enum];
  const union = branches(node);
  if (union === null) return null;
  const found: unknown[] = [];
  for (const rawBranch of union) {
    const branch = deref(root, rawBranch);
    if (isNode(branch) && branch.type === "null" && Object.keys(branch).length === 1) {
      found.push(null);
      continue;
    }
    const some = values(root, branch);
    if (some === null) return null;
    found.push(...some);
  }
  return found;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The object schema a property schema describes (the one object branch of a nullable union). */
function objectPart(root: unknown, raw: unknown): Node | null {
  const node = deref(root, raw);
  if (!isNode(node)) return null;
  if (isNode(node.properties) || node.type === "object") return node;
  const union = branches(node);
  if (union !== null) {
    const objects = union.map((b) => objectPart(root, b)).filter((b): b is Node => b !== null);
    if (objects.length === 1) return objects[0]!;
  }
  return null;
}

function takesAnyKey(node: Node): boolean {
  return node.additionalProperties === true || isNode(node.additionalProperties);
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

interface Sides {
  tool: string;
  current: string;
  handlerRoot: unknown;
  registryRoot: unknown;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

function compare(sides: Sides, path: string, handler: Node, registry: Node, lines: string[], defaulted: string[]): void {
  const rProps = isNode(registry.properties) ? registry.properties : {};
  const hProps = isNode(handler.properties) ? handler.properties : {};
  const rRequired = strings(registry.required);
  const hRequired = strings(handler.required);
  const said = { tool: sides.tool, current: sides.current };
  for (const [name, rProp] of Object.entries(rProps)) {
    const where = join(path, name);
    if (!Object.hasOwn(hProps, name)) {
      if (!takesAnyKey(handler)) lines.push(fragment("mismatch_missing", { name: where, ...said }));
      continue;
    }
    const hProp = hProps[name];
    const hTypes = types(sides.handlerRoot, hProp);
    const rTypes = types(sides.registryRoot, rProp);
    if (!covers(hTypes, rTypes)) {
      lines.push(fragment("mismatch_type", { name: where, handler: typeWords(hTypes), registry: typeWords(rTypes), ...said }));
    }
    const hValues = values(sides.handlerRoot, hProp);
    if (hValues !== null) {
      const rValues = values(sides.registryRoot, rProp);
      if (rValues === null || rValues.some((v) => !hValues.some((h) => sameJson(h, v)))) {
        lines.push(
          fragment("mismatch_enum", {
            name: where,
            handler: show(hValues),
            registry: rValues !== null ? show(rValues) : fragment("type_any"),
            ...said,
          }),
        );
      }
    }
    const hNode = deref(sides.handlerRoot, hProp);
    const rNode = deref(sides.registryRoot, rProp);
    if (
      !rRequired.includes(name) &&
      isNode(hNode) &&
      hNode.default !== undefined &&
      hNode.default !== null &&
      !(isNode(rNode) && sameJson(rNode.default, hNode.default))
    ) {
      const registryDefault =
        isNode(rNode) && "default" in rNode ? fragment("default_is", { value: show(rNode.default) }) : fragment("default_none");
      lines.push(fragment("mismatch_default", { name: where, handler: show(hNode.default), registry: registryDefault, ...said }));
      defaulted.push(where);
    }
    const hObject = objectPart(sides.handlerRoot, hProp);
    const rObject = objectPart(sides.registryRoot, rProp);
    if (hObject !== null && rObject !== null) compare(sides, where, hObject, rObject, lines, defaulted);
  }
  if (isNode(registry.additionalProperties) && !takesAnyKey(handler)) {
    const where = path ? fragment("where_property", { name: path }) : fragment("where_root");
    lines.push(fragment("mismatch_closed", { where, ...said }));
  }
  for (const name of hRequired) {
    if (!rRequired.includes(name)) lines.push(fragment("mismatch_required", { name: join(path, name), ...said }));
  }
}

function mismatchesOf(tool: string, current: string, handler: unknown, registry: unknown): [string[], string[]] {
  const lines: string[] = [];
  const defaulted: string[] = [];
  const sides: Sides = { tool, current, handlerRoot: handler, registryRoot: registry };
  const hObject = objectPart(handler, handler) ?? { type: "object" };
  const rObject = objectPart(registry, registry) ?? { type: "object" };
  compare(sides, "", hObject, rObject, lines, defaulted);
  return [lines, defaulted];
}

/**
 * One line per way the `handler`'s input schema (as its framework lists it)
 * would strip, refuse or change arguments `registry` (the input schema of
 * `tool` at version `current`, wire form) accepts; [] when it takes them all.
 */
export function handlerMismatches(tool: string, current: string, handler: unknown, registry: unknown): string[] {
  return mismatchesOf(tool, current, handler, registry)[0];
}

// ---------------------------------------------------------------- per toolset

function present(args: Record<string, unknown>, dotted: string): boolean {
  const parts = dotted.split(".");
  const leaf = parts.pop()!;
  let node: unknown = args;
  for (const part of parts) {
    if (!isNode(node) || !Object.hasOwn(node, part)) return true; // the parent is absent: nothing is filled below it
    node = node[part];
  }
  return !isNode(node) || Object.hasOwn(node, leaf);
}

/** One tool whose handler's schema mismatches current: which calls to refuse. */
export class HandlerCheck {
  constructor(
    readonly tool: string,
    readonly current: number,
    readonly lines: readonly string[],
    /** The handler's schema, closed where it leaves `additionalProperties` out. */
    readonly schema: unknown,
    private readonly validator: SchemaValidator,
    /** Dotted names the handler fills with a default the registry does not have. */
    readonly defaulted: readonly string[],
  ) {}

  /** The -31004 `handler_mismatch` refusal of a gated call the handler's framework would drop, refuse or change. */
  refusal(args: Record<string, unknown>): GateError | null {
    const errors = errorDetails(this.validator, args);
    const missing = this.defaulted.filter((name) => !present(args, name));
    if (errors.length === 0 && missing.length === 0) return null;
    return refusalError(
      "handler_mismatch",
      "handler",
      { tool: this.tool, currentVersion: wire(this.current), errors },
      { tool: this.tool, current: wire(this.current), first_problem: summary(this.lines) },
    );
  }
}

/** A server's handlers against a toolset: names on one side only, and the mismatches of the tools on both. */
export class HandlerReport {
  constructor(
    readonly namespace: string,
    readonly notImplemented: readonly string[],
    readonly notRegistered: readonly string[],
    readonly mismatches: Readonly<Record<string, readonly string[]>>,
    readonly checks: ReadonlyMap<string, HandlerCheck>,
  ) {}

  throwIfMismatched(): void {
    if (Object.keys(this.mismatches).length > 0) throw new HandlerMismatchError(this.namespace, this.mismatches);
  }

  /** [event, message] of the names on one side only, as the adapters log them. */
  warnings(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    if (this.notImplemented.length > 0) {
      out.push([
        "tools_not_implemented",
        fragment("not_implemented", { namespace: this.namespace, tools: this.notImplemented.join(", ") }),
      ]);
    }
    if (this.notRegistered.length > 0) {
      out.push([
        "tools_not_in_registry",
        fragment("not_registered", { namespace: this.namespace, tools: this.notRegistered.join(", ") }),
      ]);
    }
    return out;
  }
}

function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The check of `tool` (current version `current`) whose handler's framework lists `handler`; null when it takes what `registry` does. */
export function handlerCheck(
  tool: string,
  current: number,
  handler: unknown,
  registry: unknown,
  compiler: Compiler = new Compiler(),
): HandlerCheck | null {
  const [lines, defaulted] = mismatchesOf(tool, wire(current), handler, registry);
  if (lines.length === 0) return null;
  const closed = strictSchema(handler, { closeTrue: false });
  let validator: SchemaValidator;
  try {
    validator = compiler.validator(closed, `${tool} (the handler's input schema)`);
  } catch (error) {
    // a schema no validator reads refuses every call
    if (!(error instanceof ToolsetError)) throw error;
    validator = compiler.validator(false, `${tool} (no handler schema to read)`);
  }
  return new HandlerCheck(tool, current, lines, closed, validator, defaulted);
}

/** Every tool of `toolset` against the input schema its handler's framework lists (`handlers`: name -> schema). */
export function compareHandlers(toolset: Toolset, handlers: Readonly<Record<string, unknown>>): HandlerReport {
  const compiler = new Compiler();
  const registered = new Set(toolset.tools.map((t) => t.name));
  const checks = new Map<string, HandlerCheck>();
  for (const entry of [...toolset.tools].sort((a, b) => byName(a.name, b.name))) {
    if (!Object.hasOwn(handlers, entry.name)) continue;
    const current = entry.versions[0]!;
    const registry = "inputSchema" in current.definition ? current.definition.inputSchema : { type: "object" };
    const check = handlerCheck(entry.name, entry.current, handlers[entry.name], registry, compiler);
    if (check !== null) checks.set(entry.name, check);
  }
  return new HandlerReport(
    toolset.namespace,
    [...registered].filter((n) => !Object.hasOwn(handlers, n)).sort(byName),
    Object.keys(handlers)
      .filter((n) => !registered.has(n))
      .sort(byName),
    Object.fromEntries([...checks].map(([tool, check]) => [tool, check.lines])),
    checks,
  );
}
