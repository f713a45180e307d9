/**
 * The "done when" of issue 5, as a user would do it: the bundled example
 * workload (examples/workload/hello.yaml, its program built at test time) is
 * recorded with `cairn run`, replayed twice with the printed command, and
 * both replays match.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

describe("bundled example", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("records, then replays twice with the printed command, matching both times; a second record is identical", async () => {
    await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-example-"));
    copyFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(dir, "hello.yaml"));
    copyFileSync(buildProgram("static"), join(dir, "hello"));
    const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const r = await runCli(["run", join(dir, "hello.yaml")], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /passed/);
    // the workload's own output follows the summary
    assert.match(r.stdout, /\n--- invocation 1 stdout \(\d+ bytes\) ---\nhello from \/bin\/app world\ncwd=\/home\/app uid=1000 gid=1000\n/);
    const command = /^\s+(cairn replay .+)$/m.exec(r.stdout)?.[1];
    assert.ok(command, r.stdout);
    const outcome = /^outcome\s+(sha256:[0-9a-f]{64})$/m.exec(r.stdout)?.[1];
    for (let i = 0; i < 2; i++) {
      const p = await runCli(command.split(" ").slice(1), env);
      assert.equal(p.code, 0, p.stderr);
      assert.match(p.stdout, /matches the record/);
      assert.equal(/^outcome\s+(sha256:[0-9a-f]{64})$/m.exec(p.stdout)?.[1], outcome);
    }
    const runDir = command.split(" ")[2]!;
    assert.match(readFileSync(join(runDir, "streams", "1.stdout"), "utf8"), /^hello from \/bin\/app world\ncwd=\/home\/app uid=1000 gid=1000\n$/);
    // a second, independent record executes identically (its replay log may differ: QEMU logs host-side timing)
    const again = await runCli(["run", join(dir, "hello.yaml"), "--json"], env);
    const second = JSON.parse(again.stdout) as { run_dir: string; outcome: string };
    assert.equal(second.outcome, outcome);
    assert.ok(readFileSync(join(second.run_dir, "protocol.bin")).equals(readFileSync(join(runDir, "protocol.bin"))));
  });
});
