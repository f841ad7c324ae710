/**
 * The toolset snapshot an MCP server gates its calls with.
 *
 *     const toolset = Toolset.fromJson(body);   // digest-checked, ToolsetError otherwise
 *     toolset.digest                             // "sha256:..." (the HTTP ETag, unquoted)
 *     toolset.tool("db.query")?.current          // 4
 *
 * The payload is the answer of `GET /v1/namespaces/{ns}/toolset`
 * (schemas/toolset.schema.json). A Toolset is an immutable snapshot: a swap
 * replaces the whole object. Loading checks what the Python SDK checks
 * (registry/sdk/toolset.py): the payload digest, every definition's digest,
 * routes that lead to current, alias contracts, converter operations.
 */

import { DigestError, canonicalJson, digest, payloadDigest } from "./canonical.js";
import { type Op, parsePointer } from "./converters.js";

export class ToolsetError extends Error {
  override name = "ToolsetError";
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface RouteStep {
  readonly from: number;
  readonly to: number;
  readonly ops: readonly Op[];
  /** An identity step whose breaking changes the publisher accepted (no converter). */
  readonly accepted: boolean;
}

/** One change a caller of an older version must make to speak current (the engine's words). */
export interface ContractChange {
  readonly kind: string;
  readonly path: string;
  readonly message: string;
  readonly old: Json;
  readonly new: Json;
}

export interface VersionEntry {
  readonly version: number;
  readonly digest: string;
  readonly state: string;
  readonly definition: JsonObject;
  readonly route: readonly RouteStep[];
  readonly sunset: string | null;
  /** From this version to current; absent in payloads of registries that predate it. */
  readonly changes: readonly ContractChange[] | null;
}

export interface RetiredVersion {
  readonly version: number;
  readonly digest: string;
  readonly definition: JsonObject | null;
  readonly changes: readonly ContractChange[] | null;
}

export interface ToolEntry {
  readonly name: string;
  readonly current: number;
  /** Served versions, current first. */
  readonly versions: readonly VersionEntry[];
  readonly retired: readonly RetiredVersion[];
}

export interface AliasEntry {
  readonly name: string;
  readonly target: string;
  readonly contract: { readonly tool: string; readonly version: number };
  readonly definition: JsonObject;
  /** null while no verified route from the contract to current exists. */
  readonly route: readonly RouteStep[] | null;
}

export interface ToolsetPayload {
  readonly namespace: string;
  readonly digest: string;
  readonly tools: readonly ToolEntry[];
  readonly aliases: readonly AliasEntry[];
  /** False when the namespace's policy turned gating off (the key is absent, true, otherwise). */
  readonly gating: boolean;
}

// ------------------------------------------------------------------ reading

class Reader {
  constructor(readonly where: string) {}

  fail(problem: string): never {
    throw new ToolsetError(`invalid toolset payload: ${problem} - at \`${this.where}\``);
  }

  at(key: string | number): Reader {
    return new Reader(typeof key === "number" ? `${this.where}[${key}]` : `${this.where}.${key}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function object(value: unknown, r: Reader): Record<string, unknown> {
  if (!isObject(value)) r.fail(`Expected \`object\`, got \`${kind(value)}\``);
  return value;
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  return typeof value === "string" ? "str" : typeof value;
}

function required(record: Record<string, unknown>, key: string, r: Reader): unknown {
  if (!(key in record)) r.fail(`Object missing required field \`${key}\``);
  return record[key];
}

function integer(value: unknown, r: Reader): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    r.fail(`Expected \`int\`, got \`${kind(value)}\``);
  }
  return value;
}

function string(value: unknown, r: Reader): string {
  if (typeof value !== "string") r.fail(`Expected \`str\`, got \`${kind(value)}\``);
  return value;
}

function boolean(value: unknown, r: Reader): boolean {
  if (typeof value !== "boolean") r.fail(`Expected \`bool\`, got \`${kind(value)}\``);
  return value;
}

function array(value: unknown, r: Reader): unknown[] {
  if (!Array.isArray(value)) r.fail(`Expected \`array\`, got \`${kind(value)}\``);
  return value;
}

