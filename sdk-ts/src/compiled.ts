/**
 * The gate's compiled toolset (registry/sdk/_compiled.py): validators built
 * once per toolset for what accepted calls need (served versions, the strict
 * form of current, alias contracts); what only a refusal needs (the strict
 * validators of older versions, schema texts) is built on first use.
 */

import type { Op } from "./converters.js";
import { digest } from "./canonical.js";
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
  private readonly schemaTexts = new Map<string, string>();

  constructor(
    entry: ToolEntry,
    private readonly compiler: Compiler,
  ) {
    this.name = entry.name;
    const served = new Map<number, Served>();
    for (const v of entry.versions) {
      served.set(v.version, {
        version: v.version,
        validator: compiler.validator(inputSchema(v.definition), `${entry.name} v${v.version}`),
        ops: flatten(v.route),
      });
    }
    this.served = served;
    this.current = served.get(entry.current)!;
    this.strictInput = strictSchema(inputSchema(entry.versions[0]!.definition));
    this.strict = compiler.validator(this.strictInput, `${entry.name} v${entry.current} (strict)`);
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
  }

  /** The input schema of `version`; `strict` (current only): its strict form. */
  schema(version: number, strict = false): unknown {
    if (strict && version === this.current.version) return this.strictInput;
    return inputSchema(this.definitions.get(version)!);
  }

  schemaText(version: number, strict = false): string {
    const key = `${version}/${strict}`;
    let text = this.schemaTexts.get(key);
    if (text === undefined) {
      text = JSON.stringify(this.schema(version, strict));
      this.schemaTexts.set(key, text);
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
          built.push([version, this.compiler.validator(strictSchema(this.schema(version)), `${this.name} v${version} (strict)`)]);
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
  readonly validator: SchemaValidator;
  readonly ops: readonly Op[] | null;
  readonly schema: unknown;
}

function compileAlias(entry: AliasEntry, target: CompiledTool, compiler: Compiler): CompiledAlias {
  const schema = inputSchema(entry.definition);
  return {
    name: entry.name,
    target,
    contractVersion: entry.contract.version,
    contractDigest: digest(entry.definition),
    validator: compiler.validator(schema, `alias ${entry.name}`),
    ops: entry.route === null ? null : flatten(entry.route),
    schema,
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

/** (one-line message, error details) of an instance `validator` refuses. */
export function validationFailure(validator: SchemaValidator, instance: unknown): [string, ErrorDetail[]] {
  const errors = errorDetails(validator, instance);
  const first = errors[0] ?? { path: "", message: "refused" };
  const located = first.path ? ` at ${first.path}` : "";
  return [`${first.message}${located}`, errors];
}
