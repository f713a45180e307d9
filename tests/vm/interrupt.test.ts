/**
 * Interrupted runs clean up (issue 16, item 6): `cairn run` is killed with
 * SIGINT, SIGTERM and SIGKILL while QEMU runs a workload that would wait
 * until the timeout; a second later no QEMU of that run may be left. The
 * precondition of each case (QEMU was found running under that cairn)
 * is the control: on the code before this change QEMU outlived cairn every
 * time. The CLI runs as a child process, so nothing here can hang the suite.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

function stat(pid: number): { ppid: number; state: string; comm: string } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const rest = s.slice(close + 2).split(" ");
    return { comm: s.slice(s.indexOf("(") + 1, close), state: rest[0]!, ppid: Number(rest[1]) };
  } catch {
    return undefined;
  }
}

/** The booting QEMU processes (`-kernel` on the command line; not `--version` probes) whose parent is `parent`. */
function qemuChildren(parent: number): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => {
      const s = stat(pid);
      if (s === undefined || s.ppid !== parent || !s.comm.startsWith("qemu-system")) return false;
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("-kernel");
      } catch {
        return false;
      }
    });
}

const alive = (pid: number): boolean => {
  const s = stat(pid);
  return s !== undefined && s.state !== "Z" && s.state !== "X";
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("an interrupted `cairn run` leaves no QEMU behind", { skip: VM_SKIP }, () => {
  before(async () => {
    await testKit();
  });

  for (const signal of ["SIGINT", "SIGTERM", "SIGKILL"] as const) {
    it(`${signal} of cairn run: QEMU is gone a second later`, { timeout: 240_000 }, async () => {
      const ws = binaryWorkspace();
      copyFileSync(ws.specPath, `${ws.specPath}.orig`);
      const spec = JSON.parse(readFileSync(ws.specPath, "utf8"));
      // start the probe and never close its stdin: it waits, and QEMU runs until the timeout
      spec.run = { steps: [{ action: "start" }], expect: [{ "exit-code": 0 }] };
      writeFileSync(ws.specPath, JSON.stringify(spec));
      const cairn = spawn(
        process.execPath,
        [join(PROJECT_ROOT, "bin", "cairn.js"), "run", ws.specPath, "--timeout", "180", "--kit", TEST_KIT_DIR, "--store", ws.storeDir, "--runs", ws.runsDir],
        { cwd: ws.root, env: { ...process.env, CAIRN_HOME: join(ws.root, "home") }, stdio: "ignore" },
      );
      const exited = new Promise<void>((r) => cairn.on("exit", () => r()));
      let qemu: number[] = [];
      for (let waited = 0; qemu.length === 0 && waited < 180_000; waited += 250) {
        await sleep(250);
        qemu = qemuChildren(cairn.pid!);
      }
      assert.ok(qemu.length > 0, "precondition: QEMU runs under cairn");
      await sleep(500);
      assert.ok(qemu.every(alive), "precondition: QEMU is still running");
      cairn.kill(signal);
      await exited;
      await sleep(1000);
      assert.deepEqual(qemu.filter(alive), [], `QEMU outlived cairn (${signal})`);
    });
  }
});
