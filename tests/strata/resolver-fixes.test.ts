/**
 * Issue 13 item 6: each resolver and lockfile bug, with a test that failed
 * before its fix and a control that passes on good input.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSigningKey, sha256, signEnvelope, type SigningKey } from "../../src/core/index.ts";
import {
  type Catalog,
  LocalRegistry,
  layerDocumentBytes,
  LAYER_MANIFEST_TYPE,
  buildLayerFromDirectory,
  catalogFromRegistries,
  compareVersions,
  diffLocks,
  environmentId,
  formationOf,
  isPrerelease,
  layerId,
  lockfileCaveats,
  lockFileToYaml,
  lockfileToYaml,
  parseLockfileText,
  readRecords,
  recordsToModel,
  viewLock,
  parseLockfileUnvalidated,
  parseMaxAge,
  checkFreshness,
  parseProfileText,
  resolveProfile,
  verifyLock,
  writeLockfile,
  type Lockfile,
  type LockBase,
} from "../../src/strata/index.ts";
import { parseFormation } from "../../src/strata/formation-document.ts";
import { isVersion, parseVersion } from "../../src/strata/version.ts";
import { resolveRefs } from "../../src/strata/resolve/refs.ts";
import { toySpec } from "../../examples/strata/build-registry.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase, tempDir } from "./fixtures.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";

const ex = exampleRegistry();

async function resolveText(text: string, catalog: Catalog = catalogOf(ex), base?: LockBase): Promise<Lockfile> {
  return resolveProfile({
    profile: parseProfileText(text),
    catalog,
    probedBase: base ?? (await probedExampleBase(ex)),
    allowUnsignedOffline: false,
    now: NOW,
    cairnVersion: "test",
  });
}

/** A registry of noarch layers with the given versions of one name, signed by `key`. */
function versionsRegistry(name: string, versions: readonly string[], key: SigningKey): Catalog {
  const root = tempDir("cairn-w13-versions-");
  const reg = LocalRegistry.init(join(root, "registry"));
  for (const version of versions) {
    const dir = join(root, `src-${version}`);
    mkdirSync(join(dir, "opt", name), { recursive: true });
    writeFileSync(join(dir, "opt", name, "VERSION"), `${version}\n`);
    reg.publishLayer(...built(buildLayerFromDirectory(dir, toySpec({ name, version, provides: [`${name}@${version}`], files: {} }))), [key]);
  }
  return catalogFromRegistries([{ registry: reg, source: { url: reg.root, keys: [key] } }]);
}

function built(b: ReturnType<typeof buildLayerFromDirectory>): [Uint8Array, ReturnType<typeof buildLayerFromDirectory>["manifest"]] {
  return [b.blob.blob, b.manifest];
}

test("lock verify: the result does not depend on --registry order when two registries hold the same blob", async () => {
  const lock = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  const dir = tempDir("cairn-w13-verify-");
  const lockPath = join(dir, "lock.yaml");
  writeLockfile(lockPath, lock, ex.lockKey);
  // Registry B: a copy of A whose envelope for tool-a is re-signed by another key (same manifest, same blob).
  const regB = join(dir, "registry-b");
  cpSync(ex.registry, regB, { recursive: true });
  const b = LocalRegistry.open(regB);
  const id = lock.layers[0]!.id;
  const doc = b.readLayer(id);
  const envelope = signEnvelope(LAYER_MANIFEST_TYPE, Buffer.from(doc.envelope.payload, "base64"), [generateSigningKey()]);
  rmSync(b.layerSignaturePath(id), { force: true });
  const resigned = Buffer.from(JSON.stringify(envelope));
  writeFileSync(b.layerSignaturePath(id), resigned);
  // The seed document beside it names its signer, so a re-signed layer's document is written again too.
  rmSync(b.layerPath(id), { force: true });
  writeFileSync(b.layerPath(id), layerDocumentBytes(doc.value, envelope));
  const verify = async (regs: string[]): Promise<number | null> =>
    (
      await verifyLock(lockPath, {
        keys: [ex.lockKey],
        now: NOW,
        registries: regs.map((r) => LocalRegistry.open(r)),
        layerKeys: [],
        allowUnsignedOffline: false,
      })
    ).layersChecked;
  assert.equal(await verify([ex.registry, regB]), 1, "control: the resolving registry first");
  assert.equal(await verify([regB, ex.registry]), 1, "the other order finds the pinned envelope too (failed before the fix)");
  const e = await assertCodeAsync(() => verify([regB]), "DIGEST_MISMATCH");
  // The property under test is the text itself: the error names the digest it found, not only the one it wanted.
  assert.ok(e.message.includes(sha256(resigned)), e.message);
  assert.ok(e.message.includes(lock.layers[0]!.signature!.envelope_sha256), e.message);
});

