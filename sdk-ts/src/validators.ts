/**
 * The gate's validators: Ajv, one compiled function per distinct schema.
 *
 *     const compiler = new Compiler();
 *     const validator = compiler.validator(schema, "db.query v4");   // ToolsetError on a bad schema
 *     validator.isValid(args)          // the hot path (Ajv, first error only)
 *     validator.explain(args, 10)      // [] or the errors of a refusal (Ajv with allErrors, built lazily)
 *
 * Decided as the Python SDK decides (registry/sdk/validators.py): the dialect
 * is the schema's `$schema` (2020-12 when absent or unknown; 2019-09, draft-07
 * and draft-06 are read as such), and `format` is an annotation, never
 * asserted (python-jsonschema runs without a format checker), so no Ajv format
 * plugin is loaded: asserting formats would refuse calls the Python gate
 * accepts. Unknown keywords are ignored (`strict: false`), as both dialects say.
 *
 * Error details have the Python SDK's shape: `{path, keyword, message,
 * schemaPath[, unexpected]}`, paths as JSON Pointers; Ajv's one error per
 * unexpected property is folded into one with `unexpected` sorted, as
 * python-jsonschema reports it. Messages are Ajv's words.
 */

import { createRequire } from "node:module";

import AjvModule, { type AnySchema, type AnySchemaObject, type ErrorObject, type Options, type ValidateFunction } from "ajv";
import Ajv2019Module from "ajv/dist/2019.js";
import Ajv2020Module from "ajv/dist/2020.js";

import { canonicalJson } from "./canonical.js";
import { ToolsetError } from "./toolset.js";

const Ajv07 = AjvModule.default;
const Ajv2019 = Ajv2019Module.default;
const Ajv2020 = Ajv2020Module.default;
type AnyAjv = InstanceType<typeof Ajv07>;

export interface ErrorDetail {
  path: string;
  keyword: string;
  message: string;
  schemaPath: string;
  unexpected?: string[];
}

const DIALECTS: Record<string, "2020" | "2019" | "07" | "06" | "04"> = {
  "https://json-schema.org/draft/2020-12/schema": "2020",
  "https://json-schema.org/draft/2019-09/schema": "2019",
  "http://json-schema.org/draft-07/schema#": "07",
  "http://json-schema.org/draft-07/schema": "07",
  "http://json-schema.org/draft-06/schema#": "06",
  "http://json-schema.org/draft-06/schema": "06",
  "http://json-schema.org/draft-04/schema#": "04",
  "http://json-schema.org/draft-04/schema": "04",
  "http://json-schema.org/draft-03/schema#": "04",
  "http://json-schema.org/draft-03/schema": "04",
};

function options(allErrors: boolean): Options {
  return {
    strict: false,
    allErrors,
    validateFormats: false,
    addUsedSchema: false,
    logger: false,
  };
}

const require = createRequire(import.meta.url);

function makeAjv(dialect: "2020" | "2019" | "07", allErrors: boolean): AnyAjv {
  if (dialect === "2020") return new Ajv2020(options(allErrors));
  if (dialect === "2019") return new Ajv2019(options(allErrors));
  const ajv = new Ajv07(options(allErrors));
  ajv.addMetaSchema(require("ajv/dist/refs/json-schema-draft-06.json") as AnySchemaObject);
  return ajv;
}

/** One Ajv instance per dialect and mode, shared (schemas are not registered in it). */
const instances = new Map<string, AnyAjv>();

