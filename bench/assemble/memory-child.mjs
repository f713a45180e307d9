/**
 * One measured step of bench/assemble/memory.ts, in its own process so its
 * peak RSS is its own: prints `{"maxRssBytes":…,"inherited":…,"entries":…,"atPeak":…}` on stdout.
 * maxRssBytes is /proc/self/status VmHWM (the peak since exec); `inherited` is
 * process.resourceUsage().maxRSS, which Linux also raises to the parent's
 * resident set at fork.
 * Plain JavaScript over the built dist/ (run `npm run build` first), as the
 * CLI runs: no TypeScript loader in the process to inflate the base.
 *
 *   idle                             loads the modules the steps load and does nothing (the base of any step)
 *   assemble <spec> <store> <lock>   cairn workload assemble (read, stage, apply, pack, derive, lock)
 *   verify   <lock> <store>          cairn workload verify (openVerifiedWorkload)
 *   image    <lock> <store> <out>    verify, then what a run builds from the tree: the tree
 *                                    manifest, the erofs root disk (planErofs + writeErofs,
 *                                    bytes hashed, not kept) and the cpio initramfs holding
 *                                    the tree, written to the file <out> (writeGuestImage; a
 *                                    stand-in agent, no modules)
 *
 * `atPeak` is process.memoryUsage() sampled every 20 ms, the sample with the
 * largest RSS: where the peak is (V8 heap, external/arrayBuffers, the rest).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { assembleWorkload, openVerifiedWorkload } from "../../dist/workload/index.js";
import { encodeTreeManifest, planErofs, writeErofs, writeGuestImageFile } from "../../dist/vm/index.js";

let atPeak = process.memoryUsage();
const sample = setInterval(() => {
  const m = process.memoryUsage();
  if (m.rss > atPeak.rss) atPeak = m;
}, 20);
const [mode, a, b, c] = process.argv.slice(2);
let entries = 0;
if (mode === "idle") {
  await new Promise((r) => setTimeout(r, 100));
} else if (mode === "assemble") {
  const r = await assembleWorkload({ specPath: a, storeDir: b, lockOut: c, cairnVersion: "bench", now: () => new Date(0) });
  entries = r.entries;
} else if (mode === "verify") {
  const w = await openVerifiedWorkload(a, b);
  entries = w.tree.size;
} else if (mode === "image") {
  const w = await openVerifiedWorkload(a, b);
  const h = createHash("sha256");
  const plan = planErofs(w.tree);
  await writeErofs(w.tree, w.content, { write: (chunk) => void h.update(chunk) }, plan);
  const manifest = encodeTreeManifest(w.tree);
  const parts = { agent: Buffer.from("agent"), inputs: Buffer.alloc(0), treeManifest: manifest, modules: [], tree: w.tree, content: w.content };
  await writeGuestImageFile(parts, c);
  entries = w.tree.size;
} else {
  throw new Error(`unknown mode ${mode}`);
}
clearInterval(sample);
const { rss, heapUsed, heapTotal, external, arrayBuffers } = atPeak;
// VmHWM is this process image's own peak; maxRSS (getrusage) also counts the parent's resident set at fork, which a
// parent holding generated file bytes made the larger figure (the ~170 MB "large-file base" was mostly the bench's own)
const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "latin1"));
const maxRssBytes = Number(hwm[1]) * 1024;
const inherited = process.resourceUsage().maxRSS * 1024;
process.stdout.write(`${JSON.stringify({ maxRssBytes, inherited, entries, atPeak: { rss, heapUsed, heapTotal, external, arrayBuffers } })}\n`);
