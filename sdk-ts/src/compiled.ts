/**
 * The gate's compiled toolset (registry/sdk/_compiled.py): validators built
 * once per toolset for what accepted calls need (served versions, current,
 * alias contracts), each of the strict form of its schema: a call is judged
 * by the strict form of the version it speaks, declared or not. What only a
 * refusal needs (the strict validators of retired versions, schema texts) is
 * built on first use.
 */

import type { Op } from "./converters.js";
import { digest } from "./canonical.js";
import { show } from "./refusals.js";
import { strictSchema } from "./strict.js";
import type { AliasEntry, ContractChange, JsonObject, RouteStep, ToolEntry, Toolset } from "./toolset.js";
import { ToolsetError } from "./toolset.js";
import { Compiler, type ErrorDetail, type SchemaValidator } from "./validators.js";

export const MAX_ERRORS = 10;

/** A version as the MCP wire writes it: "v4". */
export function wire(version: number): string {
  return `v${version}`;
}

/**
 * The same text as V8 keeps it in its string table: `===` against a literal or
 * a short JSON.parse value (V8 interns those) is then one pointer compare, not
 * a character compare on every call. Property keys are always interned.
 */
function interned(text: string): string {
  return Object.keys({ [text]: 0 })[0]!;
}

export interface Served {
  readonly version: number;
  /** Of the strict form of the version's input schema. */
  readonly validator: SchemaValidator;
  readonly ops: readonly Op[];
}

export function inputSchema(definition: JsonObject): unknown {
  return "inputSchema" in definition ? definition.inputSchema : { type: "object" };
}

function flatten(route: readonly RouteStep[]): Op[] {
  return route.flatMap((step) => step.ops);
}

export class CompiledTool {
  readonly name: string;
  readonly current: Served;
  readonly served: ReadonlyMap<number, Served>;
  readonly strict: SchemaValidator;
  readonly strictInput: unknown;
  readonly digests: ReadonlyMap<string, number>;
  readonly retired: ReadonlySet<number>;
  readonly retiredWire: readonly string[];
  /** "v4" and "4" of every served and retired version: the common spellings skip the parser. */
  readonly spellings: ReadonlyMap<string, number>;
  /** Every served and retired version whose definition the toolset carries. */
  readonly definitions: ReadonlyMap<number, JsonObject>;
  /** Served versions whose route crosses a break accepted on purpose (no converter). */
  readonly acceptedFrom: ReadonlySet<number>;
  /** What an accepted call needs, in one small object: the gate's hot path. */
  readonly hot: {
    readonly name: string;
    readonly version: number;
    readonly wire: string;
    readonly digits: string;
    readonly validate: (instance: unknown) => boolean;
    readonly strict: (instance: unknown) => boolean;
  };
  private readonly carried: ReadonlyMap<number, readonly ContractChange[]>;
  private older: Array<[number, SchemaValidator]> | undefined;
  private readonly strictSchemas = new Map<number, unknown>();
  private readonly schemaTexts = new Map<number, string>();

  constructor(
    entry: ToolEntry,
    private readonly compiler: Compiler,
  ) {
    this.name = entry.name;
    const served = new Map<number, Served>();
    for (const v of entry.versions) {
      const strict = strictSchema(inputSchema(v.definition));
      this.strictSchemas.set(v.version, strict);
      served.set(v.version, {
        version: v.version,
        validator: compiler.validator(strict, `${entry.name} v${v.version}`),
        ops: flatten(v.route),
      });
    }
    this.served = served;
    this.current = served.get(entry.current)!;
    this.strictInput = this.strictSchemas.get(entry.current);
    this.strict = this.current.validator;
    this.hot = {
      name: entry.name,
      version: entry.current,
      wire: interned(wire(entry.current)),
      digits: String(entry.current),
      validate: this.current.validator.validate,
      strict: this.strict.validate,
    };
    const digests = new Map<string, number>(entry.versions.map((v) => [v.digest, v.version]));
    for (const r of entry.retired) digests.set(r.digest, r.version);
    this.digests = digests;
    const retired = entry.retired.map((r) => r.version).sort((a, b) => a - b);
    this.retired = new Set(retired);
    this.retiredWire = retired.map(wire);
    const spellings = new Map<string, number>();
    for (const version of [...served.keys(), ...retired]) {
      spellings.set(wire(version), version);
      spellings.set(String(version), version);
    }
    this.spellings = spellings;
    const definitions = new Map<number, JsonObject>(entry.versions.map((v) => [v.version, v.definition]));
    const carried = new Map<number, readonly ContractChange[]>();
    for (const v of entry.versions) if (v.changes !== null) carried.set(v.version, v.changes);
    for (const r of entry.retired) {
      if (r.definition !== null) {
        definitions.set(r.version, r.definition);
        if (r.changes !== null) carried.set(r.version, r.changes);
      }
    }
    this.definitions = definitions;
    this.carried = carried;
    this.acceptedFrom = new Set(entry.versions.filter((v) => v.route.some((step) => step.accepted)).map((v) => v.version));
  }