function ajvFor(dialect: "2020" | "2019" | "07" | "06", allErrors: boolean): AnyAjv {
  const family = dialect === "06" ? "07" : dialect;
  const key = `${family}/${allErrors}`;
  let found = instances.get(key);
  if (found === undefined) {
    found = makeAjv(family, allErrors);
    instances.set(key, found);
  }
  return found;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** One compiled schema: `isValid` for the hot path, `explain` for refusals, `matches` for inference. */
export class SchemaValidator {
  private explainer: ValidateFunction | undefined;

  constructor(
    readonly schema: unknown,
    private readonly compiled: ValidateFunction,
    private readonly dialect: "2020" | "2019" | "07" | "06",
  ) {
    this.validate = compiled as unknown as (instance: unknown) => boolean;
  }

  /** The compiled function itself: the gate's hot path calls it directly. */
  readonly validate: (instance: unknown) => boolean;

  isValid(instance: unknown): boolean {
    return this.compiled(instance) as boolean;
  }

  /** Only to explain a refusal (inference): the same verdict as `isValid`. */
  matches(instance: unknown): boolean {
    return this.compiled(instance) as boolean;
  }

  /** [] when valid, else up to `limit` error details. */
  explain(instance: unknown, limit: number): ErrorDetail[] {
    if (this.compiled(instance)) return [];
    if (this.explainer === undefined) {
      this.explainer = ajvFor(this.dialect, true).compile(this.schema as AnySchema);
    }
    this.explainer(instance);
    return fold(this.explainer.errors ?? this.compiled.errors ?? []).slice(0, limit);
  }
}

function fold(errors: readonly ErrorObject[]): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const grouped = new Map<string, ErrorDetail>();
  for (const error of errors) {
    const schemaPath = error.schemaPath.startsWith("#") ? error.schemaPath.slice(1) : error.schemaPath;
    const params = error.params as Record<string, unknown>;
    const name =
      error.keyword === "additionalProperties"
        ? params.additionalProperty
        : error.keyword === "unevaluatedProperties"
          ? params.unevaluatedProperty
          : undefined;
    if (typeof name === "string") {
      const key = `${error.keyword}\u0000${error.instancePath}\u0000${schemaPath}`;
      const known = grouped.get(key);
      if (known !== undefined) {
        if (!known.unexpected!.includes(name)) known.unexpected!.push(name);
        known.unexpected!.sort();
        continue;
      }
      const detail: ErrorDetail = {
        path: error.instancePath,
        keyword: error.keyword,
        message: error.message ?? "refused",
        schemaPath,
        unexpected: [name],
      };
      grouped.set(key, detail);
      out.push(detail);
      continue;
    }
    out.push({ path: error.instancePath, keyword: error.keyword, message: error.message ?? "refused", schemaPath });
  }
  for (const detail of out) {
    if (detail.unexpected !== undefined) {
      const names = detail.unexpected.map((n) => `'${n}'`).join(", ");
      detail.message = `${detail.keyword === "additionalProperties" ? "Additional" : "Unevaluated"} properties are not allowed (${names} ${detail.unexpected.length === 1 ? "was" : "were"} unexpected)`;
    }
  }
  return out;
}

/** Builds validators, sharing one per distinct schema (by canonical JSON). */
export class Compiler {
  private readonly cache = new Map<string, SchemaValidator>();

  validator(schema: unknown, where: string): SchemaValidator {
    let key: string;
    try {
      key = canonicalJson(schema);
    } catch (error) {
      throw new ToolsetError(`${where}: inputSchema is not canonicalisable JSON: ${(error as Error).message}`);
    }
    const found = this.cache.get(key);
    if (found !== undefined) return found;
    if (typeof schema !== "boolean" && !isObject(schema)) {
      throw new ToolsetError(`${where}: inputSchema is not a valid schema: a schema is an object or a boolean`);
    }
    let dialect = isObject(schema) && typeof schema.$schema === "string" ? DIALECTS[schema.$schema] : "2020";
    let compiledSchema = schema;
    if (dialect === undefined) {
      // an unknown meta-schema: read as 2020-12, as python-jsonschema's validator_for does
      const { $schema: _unknown, ...rest } = schema as Record<string, unknown>;
      compiledSchema = rest;
      dialect = "2020";
    }
    if (dialect === "04") {
      throw new ToolsetError(
        `${where}: inputSchema is draft-04 (or older), which the TypeScript gate does not read (Ajv 8 has no draft-04 in its core)`,
      );
    }
    let compiled: ValidateFunction;
    try {
      compiled = ajvFor(dialect, false).compile(compiledSchema as AnySchema);
    } catch (error) {
      throw new ToolsetError(`${where}: inputSchema is not a valid schema: ${(error as Error).message}`);
    }
    const validator = new SchemaValidator(compiledSchema, compiled, dialect);
    this.cache.set(key, validator);
    return validator;
  }
}
