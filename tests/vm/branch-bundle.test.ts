/**
 * A branch travels (issue 35 items 3 and 4), one parent record and one
 * branch shared by the file:
 *
 * - Durable runs across hosts (item 4): a disk-root probe run recorded with
 *   an environment manifest (`--environment`, RecordOptions
 *   environmentManifest) and two checkpoints is bundled with
 *   `includePrivate` (its checkpoints.qcow2 and protocol.bin travel) and
 *   imported into a fresh home (its own store, kit and runs directories).
 *   Branched there from its checkpoint: no environment offered, or another
 *   one (another manifest address), is RESUME_MISMATCH naming the field,
 *   before QEMU and with no run directory left; the same environment
 *   records. The branch keeps environment-manifest.json, so its own replay
 *   asks for the environment too.
 * - A branch's bundle carries what its replay needs, always: its start
 *   snapshot, the parent's stream prefix and its tail, as private members
 *   (the file is owner-only), with or without `includePrivate`; the done-when
 *   line of issue 35: imported into a fresh home it replays twice, matching.
 * - An import refuses a branch member that is not the one run.json records
 *   (naming `run.json#/branch/<field>/sha256`), a branch bundle missing one,
 *   and branch members in the bundle of a run that is not a branch
 *   (controls: the same tar rebuilt honestly imports). The writer refuses a
 *   branch directory whose file is not run.json's.
 * - A start snapshot or checkpoints file naming a host file (a qcow2
 *   backing file), run.json made to agree, is refused before qemu-img or
 *   QEMU opens it: the branch's replay, its bundle's import, and branching
 *   from the parent (before this check the forged branch replayed).
 * - Through Debian's docker-registry on 127.0.0.1: `bundle push` without
 *   private members carries the three, and the registry import writes them
 *   byte for byte; the imported branch replays.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type CairnError, sha256 } from "../../src/core/index.ts";
import { loadManifestOrDevcontainer, snapshotRefOf } from "../../src/manifest/index.ts";
import { writeTar, type TarEntry } from "../../src/tree/index.ts";
import { BRANCH_FILES } from "../../src/vm/branch-manifest.ts";
import { recordBranch, type BranchOptions } from "../../src/vm/branch.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { importBundle, importRegistryBundle, openBundle, pushBundle, recordRun, replayRun, writeRunBundle, type Kit } from "../../src/vm/index.ts";
import type { RecordResult } from "../../src/vm/record.ts";
import { RUN_ENV_MANIFEST_FILE } from "../../src/vm/run-facts.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { missingRegistryTools, TestRegistry } from "../registry/fixtures/registry-server.ts";
import { CHECKPOINTED_SLEEP_MS, writeCheckpointedProbe } from "./fixtures/checkpointed-probe.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const PINNED = loadManifestOrDevcontainer(join(PROJECT_ROOT, "examples/devcontainer/pinned/devcontainer.json")).manifest;
const UNPINNED = loadManifestOrDevcontainer(join(PROJECT_ROOT, "examples/devcontainer/unpinned/devcontainer.json")).manifest;
const SLEEP_MS = CHECKPOINTED_SLEEP_MS;
const BRANCH_MEMBERS = Object.values(BRANCH_FILES).map((f) => `private/${f}`);
const STDOUT = `ready\necho one\nslept ${SLEEP_MS}\necho three\neof\n`;

let kit: Kit;
let parent: RecordResult;
let root: string;
/** The parent imported into a fresh home, and the branch recorded there. */
let imported: { runDir: string; kit: Kit };
let branch: RecordResult;

const home = (name: string) => ({ storeDir: join(root, name, "store"), kitDir: join(root, name, "kit"), runsDir: join(root, name, "runs") });

/** The run directories in `runs` (not its marker or staging). */
function runDirs(runs: string): string[] {
  return existsSync(runs) ? readdirSync(runs).filter((n) => /^\d{8}T/.test(n)) : [];
}

/** A bundle tar from `files` (member path → bytes) with an index listing exactly them, as `cairn bundle` lays it out. */
function bundleTar(out: string, index: Record<string, unknown>, files: ReadonlyMap<string, Uint8Array>): string {
  const paths = [...files.keys()].sort();
  const ix = { ...index, members: paths.map((p) => ({ path: p, sha256: sha256(files.get(p)!), size: files.get(p)!.length })) };
  const dirs = new Set<string>();
  for (const p of paths) for (let i = 1; i < p.split("/").length; i++) dirs.add(p.split("/").slice(0, i).join("/"));
  const entries: TarEntry[] = [
    { type: "file", path: "cairn-bundle.json", mode: 0o644, data: Buffer.from(`${JSON.stringify(ix, null, 1)}\n`) },
    ...[...dirs].sort().map((d): TarEntry => ({ type: "dir", path: d, mode: 0o755 })),
    ...paths.map((p): TarEntry => ({ type: "file", path: p, mode: 0o644, data: Buffer.from(files.get(p)!) })),
  ];
  writeFileSync(out, writeTar(entries));
  return out;
}

