import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSigningKey, type JsonModel } from "../../src/core/index.ts";
import {
  checkFreshness,
  environmentId,
  formatDuration,
  freshness,
  isFrozen,
  lockfileToModel,
  lockfileToYaml,
  parseLockfile,
  parseLockfileText,
  parseMaxAge,
  parseProfileText,
  readLockfile,
  resolveProfile,
  verifyLock,
  writeLockfile,
  type Lockfile,
} from "../../src/strata/index.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase, tempDir } from "./fixtures.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";

const ex = exampleRegistry();

async function lock(): Promise<Lockfile> {
  const profile = parseProfileText('name: t\nbase: {os: debian12}\nsoftware: [python, numpy, "formation:bio-seq"]\nenv: {SECRET_TOKEN: hunter2}\n');
  return resolveProfile({ profile, catalog: catalogOf(ex), probedBase: await probedExampleBase(ex), allowUnsignedOffline: false, now: NOW, cairnVersion: "t" });
}

/** The lockfile as parsed JSON, typed as far as the edits below reach (they plant wrong values on purpose); the lock has at least two layers. */
type LayerDoc = { [k: string]: unknown; signature: Record<string, unknown> };
type LockDoc = { [k: string]: unknown; base: { [k: string]: unknown; capabilities: string[] }; layers: [LayerDoc, LayerDoc, ...unknown[]] };

function edit(l: Lockfile, f: (m: LockDoc) => void): JsonModel {
  const m = JSON.parse(JSON.stringify(lockfileToModel(l))) as LockDoc;
  f(m);
  return m as JsonModel;
}

test("a resolved lockfile writes and reads back equal (Validate passes on what cairn writes)", async () => {
  const l = await lock();
  const again = parseLockfileText(lockfileToYaml(l));
  assert.equal(lockfileToYaml(again), lockfileToYaml(l));
  assert.equal(environmentId(again), environmentId(l));
});

test("Validate: a present-but-malformed digest is an error, wherever it is", async () => {
  const l = await lock();
  const bad = "sha256:XYZ";
  for (const [path, f] of [
    ["/layers/0/sha256", (m: LockDoc) => void (m.layers[0].sha256 = bad)],
    ["/layers/0/manifest_sha256", (m: LockDoc) => void (m.layers[0].manifest_sha256 = `sha256:${"A".repeat(64)}`)],
    ["/base/digest", (m: LockDoc) => void (m.base.digest = "")],
    ["/profile_sha256", (m: LockDoc) => void (m.profile_sha256 = "md5:abc")],
    ["/layers/0/signature/envelope_sha256", (m: LockDoc) => void (m.layers[0].signature.envelope_sha256 = bad)],
    ["/layers/0/signature/keyid", (m: LockDoc) => void (m.layers[0].signature.keyid = 5)],
  ] as const) {
    const e = assertCode(() => parseLockfile(edit(l, f)), "DIGEST_INVALID");
    assert.equal(e.path, path);
  }
});

test("Validate: an unsafe layer id is PATH_UNSAFE naming /layers/0/id (control: the lock as resolved)", async () => {
  const l = await lock();
  parseLockfile(edit(l, () => {})); // control
  for (const id of ["../../etc", "a/b", ".x", ""]) {
    assertCode(() => parseLockfile(edit(l, (m) => void (m.layers[0].id = id))), "PATH_UNSAFE", "/layers/0/id");
  }
});

test("Validate: two layers sharing a mount order is an error", async () => {
  const l = await lock();
  const e = assertCode(() => parseLockfile(edit(l, (m) => void (m.layers[1].mount_order = m.layers[0].mount_order))), "LOCK_INVALID");
  assert.equal(e.path, "/layers/1/mount_order");
  assertCode(() => parseLockfile(edit(l, (m) => void m.layers.push({ ...m.layers[0], mount_order: 99 }))), "LOCK_INVALID");
});

test("Validate: a base digest that does not match the base facts is an error (the ID relies on it)", async () => {
  const l = await lock();
  // Control: the untouched base reads back.
  assert.equal(parseLockfile(edit(l, () => {})).base.digest, l.base.digest);
  for (const f of [
    (m: LockDoc) => void (m.base.capabilities = m.base.capabilities.map((c: string) => c.replace(/^glibc@.*/, "glibc@9.99"))),
    (m: LockDoc) => void (m.base.version_id = "99"),
    (m: LockDoc) => void (m.base.os_id = "alpine"),
    (m: LockDoc) => void (m.base.abi = "musl"),
  ]) {
    assertCode(() => parseLockfile(edit(l, f)), "BASE_MISMATCH", "/base/digest");
  }
  // Provenance outside the digest may change without breaking it.
  assert.equal(parseLockfile(edit(l, (m) => void (m.base.probed_at = "2020-01-01T00:00:00Z"))).base.digest, l.base.digest);
});