test("version order: pre-releases sort below their release; an unversioned ref does not pick one", () => {
  assert.equal(compareVersions("3.12.0rc1", "3.12.0"), -1);
  assert.equal(compareVersions("1.0.0-beta", "1.0.0"), -1);
  assert.equal(compareVersions("1.0.0-beta", "1.0.0-rc.1"), -1, "beta before rc");
  assert.equal(compareVersions("3.12.0rc2", "3.12.0rc10"), -1, "natural order inside the tail");
  assert.equal(compareVersions("3.12.0", "3.12.0+local"), -1, "a non-pre-release tail sorts above the release");
  assert.equal(compareVersions("2.36-9", "2.36"), 1, "a Debian revision is not a pre-release");
  assert.equal(compareVersions("3.12.1", "3.12.0"), 1, "control: plain numbers");
  assert.ok(isPrerelease("3.12.0rc1") && isPrerelease("1.0.0-beta") && !isPrerelease("3.12.0") && !isPrerelease("2.36-9"));
  const key = generateSigningKey();
  const cat = versionsRegistry("py", ["3.12.0", "3.12.0rc1", "3.13.0b1"], key);
  const base = { name: "debian12", arch: "x86_64", abi: "gnu", capabilities: [], source: "declared" } as const satisfies LockBase;
  const pick = (ref: string): string =>
    resolveRefs(parseProfileText(`name: t\nbase: {os: debian12}\nsoftware: [${ref}]\n`).software, cat, base)[0]!.layer.doc.value.version;
  assert.equal(pick("py"), "3.12.0", "the release, not 3.13.0b1 or 3.12.0rc1 (picked 3.13.0b1 before the fix)");
  assert.equal(pick("py@3.12"), "3.12.0", "a prefix ref prefers the release too");
  assert.equal(pick("py@3.13"), "3.13.0b1", "only a pre-release fits: it is picked");
  assert.equal(pick("py@3.12.0rc1"), "3.12.0rc1", "a ref that names a pre-release gets it");
});

test("requires_host {key, value} is read (no crash), recorded, warned about, and its order does not change the EnvironmentID", async () => {
  const p = (hosts: string): string => `name: t\nbase: {os: debian12}\nsoftware: [tool-a]\nrequires_host: ${hosts}\n`;
  const KVM = '{key: kvm, value: "true"}';
  const a = await resolveText(p(`[{key: efa, value: "true"}, ${KVM}]`));
  const b = await resolveText(p(`[${KVM}, {key: efa, value: "true"}]`));
  assert.equal(environmentId(a), environmentId(b), "a set: order does not matter");
  const reordered = viewLock({ ...a.spec, requires_host: [...a.spec.requires_host].reverse() });
  assert.equal(environmentId(reordered), environmentId(a), "a hand-reordered lockfile has the same ID");
  assert.notEqual(environmentId(await resolveText(p(`[{key: efa, value: "false"}, ${KVM}]`))), environmentId(a), "control: another value is another ID");
  assert.ok(lockfileCaveats(a).some((c) => c.startsWith("host requirements are recorded, not checked")));
  assert.ok(!lockfileCaveats(await resolveText(p("[]"))).some((c) => c.startsWith("host requirements")), "control: no warning without them");
  assertCode(() => parseProfileText(p("[{key: efa}]")), "MODEL_MISSING_FIELD");
  assertCode(() => parseProfileText(p("[{key: efa, value: x, extra: 1}]")), "MODEL_UNKNOWN_FIELD");
});