const OP_FIELDS: Record<string, readonly string[]> = {
  rename: ["from", "to"],
  fill: ["path", "value"],
  drop: ["path"],
  map: ["path", "values"],
  reject: ["path", "values", "message"],
};

function readOp(value: unknown, r: Reader): Op {
  const raw = object(value, r);
  const tag = required(raw, "op", r);
  const found = typeof tag === "string" ? OP_FIELDS[tag] : undefined;
  if (found === undefined) return r.at("op").fail(`Invalid value ${JSON.stringify(tag)}`);
  const fields = found;
  for (const key of Object.keys(raw)) {
    if (key !== "op" && !fields.includes(key)) r.fail(`Object contains unknown field \`${key}\``);
  }
  for (const key of fields) required(raw, key, r);
  const pointer = (key: string): string => {
    const text = string(raw[key], r.at(key));
    try {
      parsePointer(text);
    } catch (error) {
      r.fail(String((error as Error).message));
    }
    return text;
  };
  switch (tag) {
    case "rename":
      return { op: "rename", from: pointer("from"), to: pointer("to") };
    case "fill":
      return { op: "fill", path: pointer("path"), value: raw.value as Json };
    case "drop":
      return { op: "drop", path: pointer("path") };
    case "map":
      return { op: "map", path: pointer("path"), values: object(raw.values, r.at("values")) as JsonObject };
    default:
      return {
        op: "reject",
        path: pointer("path"),
        values: array(raw.values, r.at("values")) as Json[],
        message: string(raw.message, r.at("message")),
      };
  }
}

function readRoute(value: unknown, r: Reader): RouteStep[] {
  return array(value, r).map((item, i) => {
    const step = object(item, r.at(i));
    const ops = "ops" in step ? array(step.ops, r.at(i).at("ops")) : [];
    return {
      from: integer(required(step, "from", r.at(i)), r.at(i).at("from")),
      to: integer(required(step, "to", r.at(i)), r.at(i).at("to")),
      ops: ops.map((op, j) => readOp(op, r.at(i).at("ops").at(j))),
      accepted: step.accepted === true,
    };
  });
}

function readChanges(value: unknown, r: Reader): ContractChange[] | null {
  if (value === undefined || value === null) return null;
  return array(value, r).map((item, i) => {
    const change = object(item, r.at(i));
    return {
      kind: string(required(change, "kind", r.at(i)), r.at(i).at("kind")),
      path: string(required(change, "path", r.at(i)), r.at(i).at("path")),
      message: string(required(change, "message", r.at(i)), r.at(i).at("message")),
      old: (change.old ?? null) as Json,
      new: (change.new ?? null) as Json,
    };
  });
}

function readVersion(value: unknown, r: Reader): VersionEntry {
  const raw = object(value, r);
  const sunset = raw.sunset ?? null;
  return {
    version: integer(required(raw, "version", r), r.at("version")),
    digest: string(required(raw, "digest", r), r.at("digest")),
    state: string(required(raw, "state", r), r.at("state")),
    definition: object(required(raw, "definition", r), r.at("definition")) as JsonObject,
    route: "route" in raw ? readRoute(raw.route, r.at("route")) : [],
    sunset: sunset === null ? null : string(sunset, r.at("sunset")),
    changes: readChanges(raw.changes, r.at("changes")),
  };
}

function readRetired(value: unknown, r: Reader): RetiredVersion {
  const raw = object(value, r);
  const definition = raw.definition ?? null;
  return {
    version: integer(required(raw, "version", r), r.at("version")),
    digest: string(required(raw, "digest", r), r.at("digest")),
    definition: definition === null ? null : (object(definition, r.at("definition")) as JsonObject),
    changes: readChanges(raw.changes, r.at("changes")),
  };
}

function readTool(value: unknown, r: Reader): ToolEntry {
  const raw = object(value, r);
  return {
    name: string(required(raw, "name", r), r.at("name")),
    current: integer(required(raw, "current", r), r.at("current")),
    versions: array(required(raw, "versions", r), r.at("versions")).map((v, i) =>
      readVersion(v, r.at("versions").at(i)),
    ),
    retired: ("retired" in raw ? array(raw.retired, r.at("retired")) : []).map((v, i) =>
      readRetired(v, r.at("retired").at(i)),
    ),
  };
}

