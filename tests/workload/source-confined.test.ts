/**
 * Issue 31 case 1d: a spec's source paths are host reads a spec must not
 * choose. `source.binary.path`, `source.oci.layout` and a lockfile spec's
 * `source.lockfile.path` stay beneath the spec's directory: an absolute
 * path, `..` above it, a symlink leading out, and a symlinked parent
 * directory are each refused with PATH_UNSAFE naming the field, by
 * assembly, by `workload check`, and by `cairn run` before a kit or run
 * directory exists (so no bundle can carry the outside bytes). Controls: the
 * same source inside the spec's directory assembles; the very same outside
 * paths assemble once the user names a directory holding them
 * (`--inputs-root`, `hostRoot`), except a symlink with an absolute target,
 * which stays refused (the resolver's "beneath" mode, as for run.inputs).
 */
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { checkWorkloadRun, readLockfileSpec, recordRun } from "../../src/vm/index.ts";
import { assembleWorkload } from "../../src/workload/index.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";
import { binarySpec, helloImage } from "./fixtures/workspace.ts";
import { writeOciLayout } from "./fixtures/oci-writer.ts";
import { buildProgram } from "./fixtures/static-program.ts";

interface World {
  readonly top: string;
  readonly spec: string;
  readonly manifest: string;
}

/** <top>/outside/{hello,image} (a private program and image layout) and <top>/spec/ (the spec's directory, with links out). */
function world(): World {
  const top = mkdtempSync(join(tmpdir(), "cairn-source-confined-"));
  const outside = join(top, "outside");
  mkdirSync(outside);
  copyFileSync(buildProgram("static"), join(outside, "hello"));
  const manifest = writeOciLayout(join(outside, "image"), helloImage()).manifestDigest;
  const spec = join(top, "spec");
  mkdirSync(join(spec, "sub"), { recursive: true });
  symlinkSync(join(outside, "hello"), join(spec, "abs-hello"));
  symlinkSync("../outside/hello", join(spec, "up-hello"));
  symlinkSync(join(outside, "image"), join(spec, "abs-image"));
  symlinkSync("../outside/image", join(spec, "up-image"));
  symlinkSync(outside, join(spec, "abs-dir"));
  symlinkSync("../../outside", join(spec, "sub", "up-dir"));
  return { top, spec, manifest };
}

const ociSpec = (layout: string, manifest: string) => JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout, manifest } } });

function attacks(w: World, name: "hello" | "image"): string[] {
  return [
    join(w.top, "outside", name),
    `../outside/${name}`,
    `sub/../../outside/${name}`,
    `abs-${name}`,
    `up-${name}`,
    `abs-dir/${name}`,
    `sub/up-dir/${name}`,
  ];
}

let n = 0;
function writeSpec(w: World, text: string): string {
  const p = join(w.spec, `spec-${n++}.json`);
  writeFileSync(p, text);
  return p;
}

const assemble = (w: World, specPath: string, hostRoot?: string) =>
  assembleWorkload({
    specPath,
    storeDir: join(w.top, "store"),
    lockOut: join(w.top, `lock-${n++}.json`),
    cairnVersion: "test",
    now: () => new Date(0),
    hostRoot,
  });

