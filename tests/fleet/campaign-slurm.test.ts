// The Slurm half of issue 34's done-when: a campaign recorded on the local
// executor (the network example's outage step over a matrix) replays on a
// single-host Slurm cluster started by the test, every replay matching, and
// the campaign receipt verifies offline. The matrix is the smallest that is
// still a matrix (one axis, two values); README's example runs the 2×4 one.
// The tasks run `bin/cairn.js campaign task …` through sbatch, so this needs
// `npm run build` first, like every test that spawns the CLI.
import assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { generateSigningKey, writeKeyPair } from "../../src/core/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { SOCAT_SKIP } from "../vm/fixtures/responder.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { slurmMissing, startSlurmCluster } from "./slurm-cluster.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");
const SLURM_SKIP = needs(slurmMissing());

const RECORD = `schema: cairn.campaign/1
mode: record
runs: [{spec: ./http.yaml}]
matrix:
  - set: /run/steps/1/after/contains
    values: ["fetch 1: 200", "fetch 1:"]
resources: {cpus: 1, memory-mib: 1024, time-minutes: 20}
`;

const REPLAY = `schema: cairn.campaign/1
mode: replay
runs: [{campaign: ./record.results}]
resources: {cpus: 1, memory-mib: 1024, time-minutes: 20}
`;

interface Summary {
  executor: string;
  tasks: number;
  ran: number;
  counts: Record<string, number>;
  verdicts: Record<string, number>;
}

describe("a recorded campaign replays on Slurm", { skip: VM_SKIP || GCC_SKIP || SOCAT_SKIP || SLURM_SKIP }, () => {
  it("the network example's outage matrix, recorded on the local executor, replays as one Slurm job array, every replay matching", async () => {
    await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-campaign-slurm-"));
    copyFileSync(join(EXAMPLES, "http.yaml"), join(dir, "http.yaml"));
    cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
    copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
    writeFileSync(join(dir, "record.yaml"), RECORD);
    writeFileSync(join(dir, "replay.yaml"), REPLAY);
    const { keyPath, pubPath } = writeKeyPair(join(dir, "k"), generateSigningKey());
    const cluster = await startSlurmCluster();
    try {
      const env = { ...cluster.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
      const rec = await runCli(["campaign", "run", join(dir, "record.yaml"), "--executor", "local", "--jobs", "2", "--key", keyPath, "--json"], env);
      assert.equal(rec.code, 0, rec.stdout + rec.stderr);
      const recorded = JSON.parse(rec.stdout) as Summary;
      assert.deepEqual(recorded.verdicts, { recorded: 2 });

      const rep = await runCli(["campaign", "run", join(dir, "replay.yaml"), "--executor", "slurm", "--key", keyPath, "--json"], env);
      assert.equal(rep.code, 0, rep.stdout + rep.stderr);
      const replayed = JSON.parse(rep.stdout) as Summary;
      assert.equal(replayed.executor, "slurm");
      assert.equal(replayed.ran, 2);
      assert.deepEqual(replayed.verdicts, { matched: 2 }, rep.stderr);
      const arrays = readdirSync(join(dir, "replay.results", "executor", "slurm"));
      assert.equal(arrays.length, 1, "one job array, no task needed a second attempt");
      assert.ok(existsSync(join(dir, "replay.results", "executor", "slurm", arrays[0]!, "1.out")), "array task 1 ran under Slurm");

      const v = await runCli(["campaign", "verify", join(dir, "replay.results"), "--pub", pubPath, "--json"], env);
      assert.equal(v.code, 0, v.stdout + v.stderr);
    } finally {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
