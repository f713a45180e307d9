/**
 * Layer commands stay within a memory budget that does not grow with the
 * layer (issue 16, items 2 and 3): a layer holding one file of LARGE_MIB of
 * incompressible bytes (generated here) is built, folded, checked by
 * `lock verify --contents` and exported, each in a child process that
 * reports its own peak RSS (VmHWM, tests/helpers/peak-memory.ts), and each peak must stay below the
 * baseline (a child that loads the same modules and does nothing) plus
 * BUDGET_OVER_BASE_MIB, well under the file's size. Controls: the same
 * measurement of the in-memory paths (the blob built whole, the blob read
 * whole and checked, the file read whole) is above that budget, so the
 * measurement does catch a process holding the file.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { peakInChild } from "../helpers/peak-memory.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { tempDir } from "../strata/fixtures.ts";

const MiB = 1024 * 1024;
/** The large file: big enough that holding it (or its blob) is far above the budget, small enough for a few seconds of gzip. */
const LARGE_MIB = 256;
/** What a streamed command may use above the baseline: chunks, zlib's window, the tree. */
const BUDGET_OVER_BASE_MIB = 150;

const work = tempDir("cairn-blob-mem-");
const src = join(PROJECT_ROOT, "src");
const fixtures = join(PROJECT_ROOT, "tests", "strata");

/** Runs `body` (TypeScript; `src`, `work`, `fixtures` bound) in a child; returns its outcome and peak RSS in MiB. */
function measure(name: string, body: string): { outcome: string; rssMiB: number } {
  return peakInChild(
    work,
    name,
    `const src = ${JSON.stringify(src)};
const work = ${JSON.stringify(work)};
const fixtures = ${JSON.stringify(fixtures)};
const { signingKeyFromSeed } = await import(src + "/core/index.ts");
const strata = await import(src + "/strata/index.ts");
const key = signingKeyFromSeed(Buffer.alloc(32, 1));
const lockKey = signingKeyFromSeed(Buffer.alloc(32, 2));
const spec = (name) => ({ name, version: "1.0", arch: "noarch", abi: "none", install_layout: "prefix", user_selectable: true,
  provides: [{ name, version: "1.0" }], requires: [], builder: "cairn test" });`,
    body,
  );
}

let baseline = 0;
const budget = (): number => baseline + BUDGET_OVER_BASE_MIB;

/** A directory with bin/big: LARGE_MIB of random bytes, written a MiB at a time. */
function bigSource(): string {
  const dir = join(work, "src-big");
  mkdirSync(join(dir, "bin"), { recursive: true });
  const fd = openSync(join(dir, "bin", "big"), "w", 0o755);
  for (let i = 0; i < LARGE_MIB; i++) writeSync(fd, randomBytes(MiB));
  closeSync(fd);
  mkdirSync(join(work, "src-small", "bin"), { recursive: true });
  writeFileSync(join(work, "src-small", "bin", "small"), "#!/bin/sh\necho small\n", { mode: 0o755 });
  return dir;
}