test("a version YAML read as a number gets MODEL_TYPE at its pointer (asking for quotes); the quoted form reads", () => {
  const e = assertCode(() => parseProfileText("name: t\nbase: {os: debian12}\nsoftware: [{name: numpy, version: 12.10}]\n"), "MODEL_TYPE");
  assert.equal(e.path, "/software/0/version");
  assertCode(() => parseProfileText("name: t\nversion: 1.10\nbase: {os: debian12}\n"), "MODEL_TYPE", "/version");
  const ok = parseProfileText('name: t\nbase: {os: debian12}\nsoftware: [{name: numpy, version: "12.10"}]\n');
  assert.equal(ok.software[0]!.version, "12.10", "control: quoted");
});

test("every problem is reported with its pointer: unresolvable refs, formation refs and duplicate YAML keys", async () => {
  const e = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [nosuch, tool-a, python@9]\n").then(
    () => assert.fail("expected RESOLVE_FAILED"),
    (x: { code: string; issues?: { path: string }[] }) => x,
  );
  assert.equal(e.code, "RESOLVE_FAILED");
  assert.deepEqual(
    e.issues?.map((i) => i.path),
    ["/software/0", "/software/2"],
  );
  const f = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [formation:nope, formation:bio-seq@1999]\n").then(
    () => assert.fail("expected RESOLVE_FAILED"),
    (x: { issues?: { path: string }[] }) => x,
  );
  assert.deepEqual(
    f.issues?.map((i) => i.path),
    ["/software/0", "/software/1"],
  );
  // Several problems are one PROFILE_INVALID refusal (issue 31: YAML problems are listed with the model's); each issue keeps its code.
  const y = assertCode(() => parseProfileText("name: a\nname: b\nbase: {os: debian12}\nenv: {A: '1', A: '2'}\n"), "PROFILE_INVALID");
  assert.deepEqual(
    y.issues?.map((i) => `${i.code} ${i.path}`),
    ["JSON_DUPLICATE_KEY /name", "JSON_DUPLICATE_KEY /env/A"],
  );
  assert.equal((await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a]\n")).layers.length, 1, "control: a good profile resolves");
});

test("formation build refuses the same layer twice or two versions of one name before publishing", () => {
  const reg = LocalRegistry.open(ex.registry);
  const py11 = "python-3.11.9-gnu-x86_64";
  const py12 = "python-3.12.4-gnu-x86_64";
  assertCode(() => formationOf(reg, "dup", "1", [py12, py12]), "RESOLVE_CONFLICT");
  assertCode(() => formationOf(reg, "two", "1", [py11, py12]), "RESOLVE_CONFLICT");
  const ok = formationOf(reg, "pair", "1", [py12, "numpy-2.0.1-none-noarch"]);
  assert.equal(ok.layers.length, 2, "control: distinct names");
  const sha = ok.layers[0]!.sha256;
  assertCode(
    () =>
      parseFormation({
        name: "d",
        version: "1",
        layers: [
          { id: py12, name: "python", version: "3.12.4", sha256: sha },
          { id: py12, name: "python", version: "3.12.4", sha256: sha },
        ],
        provides: [],
      } as never),
    "RESOLVE_CONFLICT",
  );
});

test("a version that validates can always be built into a layer id (one rule); '~' is refused with a hint", () => {
  const segChar = fc.constantFrom(..."abcXYZ019_+-~.!/ ");
  fc.assert(
    fc.property(fc.array(segChar, { minLength: 1, maxLength: 20 }), (chars) => {
      const v = chars.join("");
      if (isVersion(v)) assert.doesNotThrow(() => layerId("pkg", v, "gnu", "x86_64"), v);
    }),
    { numRuns: 2000 },
  );
  const e = assertCode(() => parseVersion("1.0~rc1", "--version"), "MODEL_VALUE");
  assert.ok((e.hint ?? "").includes("1.0-rc1"));
  assert.doesNotThrow(() => layerId("pkg", parseVersion("1.0-rc1"), "gnu", "x86_64"), "control: the suggested spelling builds");
});

test("--max-age 0 is no bound; Go durations bound the age", () => {
  const resolved = "2025-01-01T00:00:00Z";
  const now = new Date("2026-03-01T00:00:00Z");
  assert.doesNotThrow(() => checkFreshness(resolved, now, parseMaxAge("0")), "0: no bound");
  assertCode(() => checkFreshness(resolved, now, parseMaxAge("1h30m"), "1h30m"), "LOCK_STALE");
  assert.equal(checkFreshness("2026-02-28T23:59:15Z", now, parseMaxAge("90m")).age, "45 seconds", "control: within the bound, age in seconds");
});

