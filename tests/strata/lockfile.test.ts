/**
 * The lockfile on disk: Strata's LockFile (seed 002) in the file, cairn's
 * records beside it. Round trips, Validate on what cairn writes, the records'
 * binding to the lockfile's bytes, signatures, freshness, the earlier format
 * refused and converted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSigningKey } from "../../src/core/index.ts";
import {
  checkFreshness,
  convertV1Lockfile,
  environmentId,
  formatDuration,
  freshness,
  isFrozen,
  lockfileToYaml,
  lockFileToYaml,
  parseLockfileText,
  parseLockfileUnvalidated,
  parseMaxAge,
  parseProfileText,
  readLockfile,
  recordsPath,
  resolveProfile,
  strataEnvironmentId,
  verifyLock,
  viewLock,
  writeLockfile,
  type Lockfile,
  type StrataSpec,
} from "../../src/strata/index.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase, tempDir } from "./fixtures.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";

const ex = exampleRegistry();

async function lock(): Promise<Lockfile> {
  const profile = parseProfileText('name: t\nbase: {os: debian12}\nsoftware: [python, numpy, "formation:bio-seq"]\nenv: {SECRET_TOKEN: hunter2}\n');
  return resolveProfile({ profile, catalog: catalogOf(ex), probedBase: await probedExampleBase(ex), allowUnsignedOffline: false, now: NOW, cairnVersion: "t" });
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends readonly (infer U)[] ? Mutable<U>[] : T[K] extends object ? Mutable<T[K]> : T[K] };

/** The lockfile's text after an edit of its wire value (the edits plant wrong values on purpose). */
function edited(l: Lockfile, f: (s: Mutable<StrataSpec.LockFile>) => void): string {
  const s = structuredClone(l.spec) as Mutable<StrataSpec.LockFile>;
  f(s);
  return lockFileToYaml(s as StrataSpec.LockFile);
}

test("a resolved lockfile writes and reads back equal, in the seed's fields only (Validate passes on what cairn writes)", async () => {
  const l = await lock();
  const text = lockfileToYaml(l);
  const again = parseLockfileText(text);
  assert.equal(lockfileToYaml(again), text);
  assert.equal(environmentId(again), environmentId(l));
  assert.equal(strataEnvironmentId(again.spec), strataEnvironmentId(l.spec));
  assert.match(strataEnvironmentId(l.spec), /^[0-9a-f]{64}$/);
  for (const gone of ["format:", "cairn_version:", "manifest_envelope:", "not_acted_upon:", "formations:", "signature:"]) assert.ok(!text.includes(gone), gone);
  assert.deepEqual(
    l.layers.map((x) => x.mount_order),
    l.layers.map((_, i) => i + 1),
    "mount order counts from 1",
  );
  assert.match(text, /^ {4}sha256: [0-9a-f]{64}$/m, "bare hex digests");
  assert.equal(l.layers.find((x) => x.from_formation)?.satisfied_by, "formation:bio-seq@2026.03");
});

test("Validate: a present-but-malformed digest is an error, wherever it is (control: the lock as resolved)", async () => {
  const l = await lock();
  parseLockfileText(edited(l, () => {}));
  for (const [path, f] of [
    ["/layers/0/sha256", (m: Mutable<StrataSpec.LockFile>) => void (m.layers[0]!.sha256 = `sha256:${l.spec.layers[0]!.sha256}`)],
    ["/layers/0/sha256", (m: Mutable<StrataSpec.LockFile>) => void (m.layers[0]!.sha256 = "bbbbbb")],
    ["/base/ami_sha256", (m: Mutable<StrataSpec.LockFile>) => void (m.base.ami_sha256 = l.spec.base.ami_sha256.toUpperCase())],
  ] as const) {
    assertCode(() => parseLockfileText(edited(l, f)), "DIGEST_INVALID", path);
  }
});

