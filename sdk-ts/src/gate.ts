/**
 * The call gate: the decision table of registry/sdk/gate.py (its docstring
 * lists the 19 rows; tests/golden/gate_decisions.json holds them as cases
 * both SDKs run), with the same error codes and `data` fields.
 *
 *     const gate = new Gate(toolset);
 *     const decision = gate.check("db.query", args, meta);
 *     if (decision.accepted) handler(decision.tool, decision.arguments);  // exactly these
 *     else if (decision.error.modelText !== null && revision >= "2025-11-25")
 *       replyResult(decision.error.modelText, structuredContent(decision.error));
 *     else replyError(decision.error.code, decision.error.message, decision.error.data);
 *
 * `check` reads the raw request `_meta` and raw arguments; it never fills a
 * default, drops or coerces a value: accepted arguments are the caller's own
 * object (declared current, or nothing declared) or the converter's output.
 * Inference (rows 17, 18) only explains a refusal. `changes` are the ones the
 * payload carries (the registry computes them with its engine); a payload
 * from a registry that predates them gives `changes: []`.
 *
 * Gating off: a toolset whose namespace policy turned gating off (`"gating":
 * false` in the payload) gets an `UngatedGate` from `new Gate(toolset)`, as
 * the Python SDK's `Gate(toolset)` does (registry/sdk/ungated.py): calls to
 * listed tools pass through. A gated toolset's `check` has no branch for it.
 */

import { apply, ConversionRejected, type Op } from "./converters.js";
import { compileToolset, type CompiledAlias, type CompiledTool, errorDetails, type Served, wire } from "./compiled.js";
import { type Logger, stderrLogger } from "./logging.js";
import {
  bullets,
  callerName,
  catalogueEntry,
  changeLines,
  problems,
  render,
  schemaShown,
  show,
  summary,
} from "./refusals.js";
import type { Toolset } from "./toolset.js";

export const SCHEMA_VERSION_RETIRED = -31001;
export const SCHEMA_VERSION_UNKNOWN = -31002;
export const STRICT_VALIDATION_FAILED = -31003;
export const SCHEMA_VERSION_MISMATCH = -31004;
export const INVALID_PARAMS = -32602;
export const CONVERSION_REJECTED = INVALID_PARAMS;

const VERSION = /^v?(0|[1-9][0-9]*)$/;

/** A refusal: `code`, `message` and `data` go out as a JSON-RPC error as they are. */
export interface GateError {
  readonly code: number;
  readonly message: string;
  readonly data: Record<string, unknown>;
  /** Set on refusals of the arguments themselves (rows 4, 5, 11, 13, 17, 18): text for the model. */
  readonly modelText: string | null;
}

export type Decision =
  | {
      readonly accepted: true;
      readonly tool: string;
      readonly version: number;
      readonly arguments: Record<string, unknown>;
      readonly error: null;
    }
  | {
      readonly accepted: false;
      readonly tool: string;
      readonly version: number | null;
      readonly arguments: null;
      readonly error: GateError;
    };

/** What a call declared, as read from its `_meta` (or its alias). */
export interface Declared {
  readonly version: number | null;
  readonly schemaVersion: unknown;
  readonly schemaHash: string | null;
  readonly alias: string | null;
}

export type OnDecision = (decision: Decision, declared: Declared) => void;

export interface GateOptions {
  onDecision?: OnDecision;
  logger?: Logger;
}

const NOTHING: Declared = { version: null, schemaVersion: undefined, schemaHash: null, alias: null };

