/**
 * One guest cannot start any number of host processes (issue 31, case 4):
 * a guest program (fixtures/net-flood.c, gcc -static at test time) opens
 * more connections to the echo responder than `responder.connections` and
 * keeps them all open. The host's `socat` count for the run never exceeds
 * the bound (sampled while QEMU records, matched by the run's own responder
 * socket), the refused connections are closed before any byte (the guest
 * says how many), the record's network.json counts them, and the replay,
 * which runs no responder, shows the guest the same refusals from the log.
 * Control: a guest that stays within the bound gets every connection
 * echoed and nothing refused.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { RESPONDER_LIMITS } from "../../src/vm/netid.ts";
import { recordRun, replayRun } from "../../src/vm/index.ts";
import { readRunNetwork } from "../../src/vm/run-facts.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { testKit, VM_SKIP } from "./fixtures/kit.ts";
import { SOCAT_SKIP } from "./fixtures/responder.ts";

const BOUND = RESPONDER_LIMITS["responder.connections"];

/** The socket directory of the responder this process started (its config path is its last argument), if one runs. */
function responderDir(): string | undefined {
  const r = spawnSync("pgrep", ["-a", "-P", String(process.pid), "-f", "responder-main"], { encoding: "utf8" });
  const m = /(\/\S*cairn-net-[A-Za-z0-9]+)\/config\.json/.exec(r.stdout);
  return m?.[1];
}

/** Records a run of net-flood opening `n` connections, sampling this run's socat processes while it records. */
async function flood(n: number): Promise<{ runDir: string; stdout: string; maxSocat: number; samples: number; status: string; outcome: string }> {
  const kit = await testKit();
  const dir = mkdtempSync(join(tmpdir(), "cairn-net-flood-"));
  copyFileSync(buildProgramFrom(join(import.meta.dirname, "fixtures", "net-flood.c"), "static"), join(dir, "net-flood"));
  const spec = {
    schema: "cairn.workload/1",
    source: { binary: { path: "net-flood", args: [String(n)], user: "1000:1000" } },
    run: { network: { echo: { port: 7 } }, steps: [{ action: "start" }, { action: "close-stdin" }], expect: [{ "exit-code": 0 }] },
  };
  writeFileSync(join(dir, "spec.json"), JSON.stringify(spec));
  let maxSocat = 0;
  let samples = 0;
  let recording = true;
  // a measurement beside the record, not a wait: every 25 ms, the run's own socat processes (matched by its socket path)
  const sampler = (async () => {
    while (recording) {
      const d = responderDir();
      if (d !== undefined) {
        const count = Number(spawnSync("pgrep", ["-c", "-f", `UNIX-CONNECT:${d}/7.sock`], { encoding: "utf8" }).stdout.trim() || "0");
        maxSocat = Math.max(maxSocat, count);
        samples++;
      }
      await new Promise((res) => setTimeout(res, 25));
    }
  })();
  try {
    const rec = await recordRun({ input: join(dir, "spec.json"), storeDir: join(dir, "store"), runsDir: join(dir, "runs"), kit, cairnVersion: "test" });
    return {
      runDir: rec.runDir,
      stdout: readFileSync(join(rec.runDir, "streams", "1.stdout"), "utf8"),
      maxSocat,
      samples,
      status: rec.evaluation.status,
      outcome: rec.manifest.outcome,
    };
  } finally {
    recording = false;
    await sampler;
  }
}

describe("a guest flooding the responder with connections (issue 31, case 4)", { skip: VM_SKIP || GCC_SKIP || SOCAT_SKIP }, () => {
  it(`opens ${BOUND + 24} connections: at most ${BOUND} socat on the host, the rest refused and counted, and the replay shows the same`, async () => {
    const n = BOUND + 24;
    const r = await flood(n);
    assert.equal(r.status, "passed", r.stdout);
    assert.equal(r.stdout, `opened=${n} echoed=${BOUND} closed=24 silent=0\n`, "the guest saw exactly the bound echoed and the rest closed before any byte");
    assert.ok(r.samples > 0, "the socat count was sampled while the run recorded");
    assert.ok(r.maxSocat <= BOUND, `at most responder.connections socat processes at once (saw ${r.maxSocat})`);
    assert.ok(r.maxSocat > 0, "control for the sampler: it saw the run's socat processes");
    assert.deepEqual(readRunNetwork(r.runDir), { responders: [{ port: 7, kind: "echo", connections: BOUND, refused: 24 }] });
    const logs: string[] = [];
    const rep = await replayRun({ runDir: r.runDir, storeDir: join(r.runDir, "..", "..", "store"), kit: await testKit(), log: (l) => logs.push(l) });
    assert.equal(rep.evaluation.outcome, r.outcome, "the replay matched the record (a mismatch throws)");
    assert.equal(rep.streams.get(1)?.stdout.toString("utf8"), r.stdout, "the replayed guest saw the same refusals");
    assert.ok(
      logs.some((l) => l.includes("refused 24 guest connection(s) over responder.connections")),
      logs.join("\n"),
    );
  });

  it(`control: ${BOUND} connections, within the bound, are all echoed and none is refused`, async () => {
    const r = await flood(BOUND);
    assert.equal(r.status, "passed", r.stdout);
    assert.equal(r.stdout, `opened=${BOUND} echoed=${BOUND} closed=0 silent=0\n`);
    assert.ok(r.maxSocat <= BOUND);
    assert.deepEqual(readRunNetwork(r.runDir), { responders: [{ port: 7, kind: "echo", connections: BOUND, refused: 0 }] });
  });
});
