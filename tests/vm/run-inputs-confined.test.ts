/**
 * Issue 31 case 1: a spec must not choose which host files cairn reads.
 * `run.inputs[].from` stays inside the spec's directory: an absolute path,
 * `..` above it, a symlink leading out (as the input, as a parent directory
 * of it, with an absolute or a climbing target) are each refused with
 * PATH_UNSAFE naming `/run/inputs/<i>/from`, and the secret's bytes are in
 * no result. Controls: relative inputs inside (also through an in-directory
 * symlink and a `..` that stays inside) read; the very same absolute and
 * climbing paths read once the user names a directory holding them
 * (`--inputs-root`, the scope's `root`). A directory swapped for a symlink
 * after the path was resolved (TOCTOU) is refused, not followed; control:
 * the unswapped path reads. `cairn run` refuses before a kit or a run
 * directory exists, and `--inputs-root` reaches the kit; `workload check`
 * lists the same refusal, and not under `--inputs-root`.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, renameSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readFileBounded } from "../../src/core/index.ts";
import { resolveBeneath, withBeneath, type HostScope } from "../../src/tree/index.ts";
import { checkWorkloadRun, readRunInputs, recordRun } from "../../src/vm/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";

const SECRET = "CAIRN-SECRET-MARKER-31\n";

/** <top>/outside/secret (what a spec must not read) and <top>/spec/ (the spec's directory, with data.txt and sub/). */
function world(): { top: string; spec: string; secret: string } {
  const top = mkdtempSync(join(tmpdir(), "cairn-inputs-confined-"));
  mkdirSync(join(top, "outside"));
  writeFileSync(join(top, "outside", "secret"), SECRET);
  const spec = join(top, "spec");
  mkdirSync(join(spec, "sub"), { recursive: true });
  writeFileSync(join(spec, "data.txt"), "data\n");
  writeFileSync(join(spec, "sub", "b.txt"), "b\n");
  return { top, spec, secret: join(top, "outside", "secret") };
}

const one = (from: string) => [{ from, to: "/in/x" }];
const bytesOf = (t: ReturnType<typeof readRunInputs>) => [...t.files.values()].map((b) => Buffer.from(b).toString());