function readAlias(value: unknown, r: Reader): AliasEntry {
  const raw = object(value, r);
  const contract = object(required(raw, "contract", r), r.at("contract"));
  const route = raw.route ?? null;
  return {
    name: string(required(raw, "name", r), r.at("name")),
    target: string(required(raw, "target", r), r.at("target")),
    contract: {
      tool: string(required(contract, "tool", r.at("contract")), r.at("contract").at("tool")),
      version: integer(required(contract, "version", r.at("contract")), r.at("contract").at("version")),
    },
    definition: object(required(raw, "definition", r), r.at("definition")) as JsonObject,
    route: route === null ? null : readRoute(route, r.at("route")),
  };
}

function readPayload(raw: Record<string, unknown>): ToolsetPayload {
  const r = new Reader("$");
  return {
    namespace: string(required(raw, "namespace", r), r.at("namespace")),
    digest: string(required(raw, "digest", r), r.at("digest")),
    tools: ("tools" in raw ? array(raw.tools, r.at("tools")) : []).map((t, i) =>
      readTool(t, r.at("tools").at(i)),
    ),
    aliases: ("aliases" in raw ? array(raw.aliases, r.at("aliases")) : []).map((a, i) =>
      readAlias(a, r.at("aliases").at(i)),
    ),
    gating: "gating" in raw ? boolean(raw.gating, r.at("gating")) : true,
  };
}

// ------------------------------------------------------------------ consistency

function checkRoute(route: readonly RouteStep[], start: number, current: number, what: string): void {
  let at = start;
  for (const step of route) {
    if (step.from !== at) throw new ToolsetError(`${what}: route step from v${step.from} where v${at} was expected`);
    at = step.to;
  }
  if (at !== current) throw new ToolsetError(`${what}: route ends at v${at}, not at current v${current}`);
}

function digestOf(definition: unknown, what: string): string {
  try {
    return digest(definition);
  } catch (error) {
    if (error instanceof DigestError) throw new ToolsetError(`${what}: ${error.message}`);
    throw error;
  }
}

function checkDigest(definition: unknown, expected: string, what: string): void {
  const actual = digestOf(definition, what);
  if (actual !== expected) throw new ToolsetError(`${what}: definition hashes to ${actual}, not ${expected}`);
}

function knownDigest(tool: ToolEntry, version: number): string | undefined {
  return (
    tool.versions.find((v) => v.version === version)?.digest ??
    tool.retired.find((v) => v.version === version)?.digest
  );
}

function checkConsistency(payload: ToolsetPayload): void {
  const names = new Set<string>();
  for (const tool of payload.tools) {
    if (names.has(tool.name)) throw new ToolsetError(`tool '${tool.name}' appears twice`);
    names.add(tool.name);
    if (tool.versions.length === 0 || tool.versions[0]!.version !== tool.current) {
      throw new ToolsetError(`tool '${tool.name}': the first served version must be current`);
    }
    const seen = new Set<number>();
    for (const entry of tool.versions) {
      const what = `tool '${tool.name}' v${entry.version}`;
      if (seen.has(entry.version) || tool.retired.some((r) => r.version === entry.version)) {
        throw new ToolsetError(`${what} is listed twice`);
      }
      seen.add(entry.version);
      checkDigest(entry.definition, entry.digest, what);
      checkRoute(entry.route, entry.version, tool.current, what);
    }
    for (const gone of tool.retired) {
      if (gone.definition !== null) checkDigest(gone.definition, gone.digest, `tool '${tool.name}' v${gone.version}`);
    }
  }
  for (const alias of payload.aliases) {
    const what = `alias '${alias.name}'`;
    if (names.has(alias.name)) throw new ToolsetError(`${what} has the name of a tool or another alias`);
    names.add(alias.name);
    const target = payload.tools.find((t) => t.name === alias.target);
    if (target === undefined) throw new ToolsetError(`${what}: target tool '${alias.target}' is not in the toolset`);
    const contractTool = payload.tools.find((t) => t.name === alias.contract.tool);
    if (contractTool !== undefined) {
      const expected = knownDigest(contractTool, alias.contract.version);
      const actual = digestOf(alias.definition, what);
      if (expected !== undefined && actual !== expected) {
        throw new ToolsetError(
          `${what}: its definition hashes to ${actual}, not to the contract ` +
            `${alias.contract.tool} v${alias.contract.version} (${expected})`,
        );
      }
    }
    if (alias.route !== null) checkRoute(alias.route, alias.contract.version, target.current, what);
  }
}

