// A lockfile with a mutable upper layer is dirty (issue 13 item 3): it is
// never signed as clean, by the library or by `resolve --sign`, and nothing
// is written when it is refused. Controls: the same lock unsigned, and the
// same profile without mutable_layer, are written and signed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSigningKey } from "../../src/core/index.ts";
import { parseProfileText, readLockfile, writeLockfile } from "../../src/strata/index.ts";
import { assertCode } from "../helpers/errors.ts";
import { exampleRegistry, resolveExample, resolveWithCli, tempDir } from "./fixtures.ts";

const PROFILE = "name: dirty\nbase: {os: debian12}\nsoftware: [python]\n";

test("writeLockfile refuses to sign a dirty lock (LOCK_DIRTY at /mutable_layer) and writes nothing; controls: unsigned, and clean, are written", async () => {
  const ex = exampleRegistry();
  const key = generateSigningKey();
  const dir = tempDir("cairn-dirty-");
  for (const spec of ['{name: work, version: "1"}', '{name: work, version: "1", size_gb: 40, volume_type: io2}']) {
    const dirty = await resolveExample(ex, parseProfileText(`${PROFILE}mutable_layer: ${spec}\n`));
    const out = join(dir, `dirty-${spec.length}.lock`);
    assertCode(() => writeLockfile(out, dirty, key), "LOCK_DIRTY", "/mutable_layer");
    assert.equal(existsSync(out), false, "nothing is written");
    assert.equal(writeLockfile(out, dirty).signature, undefined, "control: the dirty lock is written unsigned");
  }
  const clean = await resolveExample(ex, parseProfileText(PROFILE));
  const out = join(dir, "clean.lock");
  assert.ok(writeLockfile(out, clean, key).signature);
  assert.equal(readLockfile(out, [key]).lock.mutable_layer, undefined);
});

test("resolve --sign of a profile with mutable_layer exits 1 (LOCK_DIRTY) and leaves no lockfile; control: without --sign it resolves", async () => {
  const ex = exampleRegistry();
  const profile = join(ex.root, "dirty.yaml");
  writeFileSync(profile, `${PROFILE}mutable_layer: {name: work, version: "1"}\n`);
  const signed = join(ex.root, "dirty-signed.lock");
  const r = await resolveWithCli(ex, profile, signed);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /LOCK_DIRTY/);
  assert.equal(existsSync(signed), false);
  const unsigned = join(ex.root, "dirty.lock");
  const u = await resolveWithCli(ex, profile, unsigned, { sign: false });
  assert.equal(u.code, 0, u.stderr);
  assert.equal(existsSync(unsigned), true);
});
