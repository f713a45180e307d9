/**
 * The identity vocabulary itself: the framings hash what their doc comment
 * says (checked against node:crypto and hand-built bytes, not the code under
 * test), declarations and scopes refuse malformed tables, and the scope
 * exhaustiveness helper fails on each kind of mistake (each with a control).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import {
  declareIdentity,
  defineScope,
  identityBytes,
  identityDigest,
  identityHasher,
  scopeFieldNames,
  type IdentityDeclaration,
} from "../../src/core/index.ts";
import { assertCatchesExtraField, assertScopeExhaustive, named, scopeProblems } from "../helpers/identity-scope.ts";

const sha = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const model = { b: 1, a: "x" };
const JCS = '{"a":"x","b":1}';
const decl = (framing: "tag-nul-jcs" | "jcs-schema-field" | "jcs-tag-field" | "jcs-own-schema" | "jcs", algorithm: "sha256" | "blake3" = "sha256") =>
  declareIdentity({ name: "t", tag: "cairn.test/1", algorithm, framing, role: framing === "jcs" ? "integrity" : "identity", definedIn: "tests" });

test("each framing hashes exactly the bytes its doc comment names", () => {
  assert.equal(identityDigest(decl("tag-nul-jcs"), model), sha(Buffer.from(`cairn.test/1\0${JCS}`)));
  assert.equal(identityDigest(decl("jcs-schema-field"), model), sha(Buffer.from('{"a":"x","b":1,"schema":"cairn.test/1"}')));
  assert.equal(identityDigest(decl("jcs-tag-field"), model), sha(Buffer.from('{"a":"x","b":1,"tag":"cairn.test/1"}')));
  assert.equal(identityDigest(decl("jcs-own-schema"), model), sha(Buffer.from(JCS)));
  assert.equal(identityDigest(decl("jcs"), model), sha(Buffer.from(JCS)));
  assert.equal(identityDigest(decl("jcs-own-schema", "blake3"), model), `blake3:${Buffer.from(nobleBlake3(Buffer.from(JCS))).toString("hex")}`);
  assert.equal(identityBytes(decl("tag-nul-jcs"), model).toString(), `cairn.test/1\0${JCS}`);
  // control: the tag matters
  assert.notEqual(identityDigest(decl("tag-nul-jcs"), model), identityDigest({ ...decl("tag-nul-jcs"), tag: "cairn.test/2" }, model));
});

test("a schema or tag field already in the model must be the tag", () => {
  assert.equal(identityDigest(decl("jcs-schema-field"), { ...model, schema: "cairn.test/1" }), identityDigest(decl("jcs-schema-field"), model));
  assert.throws(() => identityDigest(decl("jcs-schema-field"), { ...model, schema: "cairn.other/1" }), TypeError);
  assert.throws(() => identityDigest(decl("jcs-tag-field"), { ...model, tag: "x" }), TypeError);
});

test("the streaming hasher is pre-fed with tag NUL; only binary framings stream", () => {
  const bin = declareIdentity({ name: "b", tag: "cairn.bin/1", algorithm: "sha256", framing: "tag-nul-binary", role: "identity", definedIn: "tests" });
  assert.equal(
    identityHasher(bin)
      .update(Buffer.from([1, 2, 3]))
      .digest(),
    sha(Buffer.from([...Buffer.from("cairn.bin/1\0"), 1, 2, 3])),
  );
  assert.throws(() => identityHasher(decl("tag-nul-jcs") as IdentityDeclaration<"sha256">), TypeError);
  assert.throws(() => identityBytes(bin, model), TypeError);
});

test("declarations refuse an unversioned tag and an untagged identity (control: valid ones pass)", () => {
  assert.throws(
    () => declareIdentity({ name: "x", tag: "cairn.test", algorithm: "sha256", framing: "tag-nul-jcs", role: "identity", definedIn: "t" }),
    TypeError,
  );
  assert.throws(() => declareIdentity({ name: "x", tag: "cairn.test/1", algorithm: "sha256", framing: "jcs", role: "identity", definedIn: "t" }), TypeError);
  assert.throws(
    () => declareIdentity({ name: "x", tag: "cairn.test/1", algorithm: "blake3", framing: "tag-nul-binary", role: "identity", definedIn: "t" }),
    TypeError,
  );
  assert.ok(Object.isFrozen(decl("tag-nul-jcs")));
});

test("scopes refuse a field in both lists, a missing reason, a malformed path (control: a good scope)", () => {
  assert.throws(() => defineScope({ identity: "cairn.test/1", covers: { "/a": "a good reason" }, excludes: { "/a": "another reason" } }), TypeError);
  assert.throws(() => defineScope({ identity: "cairn.test/1", covers: { "/a": "" }, excludes: {} }), TypeError);
  assert.throws(() => defineScope({ identity: "cairn.test/1", covers: { a: "a good reason" }, excludes: {} }), TypeError);
  const s = defineScope({
    identity: "cairn.test/1",
    covers: { "/a": "a good reason", "/l": "the list", "/l/*/x": "each x of the list" },
    excludes: { "/b": "a good reason", "/l/*/y": "each y of the list" },
  });
  assert.deepEqual(scopeFieldNames(s, "covers"), ["a", "l"]);
  assert.deepEqual(scopeFieldNames(s, "covers", "/l/*"), ["x"]);
  assert.deepEqual(scopeFieldNames(s, "excludes", "/l/*"), ["y"]);
});

test("the exhaustiveness helper fails on an unlisted field, a stale field, a field in both (control: an exact scope passes)", () => {
  const s = {
    identity: "cairn.test/1",
    covers: { "/a": "a good reason", "/l": "the list", "/l/*/x": "each x of the list" },
    excludes: { "/b": "a good reason", "/l/*/y": "each y of the list" },
  };
  const m = { a: 1, b: 2, l: [{ x: 1 }, { y: 2 }] };
  assertScopeExhaustive(s, m);
  assertCatchesExtraField(s, m);
  assert.deepEqual(scopeProblems(s, [{ ...m, l: [{ x: 1, z: 3 }, { y: 2 }] }]), ["/l/*/z is a field of the model but neither covered nor excluded"]);
  assert.deepEqual(scopeProblems(s, [{ a: 1, l: [{ x: 1, y: 2 }] }]), ["/b is listed but is not a field of any model given"]);
  assert.deepEqual(scopeProblems({ ...s, excludes: { ...s.excludes, "/a": "a good reason" } }, [m]), ["/a is both covered and excluded"]);
  // named models, and a field spread over two instances
  const t = { identity: "cairn.test/1", covers: { "spec:/a": "a good reason" }, excludes: { "lock:/b": "a good reason" } };
  assertScopeExhaustive(t, named("spec", { a: 1 }), named("lock", { b: 1 }));
  assertCatchesExtraField(t, named("spec", { a: 1 }), named("lock", { b: 1 }));
  assert.equal(scopeProblems(t, [named("spec", { a: 1 })]).length, 1);
});

test("tags are cairn's own or a standard's in the sandbox. namespace; any other namespace is refused", () => {
  const d = (tag: string) => declareIdentity({ name: "t", tag, algorithm: "blake3", framing: "jcs-own-schema", role: "identity", definedIn: "tests" });
  assert.equal(d("sandbox.env-manifest/1").tag, "sandbox.env-manifest/1");
  assert.equal(d("cairn.env-extension/1").tag, "cairn.env-extension/1"); // control
  for (const bad of ["other.env-manifest/1", "sandbox.env-manifest", "Sandbox.x/1", "sandbox./1"]) assert.throws(() => d(bad), TypeError, bad);
});
