// The manifest document: address over the core's JCS bytes, signature over
// the same bytes, and a reader that recomputes everything it is given.
import { test } from "node:test";
import assert from "node:assert/strict";
import { blake3, canonicalBytes, generateSigningKey, parseJsonText, verifyBytes, type JsonModel } from "../../src/core/index.ts";
import { parseManifest, manifestText } from "../../src/manifest/document.ts";
import { signedBytes, ingestDevcontainer, signManifest, verifyManifestSignature, type EnvManifest } from "../../src/manifest/env-manifest.ts";
import { NOT_COVERED } from "../../src/manifest/scope.ts";
import { assertCode } from "../helpers/errors.ts";
import { fullDeclaration, HEX, PINNED_IMAGE, TAGGED_IMAGE } from "./helpers.ts";

const key = generateSigningKey();

function signed(decl: JsonModel = fullDeclaration()): EnvManifest {
  return ingestDevcontainer(decl, { key }).manifest;
}

/** The manifest file as parsed JSON, typed as far as the edits below reach (they plant wrong values on purpose). */
type CoreDoc = { [k: string]: unknown; features: { id: string }[]; mounts: { source: string }[]; containerEnv: Record<string, string> };
type ManifestDoc = { [k: string]: unknown; core: CoreDoc; address: string; not_covered: string[]; signature: Record<string, unknown> };

/** Round-trips a document through its file text, optionally editing the parsed JSON first. */
function reread(m: EnvManifest, edit?: (doc: ManifestDoc) => void): EnvManifest {
  const doc = JSON.parse(manifestText(m));
  edit?.(doc);
  return parseManifest(parseJsonText(JSON.stringify(doc)));
}

test("address is blake3 of the JCS bytes of the core, which carry the standard's schema tag; the extension has its own", () => {
  const m = signed();
  assert.equal(m.address, blake3(canonicalBytes(m.core)));
  assert.ok(canonicalBytes(m.core).toString().startsWith('{"containerEnv":'));
  assert.equal(m.core.schema, "sandbox.env-manifest/1");
  assert.equal(m.extension_address, blake3(canonicalBytes(m.extension)));
  assert.equal(m.extension.schema, "cairn.env-extension/1");
  assert.notEqual(m.address, m.extension_address);
  assert.deepEqual(m.not_covered, [...NOT_COVERED]);
});

test("signature is Ed25519 over the signed statement binding both addresses", () => {
  const m = signed();
  assert.equal(m.signature?.key_id, key.keyId);
  assert.ok(verifyBytes(key, signedBytes(m), Buffer.from(m.signature!.sig, "base64")));
  verifyManifestSignature(reread(m), key);
  // Controls: another key, a missing signature, a signature over other bytes.
  assertCode(() => verifyManifestSignature(m, generateSigningKey()), "SIGNATURE_INVALID", "/signature/key_id");
  assertCode(() => verifyManifestSignature({ ...m, signature: undefined }, key), "SIGNATURE_MISSING");
  const other = signManifest(signed({ image: PINNED_IMAGE }), key);
  assertCode(() => verifyManifestSignature({ ...m, signature: other.signature! }, key), "SIGNATURE_INVALID", "/signature/sig");
});

test("a document round-trips through its file text unchanged", () => {
  const m = signed();
  assert.deepEqual(reread(m), m);
  const unsigned = ingestDevcontainer({ image: TAGGED_IMAGE }).manifest;
  assert.deepEqual(reread(unsigned), unsigned);
  assert.equal(reread(unsigned).pinned, false);
});

