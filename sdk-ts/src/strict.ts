/**
 * Strict validation of version-less calls: every open object schema closed,
 * as the Python SDK's registry/sdk/strict.py does (the same rules, line for line).
 *
 *     strictSchema(schema)   // a copy: objects with additionalProperties absent or true closed
 *
 * An object whose `additionalProperties` is a schema is a map and keeps its
 * keys. An object schema composed with allOf/anyOf/oneOf/then/else is closed
 * once with `unevaluatedProperties: false` where the dialect has it, so the
 * branches' properties still count; `not` and `if` are left alone.
 */

type Node = Record<string, unknown>;

const IN_PLACE_LISTS = ["allOf", "anyOf", "oneOf"] as const;
const IN_PLACE_ONE = ["then", "else"] as const;
const UNEVALUATED_DIALECTS = ["https://json-schema.org/draft/2020-12/", "https://json-schema.org/draft/2019-09/"];

function isNode(value: unknown): value is Node {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * `closeTrue: false` keeps an explicit `additionalProperties: true` open (a
 * framework's handler schema takes any key there) and closes only the objects
 * that leave it out.
 */
export function strictSchema(schema: unknown, options: { closeTrue?: boolean } = {}): unknown {
  const result = structuredClone(schema);
  const dialect = isNode(result) ? result.$schema ?? "" : "";
  const text = String(dialect);
  const unevaluated = !dialect || UNEVALUATED_DIALECTS.some((d) => text.startsWith(d));
  close(result, unevaluated, false, options.closeTrue ?? true);
  return result;
}

function objectish(node: Node): boolean {
  const kind = node.type;
  if (kind !== undefined) return kind === "object" || (Array.isArray(kind) && kind.includes("object"));
  return "properties" in node || "patternProperties" in node || "additionalProperties" in node;
}

function branches(node: Node): unknown[] {
  const found: unknown[] = [];
  for (const key of IN_PLACE_LISTS) {
    const value = node[key];
    if (Array.isArray(value)) found.push(...value);
  }
  for (const key of IN_PLACE_ONE) if (key in node) found.push(node[key]);
  return found;
}

function hasObjectBranch(node: Node): boolean {
  return branches(node).some((b) => isNode(b) && (objectish(b) || hasObjectBranch(b)));
}

function close(node: unknown, unevaluated: boolean, inPlace: boolean, closeTrue: boolean): void {
  if (!isNode(node)) return;
  const composed = unevaluated && hasObjectBranch(node);
  const additional = "additionalProperties" in node ? node.additionalProperties : true;
  if (!closeTrue && node.additionalProperties === true) {
    // open on purpose: left as it is
  } else if (inPlace || composed) {
    // closed by the enclosing unevaluatedProperties: an explicit `true` would
    // mark every property evaluated and open it again
    if (additional === true) delete node.additionalProperties;
    const unevaluatedNow = "unevaluatedProperties" in node ? node.unevaluatedProperties : true;
    if (composed && !inPlace && unevaluatedNow === true) node.unevaluatedProperties = false;
  } else if (objectish(node) && additional === true) {
    node.additionalProperties = false;
  }
  for (const branch of branches(node)) close(branch, unevaluated, composed || inPlace, closeTrue);
  for (const key of ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]) {
    const children = node[key];
    if (isNode(children)) {
      for (const child of Object.values(children)) {
        close(child, unevaluated, key === "dependentSchemas" && composed, closeTrue);
      }
    }
  }
  for (const key of ["items", "additionalItems", "unevaluatedItems"]) {
    const child = node[key];
    if (Array.isArray(child)) for (const item of child) close(item, unevaluated, false, closeTrue);
    else close(child, unevaluated, false, closeTrue);
  }
  if (Array.isArray(node.prefixItems)) for (const item of node.prefixItems) close(item, unevaluated, false, closeTrue);
  if (isNode(node.additionalProperties)) close(node.additionalProperties, unevaluated, false, closeTrue);
}