/** A bundle's members (but the index) and its index, read through the import's own checks. */
async function membersOf(file: string): Promise<{ files: Map<string, Uint8Array>; index: Record<string, unknown> }> {
  const b = await openBundle(file);
  try {
    const files = new Map<string, Uint8Array>();
    for (const [p, bytes] of b.members) if (p !== "cairn-bundle.json") files.set(p, Buffer.from(bytes));
    return { files, index: JSON.parse(Buffer.from(b.index).toString("utf8")) as Record<string, unknown> };
  } finally {
    b.dispose();
  }
}

describe("a branch travels: bundles, registries, and resuming on another host", { skip: VM_SKIP }, () => {
  before(async () => {
    kit = await testKit();
    root = mkdtempSync(join(tmpdir(), "cairn-branch-bundle-"));
    writeCheckpointedProbe(root); // spec.json: the probe with checkpoints "one" and "echoed" (fixtures/checkpointed-probe.ts)
    const h = home("recorder");
    parent = await recordRun({
      input: join(root, "spec.json"),
      storeDir: h.storeDir,
      runsDir: h.runsDir,
      kit,
      cairnVersion: "test",
      environmentManifest: snapshotRefOf(PINNED),
    });
    assert.equal(parent.manifest.status, "passed", JSON.stringify(parent.evaluation.assertions));
    assert.deepEqual(
      parent.manifest.checkpoints?.taken.map((t) => t.name),
      ["one", "echoed"],
    );
  });

  // the qcow2s hold hundreds of MB of guest state: not left behind in the temp dir
  after(() => {
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  it("a parent recorded in an environment, bundled with its private members and imported on another host, branches there only in the same environment", async () => {
    const out = join(root, "parent.cairn");
    const b = writeRunBundle({ runDir: parent.runDir, storeDir: home("recorder").storeDir, kit, out, includePrivate: true });
    for (const p of [`private/${CHECKPOINT_FILE}`, "private/protocol.bin", `run/${RUN_ENV_MANIFEST_FILE}`])
      assert.ok(
        b.members.some((m) => m.path === p),
        p,
      );
    const h = home("resumer");
    imported = await importBundle(out, h);
    assert.ok(readFileSync(join(imported.runDir, RUN_ENV_MANIFEST_FILE)).equals(readFileSync(join(parent.runDir, RUN_ENV_MANIFEST_FILE))));
    const tailFile = join(root, "three.yaml");
    writeFileSync(
      tailFile,
      `steps:\n  - action: write-stdin\n    data: "echo three\\n"\n    after: {output: stdout, contains: slept}\n  - action: close-stdin\n    after: {output: stdout, contains: "echo three"}\nexpect:\n  - exit-code: 0\n    stdout-lines: [ready, echo one, slept ${SLEEP_MS}, echo three, eof]\n`,
    );
    const lines: string[] = [];
    const opts: BranchOptions = {
      runDir: imported.runDir,
      checkpoint: "one",
      scenario: tailFile,
      storeDir: h.storeDir,
      runsDir: h.runsDir,
      kit: imported.kit,
      cairnVersion: "test",
      log: (l) => lines.push(l),
    };
    const before = runDirs(h.runsDir);
    assert.deepEqual(before, [parent.manifest.run_id]);
    // no environment offered: refused naming the recorded address's field, before QEMU, nothing left
    const none = await assertCodeAsync(() => recordBranch(opts), "RESUME_MISMATCH", "/environment_manifest/manifest_address");
    assert.match(none.message, new RegExp(PINNED.address));
    // another environment (another manifest address): refused naming the fields that differ, as a replay's resume check does
    const other = await assertCodeAsync(() => recordBranch({ ...opts, offeredEnvironment: UNPINNED, allowUnpinned: true }), "RESUME_MISMATCH");
    assert.notEqual(UNPINNED.address, PINNED.address);
    assert.match(other.path ?? "", /^\/core\//);
    assert.ok(
      other.issues.length > 0 && other.issues.every((i) => i.code === "RESUME_MISMATCH") && other.issues.some((i) => i.path === other.path),
      JSON.stringify(other.issues),
    );
    assert.match(other.hint ?? "", new RegExp(`suspended in ${PINNED.address}.*offered ${UNPINNED.address}`));
    assert.deepEqual(runDirs(h.runsDir), before, "no run directory");
    assert.equal(readdirSync(h.runsDir).filter((n) => n.startsWith(".")).length, 0, "no staging left");
    assert.equal(
      lines.some((l) => l.startsWith("branching")),
      false,
      "QEMU never started",
    );
    // control: the same environment, and the branch records
    branch = await recordBranch({ ...opts, offeredEnvironment: PINNED });
    assert.equal(branch.manifest.status, "passed", JSON.stringify(branch.evaluation.assertions));
    assert.equal(branch.streams.get(1)!.stdout.toString(), STDOUT);
    assert.equal(branch.manifest.branch?.parent.run_id, parent.manifest.run_id);
    const env = join(branch.runDir, RUN_ENV_MANIFEST_FILE);
    assert.ok(readFileSync(env).equals(readFileSync(join(parent.runDir, RUN_ENV_MANIFEST_FILE))), "the branch keeps the parent's environment");
    assert.equal(statSync(env).mode & 0o777, 0o600);
  });

  it("the branch's replay asks for the environment too: none or another is refused, the same replays matching", async () => {
    const h = home("resumer");
    const opts = { runDir: branch.runDir, storeDir: h.storeDir, kit: imported.kit };
    await assertCodeAsync(() => replayRun(opts), "RESUME_MISMATCH", "/environment_manifest/manifest_address");
    const other = await assertCodeAsync(() => replayRun({ ...opts, offeredEnvironment: UNPINNED, allowUnpinned: true }), "RESUME_MISMATCH");
    assert.match(other.path ?? "", /^\/core\//);
    const r = await replayRun({ ...opts, offeredEnvironment: PINNED });
    assert.equal(r.verdict.matches, true);
    assert.equal(r.evaluation.outcome, branch.manifest.outcome);
  });

  it("a bundle of the branch carries its start, prefix and tail without --include-private (owner-only), and replays twice in a fresh home, matching", async (t) => {
    const out = join(root, "branch.cairn");
    const b = writeRunBundle({ runDir: branch.runDir, storeDir: home("resumer").storeDir, kit: imported.kit, out });
    assert.equal(b.branch, true);
    assert.equal(b.owned, true);
    assert.equal(statSync(out).mode & 0o777, 0o600, "the start snapshot is guest RAM, the prefix output bytes: owner-only");
    for (const [field, name] of Object.entries(BRANCH_FILES)) {
      const m = b.members.find((x) => x.path === `private/${name}`);
      const ref = branch.manifest.branch![field as keyof typeof BRANCH_FILES];
      assert.deepEqual(m && { sha256: m.sha256, size: m.size }, { sha256: ref.sha256, size: ref.size }, name);
    }
    assert.equal(
      b.members.some((m) => m.path === "private/protocol.bin" || m.path.startsWith("private/streams/")),
      false,
      "nothing else private without --include-private",
    );
    t.diagnostic(`branch bundle ${b.size} bytes; start ${branch.manifest.branch!.start.size} bytes`);
    // `cairn bundle` says so (text and --json), and writes the same bytes
    const cli = (args: string[]) =>
      runCli(["bundle", branch.runDir, "--store", home("resumer").storeDir, "--kit", home("resumer").kitDir, ...args], {
        ...process.env,
        CAIRN_HOME: join(root, "cli-home"),
      });
    const text = await cli(["--out", join(root, "cli.cairn")]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /a branch: its start snapshot \(the guest's RAM\) and the parent's stream prefix \(output bytes\) are in the bundle.*owner-only/);
    assert.ok(readFileSync(join(root, "cli.cairn")).equals(readFileSync(out)), "the same run directory bundles to the same bytes");
    const json = await cli(["--out", join(root, "cli.cairn"), "--json"]);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(checkDocument(json.stdout, "cairn.cli.bundle/1").problems, [], json.stdout);
    assert.equal((JSON.parse(json.stdout) as { private: boolean }).private, true, "a branch's bundle holds private members without --include-private");
    rmSync(join(root, "cli.cairn"));
    const fresh = home("fresh");
    const i = await importBundle(out, fresh);
    for (const name of Object.values(BRANCH_FILES)) {
      assert.ok(readFileSync(join(i.runDir, name)).equals(readFileSync(join(branch.runDir, name))), name);
      assert.equal(statSync(join(i.runDir, name)).mode & 0o777, 0o600, name);
    }
    for (let n = 0; n < 2; n++) {
      const r = await replayRun({ runDir: i.runDir, storeDir: fresh.storeDir, kit: i.kit, offeredEnvironment: PINNED });
      assert.equal(r.verdict.matches, true);
      assert.equal(r.evaluation.outcome, branch.manifest.outcome);
      assert.equal(r.streams.get(1)!.stdout.toString(), STDOUT);
      t.diagnostic(`fresh-home replay ${n + 1}: qemu ${Math.round(r.qemuMs)} ms`);
    }
    // imported again into that home, a branch file there that is not run.json's gets the bundle's checked copy
    const there = join(i.runDir, BRANCH_FILES.scenario);
    const good = readFileSync(there);
    const spoiled = Buffer.from(good);
    spoiled[0] = spoiled[0]! ^ 0x01;
    writeFileSync(there, spoiled);
    const again = await importBundle(out, fresh);
    assert.equal(again.runDir, i.runDir);
    assert.ok(readFileSync(there).equals(good), "the bundle's checked copy replaced it");
  });

  it("an import refuses a branch member that is not run.json's, a branch bundle without one, and branch members in a run that is not a branch (controls: rebuilt honestly, each imports)", async () => {
    const { files, index } = await membersOf(join(root, "branch.cairn"));
    const tamper = new Map(files);
    const tail = Buffer.from(files.get(`private/${BRANCH_FILES.scenario}`)!);
    tamper.set(`private/${BRANCH_FILES.scenario}`, Buffer.concat([tail, Buffer.from("# edited\n")]));
    const e1 = await assertCodeAsync(() => importBundle(bundleTar(join(root, "t1.cairn"), index, tamper), home("t1")), "BUNDLE_INVALID");
    assert.equal(e1.path, "run.json#/branch/scenario/size");
    const same = Buffer.from(tail);
    same[same.length - 2] = same[same.length - 2]! ^ 0x01; // same size: only the digest tells
    tamper.set(`private/${BRANCH_FILES.scenario}`, same);
    const e2 = await assertCodeAsync(() => importBundle(bundleTar(join(root, "t2.cairn"), index, tamper), home("t2")), "BUNDLE_INVALID");
    assert.equal(e2.path, "run.json#/branch/scenario/sha256");
    const missing = new Map(files);
    missing.delete(`private/${BRANCH_FILES.prefix}`);
    const e3 = await assertCodeAsync(() => importBundle(bundleTar(join(root, "t3.cairn"), index, missing), home("t3")), "BUNDLE_INVALID");
    assert.equal(e3.path, "run.json#/branch/prefix");
    for (const n of ["t1", "t2", "t3"]) assert.equal(existsSync(home(n).runsDir), false, `${n}: nothing imported`);
    // control: the same members rebuilt as they are import
    const ok = await importBundle(bundleTar(join(root, "t0.cairn"), index, files), home("t0"));
    assert.equal(ok.manifest.run_id, branch.manifest.run_id);

    // the parent's bundle (not a branch) given the branch's tail: refused naming the member
    const p = await membersOf(join(root, "parent.cairn"));
    const stray = new Map(p.files);
    stray.set(`private/${BRANCH_FILES.scenario}`, tail);
    const e4 = await assertCodeAsync(() => importBundle(bundleTar(join(root, "t4.cairn"), p.index, stray), home("t4")), "BUNDLE_INVALID");
    assert.equal(e4.path, `/private/${BRANCH_FILES.scenario}`);
    assert.match(e4.message, /not a branch/);
    assert.equal(existsSync(home("t4").runsDir), false);
    const pok = await importBundle(bundleTar(join(root, "t5.cairn"), p.index, p.files), home("t5"));
    assert.equal(pok.manifest.run_id, parent.manifest.run_id);
  });

  it("the writer refuses a branch whose file is not run.json's, writing nothing (control: the branch bundles, above)", () => {
    const file = join(branch.runDir, BRANCH_FILES.prefix);
    const saved = readFileSync(file);
    const flipped = Buffer.from(saved);
    flipped[0] = flipped[0]! ^ 0x01;
    writeFileSync(file, flipped);
    const out = join(root, "spoiled.cairn");
    try {
      assert.throws(
        () => writeRunBundle({ runDir: branch.runDir, storeDir: home("resumer").storeDir, kit: imported.kit, out }),
        (e: CairnError) => e.code === "RUN_INVALID" && e.path === "/branch/prefix/sha256",
      );
      rmSync(file);
      assert.throws(
        () => writeRunBundle({ runDir: branch.runDir, storeDir: home("resumer").storeDir, kit: imported.kit, out }),
        (e: CairnError) => e.code === "RUN_INVALID" && e.path === "/branch/prefix/sha256" && /missing/.test(e.message),
      );
      assert.equal(existsSync(out), false);
    } finally {
      writeFileSync(file, saved, { mode: 0o600 });
    }
  });

  it("a start snapshot or checkpoints file naming a host file (a backing file), run.json made to agree, is refused before qemu-img or QEMU opens it: replay, import, branch (controls: the honest files above)", async () => {
    const secret = join(root, "host-secret");
    writeFileSync(secret, randomBytes(1024 * 1024));
    const forge = (runDir: string, name: string, field: (m: { branch: { start: object }; checkpoints: { file: object } }) => object): string => {
      const copy = join(root, "forged", name, basename(runDir));
      cpSync(runDir, copy, { recursive: true });
      const file = join(copy, name);
      execFileSync("qemu-img", ["rebase", "-u", "-f", "qcow2", "-b", secret, "-F", "raw", file]);
      const bytes = readFileSync(file);
      const m = JSON.parse(readFileSync(join(copy, "run.json"), "utf8"));
      Object.assign(field(m), { sha256: sha256(bytes), size: bytes.length });
      writeFileSync(join(copy, "run.json"), JSON.stringify(m));
      return copy;
    };
    const h = home("resumer");
    // a branch whose start names a host file: its replay is refused before launch
    const b = forge(branch.runDir, BRANCH_FILES.start, (m) => m.branch.start);
    const e1 = await assertCodeAsync(
      () => replayRun({ runDir: b, storeDir: h.storeDir, kit: imported.kit, offeredEnvironment: PINNED }),
      "RUN_INVALID",
      "/branch/start",
    );
    assert.match(e1.message, /backing file/);
    // bundled (the writer checks digests, which agree), its import is refused, nothing imported
    const out = join(root, "forged.cairn");
    writeRunBundle({ runDir: b, storeDir: h.storeDir, kit: imported.kit, out });
    const e2 = await assertCodeAsync(() => importBundle(out, home("forged-import")), "BUNDLE_INVALID", "run.json#/branch/start");
    assert.match(e2.message, /backing file/);
    assert.equal(existsSync(home("forged-import").runsDir), false);
    rmSync(out);
    // a parent whose checkpoints name a host file: branching is refused before the kit is asked for (so before qemu-img)
    const p = forge(imported.runDir, CHECKPOINT_FILE, (m) => m.checkpoints.file);
    let asked = false;
    const e3 = await assertCodeAsync(
      () =>
        recordBranch({
          runDir: p,
          checkpoint: "one",
          scenario: join(root, "three.yaml"),
          storeDir: h.storeDir,
          runsDir: join(root, "forged", "runs"),
          kit: () => {
            asked = true;
            return Promise.reject(new Error("no kit in this test"));
          },
          cairnVersion: "test",
          offeredEnvironment: PINNED,
        }),
      "RUN_INVALID",
      "/checkpoints/file",
    );
    assert.match(e3.message, /backing file/);
    assert.equal(asked, false);
    assert.deepEqual(runDirs(join(root, "forged", "runs")), []);
    rmSync(join(root, "forged"), { recursive: true, force: true });
  });

  it("through Debian's docker-registry: bundle push carries the branch's files without --include-private; the registry import writes them byte for byte and the branch replays", {
    skip: needs(missingRegistryTools()) || false,
  }, async () => {
    const registry = await TestRegistry.create(join(root, "registry"));
    try {
      const remote = { plainHttp: true, env: {}, cwd: "/" };
      const pushed = await pushBundle({
        source: branch.runDir,
        reference: `oci://${registry.host}/runs/branch:one`,
        storeDir: home("resumer").storeDir,
        kitDir: home("resumer").kitDir,
        remote,
      });
      assert.equal(pushed.private, true, "the push says it holds private members");
      const node = home("node");
      const f = await importRegistryBundle(pushed.reference, { ...node, remote });
      for (const name of Object.values(BRANCH_FILES)) {
        assert.ok(readFileSync(join(f.runDir, name)).equals(readFileSync(join(branch.runDir, name))), name);
        assert.equal(statSync(join(f.runDir, name)).mode & 0o777, 0o600, name);
      }
      assert.ok(BRANCH_MEMBERS.length === 3);
      const r = await replayRun({ runDir: f.runDir, storeDir: node.storeDir, kit: f.kit, offeredEnvironment: PINNED });
      assert.equal(r.verdict.matches, true);
      assert.equal(r.evaluation.outcome, branch.manifest.outcome);
    } finally {
      await registry.stop();
    }
  });
});
