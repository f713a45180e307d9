/**
 * A store on read-only media (issue 31, case 5): `workload verify`,
 * `workload show` and `store du` read it without writing a byte (no staging
 * directory, no root record, no memo: the memo is skipped with a note), and
 * the commands that must write (`workload assemble`, `store gc`, `pull`)
 * fail as IO_ERROR naming the read-only file system, never INTERNAL.
 *
 * The file system is real: a small tmpfs mounted in a user and mount
 * namespace of the test's own (`unshare -rm`, no root needed), filled by
 * `cairn workload assemble` and then `mount -o remount,ro`. Every command is
 * the built CLI (`bin/cairn.js`), run inside that namespace; the control is
 * the same commands on the same store before the remount. The EACCES case
 * (a store this user may not write, as a non-root user) runs the same
 * commands as `nobody` on a store it owns made read-only with chmod.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { ociWorkspace, type Workspace } from "../workload/fixtures/workspace.ts";

const probe = spawnSync("unshare", ["-rm", "sh", "-c", 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none "$d" && mount -o remount,ro "$d"'], {
  encoding: "utf8",
});
const NS_SKIP = needs(
  probe.status === 0 ? undefined : `unshare -rm with a tmpfs mount and a read-only remount (user namespaces): ${probe.stderr.trim().slice(0, 120)}`,
);
const CLI = join(PROJECT_ROOT, "bin", "cairn.js");

interface Outcome {
  readonly code: number;
  readonly doc: Record<string, unknown>;
  readonly stderr: string;
}

/**
 * Runs `steps` (name → cairn arguments) in order inside one namespace whose
 * tmpfs is mounted at `mount`; `remountAfter` names the step after which the
 * tmpfs is remounted read-only. Each step's exit code, stdout and stderr land
 * in `out` (outside the tmpfs).
 */
function inNamespace(mount: string, steps: Array<[string, string[]]>, remountAfter: string | undefined, size = "64m"): Map<string, Outcome> {
  const out = mkdtempSync(join(tmpdir(), "cairn-ro-out-"));
  const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
  const lines = [`set -u`, `mount -t tmpfs -o size=${size},mode=0700 none ${q(mount)} || exit 90`];
  for (const [name, args] of steps) {
    lines.push(
      `${q(process.execPath)} ${q(CLI)} ${args.map(q).join(" ")} >${q(join(out, `${name}.out`))} 2>${q(join(out, `${name}.err`))}; echo $? >${q(join(out, `${name}.rc`))}`,
    );
    if (name === remountAfter) lines.push(`mount -o remount,ro ${q(mount)} || exit 91`);
  }
  const r = spawnSync("unshare", ["-rm", "sh", "-c", lines.join("\n")], { encoding: "utf8", timeout: 600_000 });
  assert.equal(r.status, 0, `the namespace script: ${r.stderr}`);
  const results = new Map<string, Outcome>();
  for (const [name] of steps) {
    const stdout = readFileSync(join(out, `${name}.out`), "utf8");
    let doc: Record<string, unknown> = {};
    try {
      doc = JSON.parse(stdout) as Record<string, unknown>;
    } catch {
      doc = { unparsed: stdout };
    }
    results.set(name, { code: Number(readFileSync(join(out, `${name}.rc`), "utf8")), doc, stderr: readFileSync(join(out, `${name}.err`), "utf8") });
  }
  return results;
}

function errorOf(o: Outcome): { code: string; message: string; path?: string } {
  return (o.doc as { error: { code: string; message: string; path?: string } }).error;
}

