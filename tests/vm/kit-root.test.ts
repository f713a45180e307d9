/**
 * The guest kit is read through the owned-root walker (issue 31, case 7): a
 * symlink planted anywhere inside the kit — `kernels`, `kernels/sha256`,
 * `agents`, `agents/sha256`, `kit.json`, the kernel, a module or the agent
 * object — is refused as ROOT_UNSAFE naming the kit path, never followed,
 * even when it points at bytes with the right digest. The control is the
 * intact kit, which loads and gives every object. The kit here is made at
 * test time from random bytes (no QEMU needed: loading the kit and reading
 * its objects is what a run and a replay do before QEMU starts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, renameSync, symlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { openRoot, sha256 } from "../../src/core/index.ts";
import { KIT_ROOT, loadKit, putKitObject, readKitObject, writeKit, type Kit } from "../../src/vm/kit.ts";
import { KIT_MODULES } from "../../src/vm/kernel.ts";
import { assertCode } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";

function makeKit(): Kit {
  const dir = join(mkdtempSync(join(tmpdir(), "cairn-kitroot-")), "kit");
  openRoot(dir, KIT_ROOT, { create: true });
  const kit: Kit = {
    dir,
    qemu: "7.2.0 (test)",
    kernel: {
      digest: putKitObject(dir, "kernels", randomBytes(64)),
      package: "linux-image-test.deb",
      file: "boot/vmlinuz-test",
      modules: KIT_MODULES.map(([name]) => ({ name, digest: putKitObject(dir, "kernels", randomBytes(32)) })),
    },
    agent: { digest: putKitObject(dir, "agents", randomBytes(48)), source: sha256(Buffer.from("src")), compiler: "gcc (test)" },
  };
  writeKit(kit);
  return kit;
}

/** What a run or a replay reads of the kit before QEMU starts: kit.json, the kernel, every module, the agent. */
function readWholeKit(dir: string): void {
  const kit = loadKit(dir);
  assert.ok(kit !== undefined, "the kit loads");
  readKitObject(dir, "kernels", kit.kernel.digest, "/vm/kernel");
  for (const [i, m] of kit.kernel.modules.entries()) readKitObject(dir, "kernels", m.digest, `/vm/kernel_modules/${i}`);
  readKitObject(dir, "agents", kit.agent.digest, "/vm/agent");
}

const hexOf = (d: string) => d.slice("sha256:".length);

/** Replaces `rel` inside the kit by a symlink to a copy of it elsewhere (same bytes, so only the symlink is wrong). */
function plantSymlink(dir: string, rel: string): void {
  const elsewhere = join(mkdtempSync(join(tmpdir(), "cairn-kit-elsewhere-")), "copy");
  cpSync(join(dir, rel), elsewhere, { recursive: true });
  renameSync(join(dir, rel), join(mkdtempSync(join(tmpdir(), "cairn-kit-moved-")), "x"));
  symlinkSync(elsewhere, join(dir, rel));
}

