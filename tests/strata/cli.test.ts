import { test } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { exampleRegistry, resolveArgs } from "./fixtures.ts";
import { probeRoot } from "../../src/strata/index.ts";
import { directoryView } from "../../src/tree/index.ts";
import { writeToyRootfs } from "../../examples/strata/build-registry.ts";

const ex = exampleRegistry();
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const env = (now: string): NodeJS.ProcessEnv => ({ ...process.env, CAIRN_NOW: now });
const NOW = "2026-03-01T12:00:00.000Z";

async function resolveTo(out: string, extra: string[] = []): Promise<void> {
  const r = await runCli(resolveArgs(ex, PROFILE, out, extra), env(NOW));
  assert.equal(r.code, 0, r.stderr);
}

test("quickstart: resolve the example profile, verify offline, see age and policy", async () => {
  const lock = join(ex.root, "q.lock");
  await resolveTo(lock);
  const v = await runCli(
    ["lock", "verify", lock, "--pub", join(ex.root, "lock.pub"), "--registry", ex.registry, "--max-age", "30d"],
    env("2026-03-11T12:00:00.000Z"),
  );
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /10 days old/);
  assert.match(v.stdout, /policy {6}signed/);
  assert.match(v.stdout, /4 checked/);
  const j = await runCli(
    [
      "lock",
      "verify",
      lock,
      "--pub",
      join(ex.root, "lock.pub"),
      "--registry",
      ex.registry,
      "--trust",
      `keyfile://${ex.root}/registry.pub`,
      "--contents",
      "--json",
    ],
    env("2027-04-17T12:00:00.000Z"),
  );
  const out = JSON.parse(j.stdout) as {
    verified: boolean;
    age: string;
    layers_checked: number;
    contents_checked: number;
    layer_signatures_checked: boolean;
    environment_id: string;
  };
  assert.equal(out.contents_checked, 4);
  assert.equal(out.verified, true);
  assert.equal(out.age, "412 days");
  assert.equal(out.layers_checked, 4);
  assert.equal(out.layer_signatures_checked, true);
  const id = await runCli(["lock", "id", lock]);
  assert.equal(id.stdout.split("\n")[1]!.split(/\s+/)[0], out.environment_id, "lock id's second line is the content identity verify reports");
});

test("--max-age refuses an old lockfile naming age, date and bound; a future-dated one is refused", async () => {
  const lock = join(ex.root, "old.lock");
  await resolveTo(lock);
  const r = await runCli(["lock", "verify", lock, "--pub", join(ex.root, "lock.pub"), "--max-age", "2w", "--json"], env("2027-04-17T12:00:00.000Z"));
  assert.equal(r.code, 1);
  const e = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
  assert.equal(e.code, "LOCK_STALE");
  assert.match(e.message, /412 days old \(resolved 2026-03-01T12:00:00.000Z\), more than --max-age 2w/);
  const f = await runCli(["lock", "verify", lock, "--pub", join(ex.root, "lock.pub")], env("2026-02-01T12:00:00.000Z"));
  assert.equal(f.code, 1);
  assert.match(f.stderr, /LOCK_STALE/);
  assert.match(f.stderr, /future/);
  const bad = await runCli(["lock", "verify", lock, "--pub", join(ex.root, "lock.pub"), "--max-age", "30"], env(NOW));
  assert.equal(bad.code, 2, "a malformed duration is a usage error");
});