describe("a spec's source paths: only beneath the spec's directory", () => {
  const fields = [
    { field: "/source/binary/path", name: "hello" as const, text: (_w: World, p: string) => binarySpec({ path: p }) },
    { field: "/source/oci/layout", name: "image" as const, text: (w: World, p: string) => ociSpec(p, w.manifest) },
  ];
  for (const f of fields) {
    it(`${f.field}: absolute, .., a symlink out, a symlinked parent are refused by assembly and workload check; allowed under --inputs-root`, async () => {
      const w = world();
      for (const p of attacks(w, f.name)) {
        const specPath = writeSpec(w, f.text(w, p));
        await assertCodeAsync(() => assemble(w, specPath), "PATH_UNSAFE", f.field);
        const checked = await checkWorkloadRun({ specPath });
        assert.ok(
          checked.problems.some((e) => e.code === "PATH_UNSAFE" && e.path === f.field),
          `${p}: ${JSON.stringify(checked.problems)}`,
        );
        // a symlink with an absolute target stays refused under a named root too (as for run.inputs: tree/in-root.ts "beneath")
        if (p.startsWith("abs-")) {
          await assertCodeAsync(() => assemble(w, specPath, w.top), "PATH_UNSAFE", f.field);
          continue;
        }
        // control: the user names a directory holding it; the same spec assembles
        const r = await assemble(w, specPath, w.top);
        assert.equal(r.kind, f.name === "hello" ? "binary" : "oci", p);
        const wider = await checkWorkloadRun({ specPath, inputsRoot: w.top });
        assert.ok(!wider.problems.some((e) => e.code === "PATH_UNSAFE"), p);
      }
      // nothing at an outside path is refused as outside, not reported missing
      await assertCodeAsync(() => assemble(w, writeSpec(w, f.text(w, "/nonexistent/x"))), "PATH_UNSAFE", f.field);
      // under a named root, an absolute path outside that root is still refused
      await assertCodeAsync(() => assemble(w, writeSpec(w, f.text(w, join(w.top, "outside", f.name))), w.spec), "PATH_UNSAFE", f.field);
    });
  }

  it("control: a source inside the spec's directory assembles (relative, through an in-directory symlink, a .. that stays inside)", async () => {
    const w = world();
    copyFileSync(buildProgram("static"), join(w.spec, "sub", "hello"));
    symlinkSync("sub", join(w.spec, "in-dir"));
    writeOciLayout(join(w.spec, "sub", "image"), helloImage());
    for (const p of ["sub/hello", "./sub/../sub/hello", "in-dir/hello"])
      assert.equal((await assemble(w, writeSpec(w, binarySpec({ path: p })))).kind, "binary");
    for (const p of ["sub/image", "in-dir/image"]) assert.equal((await assemble(w, writeSpec(w, ociSpec(p, w.manifest)))).kind, "oci");
  });

  it("control: an executable that is a symlink staying inside the directory is read at its target", async () => {
    const w = world();
    copyFileSync(buildProgram("static"), join(w.spec, "real"));
    symlinkSync("real", join(w.spec, "link"));
    // the resolver follows an inside link to its target, which is read: the path read never holds a symlink
    assert.equal((await assemble(w, writeSpec(w, binarySpec({ path: "link" })))).kind, "binary");
  });

  for (const f of fields) {
    it(`${f.field}: cairn run refuses before a kit or run directory exists (no bundle can carry the bytes); --inputs-root reaches the kit`, async () => {
      const w = world();
      const specPath = writeSpec(w, f.text(w, join(w.top, "outside", f.name)));
      const runsDir = join(w.top, "runs");
      const kit = async () => {
        throw new Error("the kit was asked for");
      };
      const base = { input: specPath, storeDir: join(w.top, "store"), runsDir, kit, cairnVersion: "test" };
      await assertCodeAsync(() => recordRun(base), "PATH_UNSAFE", f.field);
      assert.equal(existsSync(runsDir) ? readdirSync(runsDir).length : 0, 0);
      assert.equal(existsSync(join(w.top, "store")), false);
      await assert.rejects(() => recordRun({ ...base, inputsRoot: w.top }), /the kit was asked for/);
    });
  }

  it("/source/lockfile/path: an environment lockfile named outside the spec's directory is refused; allowed under --inputs-root", () => {
    const w = world();
    writeFileSync(join(w.top, "outside", "env.lock.json"), "{}\n");
    writeFileSync(join(w.spec, "env.lock.json"), "{}\n");
    const spec = (path: string) => writeSpec(w, JSON.stringify({ schema: "cairn.workload/1", source: { lockfile: { path, cmd: ["/bin/true"] } } }));
    for (const p of [join(w.top, "outside", "env.lock.json"), "../outside/env.lock.json", "abs-dir/env.lock.json", "sub/up-dir/env.lock.json"]) {
      const s = spec(p);
      assertCode(() => readLockfileSpec(s), "PATH_UNSAFE", "/source/lockfile/path");
      if (p.startsWith("abs-")) assertCode(() => readLockfileSpec(s, w.top), "PATH_UNSAFE", "/source/lockfile/path");
      else assert.equal(readLockfileSpec(s, w.top)?.lockPath, join(w.top, "outside", "env.lock.json"), p);
    }
    assert.equal(readLockfileSpec(spec("env.lock.json"))?.lockPath, join(w.spec, "env.lock.json"));
  });
});
