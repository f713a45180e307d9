/**
 * What run.network costs (issue 14 item 4), side by side in one process,
 * with `recordRun` / `replayRun` (the `cairn run` / `cairn replay` code):
 *
 *   loopback            examples/network/loopback.yaml as it is: no NIC, icount shift=3,sleep=off
 *   loopback + NIC      the same workload with `run.network: {echo: {port: 7}}` added: vmxnet3 and
 *                       icount shift=auto, sleep=on, no traffic on the NIC
 *   http, outage        examples/network/http.yaml: traffic to the responder, network down and up
 *
 * Each is recorded `--records` times (default 2: independent records of one
 * spec), and its first record replayed twice. Reported per case: QEMU wall
 * time of record and replays (medians), replay-log size, whether the records'
 * outcomes and streams agree, and whether the replays matched.
 *
 *   node --import tsx bench/network/bench.ts [--records=N] [--only=<case label part>]
 */
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { recordRun, replayRun, type RecordResult, type ReplayResult } from "../../src/vm/index.ts";
import { PROJECT_ROOT } from "../../tests/helpers/vectors.ts";
import { buildProgramFrom } from "../../tests/workload/fixtures/static-program.ts";
import { testKit } from "../../tests/vm/fixtures/kit.ts";

const records = Number(process.argv.find((a) => a.startsWith("--records="))?.slice("--records=".length) ?? "2");
const only = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length);
const EXAMPLES = join(PROJECT_ROOT, "examples", "network");

interface Case {
  readonly label: string;
  /** Writes the spec (and what it needs) into dir; returns the spec path. */
  readonly setup: (dir: string) => string;
}

const CASES: readonly Case[] = [
  {
    label: "loopback (no NIC)",
    setup: (dir) => {
      copyFileSync(buildProgramFrom(join(EXAMPLES, "loopback.c"), "static"), join(dir, "loopback"));
      copyFileSync(join(EXAMPLES, "loopback.yaml"), join(dir, "spec.yaml"));
      return join(dir, "spec.yaml");
    },
  },
  {
    label: "loopback + NIC (unused)",
    setup: (dir) => {
      copyFileSync(buildProgramFrom(join(EXAMPLES, "loopback.c"), "static"), join(dir, "loopback"));
      writeFileSync(join(dir, "spec.yaml"), readFileSync(join(EXAMPLES, "loopback.yaml"), "utf8").replace("run:\n", "run:\n  network: {echo: {port: 7}}\n"));
      return join(dir, "spec.yaml");
    },
  },
  {
    label: "http, outage (NIC)",
    setup: (dir) => {
      copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
      cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
      copyFileSync(join(EXAMPLES, "http.yaml"), join(dir, "spec.yaml"));
      return join(dir, "spec.yaml");
    },
  },
];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s = (ms: number) => (ms / 1000).toFixed(1);

async function main(): Promise<void> {
  const kit = await testKit();
  const rows: string[] = [];
  for (const c of CASES) {
    if (only !== undefined && !c.label.includes(only)) continue;
    const dir = mkdtempSync(join(tmpdir(), "cairn-net-bench-"));
    try {
      const spec = c.setup(dir);
      const recs: RecordResult[] = [];
      for (let i = 0; i < records; i++)
        recs.push(await recordRun({ input: spec, storeDir: join(dir, "store"), runsDir: join(dir, "runs"), kit, cairnVersion: "bench" }));
      const replays: ReplayResult[] = [];
      for (let i = 0; i < 2; i++) replays.push(await replayRun({ runDir: recs[0]!.runDir, storeDir: join(dir, "store"), kit }));
      const stdout = (r: RecordResult) => Buffer.concat([...r.streams.values()].map((x) => x.stdout)).toString("utf8");
      const outcomes = new Set(recs.map((r) => r.manifest.outcome)).size;
      const streams = new Set(recs.map(stdout)).size;
      const logs = new Set(recs.map((r) => r.manifest.replay_log.sha256)).size;
      rows.push(
        `| ${c.label} | ${recs.map((r) => s(r.durations.qemuMs)).join(" / ")} | ${replays.map((r) => s(r.qemuMs)).join(" / ")} | ${(replays.map((r) => r.qemuMs).reduce((a, b) => a + b) / 2 / median(recs.map((r) => r.durations.qemuMs))).toFixed(2)} | ${(recs[0]!.replayLogSize / 1024).toFixed(0)} | ${records} records: ${outcomes} outcome(s), ${streams} stdout(s), ${logs} replay log(s) | ${replays.every((r) => r.evaluation.outcome === recs[0]!.manifest.outcome) ? "both match" : "MISMATCH"} |`,
      );
      console.error(rows.at(-1));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log("| case | record s (each) | replay s (1 / 2) | replay / record | replay log KiB (record 1) | independent records | replays |");
  console.log("|---|---|---|---|---|---|---|");
  for (const r of rows) console.log(r);
}

await main();
