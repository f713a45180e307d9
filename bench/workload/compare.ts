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
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { writeOciLayout } from "../../tests/workload/fixtures/oci-writer.ts";
import { dir, file, type TarMember } from "../../tests/workload/fixtures/tar-writer.ts";
import { workload } from "../assemble/compiled.ts";
import { content } from "../assemble/layouts.ts";
import { rulesFloor } from "./floors.ts";

type Workload = typeof workload;
const N = Number(process.argv[2] ?? 9);
const roots = process.argv.slice(3);
const builds: Array<[string, Workload]> = [["this", workload]];
for (const r of roots) builds.push([r, (await import(join(r, "dist", "workload", "index.js"))) as Workload]);

const members: TarMember[] = [dir("bin"), file("bin/app", "placeholder program", { mode: 0o755 }), dir("usr"), dir("usr/share")];
for (let d = 0; d < 200; d++) members.push(dir(`usr/share/d${d}`, { mtime: 1_700_000_000 }));
for (let i = 0; i < 20_000; i++)
  members.push(file(`usr/share/d${i % 200}/f${i}.txt`, content(512 + ((i * 7919) % 7680), i), { mode: 0o644, mtime: 1_700_000_000 }));

interface Sample {
  wall: number;
  cpu: number;
  main: number;
}
const mainThreadNs = (): number => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]);
async function timed(fn: () => Promise<unknown>): Promise<Sample> {
  const m0 = mainThreadNs();
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const u = process.cpuUsage(u0);
  return { wall, cpu: (u.user + u.system) / 1000, main: (mainThreadNs() - m0) / 1e6 };
}
const median = (xs: Sample[], k: keyof Sample): number => xs.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

const base = mkdtempSync(join(tmpdir(), "cairn-bench-compare-"));
try {
  const image = writeOciLayout(join(base, "image"), { layers: [{ entries: members }], config: { Entrypoint: ["/bin/app"], User: "1000:1000" } });
  const spec = join(base, "spec.json");
  writeFileSync(spec, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: image.manifestDigest } } }));
  const store = join(base, "store");
  const lock = join(base, "lock.json");
  await workload.assembleWorkload({ specPath: spec, storeDir: store, lockOut: lock, cairnVersion: "bench" });
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