test("Validate: an unsafe layer id is PATH_UNSAFE naming /layers/0/id (control: the lock as resolved)", async () => {
  const l = await lock();
  for (const id of ["../../etc", "a/b", "..", ""]) {
    assertCode(() => parseLockfileText(edited(l, (m) => void (m.layers[0]!.id = id))), "PATH_UNSAFE", "/layers/0/id");
  }
});

test("Validate: two layers sharing a mount order, or one id twice, is an error", async () => {
  const l = await lock();
  assertCode(() => parseLockfileText(edited(l, (m) => void (m.layers[1]!.mount_order = m.layers[0]!.mount_order))), "LOCK_INVALID", "/layers/1/mount_order");
  assertCode(
    () => parseLockfileText(edited(l, (m) => void m.layers.push({ ...m.layers[0]!, mount_order: 99 }))),
    "LOCK_INVALID",
    `/layers/${l.layers.length}/id`,
  );
});

test("parsing: null entries and unknown fields are errors with their paths", async () => {
  const l = await lock();
  const text = lockfileToYaml(l);
  assertCode(() => parseLockfileText(text.replace("layers:\n", "layers:\n  -\n")), "MODEL_NULL_ENTRY");
  assertCode(() => parseLockfileText(`${text}surprise: true\n`), "MODEL_UNKNOWN_FIELD", "/surprise");
  assertCode(() => parseLockfileText(text.replace("  declared_os:", "  kernel: '6'\n  declared_os:")), "MODEL_UNKNOWN_FIELD", "/base/kernel");
  assertCode(() => parseLockfileText(text.replace(/^resolved_at: .*$/m, "resolved_at: yesterday")), "MODEL_VALUE", "/resolved_at");
});

test("an unfrozen lockfile is valid but has no identity (an error, never an empty string); Strata's is the empty string, as the seed says", async () => {
  const l = await lock();
  const unfrozen = parseLockfileText(edited(l, (m) => void (m.layers[0]!.sha256 = "")));
  assert.equal(isFrozen(unfrozen), false);
  assertCode(() => environmentId(unfrozen), "LOCK_UNFROZEN");
  assert.equal(strataEnvironmentId(unfrozen.spec), "");
  const noBase = parseLockfileText(edited(l, (m) => void (m.base.ami_sha256 = "")));
  assertCode(() => environmentId(noBase), "LOCK_UNFROZEN");
  assert.match(environmentId(l), /^sha256:[0-9a-f]{64}$/, "control: frozen has an ID");
});

test("cairn's earlier format is refused naming lock convert; the converted lockfile carries the same layers, base facts and signatures", async () => {
  const l = await lock();
  const v1 = v1Text(l);
  const e = assertCode(() => parseLockfileText(v1, "old.lock"), "LOCK_FORMAT_OLD");
  assert.match(e.hint ?? "", /cairn lock convert old\.lock/);
  const { lock: converted, dropped } = convertV1Lockfile(v1, "old.lock");
  assert.deepEqual(dropped, []);
  assert.deepEqual(
    converted.spec.layers.map((x) => [x.id, x.sha256, x.mount_order, x.from_formation]),
    l.spec.layers.map((x) => [x.id, x.sha256, x.mount_order, x.from_formation]),
  );
  assert.equal(converted.spec.base.ami_sha256, l.spec.base.ami_sha256, "the base digest recomputed from the old facts");
  assert.equal(strataEnvironmentId(converted.spec), strataEnvironmentId(l.spec));
  for (const x of converted.layers) assert.equal(x.signature?.status, "signed");
  const dir = tempDir("cairn-convert-");
  writeLockfile(join(dir, "new.lock"), converted);
  assert.equal(readLockfile(join(dir, "new.lock")).lock.layers[0]!.manifest_envelope, l.layers[0]!.manifest_envelope, "records carry the envelopes");
  assertCode(() => convertV1Lockfile(v1.replace("mutable_layer: false", "mutable_layer: true")), "LOCK_DIRTY");
  assertCode(() => convertV1Lockfile(v1.replace("defaults: {}", "defaults: {shell: bash}")), "LOCK_INVALID", "/defaults");
});

