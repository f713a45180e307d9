/**
 * A run's checkpoints.qcow2 through a registry (issue 35, ledger I35-1j and
 * I35-7b): `cairn bundle push --include-private` carries it as the private
 * member `private/checkpoints.qcow2` to Debian's docker-registry on
 * 127.0.0.1, and the registry import (`importRegistryBundle`, what `cairn
 * replay oci://…` runs first) writes it byte for byte, 0600, beside the
 * imported run. Pushed without private members it stays home and the
 * imported run is not `tampered`; importing the private push into that home
 * adds it. A byte flipped in the registry's own stored blob is refused by
 * the member's digest and nothing is imported; the blob restored, the same
 * reference imports (the control).
 *
 * One small record (the binary workload, an initramfs run) whose run.json is
 * then given two checkpoints held by a qcow2 made by `qemu-img create`, as
 * tests/vm/bundle-checkpoints.test.ts does: the push and the import read
 * bytes and digests, not snapshots (tests/vm/checkpoint.test.ts makes real
 * ones). The push runs this worktree's dist/ (npm run build).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { RegistryClient } from "../../src/oci/index.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { describeRun, importRegistryBundle, recordRun } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { binaryWorkspace } from "../vm/fixtures/workloads.ts";
import { missingRegistryTools, TestRegistry } from "./fixtures/registry-server.ts";

const QEMU_IMG = (() => {
  try {
    execFileSync("qemu-img", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "qemu-img (Debian's qemu-utils) is not installed";
  }
})();
const skip = VM_SKIP || needs(missingRegistryTools()) || QEMU_IMG || false;
const MEMBER = "org.cairn.bundle.member";
const QCOW2_MEMBER = `private/${CHECKPOINT_FILE}`;

interface Manifest {
  layers: Array<{ digest: string; size: number; annotations: Record<string, string> }>;
}

describe("checkpoints.qcow2 through a registry", { skip }, () => {
  let work: string;
  let registry: TestRegistry;
  let runDir: string;
  let storeDir: string;
  let qcow2: Buffer;
  const remote = { plainHttp: true, env: {}, cwd: "/" };
  const home = (name: string) => ({ storeDir: join(work, name, "store"), kitDir: join(work, name, "kit"), runsDir: join(work, name, "runs") });
  const push = async (tag: string, flags: string[]): Promise<string> => {
    const r = await runCli(
      ["bundle", "push", runDir, `oci://${registry.host}/runs/ckpt:${tag}`, "--plain-http", "--store", storeDir, "--kit", TEST_KIT_DIR, "--json", ...flags],
      { ...process.env, CAIRN_HOME: join(work, "home") },
    );
    assert.equal(r.code, 0, `${r.stderr}${r.stdout}`);
    return (JSON.parse(r.stdout) as { reference: string }).reference;
  };
  const manifestOf = async (ref: string): Promise<Manifest> => {
    const client = new RegistryClient({ host: registry.host, plainHttp: true });
    return JSON.parse((await client.fetchManifest("runs/ckpt", ref.split("@")[1] as Sha256Digest)).bytes.toString("utf8")) as Manifest;
  };
  /** The registry's own stored bytes of a blob (Distribution's filesystem layout). */
  const blobFile = (digest: string): string => {
    const hex = digest.slice("sha256:".length);
    return join(registry.dir, "storage", "docker", "registry", "v2", "blobs", "sha256", hex.slice(0, 2), hex, "data");
  };

  before(async () => {
    const kit = await testKit();
    work = mkdtempSync(join(tmpdir(), "cairn-push-ckpt-"));
    const ws = binaryWorkspace();
    storeDir = ws.storeDir;
    runDir = (await recordRun({ input: ws.specPath, storeDir, runsDir: ws.runsDir, kit, cairnVersion: "test" })).runDir;
    const file = join(runDir, CHECKPOINT_FILE);
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", file, "1M"]);
    qcow2 = readFileSync(file);
    const m = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8"));
    m.checkpoints = {
      file: { sha256: sha256(qcow2), size: qcow2.length },
      taken: [
        { name: "one", after: { step: 0 }, icount: 1000 },
        { name: "two", after: { output: "stdout", contains: "hello" }, icount: 2000 },
      ],
    };
    writeFileSync(join(runDir, "run.json"), JSON.stringify(m));
    registry = await TestRegistry.create(join(work, "registry"));
  });
  after(async () => {
    await registry?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("pushed with --include-private it arrives byte for byte and 0600; without, it is left out and the imported run is not tampered, and the private push adds it", async () => {
    const ref = await push("private", ["--include-private"]);
    const layer = (await manifestOf(ref)).layers.find((l) => l.annotations[MEMBER] === QCOW2_MEMBER);
    assert.deepEqual(layer && { digest: layer.digest, size: layer.size }, { digest: sha256(qcow2), size: qcow2.length });
    const a = await importRegistryBundle(ref, { ...home("a"), remote });
    const there = join(a.runDir, CHECKPOINT_FILE);
    assert.ok(readFileSync(there).equals(qcow2), "byte for byte");
    assert.equal(statSync(there).mode & 0o777, 0o600, "it holds the guest's RAM: owner-only");
    assert.equal(describeRun(a.runDir, { checkpointDigest: true }).check, "unverified");

    // control: pushed without private members, the qcow2 is not in the artifact and the imported run says nothing false
    const plain = await push("public", []);
    assert.equal(
      (await manifestOf(plain)).layers.some((l) => l.annotations[MEMBER]!.startsWith("private/")),
      false,
    );
    const b = await importRegistryBundle(plain, { ...home("b"), remote });
    assert.equal(existsSync(join(b.runDir, CHECKPOINT_FILE)), false);
    assert.equal(describeRun(b.runDir, { checkpointDigest: true }).check, "unverified");
    // the same run from the private push, into that home: the qcow2 joins the run imported before
    const again = await importRegistryBundle(ref, { ...home("b"), remote });
    assert.equal(again.runDir, b.runDir);
    assert.ok(readFileSync(join(b.runDir, CHECKPOINT_FILE)).equals(qcow2));
    assert.equal(statSync(join(b.runDir, CHECKPOINT_FILE)).mode & 0o777, 0o600);
  });

  it("a run imported before whose checkpoints.qcow2 is no longer run.json's gets the bundle's checked one when imported again (control: a good copy is left as it is)", async () => {
    const ref = await push("private", ["--include-private"]);
    const h = home("repair");
    const first = await importRegistryBundle(ref, { ...h, remote });
    const file = join(first.runDir, CHECKPOINT_FILE);
    const kept = statSync(file).ino;
    await importRegistryBundle(ref, { ...h, remote });
    assert.equal(statSync(file).ino, kept, "control: the good copy is not rewritten");
    const damaged = Buffer.from(qcow2);
    damaged[100] = damaged[100]! ^ 0x01; // same size: only the digest tells
    writeFileSync(file, damaged);
    assert.equal(describeRun(first.runDir, { checkpointDigest: true }).check, "tampered");
    const again = await importRegistryBundle(ref, { ...h, remote });
    assert.equal(again.runDir, first.runDir);
    assert.ok(readFileSync(file).equals(qcow2), "the import left a qcow2 that is not the run's");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(describeRun(first.runDir, { checkpointDigest: true }).check, "unverified");
    // a directory in its place is not replaced: refused, naming it (control: removed, the import puts the qcow2 back)
    rmSync(file);
    mkdirSync(file);
    await assertCodeAsync(() => importRegistryBundle(ref, { ...h, remote }), "USAGE", file);
    rmSync(file, { recursive: true });
    await importRegistryBundle(ref, { ...h, remote });
    assert.ok(readFileSync(file).equals(qcow2));
  });

  it("a byte flipped in the registry's stored qcow2 blob is refused by digest, nothing imported; restored, it imports (control)", async () => {
    const ref = await push("private", ["--include-private"]);
    const stored = blobFile(sha256(qcow2));
    const honest = readFileSync(stored);
    assert.ok(honest.equals(qcow2), "the registry stores the member as pushed");
    const flipped = Buffer.from(honest);
    const at = flipped.length >> 1;
    flipped[at] = flipped[at]! ^ 0x01;
    writeFileSync(stored, flipped);
    try {
      const h = home("flipped");
      await assertCodeAsync(() => importRegistryBundle(ref, { ...h, remote }), "DIGEST_MISMATCH");
      const runs = existsSync(h.runsDir) ? readdirSync(h.runsDir).filter((n) => !n.startsWith("cairn-runs.json")) : [];
      assert.deepEqual(runs, [], "no run directory");
    } finally {
      writeFileSync(stored, honest);
    }
    const c = await importRegistryBundle(ref, { ...home("restored"), remote });
    assert.ok(readFileSync(join(c.runDir, CHECKPOINT_FILE)).equals(qcow2));
  });
});