test("Validate: null entries and unknown fields are errors with their paths", async () => {
  const l = await lock();
  assertCode(() => parseLockfile(edit(l, (m) => void m.layers.push(null))), "MODEL_NULL_ENTRY");
  assertCode(() => parseLockfile(edit(l, (m) => void (m.layers[0].extra = 1))), "MODEL_UNKNOWN_FIELD", "/layers/0/extra");
  assertCode(() => parseLockfile(edit(l, (m) => void (m.base.kernel = "6"))), "MODEL_UNKNOWN_FIELD", "/base/kernel");
  assertCode(() => parseLockfile(edit(l, (m) => void (m.surprise = true))), "MODEL_UNKNOWN_FIELD", "/surprise");
  assertCode(() => parseLockfile(edit(l, (m) => void (m.resolved_at = "yesterday"))), "MODEL_VALUE", "/resolved_at");
  const text = lockfileToYaml(l).replace("on_ready: []", "on_ready:\n  -\n");
  assertCode(() => parseLockfileText(text), "MODEL_NULL_ENTRY");
});

test("an unfrozen lockfile is valid but has no EnvironmentID (an error, never an empty string)", async () => {
  const l = await lock();
  const unfrozen = parseLockfile(
    edit(l, (m) => {
      delete m.layers[0].sha256;
      delete m.layers[0].mount_order;
    }),
  );
  assert.equal(isFrozen(unfrozen), false);
  assertCode(() => environmentId(unfrozen), "LOCK_UNFROZEN");
  const noBase = parseLockfile(edit(l, (m) => void delete m.base.digest));
  assertCode(() => environmentId(noBase), "LOCK_UNFROZEN");
  assert.match(environmentId(l), /^sha256:[0-9a-f]{64}$/, "control: frozen has an ID");
});

test("freshness: ages in days, future-dated flagged, --max-age refuses naming age, date and bound", () => {
  const resolved = "2025-01-14T00:00:00.000Z";
  const now = new Date("2026-03-02T00:00:00.000Z");
  const f = freshness(resolved, now);
  assert.equal(f.age, "412 days");
  assert.equal(f.future, false);
  assert.equal(formatDuration(3 * 3_600_000 + 5), "3 hours");
  assert.equal(formatDuration(86_400_000), "1 day");
  assert.equal(formatDuration(59_000), "59 seconds", "ages under a minute are shown in seconds");
  assert.equal(parseMaxAge("30d"), 30 * 86_400_000);
  assert.equal(parseMaxAge("2w"), 14 * 86_400_000);
  assert.equal(parseMaxAge("720h"), 720 * 3_600_000);
  for (const bad of ["30", "d", "-1d", "30D", "1y", "0d", "0h0m", "1h 30m", "h1"]) assertCode(() => parseMaxAge(bad), "USAGE");
  // Strata's forms: Go durations, and 0 for no bound.
  assert.equal(parseMaxAge("90m"), 90 * 60_000);
  assert.equal(parseMaxAge("1h30m"), 90 * 60_000);
  assert.equal(parseMaxAge("1.5h"), 90 * 60_000);
  assert.equal(parseMaxAge("45s"), 45_000);
  assert.equal(parseMaxAge("1.5d"), 36 * 3_600_000);
  assert.equal(parseMaxAge("0"), undefined, "0 is no bound");
  assertCode(() => parseMaxAge("200000w"), "LIMIT_EXCEEDED");
  const e = assertCode(() => checkFreshness(resolved, now, parseMaxAge("30d"), "30d"), "LOCK_STALE");
  assert.match(e.message, /412 days/);
  assert.match(e.message, /2025-01-14/);
  assert.match(e.message, /30d/);
  assert.doesNotThrow(() => checkFreshness(resolved, now, parseMaxAge("413d")), "control: within the bound");
  assert.doesNotThrow(() => checkFreshness(resolved, now, undefined), "no bound: shown, not refused");
  const future = freshness("2026-03-04T00:00:00.000Z", now);
  assert.equal(future.future, true);
  assert.equal(future.age, "in the future by 2 days");
  assertCode(() => checkFreshness("2026-03-04T00:00:00.000Z", now, undefined), "LOCK_STALE");
  assert.equal(checkFreshness("2026-03-02T00:01:00.000Z", now, undefined).future, true, "clock skew within 5 minutes: flagged, not refused");
  // The edges, to the millisecond (issue 31 second pass: a bound one second looser left every test green).
  const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
  assert.doesNotThrow(() => checkFreshness(at(-3_600_000), now, parseMaxAge("1h")), "exactly the max age: accepted");
  assertCode(() => checkFreshness(at(-3_600_001), now, parseMaxAge("1h")), "LOCK_STALE", "/resolved_at");
  assert.equal(checkFreshness(at(5 * 60_000), now, undefined).future, true, "exactly 5 minutes ahead: flagged, not refused");
  assertCode(() => checkFreshness(at(5 * 60_000 + 1), now, undefined), "LOCK_STALE", "/resolved_at");
});