test("tampering is refused by lock verify: layer blob, layer manifest, formation, lockfile, signature", async () => {
  const work = join(ex.root, "tamper");
  mkdirSync(work, { recursive: true });
  const lock = join(work, "t.lock");
  await resolveTo(lock);
  const pub = join(ex.root, "lock.pub");
  const verify = async (): Promise<{ code: number; err: string }> => {
    const r = await runCli(["lock", "verify", lock, "--pub", pub, "--registry", ex.registry, "--json"], env(NOW));
    return { code: r.code, err: r.code === 0 ? "" : (JSON.parse(r.stdout) as { error: { code: string } }).error.code };
  };
  assert.deepEqual(await verify(), { code: 0, err: "" }, "control");
  const text = readFileSync(lock, "utf8");
  const blobHex = /\n {4}sha256: ([0-9a-f]{64})/.exec(text)![1]!;
  const blob = join(ex.registry, "blobs/sha256", blobHex);
  const saved = readFileSync(blob);
  const bytes = Buffer.from(saved);
  bytes[bytes.length - 20]! ^= 1;
  writeFileSync(blob, bytes);
  assert.deepEqual(await verify(), { code: 1, err: "DIGEST_MISMATCH" }, "blob");
  writeFileSync(blob, saved);
  const layerId = /- id: (\S+)/.exec(text)![1]!;
  const manifest = join(ex.registry, "layers", `${layerId}.json.dsse`);
  const savedManifest = readFileSync(manifest);
  writeFileSync(manifest, savedManifest.toString().replace('"keyid"', ' "keyid"'));
  assert.deepEqual(await verify(), { code: 1, err: "DIGEST_MISMATCH" }, "manifest envelope");
  writeFileSync(manifest, savedManifest);
  const formation = join(ex.registry, "formations", "bio-seq-2026.03.json.dsse");
  const savedFormation = readFileSync(formation);
  writeFileSync(formation, savedFormation.toString().replace('"keyid"', ' "keyid"'));
  assert.deepEqual(await verify(), { code: 1, err: "DIGEST_MISMATCH" }, "formation envelope");
  writeFileSync(formation, savedFormation);
  writeFileSync(lock, text.replace("LC_ALL: C.UTF-8", "LC_ALL: POSIX"));
  assert.deepEqual(await verify(), { code: 1, err: "SIGNATURE_INVALID" }, "lockfile");
  writeFileSync(lock, text);
  const sig = JSON.parse(readFileSync(`${lock}.dsse.json`, "utf8")) as { signatures: { sig: string }[] };
  const raw = Buffer.from(sig.signatures[0]!.sig, "base64");
  raw[0]! ^= 1;
  sig.signatures[0]!.sig = raw.toString("base64");
  const savedSig = readFileSync(`${lock}.dsse.json`);
  writeFileSync(`${lock}.dsse.json`, JSON.stringify(sig));
  assert.deepEqual(await verify(), { code: 1, err: "SIGNATURE_INVALID" }, "signature");
  writeFileSync(`${lock}.dsse.json`, savedSig);
  assert.deepEqual(await verify(), { code: 0, err: "" }, "restored");
});

