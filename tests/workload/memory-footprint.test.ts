/**
 * Memory per tree entry of verification and the guest image's plan (issue
 * 15), by a proxy that does not depend on the machine or its load: what
 * stays live (V8 heap plus memory outside it, after a full collection) per
 * entry, as the slope between two tree sizes, so the process's base cancels.
 * Object and string sizes are fixed by the Node build, not by timing; peak
 * RSS, which garbage and heap growth add to, is measured by
 * bench/assemble/memory.ts instead.
 *
 * Bounds (per entry of the tree; under Node 20 they measure 288–301 and 27–42,
 * and measured 359 and 232 before issue 15's columns):
 *   a verified workload (tree, pack index, content source)   ≤ 315 bytes
 *     (before: a second map by digest for the content source, the pack
 *     index as a Map of digest strings to entry objects; 320-329 while each
 *     file's digest was a cons string, core/digest.ts sha256Text)
 *   the EROFS plan of its tree                                ≤ 80 bytes
 *     (before: a plan object, a child record and a name per entry, and a
 *     map by path)
 * Control: a plain copy of every entry, measured the same way, costs more
 * than 80 bytes per entry, so the proxy does see per-entry objects.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assembleWorkload } from "../../src/workload/index.ts";
import { writeManyFilesLayout } from "./fixtures/many-files-layout.ts";

const CHILD = fileURLToPath(new URL("./fixtures/footprint-child.ts", import.meta.url));
const SIZES = [4000, 24_000];
let work: string;

interface Footprint {
  entries: number;
  whole: boolean;
  verified: number;
  plan: number;
  copies: number;
}
const measured: Footprint[] = [];

async function footprint(count: number): Promise<Footprint> {
  const dir = join(work, `files-${count}`);
  mkdirSync(dir);
  const img = await writeManyFilesLayout(join(dir, "image"), { count, bytes: (i) => Buffer.from(`file ${i}\n`) });
  const spec = join(dir, "spec.json");
  writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: img.manifestDigest } } }));
  const lock = join(dir, "spec.lock.json");
  await assembleWorkload({ specPath: spec, storeDir: join(dir, "store"), lockOut: lock, cairnVersion: "test", now: () => new Date(0) });
  const r = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", CHILD, lock, join(dir, "store")], {
    encoding: "utf8",
    timeout: 300_000,
    killSignal: "SIGKILL",
  });
  assert.equal(r.status, 0, `the child ended by ${r.signal ?? `exit ${r.status}`}: ${r.stderr.slice(-2000)}`);
  return JSON.parse(r.stdout.trim().split("\n").pop()!) as Footprint;
}

/** Bytes per entry of `key` between the two sizes. */
function slope(key: "verified" | "plan" | "copies"): number {
  const [a, b] = measured as [Footprint, Footprint];
  return (b[key] - a[key]) / (b.entries - a.entries);
}

before(async () => {
  work = mkdtempSync(join(tmpdir(), "cairn-footprint-"));
  for (const n of SIZES) measured.push(await footprint(n));
});
after(() => rmSync(work, { recursive: true, force: true }));

test("a verified workload keeps at most 315 bytes per tree entry", { timeout: 600_000 }, (t) => {
  assert.equal(measured.length, 2);
  for (const m of measured) assert.equal(m.whole, true, "the plan and the copies cover the whole tree");
  t.diagnostic(`verified ${slope("verified").toFixed(0)} B/entry, plan ${slope("plan").toFixed(0)} B/entry, copies ${slope("copies").toFixed(0)} B/entry`);
  assert.ok(slope("verified") <= 315, `${slope("verified").toFixed(0)} bytes per entry`);
});

test("the EROFS plan of a tree keeps at most 80 bytes per entry", () => {
  assert.ok(slope("plan") <= 80, `${slope("plan").toFixed(0)} bytes per entry`);
});

test("control: a plain copy of every entry costs more than 80 bytes per entry by the same measure", () => {
  assert.ok(slope("copies") > 80, `${slope("copies").toFixed(0)} bytes per entry`);
});
