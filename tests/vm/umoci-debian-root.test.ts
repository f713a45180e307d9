/**
 * An upstream-style Debian root packed by umoci as umoci writes it (issue 9,
 * item 3, "done when" without a mirror): base-files and busybox-static as
 * downloaded by apt-get (checked by the digest apt's index names), unpacked
 * with `dpkg-deb -x` into a root directory, with what mmdebstrap's roots
 * and Debian's ping carry planted in it: a character device /dev/null, the
 * standard /dev symlinks (fd, stdin, stdout, stderr) as mmdebstrap writes them, a
 * FIFO, an empty /dev/pts, and /usr/bin/ping with a file capability
 * (`security.capability`, cap_net_raw). Packed by `umoci init`, `new`,
 * `unpack`, a copy into the bundle's rootfs and `umoci repack`: the index
 * descriptor has no platform and the config no command.
 *
 * `checkWorkload` lists every problem with the policy that admits it; with
 * exactly those policies and a spec launch (`busybox sh -c 'cat
 * /etc/debian_version; ls /usr/bin | wc -l'`) the root assembles, runs on a
 * root disk and replays twice with the same outcome. The expected lines come
 * from the unpacked root, read on the host. Control: the strict spec is refused.
 * The same for python3-minimal and its dependencies (the done-when's
 * `python3 -c 'import hashlib; print(hashlib.sha256(b"x").hexdigest())'`).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { isCairnError } from "../../src/core/index.ts";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { checkWorkload } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { debianMissing, debianPackage } from "./fixtures/debian.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const isRoot = process.getuid?.() === 0;
const umociMissing = spawnSync("umoci", ["--version"]).error === undefined ? undefined : "umoci (apt-get install umoci)";
const SKIP = VM_SKIP || needs(debianMissing() ?? umociMissing ?? (isRoot ? undefined : "root (mknod, security.capability and root-owned files)"));
const SCRIPT = "cat /etc/debian_version; ls /usr/bin | wc -l; readlink /dev/stdout";
const APPLETS = ["cat", "ls", "readlink", "sh", "wc"];
/** A VFS_CAP_REVISION_2 capability xattr: cap_net_raw (bit 13) permitted and effective, as `setcap cap_net_raw+ep` writes it. */
const CAP_NET_RAW = Buffer.from([0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

function run(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** The root directory: two packages unpacked, the applet links, and the planted device, FIFO, empty dir and capability. */
function debianRoot(dir: string): void {
  for (const p of ["base-files", "busybox-static"]) run("dpkg-deb", ["-x", debianPackage(p), dir]);
  for (const a of APPLETS) symlinkSync("/bin/busybox", join(dir, "usr", "bin", a));
  mkdirSync(join(dir, "dev", "pts"), { recursive: true });
  run("mknod", ["-m", "666", join(dir, "dev", "null"), "c", "1", "3"]);
  // the standard /dev symlinks, as mmdebstrap writes them into every root
  for (const [name, target] of [
    ["fd", "/proc/self/fd"],
    ["stdin", "/proc/self/fd/0"],
    ["stdout", "/proc/self/fd/1"],
    ["stderr", "/proc/self/fd/2"],
  ] as const)
    symlinkSync(target, join(dir, "dev", name));
  mkdirSync(join(dir, "run"), { recursive: true });
  run("mkfifo", [join(dir, "run", "initctl")]);
  writeFileSync(join(dir, "usr", "bin", "ping"), readFileSync(join(dir, "bin", "busybox")), { mode: 0o755 });
  run("python3", [
    "-c",
    "import os,sys; os.setxattr(sys.argv[1], 'security.capability', bytes.fromhex(sys.argv[2]))",
    join(dir, "usr", "bin", "ping"),
    CAP_NET_RAW.toString("hex"),
  ]);
}

/** Packs `rootfs` as umoci does (init, new, unpack, copy into the bundle, repack); the manifest digest of the one image. */
function umociPack(root: string, rootfs: string): string {
  const layout = join(root, "layout");
  run("umoci", ["init", "--layout", layout]);
  run("umoci", ["new", "--image", `${layout}:debian`]);
  run("umoci", ["unpack", "--image", `${layout}:debian`, join(root, "bundle")]);
  run("cp", ["-a", `${rootfs}/.`, join(root, "bundle", "rootfs")]);
  run("umoci", ["repack", "--image", `${layout}:debian`, join(root, "bundle")]);
  const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: { digest: string; platform?: unknown }[] };
  assert.equal(index.manifests[0]!.platform, undefined, "umoci writes no platform");
  return index.manifests[0]!.digest;
}

/** python3 and what it loads: Debian 12's python3-minimal and its dependencies, unpacked over base-files. */
const PYTHON = ["base-files", "libc6", "zlib1g", "libexpat1", "libssl3", "libpython3.11-minimal", "python3.11-minimal", "python3-minimal"];
const SHA256_X = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"; // sha256("x"), as sha256sum prints it

describe("a Debian root packed by umoci as it writes it", { skip: SKIP }, () => {
  const made: string[] = [];
  after(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  it("python3-minimal and its dependencies: check, then python3's sha256 with the suggested policies, recorded and replayed twice", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-umoci-python-"));
    made.push(root);
    const rootfs = join(root, "rootfs");
    mkdirSync(rootfs);
    for (const p of PYTHON) run("dpkg-deb", ["-x", debianPackage(p), rootfs]);
    const manifest = umociPack(root, rootfs);
    const spec = (policy: object) => ({
      schema: "cairn.workload/1",
      source: {
        oci: { layout: "./layout", manifest, launch: { args: ["/usr/bin/python3", "-c", 'import hashlib; print(hashlib.sha256(b"x").hexdigest())'] } },
      },
      policy,
      run: { root: "disk", steps: [{ action: "start" }, { action: "close-stdin" }], expect: [{ "exit-code": 0, "stdout-lines": [SHA256_X] }] },
    });
    writeFileSync(join(root, "strict.json"), JSON.stringify(spec({})));
    const found = await checkWorkload({ specPath: join(root, "strict.json") });
    assert.equal(found.admissible, true, JSON.stringify(found.problems));
    assert.equal(found.suggested.platform, "config");
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec(found.suggested)));
    const kit = await testKit();
    const storeDir = join(root, "store");
    const rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir: join(root, "runs"), kit, cairnVersion: "test" });
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation));
    for (let i = 0; i < 2; i++) assert.equal((await replayRun({ runDir: rec.runDir, storeDir, kit })).evaluation.outcome, rec.manifest.outcome);
  });

  it("check names every problem with its policy; with those policies and a spec launch it runs and replays twice", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-umoci-debian-"));
    made.push(root);
    const rootfs = join(root, "rootfs");
    mkdirSync(rootfs);
    debianRoot(rootfs);
    const version = readFileSync(join(rootfs, "etc", "debian_version"), "utf8").trim();
    const inUsrBin = readdirSync(join(rootfs, "usr", "bin")).length;
    const manifest = umociPack(root, rootfs);
    const spec = (policy: object) => ({
      schema: "cairn.workload/1",
      source: {
        oci: {
          layout: "./layout",
          manifest,
          launch: { args: ["/bin/busybox", "sh", "-c", SCRIPT], env: { PATH: "/usr/bin:/bin" } },
        },
      },
      policy,
      run: {
        root: "disk",
        steps: [{ action: "start" }, { action: "close-stdin" }],
        expect: [{ "exit-code": 0, "stdout-lines": [version, String(inUsrBin), "/proc/self/fd/1"] }],
      },
    });
    writeFileSync(join(root, "strict.json"), JSON.stringify(spec({})));
    const found = await checkWorkload({ specPath: join(root, "strict.json") });
    const named = (code: string, path: string) => found.problems.find((p) => p.code === code && p.path.endsWith(path));
    assert.equal(named("OCI_PLATFORM", "/platform")?.policy, "platform: config");
    assert.equal(named("TAR_UNSUPPORTED_TYPE", ":dev/null")?.policy, "devices: skip");
    assert.equal(named("TAR_UNSUPPORTED_TYPE", ":run/initctl")?.policy, "devices: skip");
    assert.equal(named("TAR_XATTR", ":usr/bin/ping")?.policy, "xattrs: drop", "umoci recorded the capability and check names it");
    assert.equal(found.admissible, true, JSON.stringify(found.problems));
    // what dpkg-deb -x kept of base-files' setgid /var/local decides whether setid: strip is needed too
    assert.deepEqual({ ...found.suggested, setid: undefined }, { platform: "config", devices: "skip", xattrs: "drop", setid: undefined });
    const kit = await testKit();
    const storeDir = join(root, "store");
    const runsDir = join(root, "runs");
    // control: the strict spec is refused before anything runs
    await assert.rejects(
      () => recordRun({ input: join(root, "strict.json"), storeDir, runsDir, kit, cairnVersion: "test" }),
      (e: unknown) => isCairnError(e) && e.code === "OCI_PLATFORM",
    );
    writeFileSync(join(root, "spec.json"), JSON.stringify(spec(found.suggested)));
    const said: string[] = [];
    const rec = await recordRun({ input: join(root, "spec.json"), storeDir, runsDir, kit, cairnVersion: "test", log: (l) => said.push(l) });
    assert.equal(rec.manifest.status, "passed", JSON.stringify(rec.evaluation));
    assert.ok(rec.manifest.vm.root_disk !== null);
    // the run says what its policies left out: the device node and the FIFO, and ping's capability
    assert.ok(said.includes("policy devices: skip left out 2 device node(s) and FIFO(s) (cairn workload check lists them)"), said.join("\n"));
    assert.ok(said.includes("policy xattrs: drop dropped the xattrs of 1 member(s) (cairn workload check lists them)"), said.join("\n"));
    for (let i = 0; i < 2; i++) {
      const r = await replayRun({ runDir: rec.runDir, storeDir, kit });
      assert.equal(r.evaluation.outcome, rec.manifest.outcome);
    }
  });
});
