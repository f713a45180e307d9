import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { EXAMPLE_SOURCE, GCC_SKIP } from "./fixtures/static-program.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "workload");

test("the bundled examples (binary and OCI) assemble and verify as the docs show", { skip: GCC_SKIP }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-example-"));
  execFileSync("gcc", ["-static", "-no-pie", "-O2", "-o", join(dir, "hello"), EXAMPLE_SOURCE]);
  copyFileSync(join(EXAMPLES, "hello.yaml"), join(dir, "hello.yaml"));
  execFileSync(process.execPath, ["--import", "tsx", join(EXAMPLES, "make-image.ts"), dir], { cwd: PROJECT_ROOT });
  const store = join(dir, "store");
  for (const spec of ["hello.yaml", "hello-oci.yaml"]) {
    const a = await runCli(["workload", "assemble", join(dir, spec), "--store", store, "--json"]);
    assert.equal(a.code, 0, a.stdout + a.stderr);
    const lock = (JSON.parse(a.stdout) as { lock: string }).lock;
    const v = await runCli(["workload", "verify", lock, "--store", store]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  }
});