test("conflicting layers are refused by resolve; unsigned layers need --allow-unsigned-offline and are labelled", async () => {
  const p = join(ex.root, "conflict.yaml");
  writeFileSync(p, "name: c\nbase: {os: debian12}\nsoftware: [tool-a, tool-b]\n");
  const r = await runCli(["resolve", p, "--registry", ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--out", join(ex.root, "c.lock"), "--json"]);
  assert.equal(r.code, 1);
  assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, "RESOLVE_CONFLICT");
  assert.ok(!existsSync(join(ex.root, "c.lock")), "a refused resolve writes nothing");
  const u = await runCli(["resolve", p.replace("conflict", "x"), "--registry", ex.registry, "--out", join(ex.root, "u.lock")]);
  assert.equal(u.code, 1, "missing profile file");
  writeFileSync(join(ex.root, "u.yaml"), "name: u\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  const noTrust = await runCli(["resolve", join(ex.root, "u.yaml"), "--registry", ex.registry, "--out", join(ex.root, "u.lock"), "--json"]);
  assert.equal((JSON.parse(noTrust.stdout) as { error: { code: string } }).error.code, "TRUST_REFUSED");
  const allowed = await runCli([
    "resolve",
    join(ex.root, "u.yaml"),
    "--registry",
    ex.registry,
    "--allow-unsigned-offline",
    "--sign",
    join(ex.root, "lock.key"),
    "--out",
    join(ex.root, "u.lock"),
  ]);
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.match(readFileSync(join(ex.root, "u.lock"), "utf8"), /verification_policy: unsigned-offline/);
  const v = await runCli(["lock", "verify", join(ex.root, "u.lock"), "--pub", join(ex.root, "lock.pub")]);
  assert.equal(v.code, 1, "closed by default");
  assert.match(v.stderr, /TRUST_REFUSED/);
  const v2 = await runCli(["lock", "verify", join(ex.root, "u.lock"), "--pub", join(ex.root, "lock.pub"), "--allow-unsigned-offline"]);
  assert.equal(v2.code, 0);
  assert.match(v2.stdout, /unsigned-offline/);
});

test("lock diff, explain and provenance", async () => {
  const a = join(ex.root, "a.lock");
  await resolveTo(a);
  const pb = join(ex.root, "b.yaml");
  writeFileSync(pb, readFileSync(PROFILE, "utf8").replace("python@3.12", "python@3.11").replace("C.UTF-8", "SECRET-VALUE"));
  const b = join(ex.root, "b.lock");
  const r = await runCli(
    ["resolve", pb, "--registry", ex.registry, "--trust", `keyfile://${ex.root}/registry.pub`, "--base", `rootfs:${ex.rootfs}`, "--out", b],
    env(NOW),
  );
  assert.equal(r.code, 0, r.stderr);
  const d = await runCli(["lock", "diff", a, b]);
  assert.equal(d.code, 1, "different IDs");
  assert.match(d.stdout, /^ {2}~ python 3\.12\.4 → 3\.11\.9 \(downgrade\) {2}sha256:/m);
  assert.match(d.stdout, /\/env\/LC_ALL: \(value hidden\)/);
  assert.ok(!d.stdout.includes("SECRET-VALUE"), "env values are never printed");
  const same = await runCli(["lock", "diff", a, a]);
  assert.equal(same.code, 0);
  const x = await runCli(["lock", "explain", a]);
  assert.match(x.stdout, /resolved_at: wall-clock/);
  assert.match(x.stdout, /package requests are recorded, not pinned/);
  const p = await runCli(["lock", "provenance", a, "--pub", join(ex.root, "lock.pub")]);
  assert.equal(p.code, 0, p.stderr);
  assert.match(p.stdout, /cite as: cairn environment sha256:[0-9a-f]{64}/);
  assert.match(p.stdout, /samtools-1\.20-gnu-x86_64 {2}sha256:[0-9a-f]{64} {2}signed by sha256:/);
  const unsigned = await runCli(["lock", "provenance", b, "--pub", join(ex.root, "lock.pub")]);
  assert.equal(unsigned.code, 1, "provenance needs a signed lockfile");
});

test("profile validate, search, layer build and formation build through the CLI", async () => {
  const v = await runCli(["profile", "validate", PROFILE]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /recorded, not acted upon: instance/);
  const bad = join(ex.root, "bad.yaml");
  writeFileSync(bad, "name: b\nbase: {os: debian12}\nsoftware:\n  - python\n  -\n");
  const vb = await runCli(["profile", "validate", bad, "--json"]);
  assert.equal(vb.code, 1);
  assert.equal((JSON.parse(vb.stdout) as { error: { path: string } }).error.path, "/software/1");
  const s = await runCli(["search", "py", "--registry", ex.registry]);
  assert.match(s.stdout, /python {2}3\.12\.4, 3\.11\.9/);
  const src = join(ex.root, "src", "numpy-2.0.1");
  const reg2 = join(ex.root, "reg2");
  const build = async (): Promise<string> => {
    const r = await runCli([
      "layer",
      "build",
      src,
      "--name",
      "numpy",
      "--version",
      "2.0.1",
      "--provides",
      "numpy@2.0.1",
      "--requires",
      "python>=3.10,<3.13",
      "--registry",
      reg2,
      "--init-registry",
      "--key",
      join(ex.root, "registry.key"),
      "--json",
    ]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    return r.stdout;
  };
  const first = JSON.parse(await build()) as { sha256: string; id: string };
  const again = JSON.parse(await build()) as { sha256: string };
  assert.equal(again.sha256, first.sha256, "rebuilding is byte-identical and republishing identical bytes is fine");
  const orig = (JSON.parse(readFileSync(join(ex.registry, "layers/numpy-2.0.1-none-noarch.json.dsse"), "utf8")) as { payload: string }).payload;
  assert.equal(JSON.parse(Buffer.from(orig, "base64").toString()).sha256, first.sha256, "same blob as the example builder made");
  const noKey = await runCli(["layer", "build", src, "--name", "x", "--version", "1", "--registry", reg2]);
  assert.equal(noKey.code, 2, "signing is closed by default");
  const f = await runCli([
    "formation",
    "build",
    "--name",
    "np",
    "--version",
    "1.0",
    "--layer",
    first.id,
    "--registry",
    reg2,
    "--key",
    join(ex.root, "registry.key"),
  ]);
  assert.equal(f.code, 0, f.stderr);
  copyFileSync(join(ex.root, "registry.pub"), join(ex.root, "copy.pub"));
});

test("lock verify --base re-probes the base and refuses one that changed", async () => {
  const lock = join(ex.root, "base.lock");
  await resolveTo(lock);
  const pub = join(ex.root, "lock.pub");
  const same = await runCli(["lock", "verify", lock, "--pub", pub, "--base", `rootfs:${ex.rootfs}`, "--json"], env(NOW));
  assert.equal(same.code, 0, same.stdout);
  assert.equal((JSON.parse(same.stdout) as { base_checked: boolean }).base_checked, true);
  const changed = join(ex.root, "rootfs-2.31");
  writeToyRootfs(changed, { glibc: "2.31" });
  const r = await runCli(["lock", "verify", lock, "--pub", pub, "--base", `rootfs:${changed}`, "--json"], env(NOW));
  assert.equal(r.code, 1);
  const e = (JSON.parse(r.stdout) as { error: { code: string; message: string } }).error;
  assert.equal(e.code, "BASE_MISMATCH");
  assert.match(e.message, /glibc@2\.36.*glibc@2\.31/);
});

test("a profile's own registries and trust are used (paths relative to the profile) when no --registry is given", async () => {
  const p = join(ex.root, "own.yaml");
  writeFileSync(p, 'name: own\nbase: {os: debian12}\nsoftware: [tool-a]\nregistries:\n  - {url: ./registry, trust: "keyfile://registry.pub"}\n');
  const r = await runCli(["resolve", p, "--out", join(ex.root, "own.lock"), "--json"]);
  assert.equal(r.code, 0, r.stdout);
  assert.equal((JSON.parse(r.stdout) as { verification_policy: string }).verification_policy, "signed");
  writeFileSync(
    p,
    `name: own\nbase: {os: debian12}\nsoftware: [tool-a]\nregistries:\n  - {url: "file://${ex.registry}", trust: "keyfile://${ex.root}/registry.pub"}\n`,
  );
  const fileUrl = await runCli(["resolve", p, "--out", join(ex.root, "own.lock")]);
  assert.equal(fileUrl.code, 0, fileUrl.stderr);
  writeFileSync(p, "name: own\nbase: {os: debian12}\nsoftware: [tool-a]\nregistries:\n  - {url: ./registry}\n");
  const untrusted = await runCli(["resolve", p, "--out", join(ex.root, "own.lock"), "--json"]);
  assert.equal((JSON.parse(untrusted.stdout) as { error: { code: string } }).error.code, "TRUST_REFUSED", "no trust listed: nothing is trusted");
  writeFileSync(p, 'name: own\nbase: {os: debian12}\nsoftware: [tool-a]\nregistries:\n  - {url: "https://example.com/reg"}\n');
  const remote = await runCli(["resolve", p, "--out", join(ex.root, "own.lock"), "--json"]);
  assert.equal((JSON.parse(remote.stdout) as { error: { code: string } }).error.code, "REGISTRY_INVALID");
});

test("the default registry is $CAIRN_HOME/registry when nothing names one; trust is never defaulted", async () => {
  const home = join(ex.root, "home");
  const henv = { ...process.env, CAIRN_HOME: home };
  const src = join(ex.root, "src", "tool-a-1.0");
  const b = await runCli(["layer", "build", src, "--name", "tool-a", "--version", "1.0", "--init-registry", "--key", join(ex.root, "registry.key")], henv);
  assert.equal(b.code, 0, b.stderr);
  assert.ok(existsSync(join(home, "registry", "cairn-registry.json")));
  const s = await runCli(["search", "tool", "--json"], henv);
  assert.deepEqual(
    (JSON.parse(s.stdout) as { hits: { name: string }[] }).hits.map((h) => h.name),
    ["tool-a"],
  );
  const p = join(ex.root, "home.yaml");
  writeFileSync(p, "name: h\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  const untrusted = await runCli(["resolve", p, "--out", join(ex.root, "home.lock"), "--json"], henv);
  assert.equal((JSON.parse(untrusted.stdout) as { error: { code: string } }).error.code, "TRUST_REFUSED");
  const trusted = await runCli(["resolve", p, "--trust", `keyfile://${ex.root}/registry.pub`, "--out", join(ex.root, "home.lock")], henv);
  assert.equal(trusted.code, 0, trusted.stderr);
});

test("without CAIRN_HOME the default registry is $XDG_DATA_HOME/cairn/registry for build, search and resolve; control: nothing is written under HOME", async () => {
  const xdg = join(ex.root, "xdg-data");
  const home = join(ex.root, "xdg-home");
  const { CAIRN_HOME: _, ...rest } = process.env;
  const xenv = { ...rest, XDG_DATA_HOME: xdg, HOME: home };
  const src = join(ex.root, "src", "tool-a-1.0");
  const b = await runCli(["layer", "build", src, "--name", "tool-a", "--version", "1.0", "--init-registry", "--key", join(ex.root, "registry.key")], xenv);
  assert.equal(b.code, 0, b.stderr);
  assert.ok(existsSync(join(xdg, "cairn", "registry", "cairn-registry.json")), "the registry is under XDG_DATA_HOME");
  assert.equal(existsSync(join(home, ".local", "share", "cairn", "registry")), false, "and not under HOME");
  const s = await runCli(["search", "tool", "--json"], xenv);
  assert.deepEqual(
    (JSON.parse(s.stdout) as { hits: { name: string }[] }).hits.map((h) => h.name),
    ["tool-a"],
  );
  const p = join(ex.root, "xdg.yaml");
  writeFileSync(p, "name: h\nbase: {os: debian12}\nsoftware: [tool-a]\n");
  const untrusted = await runCli(["resolve", p, "--out", join(ex.root, "xdg.lock"), "--json"], xenv);
  assert.equal((JSON.parse(untrusted.stdout) as { error: { code: string } }).error.code, "TRUST_REFUSED");
  const trusted = await runCli(["resolve", p, "--trust", `keyfile://${ex.root}/registry.pub`, "--out", join(ex.root, "xdg.lock")], xenv);
  assert.equal(trusted.code, 0, trusted.stderr);
});

test("--base host probes this machine (profile written for whatever this host is)", {
  skip: existsSync("/etc/os-release") || existsSync("/usr/lib/os-release") ? false : "no os-release on this host",
}, async () => {
  const host = await probeRoot(directoryView("/"), "host");
  const p = join(ex.root, "host.yaml");
  writeFileSync(p, `name: h\nbase: {os: ${host.name}, arch: ${host.arch}}\nsoftware: [tool-a]\n`);
  const r = await runCli([
    "resolve",
    p,
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--base",
    "host",
    "--out",
    join(ex.root, "host.lock"),
    "--json",
  ]);
  assert.equal(r.code, 0, r.stdout);
  assert.match(readFileSync(join(ex.root, "host.lock.cairn.json"), "utf8"), /"base_source": "host"/, "cairn's records say how the base was probed");
});

test("a profile is read with a bound: an oversized file or a device is refused, not read to the end", async () => {
  const ok = join(ex.root, "bounded-ok.yaml");
  writeFileSync(ok, "name: ok\nbase: {os: debian12}\n");
  assert.equal((await runCli(["profile", "validate", ok, "--json"])).code, 0, "control: a small profile is read");
  const big = join(ex.root, "bounded-big.yaml");
  writeFileSync(big, `name: big\nbase: {os: debian12}\ndescription: "${"x".repeat(2 * 1024 * 1024)}"\n`);
  const r = await runCli(["profile", "validate", big, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "LIMIT_EXCEEDED");
  assert.match(JSON.parse(r.stdout).error.message, /profile\.max_bytes/);
  const dev = await runCli(["profile", "validate", "/dev/zero", "--json"]);
  assert.equal(dev.code, 1);
  assert.equal(JSON.parse(dev.stdout).error.code, "IO_ERROR");
});
