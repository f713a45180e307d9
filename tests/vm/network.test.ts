/**
 * Network in the guest (issue 14). Loopback, always: the bundled example
 * examples/network/loopback.yaml (its program built with gcc -static at test
 * time) serves and connects over 127.0.0.1 and ::1 in two invocations of
 * one boot, is recorded with `cairn run` and replayed twice with the printed
 * command, byte-identically. Before the agent brought `lo` up, the same
 * workload printed "127.0.0.1 port 8080: Network is unreachable" and the
 * exact stdout-lines assertions failed.
 */
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");

const LOOPBACK_LINES = "127.0.0.1 port 8080: pong ping (server exit 0)\n::1 port 8080: pong ping (server exit 0)\n127.0.0.1 port 8081: Connection refused\n";

describe("loopback in the guest", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("the loopback example records, then replays twice byte-identically; both invocations talk over 127.0.0.1 and ::1", async () => {
    await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-loopback-"));
    copyFileSync(join(EXAMPLES, "loopback.yaml"), join(dir, "loopback.yaml"));
    copyFileSync(buildProgramFrom(join(EXAMPLES, "loopback.c"), "static"), join(dir, "loopback"));
    const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const r = await runCli(["run", join(dir, "loopback.yaml"), "--json"], env);
    const run = JSON.parse(r.stdout) as { run_dir: string; outcome: string; status: string };
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(run.status, "passed");
    // the exact bytes of both invocations: a server killed with invocation 1 leaves the port free for invocation 2
    for (const n of [1, 2]) assert.equal(readFileSync(join(run.run_dir, "streams", `${n}.stdout`), "utf8"), LOOPBACK_LINES);
    const protocol = readFileSync(join(run.run_dir, "protocol.bin"));
    for (let i = 1; i <= 2; i++) {
      const p = await runCli(["replay", run.run_dir, "--json"], env);
      assert.equal(p.code, 0, p.stdout + p.stderr);
      assert.equal((JSON.parse(p.stdout) as { outcome: string }).outcome, run.outcome);
      // byte-identical: the replay's raw protocol stream equals the record's
      assert.ok(readFileSync(join(run.run_dir, "replays", String(i), "protocol.bin")).equals(protocol), `replay ${i} protocol stream`);
    }
  });
});
