/**
 * Opt-in parts of the guest's runtime overlay (issue 9, item 4, part):
 * `run.proc: true` gives the workload /proc (its own processes only: the
 * agent, PID 1, stays invisible) and a read-only /sys; `run.urandom: true`
 * gives /dev/random and /dev/urandom. Control: without them the root has
 * neither, as before. The flags travel in the guest image, so its digest
 * (in the VM identity) differs.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_RUN_LIMITS, type Scenario } from "../../src/vm/index.ts";
import { bootProbe } from "./fixtures/guest.ts";
import { VM_SKIP } from "./fixtures/kit.ts";

const COMMANDS = "stat /proc\nstat /proc/1\nstat /proc/self\nstat /sys\nstat /sys/kernel\nstat /dev/urandom\nstat /dev/random\nwrite /sys/x\nexit 0\n";
const scenario = (extra: Partial<Scenario>): Scenario => ({
  steps: [
    { action: "start", after: { kind: "none" } },
    { action: "write-stdin", offset: 0, data: Buffer.from(COMMANDS), after: { kind: "output", stream: "stdout", contains: "ready" } },
    { action: "close-stdin", after: { kind: "event", event: "input-accepted" } },
  ],
  expect: [{ invocation: 1, exitCode: 0 }],
  limits: DEFAULT_RUN_LIMITS,
  ...extra,
});

describe("opt-in /proc, /sys and /dev/urandom", { skip: VM_SKIP }, () => {
  for (const root of ["initramfs", "disk"] as const) {
    it(`${root} root: with run.proc and run.urandom the workload sees them; the agent's process stays hidden`, async () => {
      const b = await bootProbe(scenario({ proc: true, urandom: true, root }));
      assert.equal(b.evaluation.status, "passed", JSON.stringify(b.evaluation.events));
      const out = b.stdout(1);
      const has = (prefix: string) =>
        assert.ok(
          out.some((l) => l.startsWith(prefix)),
          `${prefix}\n${out.join("\n")}`,
        );
      has("entry /proc dir 0555 0 0");
      has("entry /proc/self symlink");
      has("absent /proc/1");
      has("entry /sys dir");
      has("entry /sys/kernel dir");
      has("entry /dev/urandom chr 0666 0 0 0 1:9");
      has("entry /dev/random chr 0666 0 0 0 1:8");
      has("write-failed /sys/x");
    });
  }

  it("control: without them the root has none of these, and the image differs", async () => {
    const b = await bootProbe(scenario({}));
    assert.equal(b.evaluation.status, "passed");
    const out = b.stdout(1);
    for (const p of ["/proc", "/sys", "/dev/urandom", "/dev/random"]) assert.ok(out.includes(`absent ${p}`), `${p}\n${out.join("\n")}`);
    const withFlags = await bootProbe(scenario({ proc: true }));
    assert.notEqual(withFlags.prepared.vm.initramfs, b.prepared.vm.initramfs);
  });
});
