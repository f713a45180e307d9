/**
 * Bundles carry checkpoints.qcow2 (issue 35, follow-up to item 1). The qcow2
 * holds the guest's RAM (environment values included), so it travels as a
 * private member, `private/checkpoints.qcow2`, with `includePrivate` (the
 * file bundle and `bundle push`, which share collectRunBundle; the registry
 * import shares checkMembers), checked against run.json's size and sha256
 * when bundled and when imported.
 *
 * One small record (the binary workload, an initramfs run); its run.json is
 * then given two checkpoints whose qcow2 is a small one made by `qemu-img
 * create` (the bundle and the import read bytes and digests, not snapshots:
 * tests/vm/checkpoint.test.ts makes real ones).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CairnError, sha256 } from "../../src/core/index.ts";
import { writeTar, type TarEntry } from "../../src/tree/index.ts";
import { CHECKPOINT_FILE } from "../../src/vm/checkpoint-take.ts";
import { describeRun, importBundle, openBundle, recordRun, writeRunBundle, type Kit } from "../../src/vm/index.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

const QEMU_IMG = (() => {
  try {
    execFileSync("qemu-img", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "qemu-img (Debian's qemu-utils) is not installed";
  }
})();

let kit: Kit;
let runDir: string;
let storeDir: string;
let qcow2: Buffer;
const work = mkdtempSync(join(tmpdir(), "cairn-bundle-ckpt-"));

const home = (name: string) => ({ storeDir: join(work, name, "store"), kitDir: join(work, name, "kit"), runsDir: join(work, name, "runs") });

async function refusal(p: Promise<unknown>): Promise<CairnError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CairnError) return e;
    throw e;
  }
  assert.fail("expected a refusal");
}

describe("bundles carry checkpoints.qcow2", { skip: VM_SKIP ?? QEMU_IMG }, () => {
  before(async () => {
    kit = await testKit();
    const ws = binaryWorkspace();
    storeDir = ws.storeDir;
    const r = await recordRun({ input: ws.specPath, storeDir, runsDir: ws.runsDir, kit, cairnVersion: "test" });
    runDir = r.runDir;
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
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("with private members the qcow2 travels and is imported byte for byte, owner-only; without, it is left out and the imported run is not tampered", async () => {
    const out = join(work, "private.cairn");
    const b = writeRunBundle({ runDir, storeDir, kit, out, includePrivate: true });
    const member = b.members.find((x) => x.path === `private/${CHECKPOINT_FILE}`);
    assert.deepEqual(member, { path: `private/${CHECKPOINT_FILE}`, sha256: sha256(qcow2), size: qcow2.length });
    assert.equal(statSync(out).mode & 0o777, 0o600, "a bundle with private members is owner-only");
    const imported = await importBundle(out, home("a"));
    const there = join(imported.runDir, CHECKPOINT_FILE);
    assert.ok(readFileSync(there).equals(qcow2));
    assert.equal(statSync(there).mode & 0o777, 0o600);
    assert.equal(describeRun(imported.runDir, { checkpointDigest: true }).check, "unverified");

    // control: without private members the qcow2 stays home; the imported run says nothing false
    const plain = writeRunBundle({ runDir, storeDir, kit, out: join(work, "plain.cairn") });
    assert.equal(
      plain.members.some((x) => x.path.includes("checkpoints")),
      false,
    );
    const left = await importBundle(plain.file, home("b"));
    assert.equal(existsSync(join(left.runDir, CHECKPOINT_FILE)), false);
    assert.equal(describeRun(left.runDir, { checkpointDigest: true }).check, "unverified");
    // the same run imported again, now with its private members, into that home: the qcow2 joins the run imported before
    const again = await importBundle(out, home("b"));
    assert.equal(again.runDir, left.runDir);
    assert.ok(readFileSync(join(left.runDir, CHECKPOINT_FILE)).equals(qcow2));
    assert.equal(statSync(join(left.runDir, CHECKPOINT_FILE)).mode & 0o777, 0o600);
  });

  it("a qcow2 over bundle.max_member_bytes is refused naming the limit before it is read (control: the recorded one bundles, test 1)", () => {
    const manifest = join(runDir, "run.json");
    const saved = readFileSync(manifest);
    const m = JSON.parse(saved.toString("utf8"));
    m.checkpoints.file.size = 3 * 1024 ** 3;
    writeFileSync(manifest, JSON.stringify(m));
    try {
      assert.throws(
        () => writeRunBundle({ runDir, storeDir, kit, out: join(work, "big.cairn"), includePrivate: true }),
        (e: CairnError) => e.code === "LIMIT_EXCEEDED" && /bundle\.max_member_bytes/.test(e.message) && /without --include-private/.test(e.hint ?? ""),
      );
    } finally {
      writeFileSync(manifest, saved);
    }
  });

  it("a run whose qcow2 is not the one run.json records is not bundled", () => {
    const file = join(runDir, CHECKPOINT_FILE);
    const flipped = Buffer.from(qcow2);
    flipped[0] = (flipped[0] ?? 0) ^ 0xff;
    writeFileSync(file, flipped);
    try {
      assert.throws(
        () => writeRunBundle({ runDir, storeDir, kit, out: join(work, "bad.cairn"), includePrivate: true }),
        (e: CairnError) => e.code === "RUN_INVALID" && e.path === "/checkpoints/file/sha256",
      );
      assert.equal(existsSync(join(work, "bad.cairn")), false);
    } finally {
      writeFileSync(file, qcow2);
    }
  });

  it("a flipped byte of the qcow2 in a bundle is refused by the index's digest, and with the index made to agree, by run.json's", async () => {
    const good = readFileSync(join(work, "private.cairn"));
    const at = good.indexOf(qcow2);
    assert.ok(at > 0 && good.indexOf(qcow2, at + 1) < 0, "the member's bytes, once");
    const forged = Buffer.from(good);
    forged[at + 100] = (forged[at + 100] ?? 0) ^ 0xff; // past the qcow2 header's magic: the file is still a qcow2
    writeFileSync(join(work, "flipped.cairn"), forged);
    const e1 = await refusal(openBundle(join(work, "flipped.cairn")));
    assert.equal(e1.code, "BUNDLE_INVALID");
    assert.match(e1.path ?? "", /^\/members\/\d+$/);

    // the index given the flipped member's digest (in place, same length): then only run.json's digest refuses it
    const oldHex = sha256(qcow2).slice(7);
    const newHex = sha256(forged.subarray(at, at + qcow2.length)).slice(7);
    // the index is the tar's first member: its bytes follow the first 512-byte header, its size in octal at 124
    const indexEnd = 512 + Number.parseInt(forged.subarray(124, 136).toString("latin1").replace(/\0.*$/, "").trim(), 8);
    assert.match(forged.subarray(0, 100).toString("latin1"), /^cairn-bundle\.json\0/);
    const i = forged.indexOf(oldHex, 512);
    assert.ok(i > 0 && i < indexEnd && forged.indexOf(oldHex, i + 1) > indexEnd, "the old digest once in the index (and again in run.json)");
    forged.write(newHex, i, "latin1");
    writeFileSync(join(work, "agreeing.cairn"), forged);
    const e2 = await refusal(importBundle(join(work, "agreeing.cairn"), home("c")));
    assert.equal(e2.code, "BUNDLE_INVALID");
    assert.equal(e2.path, "run.json#/checkpoints/file/sha256");
    assert.equal(existsSync(join(work, "c", "runs")), false, "nothing imported");
  });

  it("a qcow2 naming a host file (a backing file), run.json made to agree, is refused at import, nothing imported (control: the recorded one imports, test 1)", async () => {
    const file = join(runDir, CHECKPOINT_FILE);
    const manifest = join(runDir, "run.json");
    const saved = readFileSync(manifest);
    writeFileSync(join(work, "host-secret"), Buffer.alloc(1024 * 1024, 7));
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", "-b", join(work, "host-secret"), "-F", "raw", file, "1M"]);
    const forged = readFileSync(file);
    const m = JSON.parse(saved.toString("utf8"));
    m.checkpoints.file = { sha256: sha256(forged), size: forged.length };
    writeFileSync(manifest, JSON.stringify(m));
    try {
      // held in memory by the import (a small member): the same header check as a large spilled one
      const b = writeRunBundle({ runDir, storeDir, kit, out: join(work, "backing.cairn"), includePrivate: true });
      assert.ok(b.members.some((x) => x.path === `private/${CHECKPOINT_FILE}` && x.size < 4 * 1024 * 1024));
      const e = await refusal(importBundle(b.file, home("backing")));
      assert.equal(e.code, "BUNDLE_INVALID");
      assert.equal(e.path, "run.json#/checkpoints/file");
      assert.match(e.message, /backing file/);
      assert.equal(existsSync(join(work, "backing", "runs")), false, "nothing imported");
    } finally {
      writeFileSync(manifest, saved);
      writeFileSync(file, qcow2);
    }
  });

  it("a qcow2 in a bundle whose run recorded no checkpoints is refused, naming the member (control: the bundle rebuilt without it imports)", async () => {
    const plain = await openBundle(join(work, "plain.cairn"));
    const files = new Map<string, Uint8Array>();
    for (const [p, b] of plain.members) if (p !== "cairn-bundle.json") files.set(p, Buffer.from(b));
    const index = JSON.parse(Buffer.from(plain.index).toString("utf8"));
    plain.dispose();
    const m = JSON.parse(Buffer.from(files.get("run/run.json")!).toString("utf8"));
    delete m.checkpoints;
    files.set("run/run.json", Buffer.from(JSON.stringify(m)));
    const tar = (withQcow2: boolean): string => {
      const all = new Map(files);
      if (withQcow2) all.set(`private/${CHECKPOINT_FILE}`, qcow2);
      const paths = [...all.keys()].sort();
      index.members = paths.map((p) => ({ path: p, sha256: sha256(all.get(p)!), size: all.get(p)!.length }));
      const dirs = new Set<string>();
      for (const p of paths) for (let i = 1; i < p.split("/").length; i++) dirs.add(p.split("/").slice(0, i).join("/"));
      const entries: TarEntry[] = [
        { type: "file", path: "cairn-bundle.json", mode: 0o644, data: Buffer.from(`${JSON.stringify(index, null, 1)}\n`) },
        ...[...dirs].sort().map((d): TarEntry => ({ type: "dir", path: d, mode: 0o755 })),
        ...paths.map((p): TarEntry => ({ type: "file", path: p, mode: 0o644, data: Buffer.from(all.get(p)!) })),
      ];
      const out = join(work, withQcow2 ? "stray.cairn" : "nostray.cairn");
      writeFileSync(out, writeTar(entries));
      return out;
    };
    const e = await refusal(importBundle(tar(true), home("d")));
    assert.equal(e.code, "BUNDLE_INVALID");
    assert.equal(e.path, `/private/${CHECKPOINT_FILE}`);
    assert.match(e.message, /recorded no checkpoints/, "refused for what it is, not as a member outside every place");
    const control = await importBundle(tar(false), home("e"));
    assert.equal(control.manifest.checkpoints, undefined);
  });
});