describe("a store on a read-only file system (issue 31, case 5)", { skip: NS_SKIP }, () => {
  let ws: Workspace;
  let results: Map<string, Outcome>;
  let mount: string;
  let archive: string;

  before(() => {
    ws = ociWorkspace();
    mount = mkdtempSync(join(tmpdir(), "cairn-ro-mnt-"));
    const store = join(mount, "store");
    const keys = mkdtempSync(join(tmpdir(), "cairn-ro-keys-"));
    const layoutOut = mkdtempSync(join(tmpdir(), "cairn-ro-pulled-"));
    archive = join(ws.dir, "image.tar");
    assert.equal(spawnSync("tar", ["-cf", archive, "-C", join(ws.dir, "image"), "."]).status, 0);
    const lock = ws.lockPath;
    const verify = ["workload", "verify", lock, "--store", store, "--keys", keys, "--json"];
    const steps: Array<[string, string[]]> = [
      ["assemble", ["workload", "assemble", ws.specPath, "--store", store, "--lock-out", lock, "--keys", keys, "--json"]],
      ["rw-verify", verify],
      ["rw-verify-full", [...verify, "--full"]],
      ["rw-show", ["workload", "show", lock, "--store", store, "--json"]],
      ["rw-du", ["store", "du", "--store", store, "--json"]],
      ["rw-gc", ["store", "gc", "--store", store, "--dry-run", "--json"]],
      ["ro-verify", verify],
      ["ro-verify-full", [...verify, "--full"]],
      ["ro-show", ["workload", "show", lock, "--store", store, "--json"]],
      ["ro-du", ["store", "du", "--store", store, "--json"]],
      ["ro-assemble", ["workload", "assemble", ws.specPath, "--store", store, "--lock-out", join(ws.dir, "again.lock.json"), "--keys", keys, "--json"]],
      ["ro-gc", ["store", "gc", "--store", store, "--json"]],
      ["ro-pull", ["pull", `oci-archive:${archive}`, "--store", store, "--oci", join(layoutOut, "layout"), "--json"]],
    ];
    results = inNamespace(mount, steps, "rw-gc");
  });

  it("control: on the writable tmpfs, assemble, verify (memo written, then used), show, du and gc all succeed", () => {
    for (const name of ["assemble", "rw-verify", "rw-verify-full", "rw-show", "rw-du", "rw-gc"]) {
      const o = results.get(name)!;
      assert.equal(o.code, 0, `${name}: ${o.stderr} ${JSON.stringify(o.doc)}`);
    }
  });

  it("verify, verify --full, show and du succeed on the read-only store, and the memo is skipped with a note", () => {
    for (const name of ["ro-verify", "ro-verify-full", "ro-show", "ro-du"]) {
      const o = results.get(name)!;
      assert.equal(o.code, 0, `${name}: ${o.stderr} ${JSON.stringify(o.doc)}`);
    }
    const full = results.get("ro-verify-full")!.doc as { derivation?: string; memo_written?: boolean; memo_skipped?: string };
    assert.equal(full.derivation, "re-derived");
    assert.equal(full.memo_written, false);
    assert.match(full.memo_skipped ?? "", /read-only/);
    const rw = results.get("rw-verify-full")!.doc as { memo_written?: boolean; memo_skipped?: string };
    assert.equal(rw.memo_written, true, "control: on the writable store the same verify writes its memo");
    assert.equal(rw.memo_skipped, undefined);
  });

  it("assemble, gc and pull fail as IO_ERROR naming the read-only file system, never INTERNAL", () => {
    for (const name of ["ro-assemble", "ro-gc", "ro-pull"]) {
      const o = results.get(name)!;
      assert.equal(o.code, 1, `${name}: ${o.stderr} ${JSON.stringify(o.doc)}`);
      const e = errorOf(o);
      assert.equal(e.code, "IO_ERROR", `${name}: ${JSON.stringify(e)}`);
      assert.match(e.message, /file system mounted at .* is read-only \(EROFS\)/, name);
      assert.ok(e.message.includes(mount), `${name} names the mount point ${mount}: ${e.message}`);
    }
  });
});

describe("a store on a full file system (issue 31, fault campaign)", { skip: NS_SKIP }, () => {
  it("assemble into a store with no room is IO_ERROR naming the full file system (ENOSPC), and the store stays readable with nothing half-published", () => {
    const ws = ociWorkspace();
    const mount = mkdtempSync(join(tmpdir(), "cairn-full-mnt-"));
    const store = join(mount, "store");
    const keys = mkdtempSync(join(tmpdir(), "cairn-full-keys-"));
    const r = inNamespace(
      mount,
      [
        ["assemble", ["workload", "assemble", ws.specPath, "--store", store, "--lock-out", ws.lockPath, "--keys", keys, "--json"]],
        ["du", ["store", "du", "--store", store, "--json"]],
        ["gc", ["store", "gc", "--store", store, "--json"]],
      ],
      undefined,
      "256k", // the hello image's layer alone is larger
    );
    const a = r.get("assemble")!;
    assert.equal(a.code, 1, `assemble: ${a.stderr} ${JSON.stringify(a.doc)}`);
    const e = errorOf(a);
    assert.equal(e.code, "IO_ERROR", JSON.stringify(e));
    assert.match(e.message, /ENOSPC/);
    for (const name of ["du", "gc"])
      assert.equal(r.get(name)!.code, 0, `${name} after the failure: ${r.get(name)!.stderr} ${JSON.stringify(r.get(name)!.doc)}`);
    // nothing of the failed assembly is left: no object, entry or pack published, no staging leftover
    const du = r.get("du")!.doc as { total_bytes?: number; staging?: unknown };
    assert.equal(du.total_bytes, 0, JSON.stringify(du));
    // control: the same assembly with room succeeds (the writable tmpfs of the first describe assembles this very image)
  });
});