test("tampering with the core is caught by the address; a consistent forgery by canonical form", () => {
  const m = signed();
  assertCode(() => reread(m, (d) => (d.core.remoteUser = "root")), "MANIFEST_MISMATCH", "/address");
  // Edit the core AND recompute the address: still refused, because ingest could never produce it.
  const forge = (edit: (core: CoreDoc) => void): void => {
    assertCode(
      () =>
        reread(m, (d) => {
          edit(d.core);
          d.address = blake3(canonicalBytes(d.core));
        }),
      "MANIFEST_MISMATCH",
    );
  };
  forge((c) => (c.features = [...c.features].reverse())); // unsorted
  forge((c) => (c.features[0]!.id = c.features[0]!.id.toUpperCase())); // not lowercased
  forge((c) => (c.name = "smuggled")); // an excluded field inside the core
  forge((c) => (c.privileged = true)); // a refused field inside the core
  forge((c) => (c.mounts[0]!.source = "/")); // a refused mount
  forge((c) => (c.containerEnv.X = "${localEnv:HOME}")); // a host substitution
  forge((c) => (c.schema = "cairn.env-manifest/2"));
  forge((c) => (c.init = 1));
  // Control: re-hashing an unedited core is accepted.
  reread(m, (d) => (d.address = blake3(canonicalBytes(d.core))));
});

test("labels are recomputed: a label that says more (or less) than the core is refused", () => {
  const m = ingestDevcontainer({ image: TAGGED_IMAGE, features: { [`ghcr.io/a/f@sha256:${HEX("c")}`]: {} } }).manifest;
  assert.equal(m.pinned, false);
  assert.equal(m.image_pinned, false);
  assert.deepEqual(m.unpinned, ["/image"]);
  assertCode(() => reread(m, (d) => (d.pinned = true)), "MANIFEST_MISMATCH", "/pinned");
  assertCode(() => reread(m, (d) => (d.image_pinned = true)), "MANIFEST_MISMATCH", "/image_pinned");
  assertCode(() => reread(m, (d) => (d.unpinned = [])), "MANIFEST_MISMATCH", "/unpinned");
  assertCode(() => reread(m, (d) => d.not_covered.pop()), "MANIFEST_MISMATCH", "/not_covered");
  assertCode(() => reread(m, (d) => delete d.pinned), "MANIFEST_MISMATCH", "/pinned");
  reread(m); // control
});

test("document shape: unknown fields, bad digests, bad signatures are refused", () => {
  const m = signed();
  assertCode(() => reread(m, (d) => (d.extra = 1)), "MODEL_UNKNOWN_FIELD", "/extra");
  assertCode(() => reread(m, (d) => (d.schema = "x")), "MANIFEST_MISMATCH", "/schema");
  assertCode(() => reread(m, (d) => (d.address = d.address.toUpperCase())), "DIGEST_INVALID", "/address");
  assertCode(() => reread(m, (d) => (d.address = `sha256:${HEX("a")}`)), "DIGEST_INVALID", "/address");
  assertCode(() => reread(m, (d) => (d.signature.sig = "AAAA")), "SIGNATURE_INVALID", "/signature/sig");
  assertCode(() => reread(m, (d) => (d.signature.key_id = "x")), "DIGEST_INVALID", "/signature/key_id");
  assertCode(() => reread(m, (d) => (d.signature.extra = "x")), "MODEL_UNKNOWN_FIELD", "/signature/extra");
  assertCode(() => parseManifest(parseJsonText("[]")), "MODEL_TYPE");
});

test("pinned only when the image and every feature are addressed by @sha256", () => {
  const feat = (pinned: boolean): JsonModel => ({ [pinned ? `ghcr.io/a/f@sha256:${HEX("d")}` : "ghcr.io/a/f:1"]: {} });
  const cases: [string, boolean | undefined, boolean, boolean][] = [
    // image, feature pinned (undefined = no feature), pinned, image_pinned
    [PINNED_IMAGE, undefined, true, true],
    [PINNED_IMAGE, true, true, true],
    [PINNED_IMAGE, false, false, true],
    [TAGGED_IMAGE, true, false, false],
    [TAGGED_IMAGE, undefined, false, false],
    [`${TAGGED_IMAGE}@sha256:${HEX("e")}`, true, true, true],
  ];
  for (const [image, f, pinned, imagePinned] of cases) {
    const m = ingestDevcontainer({ image, ...(f === undefined ? {} : { features: feat(f) }) }).manifest;
    assert.equal(m.pinned, pinned, `${image} ${f}`);
    assert.equal(m.image_pinned, imagePinned, `${image} ${f}`);
  }
  assert.equal(ingestDevcontainer({ image: PINNED_IMAGE, features: { "https://example.com/f.tgz": {} } }).manifest.pinned, false);
});
