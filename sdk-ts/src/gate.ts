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
import {
  compileToolset,
  type CompiledAlias,
  type CompiledTool,
  errorDetails,
  type Served,
  validationFailure,
  wire,
} from "./compiled.js";
import { type Logger, stderrLogger } from "./logging.js";
import { conversionRejectedText, invalidArgumentsText, problems, versionlessText } from "./refusals.js";
import type { Toolset } from "./toolset.js";
import type { ErrorDetail } from "./validators.js";

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

/** A value as Python's repr() writes it in the Python gate's sentences. */
function repr(value: unknown): string {
  return typeof value === "string" ? `'${value}'` : JSON.stringify(value) ?? String(value);
}

function versionData(tool: CompiledTool, declared: unknown, relist: boolean): Record<string, unknown> {
  const data: Record<string, unknown> = {
    tool: tool.name,
    declaredVersion: shown(declared),
    currentVersion: wire(tool.current.version),
    retired: [...tool.retiredWire],
  };
  if (relist) data.action = "relist";
  return data;
}

/** A refusal of a call through an alias names the alias, its target and contract. */
function nameAlias(data: Record<string, unknown>, tool: CompiledTool, alias: string | null, contract: number): void {
  if (alias !== null) Object.assign(data, { tool: alias, target: tool.name, contractVersion: wire(contract) });
}

function aliasData(alias: CompiledAlias, declared: unknown): Record<string, unknown> {
  const data = versionData(alias.target, declared, false);
  nameAlias(data, alias.target, alias.name, alias.contractVersion);
  return data;
}