describe(`layer commands on a ${LARGE_MIB} MiB file stay within baseline + ${BUDGET_OVER_BASE_MIB} MiB`, () => {
  before(() => {
    bigSource();
    baseline = measure("baseline", "void strata;").rssMiB;
    // The registry, the small layer and the rootfs base, made in a child so this process stays small too.
    const setup = measure(
      "setup",
      `const { mkdirSync } = await import("node:fs");
const { writeToyRootfs } = await import(${JSON.stringify(join(PROJECT_ROOT, "examples", "strata", "build-registry.ts"))});
mkdirSync(work + "/rootfs"); writeToyRootfs(work + "/rootfs");
const reg = strata.LocalRegistry.init(work + "/registry");
const small = strata.buildLayerFromDirectory(work + "/src-small", spec("small"));
reg.publishLayer(small.blob.blob, small.manifest, [key]);`,
    );
    assert.equal(setup.outcome, "accepted");
  });

  it("layer build streams the directory into a staged blob and publishes it; control: the blob built in memory is over the budget", () => {
    const streamed = measure(
      "build",
      `const reg = strata.LocalRegistry.open(work + "/registry");
await strata.withBlobStaging(async (s) => {
  const built = await strata.writeLayerFromDirectory(work + "/src-big", spec("big"), s.path("layer.tar.gz"));
  reg.publishLayer({ path: built.blob.path }, built.manifest, [key]);
});`,
    );
    assert.equal(streamed.outcome, "accepted");
    const whole = measure("build-whole", `strata.buildLayerFromDirectory(work + "/src-big", spec("big-whole"));`);
    assert.equal(whole.outcome, "accepted");
    console.log(`# layer build, ${LARGE_MIB} MiB file: streamed ${streamed.rssMiB} MiB, in memory ${whole.rssMiB} MiB, baseline ${baseline} MiB`);
    assert.ok(streamed.rssMiB < budget(), `streamed build peaked at ${streamed.rssMiB} MiB (budget ${budget()})`);
    assert.ok(whole.rssMiB > budget(), `control: the in-memory build peaked at ${whole.rssMiB} MiB`);
  });

  it("layer fold stages its sources, spills file bytes and streams the folded blob; control: reading the file whole is over the budget", () => {
    const folded = measure(
      "fold",
      `const reg = strata.LocalRegistry.open(work + "/registry");
const trust = { keys: [key], allowUnsignedOffline: false };
await strata.withBlobStaging(async (s) => {
  const built = await strata.foldLayers(reg, ["big-1.0-none-noarch", "small-1.0-none-noarch"], spec("folded"), trust, true, s);
  reg.publishLayer({ path: built.blob.path }, built.manifest, [key]);
});`,
    );
    assert.equal(folded.outcome, "accepted");
    const whole = measure("read-whole", `const { readFileSync } = await import("node:fs"); readFileSync(work + "/src-big/bin/big");`);
    console.log(`# layer fold, ${LARGE_MIB} MiB file: ${folded.rssMiB} MiB; reading the file whole ${whole.rssMiB} MiB`);
    assert.ok(folded.rssMiB < budget(), `fold peaked at ${folded.rssMiB} MiB (budget ${budget()})`);
    assert.ok(whole.rssMiB > budget(), `control: holding the file peaked at ${whole.rssMiB} MiB`);
  });

  it("lock verify --contents and lock export read staged copies; control: the blob read whole and checked is over the budget", () => {
    const lock = measure(
      "lock",
      `const { directoryView } = await import(src + "/tree/index.ts");
const reg = strata.LocalRegistry.open(work + "/registry");
const catalog = strata.catalogFromRegistries([{ registry: reg, source: { url: "test-registry", keys: [key] } }]);
const now = new Date("2026-01-02T03:04:05Z");
const base = strata.probedBase(await strata.probeRoot(directoryView(work + "/rootfs"), work + "/rootfs"), "rootfs:toy", now);
const text = "name: big\\nversion: \\"1\\"\\nbase: {os: debian12}\\nsoftware: [big@1.0, small@1.0]\\n";
const lock = strata.resolveProfile({ profile: strata.parseProfileText(text), catalog, probedBase: base, allowUnsignedOffline: false, now, cairnVersion: "t" });
strata.writeLockfile(work + "/env.lock", lock, lockKey);`,
    );
    assert.equal(lock.outcome, "accepted");
    const verifyOpts = `{ keys: [lockKey], now: new Date("2026-01-02T03:04:05Z"), registries: [strata.LocalRegistry.open(work + "/registry")], layerKeys: [key], allowUnsignedOffline: false }`;
    const verified = measure(
      "verify",
      `const opts = ${verifyOpts};
const r = await strata.verifyLock(work + "/env.lock", opts);
await strata.verifyLockContents(r.lock, opts.registries);`,
    );
    assert.equal(verified.outcome, "accepted");
    const exported = measure(
      "export",
      `await strata.exportLock({ lockPath: work + "/env.lock", verify: ${verifyOpts}, base: { kind: "rootfs", dir: work + "/rootfs" },
  contents: true, launch: { user: "1000:1000", workdir: "/" }, outDir: work + "/image" });`,
    );
    assert.equal(exported.outcome, "accepted");
    const whole = measure(
      "verify-whole",
      `const reg = strata.LocalRegistry.open(work + "/registry");
const m = reg.readLayer("big-1.0-none-noarch").value;
await strata.checkLayerContents(reg.readBlob(m.sha256, m.size), m, "whole");`,
    );
    assert.equal(whole.outcome, "accepted");
    console.log(`# lock verify --contents ${verified.rssMiB} MiB, lock export --contents ${exported.rssMiB} MiB; the blob read whole ${whole.rssMiB} MiB`);
    assert.ok(verified.rssMiB < budget(), `verify peaked at ${verified.rssMiB} MiB (budget ${budget()})`);
    assert.ok(exported.rssMiB < budget(), `export peaked at ${exported.rssMiB} MiB (budget ${budget()})`);
    assert.ok(whole.rssMiB > budget(), `control: the whole-blob check peaked at ${whole.rssMiB} MiB`);
  });
});