test("a signed policy over no layers is flagged as covering nothing", async () => {
  const empty = await resolveText("name: t\nbase: {os: debian12}\n");
  assert.equal(empty.verification_policy, "signed");
  assert.ok(lockfileCaveats(empty).some((c) => c.startsWith("policy signed covers nothing")));
  const one = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  assert.ok(!lockfileCaveats(one).some((c) => c.startsWith("policy signed covers nothing")), "control: a signed layer");
});

test("lock diff parses without Validate: a rule-breaking lockfile is shown with its problems, not refused", async () => {
  const a = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a, numpy, python]\n");
  const layers = a.spec.layers.map((l, i) => (i === 1 ? { ...l, mount_order: a.spec.layers[0]!.mount_order } : l)); // two layers share a mount order
  const text = lockFileToYaml({ ...a.spec, layers });
  assertCode(() => parseLockfileText(text), "LOCK_INVALID");
  const { lock: b, problems } = parseLockfileUnvalidated(text);
  assert.ok(problems.length >= 1 && problems[0]!.path.endsWith("/mount_order"));
  const d = diffLocks(a, b, [], problems);
  assert.equal(d.id_b, null, "an invalid lockfile has no EnvironmentID in the diff");
  assert.equal(d.problems_b.length, problems.length);
  assert.equal(parseLockfileUnvalidated(lockfileToYaml(a)).problems.length, 0, "control: a valid lockfile has no problems");
});

type RecordsModel = { layers: { manifest_envelope: string; manifest_sha256: string; signature: { envelope_sha256: string } }[] };

/** The records cairn writes beside `lock`, as a model to edit, and a reader that checks an edited one against the lockfile. */
function recordsOf(lock: Lockfile): { model: () => RecordsModel; read: (m: RecordsModel) => unknown } {
  const bytes = Buffer.from(lockfileToYaml(lock));
  return {
    model: () => JSON.parse(JSON.stringify(recordsToModel(lock.records, sha256(bytes)))) as RecordsModel,
    read: (m) => readRecords(JSON.parse(JSON.stringify(m)), lock.spec, sha256(bytes), "records"),
  };
}

test("the records carry each layer's manifest envelope, pinned by its digests and outside the identities", async () => {
  const lock = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a, numpy, python]\n");
  for (const l of lock.layers) {
    const bytes = Buffer.from(l.manifest_envelope!, "base64");
    assert.equal(sha256(bytes), l.signature!.envelope_sha256);
    assert.equal(sha256(Buffer.from(JSON.parse(bytes.toString()).payload, "base64")), l.manifest_sha256);
  }
  assert.equal(environmentId(viewLock(lock.spec)), environmentId(lock), "the records do not move the identity");
  const r = recordsOf(lock);
  const tampered = r.model();
  const other = LocalRegistry.open(ex.registry).readLayer(lock.layers[1]!.id).envelopeBytes.toString("base64");
  tampered.layers[0]!.manifest_envelope = other;
  assertCode(() => r.read(tampered), "DIGEST_MISMATCH");
  assert.doesNotThrow(() => r.read(r.model()), "control: the records as written");
});

test("an embedded envelope is pinned by envelope_sha256 alone: other bytes around the same payload are refused (issue 31, case 19b)", async () => {
  const lock = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a, numpy, python]\n");
  const r = recordsOf(lock);
  const original = Buffer.from(r.model().layers[0]!.manifest_envelope, "base64");
  // The same payload (so manifest_sha256 still holds) in other envelope bytes: re-serialized, and with its signature altered.
  const env = JSON.parse(original.toString());
  const reserialized = Buffer.from(JSON.stringify(env, null, 1));
  const sig = Buffer.from(env.signatures[0].sig, "base64");
  sig[0] = sig[0]! ^ 1;
  const resigned = Buffer.from(JSON.stringify({ ...env, signatures: [{ ...env.signatures[0], sig: sig.toString("base64") }] }));
  for (const bytes of [reserialized, resigned]) {
    assert.notEqual(sha256(bytes), sha256(original));
    assert.equal(sha256(Buffer.from(JSON.parse(bytes.toString()).payload, "base64")), lock.layers[0]!.manifest_sha256, "the payload is the pinned manifest");
    const swapped = r.model();
    swapped.layers[0]!.manifest_envelope = bytes.toString("base64");
    assertCode(() => r.read(swapped), "DIGEST_MISMATCH", "/layers/0/manifest_envelope");
    // Control: the same envelope with its pin updated is read (its signature is a question for lock verify, not for reading).
    const repinned = r.model();
    repinned.layers[0]!.manifest_envelope = bytes.toString("base64");
    repinned.layers[0]!.signature.envelope_sha256 = sha256(bytes);
    assert.doesNotThrow(() => r.read(repinned));
  }
});

