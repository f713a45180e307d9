/**
 * Where `workload verify`'s CPU goes on the 20,000-file layout: assembles
 * once, then profiles N verifies of the compiled dist/ in this process
 * (node:inspector's CPU profiler, started after assembly so only verify is
 * sampled), and prints self time per function summed over the profile's
 * samples, per verify, largest first. The figures are sampled (1 ms), for
 * finding costs, not for the ratios (run.ts measures those).
 *
 *   npm run build && node --import tsx bench/workload/profile.ts [--memo] [N] [TOP] [UNDER]
 *
 * --memo profiles the verify under the memo a full verify wrote first
 * (openVerifiedWorkload with a memo key: the replay preflight's fast path).
 *
 * UNDER (a function name as printed, e.g. "#header tar-gate.js:198") also
 * splits that function's inclusive time among its direct callees.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { workload } from "../assemble/compiled.ts";
import { assembledSmall } from "./common.ts";

const MEMO = process.argv.includes("--memo");
const args = process.argv.slice(2).filter((a) => a !== "--memo");
const N = Number(args[0] ?? 5);
const TOP = Number(args[1] ?? 40);
const UNDER = args[2];

interface Node {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const base = mkdtempSync(join(tmpdir(), "cairn-prof-wl-"));
try {
  const { store, lock } = await assembledSmall(base, workload.assembleWorkload);
  const options = MEMO ? { memoKeyDir: join(base, "keys") } : {};
  await workload.openVerifiedWorkload(lock, store, MEMO ? { ...options, full: true } : {}); // warm-up (and the memo), not sampled
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 500 });
  await session.post("Profiler.start");
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const w = await workload.openVerifiedWorkload(lock, store, options);
    if (w.repaired.length > 0) throw new Error("verify repaired the fresh store");
    if (MEMO && w.derivation.how !== "memo") throw new Error(`verify did not use the memo: ${JSON.stringify(w.derivation)}`);
  }
  const wall = (performance.now() - t0) / N;
  const { profile } = (await session.post("Profiler.stop")) as { profile: Profile };
  session.disconnect();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const key = `${f.functionName || "(anonymous)"} ${f.url ? `${basename(f.url)}:${f.lineNumber + 1}` : ""}`;
    const dt = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + dt);
    total += dt;
  });
  // inclusive time: each sample counts once for every distinct function on its stack
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const keyOf = (n: Node): string => {
    const f = n.callFrame;
    return `${f.functionName || "(anonymous)"} ${f.url ? `${basename(f.url)}:${f.lineNumber + 1}` : ""}`;
  };
  const inclusive = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) seen.add(keyOf(byId.get(at)!));
    for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
  });
  console.log(`verify x${N}: wall ${wall.toFixed(0)} ms each; sampled ${(total / 1000 / N).toFixed(0)} ms each; self time per verify:`);
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${(us / 1000 / N).toFixed(1).padStart(7)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  console.log("inclusive time per verify:");
  for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${(us / 1000 / N).toFixed(1).padStart(7)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  if (UNDER !== undefined) {
    // each sample whose stack holds UNDER counts for the frame just below UNDER's outermost call ("(self)" when UNDER is the leaf)
    const below = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      let child = "(self)";
      let hit = false;
      for (let at: number | undefined = id, prev: number | undefined; at !== undefined; prev = at, at = parent.get(at)) {
        if (keyOf(byId.get(at)!) === UNDER) {
          hit = true;
          child = prev === undefined ? "(self)" : keyOf(byId.get(prev)!);
        }
      }
      if (hit) below.set(child, (below.get(child) ?? 0) + (profile.timeDeltas[i] ?? 0));
    });
    console.log(`under ${UNDER}, per verify:`);
    for (const [k, us] of [...below].sort((a, b) => b[1] - a[1]).slice(0, TOP))
      console.log(`  ${(us / 1000 / N).toFixed(1).padStart(7)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
  }
} finally {
  rmSync(base, { recursive: true, force: true });
}
