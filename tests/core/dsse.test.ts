// DSSE envelopes (src/core/dsse.ts): PAE counts bytes, the strict reader
// refuses each malformed field with its path, and verification tries every
// signature against every trusted key, skipping (not trusting) ones that do
// not apply. Written to kill StrykerJS survivors (bench/mutation/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { type ErrorCode, generateSigningKey, pae, parseEnvelope, signEnvelope, verifyEnvelope } from "../../src/core/index.ts";
import { assertCode } from "../helpers/errors.ts";

const TYPE = "application/vnd.cairn.test+json";
const BODY = Buffer.from('{"a":1}');

test("PAE counts bytes, not characters, of the type and of the payload", () => {
  assert.equal(pae("é", Buffer.from("€")).toString("utf8"), "DSSEv1 2 é 3 €");
  assert.equal(pae("", new Uint8Array(0)).toString("utf8"), "DSSEv1 0  0 ");
});

test("signEnvelope: one signature per key, with its key id, over base64 of the exact payload", () => {
  const [k1, k2] = [generateSigningKey(), generateSigningKey()];
  const env = signEnvelope(TYPE, BODY, [k1, k2]);
  assert.equal(env.payloadType, TYPE);
  assert.equal(env.payload, BODY.toString("base64"));
  assert.deepEqual(
    env.signatures.map((s) => s.keyid),
    [k1.keyId, k2.keyId],
  );
  assert.equal(verifyEnvelope(env, TYPE, [k2]).keyId, k2.keyId);
  assert.equal(verifyEnvelope(env, TYPE, [k1]).keyId, k1.keyId);
});

test("parseEnvelope: a well-formed envelope parses (control); each malformed field is refused at its path", () => {
  const k = generateSigningKey();
  const good = JSON.parse(JSON.stringify(signEnvelope(TYPE, BODY, [k])));
  assert.deepEqual(parseEnvelope(good), good);
  const sig = good.signatures[0];
  const cases: [unknown, string, ErrorCode][] = [
    [[], "", "MODEL_TYPE"],
    [{ ...good, extra: 1 }, "/extra", "MODEL_UNKNOWN_FIELD"],
    [{ payload: good.payload, signatures: good.signatures }, "/payloadType", "DSSE_INVALID"],
    [{ ...good, payloadType: "" }, "/payloadType", "MODEL_VALUE"],
    [{ ...good, payloadType: 3 }, "/payloadType", "MODEL_TYPE"],
    [{ ...good, payload: 3 }, "/payload", "MODEL_TYPE"],
    [{ payloadType: TYPE, payload: good.payload }, "/signatures", "DSSE_INVALID"],
    [{ ...good, signatures: {} }, "/signatures", "MODEL_TYPE"],
    [{ ...good, signatures: ["x"] }, "/signatures/0", "MODEL_TYPE"],
    [{ ...good, signatures: [{ sig: sig.sig }] }, "/signatures/0/keyid", "DSSE_INVALID"],
    [{ ...good, signatures: [sig, { keyid: 1, sig: sig.sig }] }, "/signatures/1/keyid", "MODEL_TYPE"],
    [{ ...good, signatures: [{ keyid: sig.keyid, sig: "" }] }, "/signatures/0/sig", "MODEL_VALUE"],
    [{ ...good, signatures: [{ ...sig, extra: true }] }, "/signatures/0/extra", "MODEL_UNKNOWN_FIELD"],
    [{ ...good, payload: "YQ" }, "/payload", "DSSE_INVALID"],
    [{ ...good, payload: "Y Q==" }, "/payload", "DSSE_INVALID"],
    [{ ...good, payload: "YQ===" }, "/payload", "DSSE_INVALID"],
  ];
  for (const [bad, path, code] of cases) {
    assert.equal(assertCode(() => parseEnvelope(bad as never), code).path, path, JSON.stringify(bad));
  }
  // The path prefix is the caller's.
  assert.equal(assertCode(() => parseEnvelope({ ...good, payload: "YQ" }, "/env"), "DSSE_INVALID").path, "/env/payload");
});

test("verifyEnvelope: wrong type and empty signatures are refused before any key is tried", () => {
  const k = generateSigningKey();
  const env = signEnvelope(TYPE, BODY, [k]);
  assert.equal(verifyEnvelope(env, TYPE, [k]).payload.toString(), BODY.toString());
  assert.equal(assertCode(() => verifyEnvelope(env, `${TYPE}x`, [k]), "SIGNATURE_INVALID").path, "/payloadType");
  assert.equal(assertCode(() => verifyEnvelope({ ...env, signatures: [] }, TYPE, [k]), "SIGNATURE_MISSING").path, "/signatures");
  assert.equal(assertCode(() => verifyEnvelope({ ...env, payload: "YQ" }, TYPE, [k]), "DSSE_INVALID").path, "/payload");
  assert.equal(assertCode(() => verifyEnvelope(env, TYPE, []), "SIGNATURE_INVALID").path, "/signatures");
});

test("verifyEnvelope: a signature for another key id, or with bad base64, is skipped and a later good one verifies", () => {
  const [k, other] = [generateSigningKey(), generateSigningKey()];
  const env = signEnvelope(TYPE, BODY, [k]);
  const good = env.signatures[0]!;
  const foreign = { keyid: other.keyId, sig: good.sig };
  const garbled = { keyid: k.keyId, sig: "not base64!" };
  const wrong = { keyid: k.keyId, sig: signEnvelope(`${TYPE}x`, BODY, [k]).signatures[0]!.sig };
  // Control: each defective signature alone verifies nothing.
  for (const s of [foreign, garbled, wrong]) {
    assertCode(() => verifyEnvelope({ ...env, signatures: [s] }, TYPE, [k, other]), "SIGNATURE_INVALID");
  }
  const mixed = { ...env, signatures: [foreign, garbled, wrong, good] };
  assert.equal(verifyEnvelope(mixed, TYPE, [other, k]).keyId, k.keyId);
  // An empty key id names no key, so every trusted key is tried.
  assert.equal(verifyEnvelope({ ...env, signatures: [{ keyid: "", sig: good.sig }] }, TYPE, [other, k]).keyId, k.keyId);
  // The good signature under another key's id does not verify with that key.
  assertCode(() => verifyEnvelope({ ...env, signatures: [{ keyid: other.keyId, sig: good.sig }] }, TYPE, [other]), "SIGNATURE_INVALID");
});
