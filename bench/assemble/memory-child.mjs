/**
 * One measured step of bench/assemble/memory.ts, in its own process so its
 * peak RSS is its own: prints `{"maxRssBytes":…,"entries":…}` on stdout.
 * Plain JavaScript over the built dist/ (run `npm run build` first), as the
 * CLI runs: no TypeScript loader in the process to inflate the base.
 *
 *   assemble <spec> <store> <lock>   cairn workload assemble (read, stage, apply, pack, derive, lock)
 *   verify   <lock> <store>          cairn workload verify (openVerifiedWorkload)
 *   image    <lock> <store>          verify, then what a run builds from the tree: the tree
 *                                    manifest, the erofs root disk (planErofs + writeErofs,
 *                                    bytes hashed, not kept) and the cpio initramfs holding
 *                                    the tree (buildGuestImage; a stand-in agent, no modules)
 */
import { createHash } from "node:crypto";
import { assembleWorkload, openVerifiedWorkload } from "../../dist/workload/index.js";
import { buildGuestImage, encodeTreeManifest, planErofs, writeErofs } from "../../dist/vm/index.js";

const [mode, a, b, c] = process.argv.slice(2);
let entries = 0;
if (mode === "assemble") {
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
  await buildGuestImage({ agent: Buffer.from("agent"), inputs: Buffer.alloc(0), treeManifest: manifest.bytes, modules: [], tree: w.tree, content: w.content });
  entries = w.tree.size;
} else {
  throw new Error(`unknown mode ${mode}`);
}
process.stdout.write(`${JSON.stringify({ maxRssBytes: process.resourceUsage().maxRSS * 1024, entries })}\n`);
