/**
 * Interrupted runs clean up (issue 16, item 6): `cairn run` is killed with
 * SIGINT, SIGTERM and SIGKILL while QEMU runs a workload that would wait
 * until the timeout; once cairn has exited, every QEMU of that run must exit
 * too (waited for on its pidfd, an event; a generous guard ends the wait). The
 * precondition of each case (QEMU was found running under that cairn)
 * is the control: on the code before this change QEMU outlived cairn every
 * time. The CLI runs as a child process, so nothing here can hang the suite.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { processExit, qemuChildren, whenUnder } from "./fixtures/events.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

/** How long a QEMU may take to exit after cairn did: a hang guard, generous for a loaded machine (with the fix it is at once). */
const OUTLIVED_GUARD_MS = 120_000;

describe("an interrupted `cairn run` leaves no QEMU behind", { skip: VM_SKIP }, () => {
  before(async () => {
    await testKit();
  });

  for (const signal of ["SIGINT", "SIGTERM", "SIGKILL"] as const) {
    it(`${signal} of cairn run: QEMU exits after cairn`, { timeout: 900_000 /* a hang guard only */ }, async () => {
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
      // The event: QEMU creates its console and protocol files in the run directory as it starts.
      const qemu = await whenUnder(
        ws.root,
        () => {
          const found = qemuChildren(cairn.pid!);
          return found.length > 0 ? found : undefined;
        },
        "QEMU starting under cairn",
      );
      assert.ok(qemu.length > 0, "precondition: QEMU runs under cairn");
      cairn.kill(signal);
      await exited;
      // The event: each QEMU's exit (its pidfd); the guard is only a bound on waiting for it.
      const gone = await Promise.all(qemu.map((pid) => processExit(pid, OUTLIVED_GUARD_MS)));
      assert.deepEqual(
        qemu.filter((_, i) => !gone[i]),
        [],
        `QEMU outlived cairn (${signal})`,
      );
    });
  }
});
