/**
 * RFC 8785 (JCS) canonical JSON and the registry's digests.
 *
 *     canonicalJson({b: 1, a: [true, null]})   // '{"a":[true,null],"b":1}'
 *     digest(definition)                        // "sha256:..." of the definition without `_meta`
 *     payloadDigest(payload)                    // "sha256:..." of the payload without `digest`
 *
 * Hand-written (some twenty lines) because the package takes no runtime
 * dependency beyond the official SDK and Ajv. RFC 8785 serialises numbers as
 * ECMAScript's Number-to-String and strings as JSON.stringify does, and sorts
 * keys by UTF-16 code units, which is JavaScript's own string order, so each
 * rule is the language's own. The Python SDK uses the `rfc8785` package; the
 * tests compare the two on the golden payloads and the corpus.
 */

import { createHash } from "node:crypto";

export class DigestError extends Error {
  override name = "DigestError";
}

const PREFIX = "sha256:";

function serialise(value: unknown, out: string[]): void {
  if (value === null) {
    out.push("null");
  } else if (typeof value === "boolean") {
    out.push(value ? "true" : "false");
  } else if (typeof value === "number") {
    // (an integer past 2**53 that Python's rfc8785 refuses has lost its digits
    // in JSON.parse already: no payload the registry digested holds one)
    if (!Number.isFinite(value)) throw new DigestError(`not canonicalisable JSON: ${value}`);
    out.push(JSON.stringify(value));
  } else if (typeof value === "string") {
    if (!value.isWellFormed()) throw new DigestError("not canonicalisable JSON: a string holds a lone surrogate");
    out.push(JSON.stringify(value));
  } else if (Array.isArray(value)) {
    out.push("[");
    value.forEach((item, i) => {
      if (i > 0) out.push(",");
      serialise(item, out);
    });
    out.push("]");
  } else if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    out.push("{");
    let first = true;
    for (const key of keys) {
      const item = record[key];
      if (item === undefined) continue;
      if (!first) out.push(",");
      first = false;
      serialise(key, out);
      out.push(":");
      serialise(item, out);
    }
    out.push("}");
  } else {
    throw new DigestError(`not canonicalisable JSON: a value of type ${typeof value}`);
  }
}

/** RFC 8785 canonical text of any JSON value. */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  serialise(value, out);
  return out.join("");
}

function sha256(text: string): string {
  return PREFIX + createHash("sha256").update(text, "utf8").digest("hex");
}

/** The canonical digest of a tool definition; its top-level `_meta` does not count. */
export function digest(definition: unknown): string {
  if (definition === null || typeof definition !== "object" || Array.isArray(definition)) {
    throw new DigestError("a tool definition is a JSON object");
  }
  const { _meta: _ignored, ...body } = definition as Record<string, unknown>;
  return sha256(canonicalJson(body));
}

/** `sha256:` + SHA-256 of the canonical JSON of a toolset payload without `digest`. */
export function payloadDigest(payload: Record<string, unknown>): string {
  const { digest: _ignored, ...body } = payload;
  return sha256(canonicalJson(body));
}
