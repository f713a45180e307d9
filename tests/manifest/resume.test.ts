// Resume linkage: a snapshot reference records the manifest at suspension;
// resuming in a different environment is refused, naming what differs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseJsonText } from "../../src/core/index.ts";
import { checkResume, parseSnapshotRef, snapshotRefOf } from "../../src/manifest/resume.ts";
import { assertCode } from "../helpers/errors.ts";
import { fullDeclaration, ingest, PINNED_IMAGE, TAGGED_IMAGE } from "./helpers.ts";

test("the same environment resumes; key order and comments do not matter", () => {
  const snap = snapshotRefOf(ingest(fullDeclaration()));
  const opts = { allowUnpinned: true };
  assert.equal(checkResume(snap, ingest(fullDeclaration()), opts), "same declaration, unpinned: not a claim about bytes");
  const reordered = Object.fromEntries(Object.entries(fullDeclaration()).reverse());
  checkResume(snap, ingest(reordered), opts);
});

test("an unpinned pair with equal addresses is refused (RESUME_UNPINNED) unless allowUnpinned is given; a pinned pair passes", () => {
  const unpinned = { image: TAGGED_IMAGE };
  const e = assertCode(() => checkResume(snapshotRefOf(ingest(unpinned)), ingest(unpinned)), "RESUME_UNPINNED", "/core/image");
  assert.match(e.message, /same declaration, unpinned: not a claim about bytes/);
  assert.equal(checkResume(snapshotRefOf(ingest(unpinned)), ingest(unpinned), { allowUnpinned: true }), "same declaration, unpinned: not a claim about bytes");
  // Control: a pinned pair passes without the flag.
  assert.equal(checkResume(snapshotRefOf(ingest({ image: PINNED_IMAGE })), ingest({ image: PINNED_IMAGE })), "same environment, pinned");
});

test("an extension field that differs is refused too, named under /extension", () => {
  const snap = snapshotRefOf(ingest({ image: PINNED_IMAGE, containerUser: "root" }));
  const e = assertCode(() => checkResume(snap, ingest({ image: PINNED_IMAGE, containerUser: "nobody" })), "RESUME_MISMATCH");
  assert.deepEqual(
    e.issues.map((i) => i.path),
    ["/extension/containerUser"],
  );
});

test("a different environment is refused with RESUME_MISMATCH naming every differing core field, never a value", () => {
  const snap = snapshotRefOf(ingest(fullDeclaration()));
  const offered = ingest({ ...fullDeclaration(), remoteUser: "root", containerEnv: { LANG: "C.UTF-8", TZ: "secret-tz-value" } });
  const e = assertCode(() => checkResume(snap, offered), "RESUME_MISMATCH");
  assert.deepEqual(e.issues.map((i) => i.path).sort(), ["/core/containerEnv/TZ", "/core/remoteUser"]);
  assert.match(e.message, /containerEnv/);
  assert.match(e.message, /remoteUser/);
  assert.ok(!JSON.stringify(e.toJSON()).includes("secret-tz-value"));
});

test("a snapshot reference survives storage and is re-checked when read", () => {
  const snap = snapshotRefOf(ingest(fullDeclaration()));
  const stored = parseSnapshotRef(parseJsonText(JSON.stringify(snap)));
  assert.deepEqual(stored, snap);
  checkResume(stored, ingest(fullDeclaration()), { allowUnpinned: true });
  const tampered = JSON.parse(JSON.stringify(snap));
  tampered.core.remoteUser = "root";
  assertCode(() => parseSnapshotRef(parseJsonText(JSON.stringify(tampered))), "MANIFEST_MISMATCH");
  assertCode(() => parseSnapshotRef(parseJsonText(JSON.stringify({ ...snap, extra: 1 }))), "MODEL_UNKNOWN_FIELD");
  // An offered manifest whose address was altered in memory is refused before comparing.
  const offered = ingest(fullDeclaration());
  assertCode(() => checkResume(snap, { ...offered, core: { ...offered.core, remoteUser: "x" } }), "MANIFEST_MISMATCH");
});
