/**
 * Run inputs end to end (issue 9, item 4): a spec's `run.inputs` puts a host
 * file and a host directory into the guest; the workload (a static program
 * hashing its arguments) prints each file's sha256, which equals node:crypto's
 * over the host bytes. The input tree's digest is the VM identity's
 * `run_inputs`; the replay matches, reading the inputs from the store only
 * (the host files are changed first and the replay still matches); an edited
 * or missing stored input, or an input tree other than the one the VM
 * identity names, is refused before launch naming the field; a bundle of
 * the run made with `includeInputs` replays on a fresh home; one made
 * without holds no input byte, says so in its index, imports, and its replay
 * on a fresh home is refused before launch naming the missing listing
 * (control: the same imported run replays from the recording store).
 * Controls: the untouched copy replays.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { CairnError, digestHex, type ErrorCode, type Sha256Digest } from "../../src/core/index.ts";
import { fsIdentity, writeTar, type FsEntry, type TarEntry } from "../../src/tree/index.ts";
import {
  collectStoreGarbage,
  importBundle,
  openBundle,
  recordRun,
  replayRun,
  vmDigest,
  writeRunBundle,
  type Kit,
  type RecordResult,
  type VmIdentity,
} from "../../src/vm/index.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const hex = (b: Buffer) => createHash("sha256").update(b).digest("hex");

function hashProgram(): string {
  const out = join(PROJECT_ROOT, "tests", ".generated", "vm", `hashfile-${process.pid}`);
  mkdirSync(join(PROJECT_ROOT, "tests", ".generated", "vm"), { recursive: true });
  if (!existsSync(out))
    execFileSync("gcc", [
      "-static",
      "-no-pie",
      "-O2",
      "-I",
      join(PROJECT_ROOT, "agent"),
      "-o",
      out,
      join(PROJECT_ROOT, "tests", "vm", "fixtures", "hashfile.c"),
      join(PROJECT_ROOT, "agent", "sha256.c"),
    ]);
  return out;
}

interface World {
  readonly root: string;
  readonly specPath: string;
  readonly storeDir: string;
  readonly runsDir: string;
  readonly data: Buffer;
  readonly a: Buffer;
  readonly b: Buffer;
}

const ARGS = ["/in/data.bin", "/in/tree/a.txt", "/in/tree/sub/b.txt"];

function world(root0?: "disk"): World {
  const root = mkdtempSync(join(tmpdir(), "cairn-inputs-"));
  cpSync(hashProgram(), join(root, "hashfile"));
  const data = randomBytes(200_000);
  const a = Buffer.from("alpha\n");
  const b = randomBytes(5000);
  writeFileSync(join(root, "data.bin"), data);
  mkdirSync(join(root, "tree", "sub"), { recursive: true });
  writeFileSync(join(root, "tree", "a.txt"), a);
  writeFileSync(join(root, "tree", "sub", "b.txt"), b);
  const spec = {
    schema: "cairn.workload/1",
    source: { binary: { path: "hashfile", args: ARGS, user: "1000:1000" } },
    run: {
      ...(root0 !== undefined ? { root: root0 } : {}),
      steps: [{ action: "start" }, { action: "close-stdin" }],
      expect: [
        { "exit-code": 0, "stdout-includes": [`sha256 ${hex(data)} /in/data.bin`, `sha256 ${hex(a)} /in/tree/a.txt`, `sha256 ${hex(b)} /in/tree/sub/b.txt`] },
      ],
      inputs: [
        { from: "data.bin", to: "/in/data.bin" },
        { from: "tree", to: "/in/tree" },
      ],
    },
  };
  const specPath = join(root, "spec.json");
  writeFileSync(specPath, JSON.stringify(spec, null, 2));
  return { root, specPath, storeDir: join(root, "store"), runsDir: join(root, "runs"), data, a, b };
}

let kit: Kit;
let w: World;
let rec: RecordResult;

function copy(): { runDir: string; storeDir: string } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-inputs-copy-"));
  cpSync(rec.runDir, join(dir, "run"), { recursive: true });
  cpSync(w.storeDir, join(dir, "store"), { recursive: true });
  return { runDir: join(dir, "run"), storeDir: join(dir, "store") };
}

async function refused(c: { runDir: string; storeDir: string }, code: ErrorCode, path?: string): Promise<void> {
  try {
    await replayRun({ runDir: c.runDir, storeDir: c.storeDir, kit, timeoutMs: 120_000 });
  } catch (e) {
    assert.ok(e instanceof CairnError, String(e));
    assert.equal(e.code, code, e.message);
    if (path !== undefined) assert.equal(e.path, path);
    assert.ok(!existsSync(join(c.runDir, "replays")), "nothing was launched");
    return;
  }
  assert.fail(`expected ${code}`);
}

function objectPath(storeDir: string, digest: string): string {
  return join(storeDir, "objects", "sha256", digestHex(digest as never));
}

describe("run inputs", { skip: VM_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    w = world();
    rec = await recordRun({ input: w.specPath, storeDir: w.storeDir, runsDir: w.runsDir, kit, cairnVersion: "test" });
  });

  it("the workload reads each input at its `to` path and prints its sha256; the input tree is in the VM identity", () => {
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation.assertions));
    const out = rec.streams.get(1)!.stdout.toString("utf8");
    assert.ok(out.includes(`sha256 ${hex(w.data)} /in/data.bin\n`), out);
    // owned by root, 0644: the workload (uid 1000) reads them but cannot change them
    assert.ok(out.includes("readonly /in/data.bin"), out);
    const ref = rec.manifest.run_inputs!;
    assert.equal(rec.manifest.vm.run_inputs, ref.tree);
    assert.equal(rec.manifest.vm_digest, vmDigest(rec.manifest.vm));
    assert.ok(existsSync(objectPath(w.storeDir, ref.listing)), "the listing is in the store");
    for (const b of [w.data, w.a, w.b]) assert.ok(existsSync(objectPath(w.storeDir, `sha256:${hex(b)}`)), "every input file is in the store");
    // the tree's digest, recomputed from the listing by an independent walk
    const listing = JSON.parse(readFileSync(objectPath(w.storeDir, ref.listing), "utf8")) as { inputs: string[]; entries: Array<{ path: string }> };
    assert.deepEqual(listing.inputs, ["/in/data.bin", "/in/tree"]);
    const tree = new Map<string, FsEntry>([["/", { type: "dir", path: "/", mode: 0o755, uid: 0, gid: 0, mtime: 0 }]]);
    for (const e of listing.entries) tree.set(e.path, { ...e, uid: 0, gid: 0, mtime: 0 } as FsEntry);
    assert.equal(fsIdentity(tree), ref.tree);
  });

  it("replay matches, from the store only: the host inputs changed since", async () => {
    writeFileSync(join(w.root, "data.bin"), "changed on the host\n");
    const c = copy();
    const r = await replayRun({ runDir: c.runDir, storeDir: c.storeDir, kit, timeoutMs: 300_000 });
    assert.equal(r.evaluation.outcome, rec.manifest.outcome);
    assert.equal(r.evaluation.status, "passed");
  });

  it("a workload lock given to `cairn run` reads its inputs again, relative to the lock's directory: the changed host file is a new input tree", async () => {
    const lock = join(w.root, "again.lock.json");
    cpSync(join(rec.runDir, "lock.json"), lock);
    const again = await recordRun({ input: lock, storeDir: w.storeDir, runsDir: w.runsDir, kit, cairnVersion: "test" });
    const changed = readFileSync(join(w.root, "data.bin"));
    assert.ok(
      again.streams
        .get(1)!
        .stdout.toString("utf8")
        .includes(`sha256 ${hex(changed)} /in/data.bin\n`),
    );
    assert.equal(again.manifest.status, "assertions-failed", "the spec expects the recorded bytes");
    assert.notEqual(again.manifest.vm.run_inputs, rec.manifest.vm.run_inputs);
    assert.equal(again.manifest.workload.workload, rec.manifest.workload.workload, "the inputs are not the workload");
  });

  it("a changed stored input is refused before launch", async () => {
    const c = copy();
    const file = objectPath(c.storeDir, `sha256:${hex(w.data)}`);
    const b = readFileSync(file);
    b[10] = b[10]! ^ 1;
    writeFileSync(file, b);
    await refused(c, "STORE_CORRUPT", "/run_inputs");
  });

  it("a missing stored input or listing is refused before launch", async () => {
    const c = copy();
    rmSync(objectPath(c.storeDir, `sha256:${hex(w.b)}`));
    await refused(c, "STORE_MISSING", "/run_inputs");
    const d = copy();
    rmSync(objectPath(d.storeDir, rec.manifest.run_inputs!.listing));
    await refused(d, "STORE_MISSING", "/run_inputs/listing");
  });

  it("an input tree other than the VM identity's, or none, is refused naming the field", async () => {
    const edit = (runDir: string, f: (m: { run_inputs?: { tree: string }; vm: VmIdentity & { run_inputs?: string }; vm_digest: string }) => void) => {
      const file = join(runDir, "run.json");
      const m = JSON.parse(readFileSync(file, "utf8"));
      f(m);
      writeFileSync(file, JSON.stringify(m, null, 2));
    };
    const other = `sha256:${"7".repeat(64)}`;
    const c = copy();
    edit(c.runDir, (m) => void (m.run_inputs!.tree = other));
    await refused(c, "REPLAY_MISMATCH", "/run_inputs/tree");
    const d = copy();
    edit(d.runDir, (m) => {
      m.run_inputs!.tree = other;
      m.vm.run_inputs = other as Sha256Digest;
      m.vm_digest = vmDigest(m.vm);
    });
    await refused(d, "REPLAY_MISMATCH", "/run_inputs/tree");
    const e = copy();
    edit(e.runDir, (m) => {
      delete m.run_inputs;
      delete m.vm.run_inputs;
      m.vm_digest = vmDigest(m.vm);
    });
    await refused(e, "REPLAY_MISMATCH", "/run_inputs");
  });

  it("on a root disk too: the inputs are in the EROFS image the VM identity names", async () => {
    const d = world("disk");
    const r = await recordRun({ input: d.specPath, storeDir: d.storeDir, runsDir: d.runsDir, kit, cairnVersion: "test" });
    assert.equal(r.manifest.status, "passed", JSON.stringify(r.evaluation.assertions));
    assert.notEqual(r.manifest.vm.root_disk, null);
    assert.ok(
      r.streams
        .get(1)!
        .stdout.toString("utf8")
        .includes(`sha256 ${hex(d.b)} /in/tree/sub/b.txt\n`),
    );
    assert.equal(r.manifest.vm.run_inputs, r.manifest.run_inputs?.tree);
  });

  it("store gc keeps a kept run's input tree (the listing and every file), and sweeps what nothing keeps", () => {
    const c = copy();
    const garbage = randomBytes(100);
    writeFileSync(objectPath(c.storeDir, `sha256:${hex(garbage)}`), garbage, { mode: 0o600 });
    const r = collectStoreGarbage({ storeDir: c.storeDir, cwd: c.runDir, keepRuns: [c.runDir] });
    assert.ok(r.removed.objects.files >= 1, "the unreferenced object went");
    assert.ok(!existsSync(objectPath(c.storeDir, `sha256:${hex(garbage)}`)));
    assert.ok(existsSync(objectPath(c.storeDir, rec.manifest.run_inputs!.listing)), "the listing stays");
    for (const b of [w.data, w.a, w.b]) assert.ok(existsSync(objectPath(c.storeDir, `sha256:${hex(b)}`)), "every input file stays");
  });

  it("a bundle made with includeInputs carries the input tree: it replays on a fresh home", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "cairn-inputs-bundle-")), "run.cairn");
    const made = writeRunBundle({ runDir: rec.runDir, storeDir: w.storeDir, kit, out, includeInputs: true });
    assert.equal(made.inputs, "included");
    const bytes = readFileSync(out);
    for (const b of [w.data, w.b]) assert.ok(bytes.includes(b.subarray(0, 64)), "the input bytes are in the bundle");
    assert.equal(statSync(out).mode & 0o777, 0o600, "a bundle with host files in it is owner-only");
    const home = mkdtempSync(join(tmpdir(), "cairn-inputs-home-"));
    const dirs = { storeDir: join(home, "store"), kitDir: join(home, "kit"), runsDir: join(home, "runs") };
    const imported = await importBundle(out, { ...dirs, qemu: rec.manifest.vm.qemu });
    assert.equal(imported.inputs, "included");
    const r = await replayRun({ runDir: imported.runDir, storeDir: dirs.storeDir, kit: imported.kit, timeoutMs: 300_000 });
    assert.equal(r.evaluation.outcome, rec.manifest.outcome);
  });

  it("a bundle made without it holds no input byte and says so; its import works and the replay elsewhere refuses before launch naming the listing", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "cairn-inputs-bundle-")), "run.cairn");
    const made = writeRunBundle({ runDir: rec.runDir, storeDir: w.storeDir, kit, out });
    assert.equal(made.inputs, "left-out");
    const bytes = readFileSync(out);
    for (const b of [w.data, w.b]) assert.ok(!bytes.includes(b.subarray(0, 64)), "no input byte is in the bundle");
    assert.equal(statSync(out).mode & 0o777, 0o644);
    // the first tar member is the index: its size is the header's octal field at 124
    assert.equal(bytes.subarray(0, 17).toString(), "cairn-bundle.json");
    const size = Number.parseInt(bytes.subarray(124, 136).toString().replace(/\0.*$/, "").trim(), 8);
    const index = JSON.parse(bytes.subarray(512, 512 + size).toString()) as { inputs?: unknown; members: Array<{ path: string }> };
    assert.deepEqual(index.inputs, { tree: rec.manifest.run_inputs!.tree, included: false });
    assert.ok(!index.members.some((m) => m.path === `store/objects/${digestHex(rec.manifest.run_inputs!.listing)}`));
    const home = mkdtempSync(join(tmpdir(), "cairn-inputs-home-"));
    const dirs = { storeDir: join(home, "store"), kitDir: join(home, "kit"), runsDir: join(home, "runs") };
    const imported = await importBundle(out, { ...dirs, qemu: rec.manifest.vm.qemu });
    assert.equal(imported.inputs, "left-out");
    await refused({ runDir: imported.runDir, storeDir: dirs.storeDir }, "STORE_MISSING", "/run_inputs/listing");
    // control: on the recording host's store (which holds the inputs) the same imported run replays
    const r = await replayRun({ runDir: imported.runDir, storeDir: w.storeDir, kit: imported.kit, timeoutMs: 300_000 });
    assert.equal(r.evaluation.outcome, rec.manifest.outcome);
  });

  it("a bundle whose index lies about the inputs is refused before import (control: the unedited ones open)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-inputs-lie-"));
    const left = join(dir, "left.cairn");
    const full = join(dir, "full.cairn");
    writeRunBundle({ runDir: rec.runDir, storeDir: w.storeDir, kit, out: left });
    writeRunBundle({ runDir: rec.runDir, storeDir: w.storeDir, kit, out: full, includeInputs: true });
    const members = async (f: string) => {
      const b = await openBundle(f);
      try {
        return new Map([...b.members].map(([p, v]) => [p, Buffer.from(v)]));
      } finally {
        b.dispose();
      }
    };
    const leftMembers = await members(left);
    const fullMembers = await members(full);
    // rewrites a bundle from members, the index's member list recomputed and its `inputs` edited
    const write = (name: string, files: Map<string, Buffer>, inputs: (i: Record<string, unknown>) => void) => {
      const index = JSON.parse(files.get("cairn-bundle.json")!.toString()) as Record<string, unknown>;
      inputs(index);
      index.members = [...files.keys()]
        .filter((p) => p !== "cairn-bundle.json")
        .sort()
        .map((p) => ({ path: p, sha256: `sha256:${hex(files.get(p)!)}`, size: files.get(p)!.length }));
      const all = new Map(files);
      all.set("cairn-bundle.json", Buffer.from(JSON.stringify(index)));
      const dirs = new Set<string>();
      for (const p of all.keys()) {
        const parts = p.split("/");
        for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
      }
      const out = join(dir, `${name}.cairn`);
      writeFileSync(
        out,
        writeTar([
          ...[...dirs].sort().map((d): TarEntry => ({ type: "dir", path: d, mode: 0o755 })),
          ...[...all].map(([path, data]): TarEntry => ({ type: "file", path, mode: 0o644, data })),
        ]),
      );
      return out;
    };
    const refusedOpen = async (f: string, path: string) => {
      const e = await openBundle(f).then(
        (b) => {
          b.dispose();
          return undefined;
        },
        (x: unknown) => x,
      );
      assert.ok(e instanceof CairnError, `${f} was opened`);
      assert.deepEqual([e.code, e.path], ["BUNDLE_INVALID", path], e.message);
    };
    for (const f of [left, full, write("control", leftMembers, () => {})]) (await openBundle(f)).dispose();
    // says left out, but carries them
    await refusedOpen(
      write("carries", fullMembers, (i) => void ((i.inputs as { included: boolean }).included = false)),
      "/inputs/included",
    );
    // says nothing (an older index): the closure must then be there
    await refusedOpen(
      write("silent", leftMembers, (i) => void delete i.inputs),
      "run.json#/run_inputs/listing",
    );
    // names another tree
    await refusedOpen(
      write("other", leftMembers, (i) => void ((i.inputs as { tree: string }).tree = `sha256:${"1".repeat(64)}`)),
      "/inputs/tree",
    );
  });
});
