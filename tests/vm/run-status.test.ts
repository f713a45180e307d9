/**
 * A run says what happened (issue 31, cases 14 and 16), through the CLI on
 * real guests:
 *
 * - a spec without assertions whose program exits 127 is `program-failed`
 *   (exit 1, RUN_PROGRAM_FAILED), never `passed`; control: exit 0 is
 *   `completed` (exit 0);
 * - a run the host stops at `--timeout` is recorded (`run.json` status
 *   `timeout`): `runs show` and `receipt sign` read it, and its replay ends
 *   where the record was stopped, with the recorded outcome and status;
 * - a guest whose kernel panics (a QEMU wrapper on PATH adds
 *   `rdinit=/cairn-none` to the kernel command line, so the kernel finds no
 *   init: "VFS: Unable to mount root fs") is recorded as
 *   `infrastructure-failure` naming the panic, and its replay panics the
 *   same way. Before this change both left a run directory without
 *   `run.json` that `runs show`, `replay` and `receipt sign` called "not a
 *   run directory".
 */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { readRunManifest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { binaryWorkspace } from "./fixtures/workloads.ts";

type Workspace = ReturnType<typeof binaryWorkspace>;

/** The probe, fed `commands`, under the given run section fields. */
function probeSpec(commands: string, extra: Record<string, unknown>): Workspace {
  const ws = binaryWorkspace();
  const spec = JSON.parse(readFileSync(ws.specPath, "utf8"));
  spec.run = {
    steps: [
      { action: "start" },
      { action: "write-stdin", data: commands, after: { output: "stdout", contains: "ready" } },
      { action: "close-stdin", after: { event: "input-accepted" } },
    ],
    ...extra,
  };
  writeFileSync(ws.specPath, JSON.stringify(spec));
  return ws;
}

async function run(ws: Workspace, ...flags: string[]) {
  const r = await runCli(["run", ws.specPath, "--store", ws.storeDir, "--runs", ws.runsDir, "--kit", TEST_KIT_DIR, "--json", ...flags]);
  const doc = JSON.parse(r.stdout);
  return { code: r.code, doc, summary: doc.run ?? doc, stderr: r.stderr };
}

describe("a run says what happened", { skip: VM_SKIP }, () => {
  before(async () => {
    await testKit();
  });

  it("no assertions and the program exits 127: program-failed, exit 1 (RUN_PROGRAM_FAILED), never passed", async () => {
    const ws = probeSpec("echo hi\nexit 127\n", {});
    const r = await run(ws);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.doc.error.code, "RUN_PROGRAM_FAILED");
    assert.equal(r.summary.status, "program-failed");
    assert.deepEqual(r.summary.exits, [{ invocation: 1, kind: "exited", code: 127 }]);
    assert.equal(readRunManifest(r.summary.run_dir).status, "program-failed");
  });

  it("control: no assertions and the program exits 0: completed, exit 0", async () => {
    const ws = probeSpec("echo hi\nexit 0\n", {});
    const r = await run(ws);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.summary.status, "completed");
    assert.deepEqual(r.summary.exits, [{ invocation: 1, kind: "exited", code: 0 }]);
  });

  it("stopped by --timeout: recorded with status timeout; runs show, receipt sign and replay read it, and the replay ends the same way", async () => {
    // the probe spins forever and the guest's own limit is an hour of guest time: only the host's timeout ends it.
    // (It must not idle: an idle guest's virtual clock jumps to its next timer, so "hang" met the hour's limit
    // within seconds of wall time whenever the host was slow, racing the host's timeout.)
    const ws = probeSpec("echo hi\nspin\n", { expect: [{ "exit-code": 0 }], limits: { "time-ms": 3_600_000 } });
    const r = await run(ws, "--timeout", "12");
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.doc.error.code, "RUN_TIMEOUT", JSON.stringify(r.doc.error));
    assert.equal(r.summary.status, "timeout");
    const runDir: string = r.summary.run_dir;
    assert.deepEqual(JSON.parse(readFileSync(join(runDir, "assertions.json"), "utf8")), [], "nothing was checked");
    const show = await runCli(["runs", "show", "--json", runDir]);
    assert.equal(show.code, 0, show.stderr);
    assert.equal(JSON.parse(show.stdout).status, "timeout");
    const me = writeKeyPair(join(ws.root, "me"), generateSigningKey(), false);
    const sign = await runCli(["receipt", "sign", runDir, "--key", me.keyPath, "--json"]);
    assert.equal(sign.code, 0, sign.stdout + sign.stderr);
    const envelope = JSON.parse(readFileSync(join(runDir, "receipt.dsse.json"), "utf8"));
    assert.equal(JSON.parse(Buffer.from(envelope.payload, "base64").toString()).predicate.status, "timeout");
    const p = await runCli(["replay", runDir, "--store", ws.storeDir, "--kit", TEST_KIT_DIR, "--json", "--timeout", "120"]);
    const replayed = JSON.parse(readFileSync(join(runDir, "replays", "1", "result.json"), "utf8"));
    assert.deepEqual([replayed.status, replayed.outcome], ["timeout", r.summary.outcome], p.stdout + p.stderr);
  });

  it("a kernel panic: recorded as infrastructure-failure naming the panic, and the replay panics the same way", async () => {
    const ws = probeSpec("echo hi\nexit 0\n", { expect: [{ "exit-code": 0 }] });
    const bin = join(ws.root, "panic-bin");
    mkdirSync(bin);
    const wrapper = join(bin, "qemu-system-x86_64");
    writeFileSync(
      wrapper,
      [
        "#!/bin/sh",
        "# the real QEMU, with rdinit=/cairn-none added to the kernel command line: the kernel finds no init and panics",
        "prev=",
        "for a; do",
        "  shift",
        '  if [ "$prev" = "-append" ]; then a="$a rdinit=/cairn-none"; fi',
        "  prev=$a",
        '  set -- "$@" "$a"',
        "done",
        'exec /usr/bin/qemu-system-x86_64 "$@"',
        "",
      ].join("\n"),
    );
    chmodSync(wrapper, 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const r = await run(ws);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.doc.error.code, "RUN_INFRASTRUCTURE");
      assert.match(r.doc.error.message, /Kernel panic/);
      assert.equal(r.summary.status, "infrastructure-failure");
      const runDir: string = r.summary.run_dir;
      const bundle = JSON.parse(readFileSync(join(runDir, "failure-bundle.json"), "utf8"));
      assert.equal(bundle.kernel[0].reason, "panic");
      assert.ok(!JSON.stringify(bundle).includes(".tmp"), "the bundle names the run directory, not its staging");
      const show = await runCli(["runs", "show", "--json", runDir]);
      assert.equal(JSON.parse(show.stdout).status, "infrastructure-failure");
      await runCli(["replay", runDir, "--store", ws.storeDir, "--kit", TEST_KIT_DIR, "--json"]);
      const replayed = JSON.parse(readFileSync(join(runDir, "replays", "1", "result.json"), "utf8"));
      assert.deepEqual([replayed.status, replayed.outcome], ["infrastructure-failure", r.summary.outcome]);
    } finally {
      process.env.PATH = path;
    }
  });
});