/** The same lockfile as cairn's earlier writer would have written it (cairn.lock/1), for the converter. */
function v1Text(l: Lockfile): string {
  const q = (s: string) => JSON.stringify(s);
  const base = l.base;
  const layers = l.layers.map(
    (x) => `  - id: ${x.id}
    name: ${x.name}
    version: ${q(x.version)}
    sha256: ${x.sha256}
    size: ${x.size}
    manifest_sha256: ${x.manifest_sha256}
    mount_order: ${x.mount_order - 1}
${x.from_formation ? `    from_formation: ${x.from_formation}\n` : ""}    satisfied_by: {}
    signature: {status: signed, keyid: ${x.signature!.status === "signed" ? x.signature!.keyid : ""}, envelope_sha256: ${x.signature!.envelope_sha256}}
    registry: ${q(x.registry!)}
    manifest_envelope: ${x.manifest_envelope}
`,
  );
  return `format: cairn.lock/1
profile: ${l.profile}
profile_sha256: ${l.profile_sha256}
resolved_at: ${l.resolved_at}
cairn_version: t
verification_policy: signed
base:
  name: ${base.name}
  arch: ${base.arch}
  abi: ${base.abi}
  capabilities: [${base.capabilities.map((c) => q(`${c.name}@${c.version}`)).join(", ")}]
  source: ${q(base.source)}
  digest: sha256:${"0".repeat(64)}
  probed_at: ${base.probed_at}
layers:
${layers.join("")}formations: [${l.formations.map((f) => `{name: ${f.name}, version: ${q(f.version)}, signature: {status: signed, keyid: ${f.signature!.status === "signed" ? f.signature!.keyid : ""}, envelope_sha256: ${f.signature!.envelope_sha256}}}`).join(", ")}]
env: {SECRET_TOKEN: hunter2}
on_ready: []
defaults: {}
packages: []
mutable_layer: false
requires_host: []
`;
}

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
  assert.match(Buffer.from(env.payload, "base64").toString(), /resolved_at: "?2026-03-01T12:00:00.000Z/);
  // Edit resolved_at in the YAML only.
  const original = readFileSync(path, "utf8");
  writeFileSync(path, original.replace("2026-03-01T12:00:00.000Z", "2026-09-01T12:00:00.000Z"));
  assertCode(() => readLockfile(path, [ex.lockKey]), "SIGNATURE_INVALID");
  writeFileSync(path, original);
  assert.doesNotThrow(() => readLockfile(path, [ex.lockKey]), "control: restored bytes verify");
  assertCode(() => readLockfile(path, [generateSigningKey()]), "SIGNATURE_INVALID");
  // Swap in a signature made over other bytes with the right key.
  const other = join(dir, "other.lock");
  writeLockfile(other, viewLock({ ...l.spec, resolved_at: "2027-01-01T00:00:00.000Z" }, l.records), ex.lockKey);
  writeFileSync(`${path}.dsse.json`, readFileSync(`${other}.dsse.json`));
  assertCode(() => readLockfile(path, [ex.lockKey]), "SIGNATURE_INVALID");
  writeFileSync(join(dir, "unsigned.lock"), original);
  assertCode(() => readLockfile(join(dir, "unsigned.lock"), [ex.lockKey]), "SIGNATURE_MISSING");
});

test("the base probe time is the resolution clock, so the same inputs give the same bytes", async () => {
  const text = lockfileToYaml(await lock());
  assert.ok(!/probed_at: (?!2026-03-01T12:00:00.000Z)/.test(text), "the probe time is the resolution clock");
});