describe("run.inputs: only beneath the spec's directory", () => {
  it("refuses an absolute path, `..` out, a symlink out (absolute or climbing target), a symlinked parent directory", () => {
    const w = world();
    symlinkSync(w.secret, join(w.spec, "abs-link"));
    symlinkSync("../outside/secret", join(w.spec, "up-link"));
    symlinkSync(join(w.top, "outside"), join(w.spec, "abs-dir"));
    symlinkSync("../outside", join(w.spec, "up-dir"));
    symlinkSync("../../outside", join(w.spec, "sub", "deep-dir"));
    for (const from of [
      w.secret,
      "/etc/passwd",
      "../outside/secret",
      "sub/../../outside/secret",
      "abs-link",
      "up-link",
      "abs-dir/secret",
      "up-dir/secret",
      "up-dir",
      "sub/deep-dir/secret",
    ]) {
      const e = assertCode(() => readRunInputs(one(from), w.spec), "PATH_UNSAFE", "/run/inputs/0/from");
      assert.ok(!e.message.includes(SECRET.trim()));
    }
    // a symlink loop is the hop limit, naming the field (not the in-root path)
    symlinkSync("loop", join(w.spec, "loop"));
    assert.match(assertCode(() => readRunInputs(one("loop"), w.spec), "LIMIT_EXCEEDED", "/run/inputs/0/from").message, /tree\.max_symlink_hops/);
    // the field is the input's own index
    assertCode(() => readRunInputs([{ from: "data.txt", to: "/in/a" }, ...one("up-link")], w.spec), "PATH_UNSAFE", "/run/inputs/1/from");
  });

  it("control: relative inputs inside read, also through a symlink and a `..` that stay inside", () => {
    const w = world();
    symlinkSync("data.txt", join(w.spec, "alias"));
    symlinkSync("sub", join(w.spec, "sub-alias"));
    assert.deepEqual(bytesOf(readRunInputs(one("data.txt"), w.spec)), ["data\n"]);
    assert.deepEqual(bytesOf(readRunInputs(one("./sub/../data.txt"), w.spec)), ["data\n"]);
    assert.deepEqual(bytesOf(readRunInputs(one("alias"), w.spec)), ["data\n"]);
    assert.deepEqual(bytesOf(readRunInputs(one("sub-alias/b.txt"), w.spec)), ["b\n"]);
    assert.deepEqual(bytesOf(readRunInputs(one("sub-alias"), w.spec)), ["b\n"]);
  });

  it("control: with --inputs-root the same absolute and climbing paths read; outside that root they are still refused", () => {
    const w = world();
    symlinkSync("../outside/secret", join(w.spec, "up-link"));
    const scope = { base: w.spec, root: w.top };
    for (const from of [w.secret, "../outside/secret", "up-link"]) assert.deepEqual(bytesOf(readRunInputs(one(from), scope)), [SECRET]);
    assertCode(() => readRunInputs(one("/etc/passwd"), scope), "PATH_UNSAFE", "/run/inputs/0/from");
    assertCode(() => readRunInputs(one("../../x"), scope), "PATH_UNSAFE", "/run/inputs/0/from");
    assertCode(() => readRunInputs(one(`${w.top}/../x`), scope), "PATH_UNSAFE", "/run/inputs/0/from");
    // a root that does not hold the spec: relative paths would start outside it
    assertCode(() => readRunInputs(one("data.txt"), { base: w.spec, root: join(w.top, "outside") }), "PATH_UNSAFE", "/run/inputs/0/from");
  });

  it("a directory swapped for a symlink after the path was resolved is refused, not followed (control: unswapped reads)", () => {
    const w = world();
    mkdirSync(join(w.spec, "d"));
    writeFileSync(join(w.spec, "d", "secret"), "inside\n");
    const scope: HostScope = { root: w.spec, base: w.spec, absolute: false, rootName: "the spec's directory", flag: "--inputs-root DIR" };
    const read = (p: NonNullable<ReturnType<typeof resolveBeneath>>) =>
      withBeneath(p, (at) => readFileBounded(at, 1024, "test", { notRegular: "SOURCE_NOT_REGULAR" }).toString());
    const p = resolveBeneath(scope, "d/secret", "/f")!;
    assert.equal(read(p), "inside\n");
    renameSync(join(w.spec, "d"), join(w.spec, "d-was"));
    symlinkSync("../outside", join(w.spec, "d"));
    assertCode(() => read(p), "ROOT_UNSAFE");
    // the last component swapped: the reader's O_NOFOLLOW refuses it
    const q = resolveBeneath(scope, "data.txt", "/f")!;
    renameSync(join(w.spec, "data.txt"), join(w.spec, "data-was"));
    symlinkSync(w.secret, join(w.spec, "data.txt"));
    assertCode(() => read(q), "SOURCE_NOT_REGULAR");
  });
});

describe("cairn run: a spec's inputs outside its directory", () => {
  it("are refused before a kit or run directory exists; --inputs-root naming a directory holding them reaches the kit", async () => {
    const w = world();
    const specPath = join(w.spec, "spec.json");
    writeFileSync(
      specPath,
      JSON.stringify({
        schema: "cairn.workload/1",
        source: { binary: { path: "nothing-here", user: "1000:1000" } },
        run: { steps: [{ action: "start" }], inputs: [{ from: w.secret, to: "/in/x" }] },
      }),
    );
    const runsDir = join(w.top, "runs");
    const kit = async () => {
      throw new Error("the kit was asked for");
    };
    const base = { input: specPath, storeDir: join(w.top, "store"), runsDir, kit, cairnVersion: "test" };
    await assertCodeAsync(() => recordRun(base), "PATH_UNSAFE", "/run/inputs/0/from");
    assert.ok(!existsSync(runsDir));
    await assert.rejects(() => recordRun({ ...base, inputsRoot: w.top }), /the kit was asked for/);
  });
});

describe("cairn workload check: the same scope as run", () => {
  it("lists an input outside the spec's directory as PATH_UNSAFE; not with --inputs-root (control)", async () => {
    const w = world();
    const specPath = join(w.spec, "spec.json");
    writeFileSync(
      specPath,
      JSON.stringify({
        schema: "cairn.workload/1",
        source: { binary: { path: "nothing-here", user: "1000:1000" } },
        run: { steps: [{ action: "start" }], inputs: [{ from: w.secret, to: "/in/x" }] },
      }),
    );
    const unsafe = (r: Awaited<ReturnType<typeof checkWorkloadRun>>) => r.problems.filter((p) => p.code === "PATH_UNSAFE" && p.path === "/run/inputs/0/from");
    assert.equal(unsafe(await checkWorkloadRun({ specPath })).length, 1);
    assert.equal(unsafe(await checkWorkloadRun({ specPath, inputsRoot: w.top })).length, 0);
  });
});