test("signed lockfile: resolved_at is inside the payload; edits, a wrong key and a swapped signature are refused", async () => {
  const l = await lock();
  const dir = tempDir("cairn-lock-");
  const path = join(dir, "env.lock");
  const written = writeLockfile(path, l, ex.lockKey);
  const read = readLockfile(path, [ex.lockKey]);
  assert.equal(read.signature?.keyid, ex.lockKey.keyId);
  assert.equal(read.signature?.envelope_sha256, written.signature?.envelope_sha256);
  const env = JSON.parse(readFileSync(`${path}.dsse.json`, "utf8")) as { payload: string };
  assert.match(Buffer.from(env.payload, "base64").toString(), /resolved_at: 2026-03-01T12:00:00.000Z/);
  // Edit resolved_at in the YAML only.
  const original = readFileSync(path, "utf8");
  writeFileSync(path, original.replace("2026-03-01T12:00:00.000Z", "2026-09-01T12:00:00.000Z"));
  assertCode(() => readLockfile(path, [ex.lockKey]), "SIGNATURE_INVALID");
  writeFileSync(path, original);
  assert.doesNotThrow(() => readLockfile(path, [ex.lockKey]), "control: restored bytes verify");
  assertCode(() => readLockfile(path, [generateSigningKey()]), "SIGNATURE_INVALID");
  // Swap in a signature made over other bytes with the right key.
  const other = join(dir, "other.lock");
  writeLockfile(other, { ...l, resolved_at: "2027-01-01T00:00:00.000Z" }, ex.lockKey);
  writeFileSync(`${path}.dsse.json`, readFileSync(`${other}.dsse.json`));
  assertCode(() => readLockfile(path, [ex.lockKey]), "SIGNATURE_INVALID");
  writeFileSync(join(dir, "unsigned.lock"), original);
  assertCode(() => readLockfile(join(dir, "unsigned.lock"), [ex.lockKey]), "SIGNATURE_MISSING");
});

test("the base probe time is the resolution clock, so the same inputs give the same bytes", async () => {
  const text = lockfileToYaml(await lock());
  assert.ok(!/probed_at: (?!2026-03-01T12:00:00.000Z)/.test(text), "the probe time is the resolution clock");
});

test("verify refuses a signed lockfile whose policy claims more than its layer records", async () => {
  const l = await lock();
  const dir = tempDir("cairn-policy-");
  const honest = join(dir, "honest.lock");
  writeLockfile(honest, l, ex.lockKey);
  const opts = { keys: [ex.lockKey], now: NOW, registries: [], layerKeys: [], allowUnsignedOffline: false };
  assert.equal((await verifyLock(honest, opts)).verification_policy, "signed", "control");
  const first = l.layers[0]!;
  const forged: Lockfile = {
    ...l,
    layers: [{ ...first, signature: { status: "unsigned-offline", envelope_sha256: first.signature!.envelope_sha256 } }, ...l.layers.slice(1)],
  };
  const path = join(dir, "forged.lock");
  writeLockfile(path, forged, ex.lockKey);
  await assertCodeAsync(() => verifyLock(path, opts), "LOCK_INVALID");
  const unsigned: Lockfile = { ...forged, verification_policy: "unsigned-offline" };
  writeLockfile(path, unsigned, ex.lockKey);
  await assertCodeAsync(() => verifyLock(path, opts), "TRUST_REFUSED");
  assert.equal((await verifyLock(path, { ...opts, allowUnsignedOffline: true })).verification_policy, "unsigned-offline");
});

test("Validate: package sets follow the profile's rule (name pattern, non-empty version, env for conda only)", async () => {
  const l = await lock();
  const withPackages = (packages: unknown) => edit(l, (m) => void (m.packages = packages));
  // control: a set a profile could declare
  const ok = parseLockfile(withPackages([{ manager: "pip", packages: [{ name: "pandas", version: "2.2.2" }] }]));
  assert.deepEqual(ok.packages, [{ manager: "pip", packages: [{ name: "pandas", version: "2.2.2" }] }]);
  const issues = (packages: unknown): string[] => {
    try {
      parseLockfile(withPackages(packages));
      return [];
    } catch (e) {
      const err = e as { issues?: Array<{ path: string }>; path?: string };
      return (err.issues ?? [{ path: err.path ?? "" }]).map((i) => i.path);
    }
  };
  assert.deepEqual(issues([{ manager: "pip", packages: [{ name: "bad name!" }] }]), ["/packages/0/packages/0/name"]);
  assert.deepEqual(issues([{ manager: "pip", packages: [{ name: "x", version: "" }] }]), ["/packages/0/packages/0/version"]);
  assert.deepEqual(issues([{ manager: "pip", packages: [{ name: "x" }], env: "base" }]), ["/packages/0/env"]);
  assert.deepEqual(issues([{ manager: "pip" }]), ["/packages/0/packages"]);
});