const ROOT_SKIP = needs(process.getuid?.() === 0 ? undefined : "root, to run the CLI as another user (nobody) on a store that user may not write");
const NOBODY = 65534;

describe("a store this user may not write (EACCES, issue 31 case 5)", { skip: ROOT_SKIP }, () => {
  /** The built CLI as `nobody` (uid and gid 65534, no groups). */
  function asNobody(args: string[], home: string): Outcome {
    const r = spawnSync("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, CLI, ...args], {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, LC_ALL: "C" },
      timeout: 300_000,
    });
    let doc: Record<string, unknown>;
    try {
      doc = JSON.parse(r.stdout) as Record<string, unknown>;
    } catch {
      doc = { unparsed: r.stdout };
    }
    return { code: r.status ?? -1, doc, stderr: r.stderr };
  }

  it("verify and show read it, assemble and gc are IO_ERROR naming the permission (control: the same commands while it is writable)", () => {
    // nobody must reach the files this test makes: under the test command the
    // temporary directory is the run's own, 0700 and root's, so it is opened
    // for traversal (never for listing) before anything is made in it
    const tmp = tmpdir();
    if (statSync(tmp).uid === process.getuid?.()) chmodSync(tmp, (statSync(tmp).mode & 0o7777) | 0o711);
    const ws = ociWorkspace();
    spawnSync("chmod", ["-R", "a+rX", ws.dir]);
    const home = mkdtempSync(join(tmpdir(), "cairn-nobody-"));
    chmodSync(home, 0o755);
    chownSync(home, NOBODY, NOBODY);
    const store = join(home, "store");
    const keys = join(home, "keys");
    const lock = join(home, "spec.lock.json");
    const verify = ["workload", "verify", lock, "--store", store, "--keys", keys, "--full", "--json"];
    const assemble = ["workload", "assemble", ws.specPath, "--store", store, "--lock-out", lock, "--keys", keys, "--json"];
    for (const [name, args] of [
      ["assemble", assemble],
      ["verify", verify],
      ["show", ["workload", "show", lock, "--store", store, "--json"]],
    ] as const) {
      const o = asNobody([...args], home);
      assert.equal(o.code, 0, `control ${name}: ${o.stderr} ${JSON.stringify(o.doc)}`);
    }
    // the store (not its parent, not the lock) becomes read-only for its owner
    assert.equal(spawnSync("chmod", ["-R", "a-w", store]).status, 0);
    const v = asNobody(verify, home);
    assert.equal(v.code, 0, `verify: ${v.stderr} ${JSON.stringify(v.doc)}`);
    assert.equal(v.doc.memo_written, false);
    assert.match(String(v.doc.memo_skipped), /may not write there \(EACCES\)/);
    const show = asNobody(["workload", "show", lock, "--store", store, "--json"], home);
    assert.equal(show.code, 0, `show: ${show.stderr}`);
    for (const [name, args] of [
      ["assemble", assemble],
      ["gc", ["store", "gc", "--store", store, "--json"]],
    ] as const) {
      const o = asNobody([...args], home);
      assert.equal(o.code, 1, `${name}: ${o.stderr} ${JSON.stringify(o.doc)}`);
      const e = errorOf(o);
      assert.equal(e.code, "IO_ERROR", `${name}: ${JSON.stringify(e)}`);
      assert.match(e.message, /may not write there \(EACCES\)/, name);
      assert.equal(e.path, store, name);
    }
  });
});
