/**
 * An A/B of `workload verify` on the 20,000-file layout: this tree's
 * compiled dist/ against other builds' (each a repository root with its own
 * `npm run build` done), on one store assembled once by this tree, in one
 * process, the order rotated each round, with the rules' floor
 * (floors.ts) beside them. Medians of wall, process CPU and main-thread
 * CPU (/proc/thread-self/schedstat: gunzip's thread pool left out), and
 * each build's ratios to the floor. On a shared host the builds see the
 * same load, which a before run and an after run minutes apart do not.
 *
 *   npm run build && node --import tsx bench/workload/compare.ts N ROOT [ROOT...]
 *
 * e.g. a build of main: `git archive main | tar -x -C /tmp/base`, link
 * node_modules there, `npx tsc -p tsconfig.build.json && cp -r
 * src/oci/schemas dist/oci/schemas`, then pass /tmp/base.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { workload } from "../assemble/compiled.ts";
import { assembledSmall, load, median, type Sample, timed } from "./common.ts";
import { rulesFloor } from "./floors.ts";

type Workload = typeof workload;
const N = Number(process.argv[2] ?? 9);
const roots = process.argv.slice(3);
const builds: Array<[string, Workload]> = [["this", workload]];
for (const r of roots) builds.push([r, (await import(join(r, "dist", "workload", "index.js"))) as Workload]);

const base = mkdtempSync(join(tmpdir(), "cairn-bench-compare-"));
try {
  const { store, lock } = await assembledSmall(base, workload.assembleWorkload);
  const raw = (JSON.parse(readFileSync(lock, "utf8")) as { raw: { role: string; digest: string }[] }).raw;
  const layers = raw.filter((r) => r.role === "layer").map((r) => join(store, "objects", "sha256", r.digest.slice("sha256:".length)));
  const steps: Array<[string, () => Promise<unknown>]> = builds.map(([name, w]) => [
    name,
    async () => {
      const v = await w.openVerifiedWorkload(lock, store);
      if (v.repaired.length > 0) throw new Error(`${name} repaired the fresh store: the bench would time a rebuild`);
    },
  ]);
  steps.push(["rules-floor", () => rulesFloor(layers)]);
  const t = new Map<string, Sample[]>(steps.map(([name]) => [name, []]));
  console.log(`load average before: ${load()}; N=${N} (+1 round not counted)`);
  for (let i = 0; i <= N; i++) {
    for (let k = 0; k < steps.length; k++) {
      const [name, fn] = steps[(i + k) % steps.length]!;
      const s = await timed(fn);
      if (i > 0) t.get(name)!.push(s);
    }
  }
  const floor = t.get("rules-floor")!;
  for (const [name, xs] of t) {
    const r = (k: keyof Sample): string => (median(xs, k) / median(floor, k)).toFixed(2);
    console.log(
      `  ${name}: wall ${median(xs, "wall").toFixed(0)}  cpu ${median(xs, "cpu").toFixed(0)}  main ${median(xs, "main").toFixed(0)}` +
        (name === "rules-floor" ? "" : `  / rules-floor: wall ${r("wall")}x  cpu ${r("cpu")}x  main ${r("main")}x`),
    );
  }
  console.log(`load average after: ${load()}`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
