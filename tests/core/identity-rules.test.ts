// The identity vocabulary's own rules (src/core/identity.ts) at their edges:
// the tag grammar, what counts as a declaration, the model a field framing
// accepts, scope reasons and paths, and the field-name walk. Written to kill
// StrykerJS survivors (bench/mutation/README.md); each refusal has a control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import { declareIdentity, defineScope, identityBytes, identityDigest, identityHasher, scopeFieldNames } from "../../src/core/index.ts";
import { isIdentityDeclaration } from "../../src/core/identity.ts";

const base = { name: "t", tag: "cairn.test/1", algorithm: "sha256", framing: "tag-nul-jcs", role: "identity", definedIn: "tests" } as const;

test("tags: cairn.<name>/<n> or sandbox.<name>/<n>, anchored at both ends, version from 1", () => {
  for (const tag of ["cairn.a/1", "cairn.a/10", "cairn.a.b-c/2", "cairn.0x/1", "sandbox.env-manifest/1"]) {
    assert.equal(declareIdentity({ ...base, tag }).tag, tag);
  }
  for (const tag of [
    "cairn.a/0",
    "cairn.a/01",
    "cairn.-a/1",
    "cairn.A/1",
    "xcairn.a/1",
    "cairn.a/1x",
    "cairn.a/1/2",
    "cairn./1",
    "cairn.a",
    "cairn.a b/1",
    " cairn.a/1",
  ]) {
    assert.throws(() => declareIdentity({ ...base, tag }), TypeError, tag);
  }
});

test("declarations: untagged jcs only for integrity, binary framings only with sha256, the result a frozen copy", () => {
  assert.equal(declareIdentity({ ...base, framing: "jcs", role: "integrity" }).framing, "jcs");
  assert.throws(() => declareIdentity({ ...base, framing: "jcs", role: "identity" }), TypeError);
  assert.equal(declareIdentity({ ...base, framing: "tag-nul-binary" }).algorithm, "sha256");
  assert.equal(declareIdentity({ ...base, framing: "tag-nul-jcs", algorithm: "blake3" }).algorithm, "blake3");
  assert.throws(() => declareIdentity({ ...base, framing: "tag-nul-binary", algorithm: "blake3" }), TypeError);
  const input = { ...base };
  const d = declareIdentity(input);
  assert.notEqual(d, input);
  assert.ok(Object.isFrozen(d));
  assert.equal(Object.isFrozen(input), false);
  assert.deepEqual({ ...d }, input);
});

test("isIdentityDeclaration: every field must be there with its type and one of its values", () => {
  assert.equal(isIdentityDeclaration(declareIdentity(base)), true);
  assert.equal(isIdentityDeclaration({ ...base, algorithm: "blake3", role: "integrity" }), true);
  for (const v of [null, undefined, "cairn.test/1", 3, [base]]) assert.equal(isIdentityDeclaration(v), false, String(v));
  for (const key of ["name", "tag", "framing", "definedIn", "algorithm", "role"] as const) {
    const { [key]: _drop, ...rest } = base;
    assert.equal(isIdentityDeclaration(rest), false, `without ${key}`);
    assert.equal(isIdentityDeclaration({ ...base, [key]: 1 }), false, `${key} not a string`);
  }
  assert.equal(isIdentityDeclaration({ ...base, algorithm: "md5" }), false);
  assert.equal(isIdentityDeclaration({ ...base, role: "other" }), false);
});

test("field framings need an object model; a matching field is kept, another value refused", () => {
  const schema = declareIdentity({ ...base, framing: "jcs-schema-field" });
  const tagged = declareIdentity({ ...base, framing: "jcs-tag-field" });
  for (const m of [null, [1], "x", 3]) {
    assert.throws(() => identityBytes(schema, m), TypeError, JSON.stringify(m));
    assert.throws(() => identityBytes(tagged, m), TypeError, JSON.stringify(m));
  }
  assert.equal(identityBytes(schema, {}).toString(), '{"schema":"cairn.test/1"}');
  assert.equal(identityBytes(tagged, { tag: "cairn.test/1", a: 1 }).toString(), '{"a":1,"tag":"cairn.test/1"}');
  // The other framing's field is an ordinary field.
  assert.equal(identityBytes(schema, { tag: "x" }).toString(), '{"schema":"cairn.test/1","tag":"x"}');
  assert.equal(identityBytes(tagged, { schema: "x" }).toString(), '{"schema":"x","tag":"cairn.test/1"}');
  // An inherited field is not the model's own.
  const inherited = Object.create({ schema: "cairn.other/1" }) as Record<string, unknown>;
  assert.equal(identityBytes(schema, inherited).toString(), '{"schema":"cairn.test/1"}');
  assert.throws(() => identityBytes(schema, { schema: "cairn.other/1" }), TypeError);
  assert.throws(() => identityBytes(schema, { schema: undefined }), TypeError);
});