test("the records beside a lockfile name its bytes: an edited lockfile with its old records is refused; control: the records as written", async () => {
  const l = await lock();
  const dir = tempDir("cairn-records-");
  const path = join(dir, "env.lock");
  writeLockfile(path, l);
  assert.equal(readLockfile(path).lock.verification_policy, "signed", "control: records read");
  const records = JSON.parse(readFileSync(recordsPath(path), "utf8")) as { lockfile_sha256: string; layers: { manifest_envelope: string }[] };
  assert.match(records.lockfile_sha256, /^sha256:/);
  writeFileSync(path, readFileSync(path, "utf8").replace(/^profile: t$/m, "profile: u"));
  assertCode(() => readLockfile(path), "LOCK_INVALID", "/lockfile_sha256");
  // A lockfile with no records (Strata's) reads; nothing claims a signature.
  writeFileSync(path, lockfileToYaml(l));
  writeFileSync(recordsPath(path), "");
  assertCode(() => readLockfile(path), "JSON_SYNTAX");
  const bare = join(dir, "bare.lock");
  writeFileSync(bare, lockfileToYaml(l));
  const read = readLockfile(bare).lock;
  assert.equal(read.verification_policy, "unrecorded");
  assert.equal(read.layers[0]!.signature, undefined);
  assert.equal(environmentId(read), environmentId(l), "the identity is the lockfile's alone");
});

test("records whose embedded manifest is not the lockfile's layer are refused (DIGEST_MISMATCH naming the field); control: as written", async () => {
  const l = await lock();
  const dir = tempDir("cairn-records-env-");
  const path = join(dir, "env.lock");
  writeLockfile(path, l);
  const records = JSON.parse(readFileSync(recordsPath(path), "utf8")) as {
    layers: { manifest_envelope: string; signature: unknown; manifest_sha256: string }[];
  };
  // Swap two layers' envelopes and their digests: each is a real signed manifest, of another layer.
  const [a, b] = [records.layers[0]!, records.layers[1]!];
  records.layers[0] = { ...a, manifest_envelope: b.manifest_envelope, signature: b.signature, manifest_sha256: b.manifest_sha256 };
  writeFileSync(recordsPath(path), JSON.stringify(records));
  const e = assertCode(() => readLockfile(path), "DIGEST_MISMATCH");
  assert.match(e.message, /differs from the lockfile's layer/);
});

test("verify refuses a signed lockfile whose policy claims more than its layer records", async () => {
  const l = await lock();
  const dir = tempDir("cairn-policy-");
  const honest = join(dir, "honest.lock");
  writeLockfile(honest, l, ex.lockKey);
  const opts = { keys: [ex.lockKey], now: NOW, registries: [], layerKeys: [], allowUnsignedOffline: false };
  assert.equal((await verifyLock(honest, opts)).verificationPolicy, "signed", "control");
  const first = l.layers[0]!;
  const layers = new Map(l.records.layers);
  layers.set(first.id, { ...layers.get(first.id)!, signature: { status: "unsigned-offline", envelope_sha256: first.signature!.envelope_sha256 } });
  const path = join(dir, "forged.lock");
  writeLockfile(path, viewLock(l.spec, { ...l.records, layers }), ex.lockKey);
  await assertCodeAsync(() => verifyLock(path, opts), "LOCK_INVALID");
  writeLockfile(path, viewLock({ ...l.spec, verification_policy: "unsigned-offline" }, { ...l.records, layers, policy: "unsigned-offline" }), ex.lockKey);
  await assertCodeAsync(() => verifyLock(path, opts), "TRUST_REFUSED");
  assert.equal((await verifyLock(path, { ...opts, allowUnsignedOffline: true })).verificationPolicy, "unsigned-offline");
});

test("parse without Validate (lock diff): rule problems come back as problems; a shape error is still refused", async () => {
  const l = await lock();
  const { lock: read, problems } = parseLockfileUnvalidated(edited(l, (m) => void (m.layers[1]!.mount_order = m.layers[0]!.mount_order)));
  assert.deepEqual(
    problems.map((p) => [p.path, p.code]),
    [["/layers/1/mount_order", "LOCK_INVALID"]],
  );
  assert.equal(read.layers.length, l.layers.length);
  assert.deepEqual(parseLockfileUnvalidated(lockfileToYaml(l)).problems, [], "control");
  assertCode(() => parseLockfileUnvalidated(lockfileToYaml(l).replace(/^ {4}size: \d+$/m, "    size: big")), "MODEL_TYPE");
});