test("an embedded envelope's payload is pinned by manifest_sha256 and must be the lockfile's layer; one that is not DSSE is refused, even when envelope_sha256 was updated to match", async () => {
  const lock = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a, numpy, python]\n");
  const r = recordsOf(lock);
  // Another layer's envelope, with envelope_sha256 updated to it: only the manifest_sha256 pin can catch it.
  const other = Buffer.from(r.model().layers[1]!.manifest_envelope, "base64");
  const swapped = r.model();
  swapped.layers[0]!.manifest_envelope = other.toString("base64");
  swapped.layers[0]!.signature.envelope_sha256 = sha256(other);
  assertCode(() => r.read(swapped), "DIGEST_MISMATCH", "/layers/0/manifest_envelope");
  // ...and with manifest_sha256 updated too: the manifest is not the lockfile's layer.
  swapped.layers[0]!.manifest_sha256 = r.model().layers[1]!.manifest_sha256;
  assertCode(() => r.read(swapped), "DIGEST_MISMATCH", "/layers/0/manifest_envelope");
  // Bytes that are not a DSSE envelope, with envelope_sha256 updated to them.
  const junk = Buffer.from('{"not": "an envelope"}');
  const notDsse = r.model();
  notDsse.layers[0]!.manifest_envelope = junk.toString("base64");
  notDsse.layers[0]!.signature.envelope_sha256 = sha256(junk);
  const e = assertCode(() => r.read(notDsse), "MODEL_UNKNOWN_FIELD");
  assert.ok(
    e.issues.some((i) => i.path === "/layers/0/manifest_envelope"),
    JSON.stringify(e.issues),
  );
  assert.doesNotThrow(() => r.read(r.model()), "control: the records as written");
});

test("offline audit: lock verify without a registry verifies layer signatures on the embedded manifests", async () => {
  const lock = await resolveText("name: t\nbase: {os: debian12}\nsoftware: [tool-a, numpy, python]\n");
  const dir = tempDir("cairn-w13-audit-");
  const verify = async (path: string, layerKeys: SigningKey[]): Promise<number | null> =>
    (await verifyLock(path, { keys: [ex.lockKey], now: NOW, registries: [], layerKeys, allowUnsignedOffline: false })).embeddedSignaturesChecked;
  const good = join(dir, "good.yaml");
  writeLockfile(good, lock, ex.lockKey);
  assert.equal(await verify(good, [ex.registryKey]), 3, "every signed layer verified offline");
  assert.equal(await verify(good, []), null, "no keys: not attempted, and said so");
  await assertCodeAsync(() => verify(good, [generateSigningKey()]), "TRUST_REFUSED");
  // A signature altered inside the embedded envelope, with the pins updated and the lockfile re-signed: only the signature check can catch it.
  const first = lock.layers[0]!;
  const env = JSON.parse(Buffer.from(first.manifest_envelope!, "base64").toString());
  const sig = Buffer.from(env.signatures[0].sig, "base64");
  sig[0] = sig[0]! ^ 1;
  env.signatures[0].sig = sig.toString("base64");
  const bytes = Buffer.from(JSON.stringify(env));
  const layers = new Map(lock.records.layers);
  layers.set(first.id, {
    ...layers.get(first.id)!,
    manifest_envelope: bytes.toString("base64"),
    signature: { ...first.signature!, envelope_sha256: sha256(bytes) },
  });
  const bad = join(dir, "bad.yaml");
  writeLockfile(bad, viewLock(lock.spec, { ...lock.records, layers }), ex.lockKey);
  await assertCodeAsync(() => verify(bad, [ex.registryKey]), "SIGNATURE_INVALID");
});