// ------------------------------------------------------------------ the snapshot

/** An immutable, digest-verified snapshot of one namespace's toolset. */
export class Toolset {
  readonly payload: ToolsetPayload;
  readonly raw: string;
  private readonly byTool: ReadonlyMap<string, ToolEntry>;
  private readonly byAlias: ReadonlyMap<string, AliasEntry>;

  private constructor(payload: ToolsetPayload, raw: string) {
    this.payload = payload;
    this.raw = raw;
    this.byTool = new Map(payload.tools.map((t) => [t.name, t]));
    this.byAlias = new Map(payload.aliases.map((a) => [a.name, a]));
    Object.freeze(this);
  }

  /** Load a sync payload (text or bytes); ToolsetError on an unreadable, tampered or inconsistent one. */
  static fromJson(data: string | Uint8Array): Toolset {
    let raw: unknown;
    let text: string;
    try {
      text = typeof data === "string" ? data : new TextDecoder("utf-8", { fatal: true }).decode(data);
      raw = JSON.parse(text);
    } catch (error) {
      throw new ToolsetError(`toolset payload is not JSON: ${(error as Error).message}`);
    }
    return Toolset.load(raw, text);
  }

  /** Load an already parsed payload (its `digest` is checked all the same). */
  static fromPayload(payload: unknown): Toolset {
    return Toolset.load(payload, isObject(payload) ? canonicalJson(payload) : "");
  }

  private static load(raw: unknown, text: string): Toolset {
    if (!isObject(raw)) throw new ToolsetError("toolset payload is not a JSON object");
    const claimed = raw.digest;
    let actual: string;
    try {
      actual = payloadDigest(raw);
    } catch (error) {
      throw new ToolsetError(`toolset payload cannot be canonicalised: ${(error as Error).message}`);
    }
    if (claimed !== actual) {
      throw new ToolsetError(
        `toolset digest mismatch: the payload says ${JSON.stringify(claimed ?? null)} but its content ` +
          `hashes to '${actual}'; refusing a tampered or corrupted toolset`,
      );
    }
    const payload = readPayload(raw);
    checkConsistency(payload);
    return new Toolset(payload, text);
  }

  get digest(): string {
    return this.payload.digest;
  }

  get etag(): string {
    return `"${this.payload.digest}"`;
  }

  get namespace(): string {
    return this.payload.namespace;
  }

  get tools(): readonly ToolEntry[] {
    return this.payload.tools;
  }

  get aliases(): readonly AliasEntry[] {
    return this.payload.aliases;
  }

  /** False when the namespace's policy turned gating off: `new Gate(toolset)` is then an UngatedGate. */
  get gating(): boolean {
    return this.payload.gating;
  }

  /** The version (served or retired) whose definition hashes to `digest`, if any. */
  versionOfDigest(name: string, digest: string): number | null {
    const tool = this.byTool.get(name);
    if (tool === undefined) return null;
    return (
      tool.versions.find((v) => v.digest === digest)?.version ??
      tool.retired.find((v) => v.digest === digest)?.version ??
      null
    );
  }

  tool(name: string): ToolEntry | undefined {
    return this.byTool.get(name);
  }

  alias(name: string): AliasEntry | undefined {
    return this.byAlias.get(name);
  }

  /** The payload text this snapshot was loaded from (it verifies). */
  toJson(): string {
    return this.raw;
  }
}
