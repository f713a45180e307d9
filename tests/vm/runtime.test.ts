/**
 * Runtime behaviour of the guest agent, observed through real boots of a
 * hand-built guest (plain TCG, no record): credentials, descriptors, the
 * fresh root per start, the runtime overlay, escaped descendants, restart
 * refusal, termination, output overflow, a malformed input offset, and a
 * privileged launch. One boot covers every check that does not end the run;
 * each infrastructure failure needs its own boot because it ends the run.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  DEFAULT_RUN_LIMITS,
  prepareGuest,
  qemuVersion,
  runQemu,
  writeGuestImageFile,
  type NormalizedEvent,
  type Scenario,
  type Step,
  type Trigger,
} from "../../src/vm/index.ts";
import { bootProbe, PROBE_LAUNCH, probeWorld } from "./fixtures/guest.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";

const none: Trigger = { kind: "none" };
const ready: Trigger = { kind: "output", stream: "stdout", contains: "ready" };
const afterCleanup: Trigger = { kind: "event", event: "cleanup-complete" };
const start = (after: Trigger = none): Step => ({ action: "start", after });
const write = (text: string, offset: number, after: Trigger = none): Step => ({ action: "write-stdin", data: Buffer.from(text), offset, after });
const scenario = (steps: Step[], limits = DEFAULT_RUN_LIMITS): Scenario => ({ steps, expect: [], limits });

function of<E extends NormalizedEvent["event"]>(events: readonly NormalizedEvent[], inv: number, event: E): Extract<NormalizedEvent, { event: E }>[] {
  return events.filter((e) => e.invocation === inv && e.event === event) as Extract<NormalizedEvent, { event: E }>[];
}

/** Lines between `from` (exclusive) and the first line equal to `until` (exclusive). */
function block(lines: string[], from: number, until: string): string[] {
  const end = lines.indexOf(until, from);
  assert.ok(end >= 0, `no "${until}" after line ${from}`);
  return lines.slice(from, end);
}