function refuse(
  tool: string,
  current: number | null,
  code: number,
  message: string,
  reason: string,
  data?: Record<string, unknown>,
  modelText: string | null = null,
): Decision {
  const payload = { reason, ...(data ?? { tool }) };
  return { accepted: false, tool, version: current, arguments: null, error: { code, message, data: payload, modelText } };
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
      return this.finish(refuse(name, null, INVALID_PARAMS, `Unknown tool: ${name}`, "unknown_tool"), NOTHING);
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
    let problem: string | null = null;
    if (schemaVersion !== undefined && version === null) {
      problem = `schemaVersion ${repr(schemaVersion)} is not a version (write 'v4', 4 or '4')`;
    } else if (schemaHash !== undefined && byHash === null) {
      problem = `schemaHash ${repr(schemaHash)} is no version of ${tool.name} ever served`;
    } else if (schemaVersion !== undefined && schemaHash !== undefined && version !== byHash) {
      problem = `schemaVersion ${repr(schemaVersion)} and schemaHash (v${byHash}) disagree`;
    }
    if (problem !== null) return this.unknown(tool, declared, problem);
    return this.checkDeclared(tool, declared.version!, argumentsObject, declared);
  }

  // ------------------------------------------------------------ branches

  private checkDeclared(tool: CompiledTool, version: number, args: unknown, declared: Declared): Decision {
    const current = tool.current.version;
    if (tool.retired.has(version)) {
      const data = versionData(tool, version, true);
      const changes = tool.definitions.has(version) ? tool.changesToCurrent(version) : [];
      Object.assign(data, { changes, inputSchema: tool.schema(current) });
      return this.finish(
        refuse(
          tool.name,
          current,
          SCHEMA_VERSION_RETIRED,
          `${tool.name} v${version} is retired; the current version is v${current}. ` +
            `Call again declaring schemaVersion "v${current}" with arguments valid ` +
            "under data.inputSchema (a fresh tools/list shows the same contract).",
          "schema_version_retired",
          data,
        ),
        declared,
      );
    }
    const served = tool.served.get(version);
    if (served === undefined) return this.unknown(tool, declared, `${tool.name} v${version} was never served`);
    if (!isPlainObject(args) || !served.validator.isValid(args)) {
      return this.invalid(tool, served, args, declared, version, null);
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
    const data = versionData(tool, null, inferred !== null);
    Object.assign(data, {
      errors,
      inferredVersion: inferred !== null ? wire(inferred) : null,
      changes,
      inputSchema: tool.schema(current),
    });
    const lines = problems(tool.name, current, errors);
    const wrong = lines[0] + (lines.length > 1 ? ` (and ${lines.length - 1} more)` : "");
    let message: string;
    if (inferred === null) {
      message =
        `${tool.name}: the call declares no schemaVersion and fails strict ` +
        `validation against v${current}: ${wrong}`;
    } else {
      const state = tool.retired.has(inferred) ? "retired" : "still served";
      message =
        `${tool.name}: the call declares no schemaVersion and its arguments match ` +
        `v${inferred} (${state}), not the current v${current}: ${wrong}. Re-issue ` +
        "tools/list, or retry once with arguments valid under data.inputSchema.";
    }
    return this.finish(
      refuse(
        tool.name,
        current,
        STRICT_VALIDATION_FAILED,
        message,
        "strict_validation_failed",
        data,
        versionlessText(tool, errors, inferred, changes),
      ),
      NOTHING,
    );
  }

  private checkAlias(alias: CompiledAlias, args: unknown, meta: unknown): Decision {
    const tool = alias.target;
    const current = tool.current.version;
    const declared: Declared = { version: alias.contractVersion, schemaVersion: undefined, schemaHash: null, alias: alias.name };
    const argumentsObject = args ?? {};
    const schemaVersion = isPlainObject(meta) ? meta.schemaVersion ?? undefined : undefined;
    const schemaHash = isPlainObject(meta) ? meta.schemaHash ?? undefined : undefined;
    if (
      (schemaVersion !== undefined && readVersion(schemaVersion) !== alias.contractVersion) ||
      (schemaHash !== undefined && schemaHash !== alias.contractDigest)
    ) {
      const data = aliasData(alias, schemaVersion !== undefined ? schemaVersion : schemaHash);
      const said = schemaVersion !== undefined && schemaVersion !== "" && schemaVersion !== 0 ? schemaVersion : schemaHash;
      return this.finish(
        refuse(
          tool.name,
          current,
          SCHEMA_VERSION_UNKNOWN,
          `${alias.name} speaks ${tool.name} v${alias.contractVersion}; the call declares ${repr(said)}`,
          "schema_version_unknown",
          data,
        ),
        declared,
      );
    }
    if (alias.ops === null) {
      return this.finish(
        refuse(
          tool.name,
          current,
          SCHEMA_VERSION_MISMATCH,
          `${alias.name} speaks ${tool.name} v${alias.contractVersion} and no verified ` +
            `converter leads from it to the current v${current}; the call is refused ` +
            "rather than run under a contract the caller did not choose.",
          "schema_version_mismatch",
          aliasData(alias, alias.contractVersion),
        ),
        declared,
      );
    }
    if (!isPlainObject(argumentsObject) || !alias.validator.isValid(argumentsObject)) {
      const served: Served = { version: alias.contractVersion, validator: alias.validator, ops: alias.ops };
      return this.invalid(tool, served, argumentsObject, declared, alias.contractVersion, alias);
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
    let converted: Record<string, unknown>;
    try {
      converted = apply(ops, args);
    } catch (error) {
      if (!(error instanceof ConversionRejected)) throw error;
      const data = versionData(tool, version, false);
      nameAlias(data, tool, alias, version);
      Object.assign(data, { path: error.path, value: error.value, detail: error.detail });
      return this.finish(
        refuse(
          tool.name,
          current,
          CONVERSION_REJECTED,
          `${tool.name}: value ${JSON.stringify(error.value)} at ${error.path} is refused: ${error.detail}`,
          "conversion_rejected",
          data,
          conversionRejectedText(tool, version, error.path, error.value, error.detail, alias),
        ),
        declared,
      );
    }
    if (!tool.current.validator.isValid(converted)) {
      const [message, errors] = validationFailure(tool.current.validator, converted);
      const data = versionData(tool, version, true);
      nameAlias(data, tool, alias, version);
      data.errors = errors;
      this.logger.error("gate.converter_broken", { tool: tool.name, declared: version, current });
      return this.finish(
        refuse(
          tool.name,
          current,
          SCHEMA_VERSION_MISMATCH,
          `${tool.name}: arguments converted from v${version} do not validate against ` +
            `v${current} (${message}); re-list and call with v${current}.`,
          "schema_version_mismatch",
          data,
        ),
        declared,
      );
    }
    return this.finish({ accepted: true, tool: tool.name, version: current, arguments: converted, error: null }, declared);
  }

  private invalid(
    tool: CompiledTool,
    served: Served,
    args: unknown,
    declared: Declared,
    version: number,
    alias: CompiledAlias | null,
  ): Decision {
    const current = tool.current.version;
    const [message, errors] = validationFailure(served.validator, args);
    const data = versionData(tool, version, false);
    nameAlias(data, tool, alias !== null ? alias.name : null, version);
    Object.assign(data, { errors, inputSchema: alias !== null ? alias.schema : tool.schema(version) });
    return this.finish(
      refuse(
        tool.name,
        current,
        INVALID_PARAMS,
        `Invalid arguments for ${tool.name} v${version}: ${message}`,
        "invalid_arguments",
        data,
        invalidArgumentsText(tool, version, errors as ErrorDetail[], alias !== null ? alias.name : null),
      ),
      declared,
    );
  }

  private unknown(tool: CompiledTool, declared: Declared, problem: string): Decision {
    const current = tool.current.version;
    const said = declared.version === null ? declared.schemaVersion : declared.version;
    const data = versionData(tool, said !== undefined && said !== null ? said : declared.schemaHash, false);
    if (declared.schemaHash !== null) data.declaredHash = declared.schemaHash;
    data.detail = problem;
    const servedVersions = [...tool.served.keys()].sort((a, b) => a - b).map((v) => `v${v}`);
    return this.finish(
      refuse(
        tool.name,
        current,
        SCHEMA_VERSION_UNKNOWN,
        `${problem}; this server serves ${tool.name} ${servedVersions.join(", ")} (current v${current}).`,
        "schema_version_unknown",
        data,
      ),
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
        return this.finish(refuse(name, null, INVALID_PARAMS, `Unknown tool: ${name}`, "unknown_tool"), NOTHING);
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
      const message = `Invalid arguments for ${entry.name}: arguments must be a JSON object`;
      return this.finish(refuse(entry.name, entry.current, INVALID_PARAMS, message, "invalid_arguments"), declared);
    }
    const decision: Decision = { accepted: true, tool: entry.name, version: entry.current, arguments: argumentsObject, error: null };
    if (this.onDecision !== undefined) this.notify(decision, declared);
    return decision;
  }
}