function declaredPresent(declared: Declared): boolean {
  return (
    (declared.schemaVersion !== undefined && declared.schemaVersion !== null) ||
    declared.schemaHash !== null ||
    Boolean(declared.alias)
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function readVersion(value: unknown): number | null {
  if (typeof value === "number") return Number.isInteger(value) ? value : null;
  if (typeof value === "string") {
    const match = VERSION.exec(value);
    if (match) return Number(match[1]);
  }
  return null;
}

/** A declared version for `data`: wire form when it reads as one, else as sent. */
function shown(value: unknown): unknown {
  const version = readVersion(value);
  return version !== null ? wire(version) : value ?? null;
}

function versionData(tool: CompiledTool, declared: unknown): Record<string, unknown> {
  return {
    tool: tool.name,
    declaredVersion: shown(declared),
    currentVersion: wire(tool.current.version),
    retired: [...tool.retiredWire],
  };
}

/** The template values every refusal of `tool` may name, plus `values`. */
function values(tool: CompiledTool, more: Record<string, string> = {}): Record<string, string> {
  return {
    tool: tool.name,
    called: tool.name,
    current: wire(tool.current.version),
    served: [...tool.served.keys()]
      .sort((a, b) => a - b)
      .map(wire)
      .join(", "),
    ...more,
  };
}

/** A refusal of a call through an alias names the alias, its target and contract. */
function nameAlias(data: Record<string, unknown>, tool: CompiledTool, alias: string | null, contract: number): void {
  if (alias !== null) Object.assign(data, { tool: alias, target: tool.name, contractVersion: wire(contract) });
}

function aliasData(alias: CompiledAlias, declared: unknown): Record<string, unknown> {
  const data = versionData(alias.target, declared);
  nameAlias(data, alias.target, alias.name, alias.contractVersion);
  return data;
}

/**
 * The refusal the catalogue (refusals.json) writes for `reason` and
 * `variant`: its code; `data` with `reason`, the action and the detail; the
 * message; the model's text on the arguments surface. Adapters refusing on
 * the gate's behalf (a handler's mismatch) build theirs here too.
 */
export function refusalError(
  reason: string,
  variant: string,
  data: Readonly<Record<string, unknown>>,
  given: Readonly<Record<string, string>>,
): GateError {
  const entry = catalogueEntry(reason, variant);
  const payload: Record<string, unknown> = { reason, ...data };
  if (entry.action !== null) payload.action = entry.action;
  let texts = given;
  if (entry.detail !== null) {
    const detail = render(entry.detail, given);
    payload.detail = detail;
    texts = { ...given, detail };
  }
  const modelText = entry.modelText !== null ? render(entry.modelText, texts) : null;
  return { code: entry.code, message: render(entry.message, texts), data: payload, modelText };
}

function refuse(
  tool: string,
  current: number | null,
  reason: string,
  variant: string,
  data: Record<string, unknown> | null,
  given: Record<string, string>,
): Decision {
  const error = refusalError(reason, variant, data ?? { tool }, given);
  return { accepted: false, tool, version: current, arguments: null, error };
}

/**
 * Gates `tools/call` requests against one toolset snapshot. Every validator
 * accepted calls need is compiled here, once; a toolset swap builds a new Gate.
 */
export class Gate {
  // `!`: the constructor's early return (gating off) hands back another object
  readonly toolset!: Toolset;
  private readonly tools!: Map<string, CompiledTool>;
  private readonly aliases!: Map<string, CompiledAlias>;
  protected readonly onDecision: OnDecision | undefined;
  protected readonly logger!: Logger;
  /**
   * The last call's tool and its name: a call of the same tool compares the name
   * instead of hashing it for the Map (about half a validate; several times that
   * for a name over 10 characters, which JSON.parse hands over un-interned).
   */
  private lastName = "";
  private lastTool: CompiledTool | undefined = undefined;

  constructor(toolset: Toolset, options: GateOptions = {}) {
    // the namespace's policy turned gating off: the pass-through gate (chosen here, once)
    if (new.target === Gate && !toolset.gating) return new UngatedGate(toolset, options);
    this.toolset = toolset;
    this.onDecision = options.onDecision;
    this.logger = options.logger ?? stderrLogger;
    ({ tools: this.tools, aliases: this.aliases } = this.compile(toolset));
  }

  protected compile(toolset: Toolset): ReturnType<typeof compileToolset> {
    return compileToolset(toolset);
  }

  /** Decide one call: `args` and `meta` exactly as they came on the wire. */
  check(name: string, args: unknown, meta?: unknown): Decision {
    const tool = name === this.lastName ? this.lastTool : this.lookup(name);
    if (tool === undefined) return this.checkOther(name, args, meta);
    const argumentsObject = args ?? {};
    if (meta !== null && typeof meta === "object") {
      // the hot path: current declared by version alone, valid (one comparison, one validate)
      const said = (meta as Record<string, unknown>).schemaVersion;
      const hot = tool.hot;
      if (
        (said === hot.wire || said === hot.version || said === hot.digits) &&
        (meta as Record<string, unknown>).schemaHash == null &&
        typeof argumentsObject === "object" &&
        !Array.isArray(argumentsObject) &&
        hot.validate(argumentsObject)
      ) {
        const decision: Decision = {
          accepted: true,
          tool: hot.name,
          version: hot.version,
          arguments: argumentsObject as Record<string, unknown>,
          error: null,
        };
        if (this.onDecision !== undefined) {
          this.notify(decision, { version: hot.version, schemaVersion: said, schemaHash: null, alias: null });
        }
        return decision;
      }
    } else if (typeof argumentsObject === "object" && !Array.isArray(argumentsObject) && tool.hot.strict(argumentsObject)) {
      // nothing declared and strictly valid: the caller's own object
      const decision: Decision = {
        accepted: true,
        tool: tool.name,
        version: tool.hot.version,
        arguments: argumentsObject as Record<string, unknown>,
        error: null,
      };
      return this.onDecision === undefined ? decision : this.finish(decision, NOTHING);
    }
    return this.decide(tool, argumentsObject, meta);
  }

  private lookup(name: string): CompiledTool | undefined {
    const tool = this.tools.get(name);
    if (tool !== undefined) {
      this.lastName = name;
      this.lastTool = tool;
    }
    return tool;
  }

  private checkOther(name: string, args: unknown, meta: unknown): Decision {
    const alias = this.aliases.get(name);
    if (alias === undefined) {
      return this.finish(refuse(name, null, "unknown_tool", "unknown", null, { tool: name }), NOTHING);
    }
    return this.checkAlias(alias, args, meta);
  }

  /** Every branch but the two hot ones (kept out of `check` so that it stays small). */
  private decide(tool: CompiledTool, argumentsObject: unknown, meta: unknown): Decision {
    let schemaVersion: unknown = undefined;
    let schemaHash: unknown = undefined;
    if (isPlainObject(meta)) {
      schemaVersion = meta.schemaVersion ?? undefined;
      schemaHash = meta.schemaHash ?? undefined;
    }
    if (schemaHash === undefined) {
      if (schemaVersion === undefined) return this.checkUndeclared(tool, argumentsObject);
      // the hot path: a version and no hash
      const version =
        typeof schemaVersion === "string"
          ? tool.spellings.get(schemaVersion) ?? readVersion(schemaVersion)
          : readVersion(schemaVersion);
      if (version !== null) {
        return this.checkDeclared(tool, version, argumentsObject, {
          version,
          schemaVersion,
          schemaHash: null,
          alias: null,
        });
      }
    }
    const version = readVersion(schemaVersion);
    const byHash = typeof schemaHash === "string" ? tool.digests.get(schemaHash) ?? null : null;
    const declared: Declared = {
      version: schemaVersion !== undefined ? version : byHash,
      schemaVersion,
      schemaHash: typeof schemaHash === "string" ? schemaHash : null,
      alias: null,
    };
    if (schemaVersion !== undefined && version === null) return this.unknown(tool, declared, "unreadable", show(schemaVersion));
    if (schemaHash !== undefined && byHash === null) return this.unknown(tool, declared, "hash_unknown", show(schemaHash));
    if (schemaVersion !== undefined && schemaHash !== undefined && version !== byHash) {
      return this.unknown(tool, declared, "disagree", show(schemaVersion), wire(byHash!));
    }
    return this.checkDeclared(tool, declared.version!, argumentsObject, declared);
  }

  // ------------------------------------------------------------ branches

  private checkDeclared(tool: CompiledTool, version: number, args: unknown, declared: Declared): Decision {
    const current = tool.current.version;
    if (tool.retired.has(version)) {
      const data = versionData(tool, version);
      const changes = tool.definitions.has(version) ? tool.changesToCurrent(version) : [];
      Object.assign(data, { changes, inputSchema: tool.schema(current, true) });
      return this.finish(
        refuse(tool.name, current, "schema_version_retired", "retired", data, values(tool, { declared: wire(version) })),
        declared,
      );
    }
    const served = tool.served.get(version);
    if (served === undefined) return this.unknown(tool, declared, "never_served", wire(version));
    if (!isPlainObject(args) || !served.validator.isValid(args)) {
      return this.invalid(tool, served, args, declared, null);
    }
    if (version === current) {
      const decision: Decision = { accepted: true, tool: tool.name, version: current, arguments: args, error: null };
      if (this.onDecision !== undefined) this.notify(decision, declared);
      return decision;
    }
    return this.convert(tool, served.ops, args, declared, version, null);
  }

  private checkUndeclared(tool: CompiledTool, args: unknown): Decision {
    const current = tool.current.version;
    const errors = errorDetails(tool.strict, args);
    if (errors.length === 0) {
      return this.finish(
        { accepted: true, tool: tool.name, version: current, arguments: args as Record<string, unknown>, error: null },
        NOTHING,
      );
    }
    const inferred = tool.infer(args);
    const changes = inferred !== null ? tool.changesToCurrent(inferred) : [];
    const data = versionData(tool, null);
    Object.assign(data, {
      errors,
      inferredVersion: inferred !== null ? wire(inferred) : null,
      changes,
      inputSchema: tool.schema(current, true),
    });
    const lines = problems(tool.name, wire(current), errors, tool.strictInput, args);
    const given = values(tool, {
      problems: bullets(lines),
      first_problem: summary(lines),
      schema: schemaShown(tool.strictInput, tool.schemaText(current), errors, changes),
    });
    let variant = "unmatched";
    if (inferred !== null) {
      variant = tool.retired.has(inferred) ? "inferred_retired" : "inferred_served";
      Object.assign(given, { inferred: wire(inferred), changes: changeLines(wire(inferred), wire(current), changes) });
    }
    return this.finish(refuse(tool.name, current, "strict_validation_failed", variant, data, given), NOTHING);
  }

  private checkAlias(alias: CompiledAlias, args: unknown, meta: unknown): Decision {
    const tool = alias.target;
    const current = tool.current.version;
    const declared: Declared = { version: alias.contractVersion, schemaVersion: undefined, schemaHash: null, alias: alias.name };
    const argumentsObject = args ?? {};
    const schemaVersion = isPlainObject(meta) ? meta.schemaVersion ?? undefined : undefined;
    const schemaHash = isPlainObject(meta) ? meta.schemaHash ?? undefined : undefined;
    const given = (): Record<string, string> => values(tool, { called: alias.name, contract: wire(alias.contractVersion) });
    if (
      (schemaVersion !== undefined && readVersion(schemaVersion) !== alias.contractVersion) ||
      (schemaHash !== undefined && schemaHash !== alias.contractDigest)
    ) {
      const said = schemaVersion !== undefined ? schemaVersion : schemaHash;
      return this.finish(
        refuse(tool.name, current, "schema_version_unknown", "alias_declares_other", aliasData(alias, said), {
          ...given(),
          declared: show(said),
        }),
        declared,
      );
    }
    if (alias.ops === null) {
      return this.finish(
        refuse(
          tool.name,
          current,
          "schema_version_mismatch",
          "alias_unrouted",
          aliasData(alias, alias.contractVersion),
          given(),
        ),
        declared,
      );
    }
    if (!isPlainObject(argumentsObject) || !alias.validator.isValid(argumentsObject)) {
      const served: Served = { version: alias.contractVersion, validator: alias.validator, ops: alias.ops };
      return this.invalid(tool, served, argumentsObject, declared, alias);
    }
    return this.convert(tool, alias.ops, argumentsObject, declared, alias.contractVersion, alias.name);
  }

  private convert(
    tool: CompiledTool,
    ops: readonly Op[],
    args: Record<string, unknown>,
    declared: Declared,
    version: number,
    alias: string | null,
  ): Decision {
    const current = tool.current.version;
    const given = (): Record<string, string> => values(tool, { called: alias ?? tool.name, declared: wire(version) });
    let converted: Record<string, unknown>;
    try {
      converted = apply(ops, args);
    } catch (error) {
      if (!(error instanceof ConversionRejected)) throw error;
      const data = versionData(tool, version);
      nameAlias(data, tool, alias, version);
      Object.assign(data, { path: error.path, value: error.value });
      const words = { ...given(), path: callerName(error.path), value: show(error.value), converter: error.detail };
      return this.finish(refuse(tool.name, current, "conversion_rejected", "rejected", data, words), declared);
    }
    if (!tool.current.validator.isValid(converted)) {
      const errors = errorDetails(tool.current.validator, converted);
      const data = versionData(tool, version);
      nameAlias(data, tool, alias, version);
      data.errors = errors;
      const words = { ...given(), first_problem: summary(problems(tool.name, wire(current), errors, tool.strictInput, converted)) };
      if (tool.acceptedFrom.has(version)) {
        this.logger.info("gate.accepted_break", { tool: tool.name, declared: version, current });
      } else {
        this.logger.error("gate.converter_broken", { tool: tool.name, declared: version, current });
      }
      return this.finish(refuse(tool.name, current, "schema_version_mismatch", "converted_invalid", data, words), declared);
    }
    return this.finish({ accepted: true, tool: tool.name, version: current, arguments: converted, error: null }, declared);
  }

  private invalid(tool: CompiledTool, served: Served, args: unknown, declared: Declared, alias: CompiledAlias | null): Decision {
    const current = tool.current.version;
    const version = served.version;
    const errors = errorDetails(served.validator, args);
    const data = versionData(tool, version);
    nameAlias(data, tool, alias !== null ? alias.name : null, version);
    const schema = alias !== null ? alias.schema : tool.schema(version, true);
    const text = alias !== null ? alias.schemaText : tool.schemaText(version);
    Object.assign(data, { errors, inputSchema: schema });
    const lines = problems(tool.name, wire(version), errors, schema, args);
    const given = values(tool, {
      called: alias !== null ? alias.name : tool.name,
      declared: wire(version),
      problems: bullets(lines),
      first_problem: summary(lines),
      schema: schemaShown(schema, text, errors, []),
    });
    return this.finish(
      refuse(tool.name, current, "invalid_arguments", alias !== null ? "alias" : "declared", data, given),
      declared,
    );
  }

  private unknown(tool: CompiledTool, declared: Declared, variant: string, said: string, hashed = ""): Decision {
    const current = tool.current.version;
    const shownAs = declared.version === null ? declared.schemaVersion : declared.version;
    const data = versionData(tool, shownAs !== undefined && shownAs !== null ? shownAs : declared.schemaHash);
    if (declared.schemaHash !== null) data.declaredHash = declared.schemaHash;
    return this.finish(
      refuse(tool.name, current, "schema_version_unknown", variant, data, values(tool, { declared: said, hashed })),
      declared,
    );
  }

  protected finish(decision: Decision, declared: Declared): Decision {
    if (!decision.accepted) {
      this.logger.info("gate.decision", {
        tool: decision.tool,
        declared: declaredPresent(declared) ? declared.version : null,
        current: decision.version,
        decision: "reject",
        reason: decision.error.data.reason,
        code: decision.error.code,
      });
    }
    if (this.onDecision !== undefined) this.notify(decision, declared);
    return decision;
  }

  protected notify(decision: Decision, declared: Declared): void {
    try {
      this.onDecision!(decision, declared);
    } catch (error) {
      this.logger.error("gate.on_decision_failed", { tool: decision.tool, error: String(error) });
    }
  }
}

/**
 * The gate of a namespace whose policy turned gating off; `new Gate(toolset)`
 * makes one. Every call to a listed tool (or an alias, dispatched to its
 * target) is accepted with the caller's own arguments, whatever version it
 * declares: no version check, no validation, no conversion. Only an unknown
 * name (-32602 unknown_tool) and non-object arguments (-32602
 * invalid_arguments) are refused. `onDecision` still hears every call with
 * what it declared. Nothing is compiled.
 */
export class UngatedGate extends Gate {
  protected override compile(toolset: Toolset): ReturnType<typeof compileToolset> {
    this.logger.warn("gate.gating_off", {
      namespace: toolset.namespace,
      detail: "the namespace policy turned gating off: calls are not checked",
    });
    return { tools: new Map(), aliases: new Map() };
  }

  override check(name: string, args: unknown, meta?: unknown): Decision {
    let entry = this.toolset.tool(name);
    let declared = NOTHING;
    if (entry === undefined) {
      const alias = this.toolset.alias(name);
      entry = alias !== undefined ? this.toolset.tool(alias.target) : undefined;
      if (alias === undefined || entry === undefined) {
        return this.finish(refuse(name, null, "unknown_tool", "unknown", null, { tool: name }), NOTHING);
      }
      declared = { version: alias.contract.version, schemaVersion: undefined, schemaHash: null, alias: alias.name };
    } else if (isPlainObject(meta)) {
      const schemaVersion = meta.schemaVersion ?? undefined;
      const schemaHash = meta.schemaHash ?? undefined;
      if (schemaVersion !== undefined || schemaHash !== undefined) {
        const hashed = typeof schemaHash === "string" ? schemaHash : null;
        declared = {
          version:
            schemaVersion !== undefined ? readVersion(schemaVersion) : this.toolset.versionOfDigest(entry.name, hashed ?? ""),
          schemaVersion,
          schemaHash: hashed,
          alias: null,
        };
      }
    }
    const argumentsObject = args ?? {};
    if (!isPlainObject(argumentsObject)) {
      return this.finish(
        refuse(entry.name, entry.current, "invalid_arguments", "not_an_object", null, { tool: entry.name }),
        declared,
      );
    }
    const decision: Decision = { accepted: true, tool: entry.name, version: entry.current, arguments: argumentsObject, error: null };
    if (this.onDecision !== undefined) this.notify(decision, declared);
    return decision;
  }
}
