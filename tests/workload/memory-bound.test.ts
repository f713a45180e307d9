/**
 * Memory of assembly is bounded by named limits (issue 15): a layer of
 * 2,000,000 empty files is refused by a limit, with the process's peak RSS
 * below a stated budget, never by running out of memory. Each assembly runs
 * in a child process (fixtures/assemble-rss-child.ts) with a timeout; the
 * layouts are generated here, streamed (fixtures/many-files-layout.ts).
 *
 * Budgets (peak RSS of the child, which runs TypeScript through tsx, about
 * 100 MiB of the base):
 *   at the default limits, refused by `entries` (200,000)      ≤ 400 MiB
 *   entries raised to its ceiling and expandedBytes set to 512 MiB,
 *     refused by `expandedBytes`                                ≤ 1 GiB
 *     (2,000,000 headers are 1,024,000,000 tar bytes > 512 MiB; the
 *     default, 32 GiB, is sized for disk: with both raised, memory grows
 *     with the entries, as docs/workload.md says)
 *   control: the same shape with 2,000 files assembles          ≤ 400 MiB
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { LIMIT_CEILINGS } from "../../src/tree/layer-limits.ts";
import { writeManyFilesLayout } from "./fixtures/many-files-layout.ts";

const MiB = 1024 * 1024;
const CHILD = fileURLToPath(new URL("./fixtures/assemble-rss-child.ts", import.meta.url));
const HUGE = 2_000_000;
let work: string;
let hugeManifest: string;

interface Outcome {
  entries?: number;
  code?: string;
  message?: string;
  maxRssBytes: number;
}

function assemble(name: string, layout: string, manifest: string, limits: Record<string, number> | undefined): Outcome {
  const dir = join(work, name);
  const spec = join(dir, "spec.json");
  mkdirSync(dir);
  writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout, manifest } }, ...(limits ? { limits } : {}) }));
  const r = spawnSync(process.execPath, ["--import", "tsx", CHILD, spec, join(dir, "store"), join(dir, "spec.lock.json"), work], {
    encoding: "utf8",
    timeout: 900_000,
    killSignal: "SIGKILL",
  });
  assert.equal(r.status, 0, `the child ended by ${r.signal ?? `exit ${r.status}`} (a crash, not a refusal): ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Outcome;
}

function report(t: { diagnostic(message: string): void }, o: Outcome): void {
  t.diagnostic(`peak RSS ${(o.maxRssBytes / MiB).toFixed(0)} MiB (${o.code ?? `${o.entries} entries`})`);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cairn-memory-bound-"));
  hugeManifest = (await writeManyFilesLayout(join(work, "huge-layout"), { count: HUGE })).manifestDigest;
});
after(() => rmSync(work, { recursive: true, force: true }));

test("control: a layer of 2,000 empty files of the same shape assembles within 400 MiB", { timeout: 300_000 }, async (t) => {
  const small = await writeManyFilesLayout(join(work, "small-layout"), { count: 2000 });
  const o = assemble("small", join(work, "small-layout"), small.manifestDigest, undefined);
  report(t, o);
  assert.equal(o.code, undefined, o.message);
  assert.equal(o.entries, small.members + 1, "every member and the root");
  assert.ok(o.maxRssBytes <= 400 * MiB, `peak RSS ${(o.maxRssBytes / MiB).toFixed(0)} MiB`);
});

test("a layer of 2,000,000 empty files is refused by the entries limit at the defaults, within 400 MiB", { timeout: 900_000 }, (t) => {
  const o = assemble("huge-defaults", join(work, "huge-layout"), hugeManifest, undefined);
  report(t, o);
  assert.equal(o.code, "LIMIT_EXCEEDED");
  assert.match(o.message!, /\bentries\b/);
  assert.ok(o.maxRssBytes <= 400 * MiB, `peak RSS ${(o.maxRssBytes / MiB).toFixed(0)} MiB`);
});

test("with entries at its ceiling the same layer is refused by expandedBytes (512 MiB), within 1 GiB, never out of memory", { timeout: 900_000 }, (t) => {
  const o = assemble("huge-ceiling", join(work, "huge-layout"), hugeManifest, { entries: LIMIT_CEILINGS.entries, expandedBytes: 512 * MiB });
  report(t, o);
  assert.equal(o.code, "LIMIT_EXCEEDED");
  assert.match(o.message!, /\bexpandedBytes\b/);
  assert.ok(o.maxRssBytes <= 1024 * MiB, `peak RSS ${(o.maxRssBytes / MiB).toFixed(0)} MiB`);
});
