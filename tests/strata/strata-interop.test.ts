/**
 * Issue 32's done-when, tried as a Strata user would, without cairn's own
 * reader or encoder on the checking side:
 * - a lockfile cairn resolves uses only the seed's field names (the struct
 *   tags, copied by hand in seed-tags.ts), is frozen, and its Strata
 *   EnvironmentID, recomputed here from a plain YAML parse with an encoder
 *   written here, is what `cairn lock id` prints first;
 * - a lockfile written by hand in the seed's format (frozen, env, on_ready,
 *   defaults, a formation member, a pip set, a host requirement), with the
 *   example registry's layers, is read, validated, signed with `lock sign`,
 *   verified against the registry, and `lock id` prints Strata's ID for it.
 * (Running such a lockfile is tests/vm/strata-lock-run.test.ts.)
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { runCli } from "../helpers/cli.ts";
import { exampleRegistry, resolveWithCli } from "./fixtures.ts";
import { seedFields } from "./seed-tags.ts";
import { handLock } from "./hand-lock.ts";

const ex = exampleRegistry();

/** Go's json.Marshal, by another route than cairn's: JSON.stringify, then the escapes Go adds. */
function goLike(v: unknown): string {
  return JSON.stringify(v)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

type Doc = Record<string, unknown>;

/** Strata's EnvironmentID of a lockfile parsed as plain YAML (lockfile_hash.go's envHashInput). */
function strataId(doc: Doc): string {
  const layers = [...(doc.layers as Doc[])].sort((a, b) => (a.mount_order as number) - (b.mount_order as number));
  if (layers.some((l) => !l.sha256) || !(doc.base as Doc).ami_sha256) return "";
  const input: Doc = { base_ami_sha256: (doc.base as Doc).ami_sha256, layer_sha256s: layers.map((l) => l.sha256) };
  const env = (doc.env ?? {}) as Record<string, string>;
  if (Object.keys(env).length > 0)
    input.env = Object.fromEntries(
      Object.keys(env)
        .sort()
        .map((k) => [k, env[k]]),
    );
  if (((doc.on_ready ?? []) as unknown[]).length > 0) input.on_ready = doc.on_ready;
  const packages = (doc.packages ?? []) as Doc[];
  if (packages.length > 0) {
    input.packages = packages.map((s) => ({
      manager: s.manager,
      ...(s.env ? { env: s.env } : {}),
      packages:
        s.packages === undefined || s.packages === null
          ? null
          : (s.packages as Doc[]).map((p) => ({ name: p.name, version: p.version, ...(p.sha256 ? { sha256: p.sha256 } : {}) })),
    }));
  }
  return createHash("sha256").update(goLike(input)).digest("hex");
}

/** Every key the document uses is a field the seed names for that object (problems listed, empty when clean). */
function foreignFields(doc: Doc): string[] {
  const out: string[] = [];
  const check = (o: unknown, type: string, at: string) => {
    if (o === null || typeof o !== "object") return;
    // SoftwareRef is read and written by its own (un)marshaller; its struct tags are name, version, formation (all omitempty).
    const allowed = type === "SoftwareRef" ? ["name", "version", "formation"] : seedFields(type);
    for (const k of Object.keys(o as Doc)) if (!allowed.includes(k)) out.push(`${at}/${k} (not a field of ${type})`);
  };
  check(doc, "LockFile", "");
  const base = doc.base as Doc;
  check(base, "ResolvedBase", "/base");
  check(base.capabilities, "BaseCapabilities", "/base/capabilities");
  for (const c of ((base.capabilities as Doc).provides ?? []) as Doc[]) check(c, "Capability", "/base/capabilities/provides/*");
  for (const [i, l] of (doc.layers as Doc[]).entries()) {
    check(l, "ResolvedLayer", `/layers/${i}`);
    for (const c of (l.provides ?? []) as Doc[]) check(c, "Capability", `/layers/${i}/provides/*`);
    for (const r of (l.requires ?? []) as Doc[]) check(r, "Requirement", `/layers/${i}/requires/*`);
    for (const b of (l.built_with ?? []) as Doc[]) check(b, "LayerRef", `/layers/${i}/built_with/*`);
    check(l.build_environment, "BuildEnvironment", `/layers/${i}/build_environment`);
  }
  for (const s of (doc.packages ?? []) as Doc[]) {
    check(s, "ResolvedPackageSet", "/packages/*");
    for (const p of (s.packages ?? []) as Doc[]) check(p, "ResolvedPackageEntry", "/packages/*/packages/*");
  }
  for (const d of (doc.defaults ?? []) as unknown[]) if (typeof d === "object") check(d, "SoftwareRef", "/defaults/*");
  check(doc.mutable_layer, "MutableLayerSpec", "/mutable_layer");
  for (const h of (doc.requires_host ?? []) as Doc[]) check(h, "HostRequirement", "/requires_host/*");
  return out;
}

test("a lockfile cairn resolves uses only the seed's field names, is frozen, and its Strata EnvironmentID is what lock id prints", async () => {
  const profile = join(ex.root, "p.yaml");
  writeFileSync(
    profile,
    `name: interop
base: {os: debian12}
software: [python@3.12, numpy, "formation:bio-seq@2026.03"]
env: {LC_ALL: C.UTF-8, GREETING: "<a&b>"}
on_ready: ["python3 -c 'import numpy'"]
defaults: [python@3.12]
requires_host: [{key: efa, value: "true"}]
`,
  );
  const out = join(ex.root, "resolved.lock");
  const r = await resolveWithCli(ex, profile, out);
  assert.equal(r.code, 0, r.stderr);
  const doc = parse(readFileSync(out, "utf8"), { version: "1.2" }) as Doc;
  assert.deepEqual(foreignFields(doc), []);
  assert.notEqual(strataId(doc), "", "frozen: every layer and the base have a digest");
  const id = await runCli(["lock", "id", out]);
  assert.equal(id.code, 0, id.stderr);
  const [strata, content] = id.stdout.trim().split("\n");
  assert.equal(strata!.split(/\s+/)[0], strataId(doc));
  assert.match(content!, /^sha256:[0-9a-f]{64} {2}content identity \(cairn\)$/);
  const json = JSON.parse((await runCli(["lock", "id", out, "--json"])).stdout) as { strata_environment_id: string };
  assert.equal(json.strata_environment_id, strataId(doc));
  // The control: a field the seed does not name is caught by the check above.
  assert.deepEqual(foreignFields({ ...doc, format: "cairn.lock/1" }), ["/format (not a field of LockFile)"]);
});

test("a lockfile written by hand in the seed's format is read, validated, signed, verified against the registry, and identified as Strata identifies it", async () => {
  // The base facts as cairn probed them (the example rootfs), taken from a resolved lockfile.
  const resolved = join(ex.root, "base.lock");
  const profile = join(ex.root, "b.yaml");
  writeFileSync(profile, "name: b\nbase: {os: debian12}\nsoftware: []\n");
  assert.equal((await resolveWithCli(ex, profile, resolved, { sign: false })).code, 0);
  const base = (parse(readFileSync(resolved, "utf8"), { version: "1.2" }) as Doc).base as Doc;
  const text = handLock(ex, base);
  const hand = join(ex.root, "hand.lock");
  writeFileSync(hand, text);
  const doc = parse(text, { version: "1.2" }) as Doc;
  assert.deepEqual(foreignFields(doc), [], "the hand-written file is in the seed's fields only");

  const id = await runCli(["lock", "id", hand]);
  assert.equal(id.code, 0, id.stderr);
  assert.equal(id.stdout.split(/\s+/)[0], strataId(doc), "lock id prints the EnvironmentID Strata's definition gives");

  // Unsigned: cairn says which check is missing, never a generic refusal.
  const args = ["--registry", ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`];
  const unsigned = await runCli(["lock", "verify", hand, "--pub", join(ex.root, "lock.pub"), ...args, "--json"]);
  assert.equal(unsigned.code, 1);
  assert.equal(JSON.parse(unsigned.stdout).error.code, "SIGNATURE_MISSING");

  const signed = await runCli(["lock", "sign", hand, "--key", join(ex.root, "lock.key")]);
  assert.equal(signed.code, 0, signed.stderr);
  assert.equal(readFileSync(hand, "utf8"), text, "signing does not rewrite a Strata lockfile");
  const v = await runCli(["lock", "verify", hand, "--pub", join(ex.root, "lock.pub"), ...args, "--json"]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
  const report = JSON.parse(v.stdout) as { layers_checked: number; strata_environment_id: string; caveats: string[] };
  assert.equal(report.layers_checked, 3);
  assert.equal(report.strata_environment_id, strataId(doc));
  assert.ok(
    report.caveats.some((c) => /pinned by the lockfile .* no record of their archives/.test(c)),
    report.caveats.join("\n"),
  );

  // Without the registry's key, the layers' signatures cannot be checked: said so, naming the missing check.
  const noTrust = await runCli(["lock", "verify", hand, "--pub", join(ex.root, "lock.pub"), "--registry", ex.registry, "--json"]);
  assert.equal(noTrust.code, 1);
  assert.match(JSON.parse(noTrust.stdout).error.message, /no record of its signature/);

  // A hand-written layer that is not the registry's signed manifest is refused, naming the field.
  const forged = join(ex.root, "forged.lock");
  writeFileSync(forged, text.replace('provides: [{name: python, version: "3.12.4"}]', 'provides: [{name: python, version: "3.13.0"}]'));
  assert.equal((await runCli(["lock", "sign", forged, "--key", join(ex.root, "lock.key")])).code, 0);
  const f = await runCli(["lock", "verify", forged, "--pub", join(ex.root, "lock.pub"), ...args, "--json"]);
  assert.equal(f.code, 1);
  const err = JSON.parse(f.stdout).error as { code: string; path: string };
  assert.equal(err.code, "DIGEST_MISMATCH");
  assert.equal(err.path, "/layers/2/provides");
});