  /** The input schema of `version` as published; `strict`: its strict form, the one the gate applies (cached). */
  schema(version: number, strict = false): unknown {
    if (!strict) return inputSchema(this.definitions.get(version)!);
    let found = this.strictSchemas.get(version);
    if (found === undefined) {
      found = strictSchema(this.schema(version));
      this.strictSchemas.set(version, found);
    }
    return found;
  }

  /** The strict input schema of `version` as compact JSON (cached). */
  schemaText(version: number): string {
    let text = this.schemaTexts.get(version);
    if (text === undefined) {
      text = show(this.schema(version, true));
      this.schemaTexts.set(version, text);
    }
    return text;
  }

  /** The newest older version (served or retired) whose strict form accepts `args`. */
  infer(args: unknown): number | null {
    if (args === null || typeof args !== "object" || Array.isArray(args)) return null;
    for (const [version, validator] of this.olderValidators()) {
      if (validator.matches(args)) return version;
    }
    return null;
  }

  private olderValidators(): Array<[number, SchemaValidator]> {
    if (this.older === undefined) {
      const built: Array<[number, SchemaValidator]> = [];
      const versions = [...this.definitions.keys()].sort((a, b) => b - a);
      for (const version of versions) {
        if (version === this.current.version) continue;
        try {
          built.push([version, this.compiler.validator(this.schema(version, true), `${this.name} v${version} (strict)`)]);
        } catch (error) {
          // a retired definition no validator reads: it can name no call
          if (!(error instanceof ToolsetError)) throw error;
        }
      }
      this.older = built;
    }
    return this.older;
  }

  /** What changed from `version` to current, as the payload carries it ([] when it does not). */
  changesToCurrent(version: number): ContractChange[] {
    return (this.carried.get(version) ?? []).map((c) => ({ ...c }));
  }
}

export interface CompiledAlias {
  readonly name: string;
  readonly target: CompiledTool;
  readonly contractVersion: number;
  readonly contractDigest: string;
  /** Of the strict form of the contract's input schema. */
  readonly validator: SchemaValidator;
  readonly ops: readonly Op[] | null;
  /** The strict form of the contract's input schema (what the gate applies). */
  readonly schema: unknown;
  readonly schemaText: string;
}

function compileAlias(entry: AliasEntry, target: CompiledTool, compiler: Compiler): CompiledAlias {
  const schema = strictSchema(inputSchema(entry.definition));
  return {
    name: entry.name,
    target,
    contractVersion: entry.contract.version,
    contractDigest: digest(entry.definition),
    validator: compiler.validator(schema, `alias ${entry.name}`),
    ops: entry.route === null ? null : flatten(entry.route),
    schema,
    schemaText: show(schema),
  };
}

export function compileToolset(toolset: Toolset): {
  tools: Map<string, CompiledTool>;
  aliases: Map<string, CompiledAlias>;
} {
  const compiler = new Compiler();
  const tools = new Map(toolset.tools.map((t) => [t.name, new CompiledTool(t, compiler)]));
  const aliases = new Map(
    toolset.aliases.map((a) => [a.name, compileAlias(a, tools.get(a.target)!, compiler)]),
  );
  return { tools, aliases };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** [] when `instance` is a valid arguments object, else up to MAX_ERRORS details. */
export function errorDetails(validator: SchemaValidator, instance: unknown): ErrorDetail[] {
  if (!isPlainObject(instance)) {
    return [{ path: "", keyword: "type", message: "arguments must be an object", schemaPath: "" }];
  }
  return validator.explain(instance, MAX_ERRORS);
}
