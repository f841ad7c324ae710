// RFC 8785 text and digests equal to the Python SDK's (registry.canonical,
// registry.sdk.strict) on tricky values and on every definition of the corpus;
// test/fixtures/make_canonical.py wrote the expected values.

import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";

import { canonicalJson, digest, DigestError, strictSchema, Toolset } from "../src/index.js";
import { Compiler } from "../src/validators.js";
import { CORPUS, REPO } from "./paths.js";

const FIXTURE = JSON.parse(readFileSync(`${REPO}/sdk-ts/test/fixtures/canonical.json`, "utf8")) as {
  values: { value: unknown; canonical: string }[];
  corpus: Record<string, { digest: string; strictDigest: string }>;
};

test("tricky values canonicalise as the Python SDK's rfc8785 does", () => {
  for (const { value, canonical } of FIXTURE.values) assert.equal(canonicalJson(value), canonical);
});

test("what the Python SDK refuses to canonicalise is refused", () => {
  assert.throws(() => canonicalJson({ a: "\ud800" }), DigestError);
  assert.throws(() => canonicalJson({ a: Number.NaN }), DigestError);
  assert.throws(() => digest([1]), DigestError);
});

test("a definition's _meta does not count in its digest", () => {
  assert.equal(digest({ name: "t", _meta: { x: 1 } }), digest({ name: "t" }));
});

test("every golden payload's digest verifies (its content hashes as Python's did)", () => {
  const golden = JSON.parse(readFileSync(`${REPO}/tests/golden/gate_decisions.json`, "utf8")) as {
    toolsets: Record<string, Record<string, unknown>>;
  };
  for (const body of Object.values(golden.toolsets)) {
    assert.equal(Toolset.fromPayload(body).digest, body.digest);
  }
});

test("corpus: digests and strict forms equal the Python SDK's; every schema compiles", (t) => {
  if (!existsSync(CORPUS)) {
    t.skip(`corpus not found at ${CORPUS}`);
    return;
  }
  const compiler = new Compiler();
  let seen = 0;
  for (const line of readFileSync(CORPUS, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const record = JSON.parse(line) as Record<string, unknown>;
    for (const side of ["old", "new"]) {
      const definition = record[side] as Record<string, unknown> | null;
      if (definition === null || typeof definition !== "object") continue;
      const key = `${String(record.id)}:${side}`;
      const expected = FIXTURE.corpus[key];
      assert.ok(expected, key);
      assert.equal(digest(definition), expected.digest, key);
      const schema = "inputSchema" in definition ? definition.inputSchema : { type: "object" };
      const strict = strictSchema(schema);
      assert.equal(digest({ schema: strict }), expected.strictDigest, key);
      if (schema !== null && typeof schema === "object") {
        compiler.validator(schema, key);
        compiler.validator(strict, `${key} (strict)`);
      }
      seen += 1;
    }
  }
  assert.equal(seen, Object.keys(FIXTURE.corpus).length);
});