describe("guest agent at run time", { skip: VM_SKIP }, () => {
  it("isolates each start: credentials, descriptors, overlay, fresh root, escaped descendants, busy restart, termination", async () => {
    const inv1 = "creds\nfds\ndupfd\nfds\nenv\nls /\nwrite /tmp/stale\nwrite /home/u/stale\nescape\nexit 0\n";
    const inv2 = "stat /tmp/stale\nstat /home/u/stale\nstat /proc\nstat /sys\nstat /dev/random\nstat /dev/urandom\nexit 7\n";
    const b = await bootProbe(
      scenario([
        start(),
        write(inv1, 0, ready),
        start(afterCleanup),
        write(inv2, 0, ready),
        start(afterCleanup),
        start(none), // refused: invocation 3 has not reached cleanup-complete
        write("echo still-here\nexit 0\n", 0, ready),
        start(afterCleanup),
        write("echo a\n", 0, ready),
        { action: "terminate", after: { kind: "output", stream: "stdout", contains: "echo a" } },
      ]),
    );
    const ev = b.evaluation.events;
    assert.deepEqual(ev.at(-1), { invocation: 0, event: "final", status: "ok", invocations: 5 });

    // invocation 1: unprivileged, no_new_privs, no inherited descriptor (control: a dup'd one is seen)
    const out1 = b.stdout(1);
    assert.ok(out1.includes("creds uid=1000 gid=1000 euid=1000 egid=1000 groups=0 nnp=1"), out1.join("\n"));
    const firstFds = out1.indexOf("fds done");
    assert.deepEqual(block(out1, out1.indexOf("creds uid=1000 gid=1000 euid=1000 egid=1000 groups=0 nnp=1") + 1, "fds done"), []);
    assert.deepEqual(block(out1, out1.indexOf("dupfd 9") + 1, "fds done"), ["fd 9"]);
    assert.ok(out1.indexOf("dupfd 9") > firstFds);
    // only the launch environment, nothing from the host
    assert.deepEqual(block(out1, out1.indexOf("fds done", firstFds + 1) + 1, "env done"), ["env A=1"]);
    // the root as the workload sees it: tree metadata, then the overlay (/dev, /tmp), no /proc or /sys
    const listing = block(out1, out1.indexOf("env done") + 1, "ls done");
    assert.deepEqual(
      listing.map((l) => (l.startsWith("entry /bin/probe ") ? l.replace(/ size=\d+$/, " size") : l)),
      [
        "entry / dir 0755 0 0 1000 -",
        "entry /bin dir 0755 0 0 1000 -",
        "entry /bin/probe file 0755 0 0 1001 size",
        "entry /dev dir 0755 0 0 0 -",
        "entry /dev/null chr 0666 0 0 0 1:3",
        "entry /dev/zero chr 0666 0 0 0 1:5",
        "entry /home dir 0755 0 0 1000 -",
        "entry /home/u dir 0755 1000 1000 1002 -",
        "entry /tmp dir 1777 0 0 0 -",
      ],
    );
    assert.ok(out1.includes("wrote /tmp/stale") && out1.includes("wrote /home/u/stale"), "control: the first start can write");
    assert.ok(out1.includes("escape spawned"));
    assert.deepEqual(
      of(ev, 1, "exit").map((e) => [e.kind, e.code]),
      [["exited", 0]],
    );
    const reaped1 = of(ev, 1, "cleanup-complete")[0]?.reaped ?? 0;
    assert.ok(reaped1 >= 1, `the escaped descendant holding stdout was killed and reaped (reaped ${reaped1})`);

    // invocation 2: a fresh root — nothing invocation 1 wrote survives
    const out2 = b.stdout(2);
    for (const p of ["/tmp/stale", "/home/u/stale", "/proc", "/sys", "/dev/random", "/dev/urandom"])
      assert.ok(out2.includes(`absent ${p}`), `${p} absent in:\n${out2.join("\n")}`);
    assert.deepEqual(
      of(ev, 2, "exit").map((e) => [e.kind, e.code]),
      [["exited", 7]],
    );

    // invocation 4 was refused while 3 was still running; 3 carried on
    assert.deepEqual(
      of(ev, 4, "launch-failure").map((e) => e.stage),
      ["busy"],
    );
    assert.equal(of(ev, 4, "start").length, 0);
    assert.ok(b.stdout(3).includes("echo still-here"));
    assert.deepEqual(
      of(ev, 3, "exit").map((e) => [e.kind, e.code]),
      [["exited", 0]],
    );

    // invocation 5: terminated on request after the workload's own answer
    assert.equal(of(ev, 5, "requested-termination").length, 1);
    assert.deepEqual(
      of(ev, 5, "exit").map((e) => [e.kind, e.code]),
      [["signaled", 9]],
    );
    assert.equal(b.boot.qemu.exitCode, 1);
  });

  it("fires an output trigger whose pattern is followed by more bytes than the agent keeps, in one read (control: invocation 5 above, pattern at the end)", async () => {
    // "echo a yyyy…\n" reaches the agent as one read of about 1 KiB; the pattern sits at its start
    const b = await bootProbe(
      scenario(
        [start(), write(`echo a${"y".repeat(1000)}\n`, 0, ready), { action: "terminate", after: { kind: "output", stream: "stdout", contains: "echo a" } }],
        { ...DEFAULT_RUN_LIMITS, timeMs: 5000 },
      ),
    );
    const ev = b.evaluation.events;
    assert.deepEqual(
      of(ev, 1, "infra-failure").map((e) => e.reason),
      [],
    );
    assert.equal(of(ev, 1, "requested-termination").length, 1);
    assert.deepEqual(
      of(ev, 1, "exit").map((e) => [e.kind, e.code]),
      [["signaled", 9]],
    );
  });

  it("refuses a privileged launch before any workload code runs", async () => {
    const b = await bootProbe(scenario([start(), write("echo x\n", 0, none)]), { ...PROBE_LAUNCH, uid: 0, gid: 0 });
    const ev = b.evaluation.events;
    assert.deepEqual(
      of(ev, 1, "launch-failure").map((e) => e.stage),
      ["credentials"],
    );
    assert.equal(of(ev, 1, "start").length, 0);
    assert.equal(b.boot.decoded.streams.get(1)?.stdout.length ?? 0, 0);
    // the write-stdin that follows has no invocation to go to: an infrastructure failure, not silence
    assert.deepEqual(
      of(ev, 1, "infra-failure").map((e) => e.reason),
      ["no-invocation"],
    );
  });

  it("reports a launch whose executable is missing as a typed exec failure", async () => {
    const b = await bootProbe(scenario([start()]), { ...PROBE_LAUNCH, path: "/bin/absent", argv: ["/bin/absent"] });
    assert.deepEqual(
      of(b.evaluation.events, 1, "launch-failure").map((e) => [e.stage, e.errno]),
      [["exec", 2]],
    );
    assert.equal(b.evaluation.status, "launch-failed");
  });

  it("turns output over the limit into an infrastructure failure, never a silent truncation", async () => {
    const limits = { ...DEFAULT_RUN_LIMITS, outputBytes: 20_000 };
    const b = await bootProbe(scenario([start(), write("flood 60000\n", 0, ready)], limits));
    const ev = b.evaluation.events;
    assert.deepEqual(
      of(ev, 1, "infra-failure").map((e) => e.reason),
      ["output-limit"],
    );
    const exit = of(ev, 1, "exit")[0]!;
    assert.ok(exit.stdout.bytes <= 20_000 && exit.stdout.bytes > 0);
    assert.equal(exit.stdout.bytes, b.boot.decoded.streams.get(1)!.stdout.length, "every byte counted arrived");
    assert.equal(b.evaluation.status, "infrastructure-failure");
    assert.equal(b.boot.qemu.exitCode, 3, "isa-debug-exit carries the failure");
  });

  it("kills the invocation on a malformed stdin offset", async () => {
    const b = await bootProbe(scenario([start(), write("echo a\n", 0, ready), write("echo b\n", 3, none)]));
    const ev = b.evaluation.events;
    const accepted = ev.filter((e) => e.invocation === 1 && e.event === "input-accepted").map((e) => ("offset" in e ? [e.offset, e.length] : []));
    assert.deepEqual(accepted, [[0, 7]], "control: the well-formed write was accepted");
    assert.deepEqual(
      of(ev, 1, "infra-failure").map((e) => [e.reason, e.detail]),
      [["bad-input-offset", 3]],
    );
    assert.equal(of(ev, 1, "cleanup-complete").length, 1);
    assert.equal(b.evaluation.status, "infrastructure-failure");
  });

  it("ends a hung invocation at the guest time limit, deterministically in virtual time", async () => {
    const limits = { ...DEFAULT_RUN_LIMITS, timeMs: 3000 };
    const b = await bootProbe(scenario([start(), write("hang\n", 0, ready)], limits));
    const ev = b.evaluation.events;
    assert.ok(b.stdout(1).includes("hang"), "control: the workload ran and hung");
    assert.deepEqual(
      of(ev, 1, "infra-failure").map((e) => [e.reason, e.detail]),
      [["time-limit", 3000]],
    );
    assert.deepEqual(
      of(ev, 1, "exit").map((e) => [e.kind, e.code]),
      [["signaled", 9]],
    );
    // No wall-clock threshold: the time limit is virtual because idle guest time is skipped (icount sleep=off).
    assert.equal(b.prepared.vm.icount_sleep, false, "idle guest time is skipped (icount sleep=off), not waited");
  });

  it("kills QEMU's whole process group when the wall-clock timeout passes", async () => {
    const kit = await testKit();
    const world = probeWorld();
    const p = await prepareGuest(
      { tree: world.tree, content: { get: async (d) => world.blobs.get(d)! }, launch: PROBE_LAUNCH, scenario: scenario([start()]) },
      { kit, qemu: qemuVersion() },
    );
    const dir = mkdtempSync(join(tmpdir(), "cairn-timeout-"));
    const initrdPath = join(dir, "initramfs.img");
    await writeGuestImageFile(p.imageParts, initrdPath, p.image);
    const marker = join(dir, "console.log");
    const r = await runQemu(
      p.vm,
      { kernelPath: p.kernelPath, initrdPath, rrfile: join(dir, "rr"), consoleLog: marker, protocolLog: join(dir, "p") },
      "none",
      300,
    );
    assert.equal(r.timedOut, true); // how soon is not asserted (no wall-clock threshold); the test's own timeout bounds it
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
    assert.ok(!ps.includes(marker), "no QEMU process is left running");
  });
});