describe("the guest kit is read without following a symlink inside it (issue 31, case 7)", () => {
  it("control: the intact kit loads and gives its kernel, every module and the agent", () => {
    const kit = makeKit();
    readWholeKit(kit.dir);
  });

  const cases: Array<[string, (k: Kit) => string]> = [
    ["kernels", () => "kernels"],
    ["kernels/sha256", () => "kernels/sha256"],
    ["agents", () => "agents"],
    ["agents/sha256", () => "agents/sha256"],
    ["kit.json", () => "kit.json"],
    ["the kernel object", (k) => `kernels/sha256/${hexOf(k.kernel.digest)}`],
    ["a module object", (k) => `kernels/sha256/${hexOf(k.kernel.modules.at(-1)!.digest)}`],
    ["the agent object", (k) => `agents/sha256/${hexOf(k.agent.digest)}`],
  ];
  for (const [what, relOf] of cases) {
    it(`a symlink planted at ${what} is ROOT_UNSAFE naming it, though it points at the same bytes`, () => {
      const kit = makeKit();
      readWholeKit(kit.dir); // control: this very kit reads before the plant
      const rel = relOf(kit);
      plantSymlink(kit.dir, rel);
      assertCode(() => readWholeKit(kit.dir), "ROOT_UNSAFE", join(kit.dir, rel));
    });
  }

  it("a FIFO planted at kit.json or at an object is ROOT_UNSAFE at once (never opened for a blocking read)", () => {
    const kit = makeKit();
    for (const relOf of [() => "kit.json", (k: Kit) => `agents/sha256/${hexOf(k.agent.digest)}`]) {
      const k = makeKit();
      const rel = relOf(k);
      renameSync(join(k.dir, rel), join(mkdtempSync(join(tmpdir(), "cairn-kit-moved-")), "x"));
      assert.equal(spawnSync("mkfifo", [join(k.dir, rel)]).status, 0);
      assertCode(() => readWholeKit(k.dir), "ROOT_UNSAFE", join(k.dir, rel));
    }
    readWholeKit(kit.dir); // control
  });

  it("writing into a kit whose kernels directory is a symlink is refused too, and nothing is written through it", () => {
    const kit = makeKit();
    plantSymlink(kit.dir, "kernels");
    assertCode(() => putKitObject(kit.dir, "kernels", randomBytes(8)), "ROOT_UNSAFE", join(kit.dir, "kernels"));
  });

  it("an absent object is still VM_MISMATCH naming the field, and an absent kit.json is no kit (controls for the refusals above)", () => {
    const kit = makeKit();
    assertCode(() => readKitObject(kit.dir, "kernels", sha256(Buffer.from("absent")), "/vm/kernel"), "VM_MISMATCH", "/vm/kernel");
    const empty = join(mkdtempSync(join(tmpdir(), "cairn-kit-empty-")), "kit");
    mkdirSync(empty);
    assert.equal(loadKit(empty), undefined);
  });
});

const probe = spawnSync("unshare", ["-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none "$d" && mount -o remount,ro "$d"'], {
  encoding: "utf8",
});
const NS_SKIP = needs(probe.status === 0 ? undefined : `unshare -rm with a tmpfs mount (user namespaces): ${probe.stderr.trim().slice(0, 120)}`);

/** Runs the child's modes in order inside one namespace with a tmpfs of `size` at a fresh mount point; `ro` remounts it read-only after the first. */
function kitOnTmpfs(size: string, modes: string[][], ro: boolean): Array<{ ok?: boolean; code?: string; message?: string }> {
  const mount = mkdtempSync(join(tmpdir(), "cairn-kit-media-"));
  const child = join(import.meta.dirname, "fixtures", "kit-media-child.ts");
  const run = (m: string[]) => [process.execPath, "--import", "tsx", child, m[0]!, mount, ...m.slice(1)].map((w) => `'${w}'`).join(" ");
  const lines = [`mount -t tmpfs -o size=${size} none '${mount}' || exit 90`, run(modes[0]!)];
  if (ro) lines.push(`mount -o remount,ro '${mount}' || exit 91`);
  for (const m of modes.slice(1)) lines.push(run(m));
  const r = spawnSync("unshare", ["-rm", "sh", "-c", lines.join("\n")], { encoding: "utf8", cwd: join(import.meta.dirname, "..", "..") });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { ok?: boolean; code?: string; message?: string });
}

describe("a kit on read-only or full media (issue 31, fault campaign)", { skip: NS_SKIP }, () => {
  it("a read-only kit loads and gives every object; writing an object into it is IO_ERROR naming the read-only file system (control: the same write before the remount)", () => {
    const [made, read, put] = kitOnTmpfs("4m", [["make"], ["read"], ["put", "100"]], true);
    assert.deepEqual(made, { ok: true });
    assert.deepEqual(read, { ok: true });
    assert.equal(put!.code, "IO_ERROR", JSON.stringify(put));
    assert.match(put!.message!, /file system mounted at .* is read-only \(EROFS\)/);
    assert.deepEqual(kitOnTmpfs("4m", [["make"], ["put", "100"]], false)[1], { ok: true }, "control: writable");
  });

  it("writing an object into a full kit file system is IO_ERROR naming it as full (ENOSPC), and the kit still loads (control: a small object fits)", () => {
    const [made, big, read, small] = kitOnTmpfs("256k", [["make"], ["put", String(1024 * 1024)], ["read"], ["put", "100"]], false);
    assert.deepEqual(made, { ok: true });
    assert.equal(big!.code, "IO_ERROR", JSON.stringify(big));
    assert.match(big!.message!, /is full \(ENOSPC\)/);
    assert.deepEqual(read, { ok: true });
    assert.deepEqual(small, { ok: true });
  });
});