test("digests: tag-nul-jcs under blake3 hashes the same bytes with BLAKE3; the streaming hasher is binary-only", () => {
  const decl = declareIdentity({ ...base, algorithm: "blake3" });
  const bytes = Buffer.from('cairn.test/1\0{"a":1}');
  assert.equal(identityDigest(decl, { a: 1 }), `blake3:${Buffer.from(nobleBlake3(bytes)).toString("hex")}`);
  assert.equal(identityDigest(declareIdentity(base), { a: 1 }), `sha256:${createHash("sha256").update(bytes).digest("hex")}`);
  const bin = declareIdentity({ ...base, framing: "tag-nul-binary" });
  assert.equal(identityHasher(bin).size, Buffer.byteLength("cairn.test/1\0"));
  for (const framing of ["tag-nul-jcs", "jcs-schema-field", "jcs-tag-field", "jcs-own-schema"] as const) {
    assert.throws(() => identityHasher(declareIdentity({ ...base, framing }) as never), TypeError, framing);
  }
});

test("scopes: a reason needs 8 characters after trimming; paths are pointers, optionally model-prefixed", () => {
  const scope =
    (covers: Record<string, string>, excludes: Record<string, string> = {}) =>
    () =>
      defineScope({ identity: "cairn.test/1", covers, excludes });
  assert.doesNotThrow(scope({ "/a": "12345678" }));
  assert.throws(scope({ "/a": "1234567" }), TypeError);
  assert.throws(scope({ "/a": "  1234567  " }), TypeError);
  assert.throws(scope({}, { "/a": "1234567" }), TypeError);
  assert.doesNotThrow(scope({}, { "/a": "12345678" }));
  for (const field of ["/a/b", "/a/*/b", "spec:/a", "lock-2:/a/b", "/a~1b"]) assert.doesNotThrow(scope({ [field]: "a good reason" }), field);
  for (const field of ["", "/", "a", "/a/", "//a", "Spec:/a", "spec:a", ":/a", "1x:/a", "x/a"])
    assert.throws(scope({ [field]: "a good reason" }), TypeError, field);
  assert.throws(scope({}, { a: "a good reason" }), TypeError);
  const s = defineScope({ identity: "cairn.test/1", covers: { "/a": "a good reason" }, excludes: { "/b": "a good reason" } });
  assert.ok(Object.isFrozen(s) && Object.isFrozen(s.covers) && Object.isFrozen(s.excludes));
});

test("scopeFieldNames: direct children of the parent only, in table order, from the list asked for", () => {
  const s = defineScope({
    identity: "cairn.test/1",
    covers: { "/z": "a good reason", "/a": "a good reason", "/a/x": "a good reason", "/a/x/y": "a good reason", "/ab": "a good reason" },
    excludes: { "/e": "a good reason", "/a/w": "a good reason" },
  });
  assert.deepEqual(scopeFieldNames(s, "covers"), ["z", "a", "ab"]);
  assert.deepEqual(scopeFieldNames(s, "covers", ""), ["z", "a", "ab"]);
  assert.deepEqual(scopeFieldNames(s, "covers", "/a"), ["x"]);
  assert.deepEqual(scopeFieldNames(s, "covers", "/a/x"), ["y"]);
  assert.deepEqual(scopeFieldNames(s, "excludes"), ["e"]);
  assert.deepEqual(scopeFieldNames(s, "excludes", "/a"), ["w"]);
  assert.deepEqual(scopeFieldNames(s, "covers", "/none"), []);
});
