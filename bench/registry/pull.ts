/**
 * `cairn pull` side by side with its peer, `skopeo copy docker://… oci:…`,
 * from the same loopback registry (CNCF Distribution, started here on
 * 127.0.0.1) in one run (issue 11, "Measure"). Both are whole processes
 * started cold, each into a new layout; cairn with a new, empty store each
 * time (a cached pull makes no blob request and would not be a transfer).
 * skopeo runs with --preserve-digests so both move the same bytes
 * (without it skopeo may recompress layers).
 *
 * Inputs are the assemble bench's generated layouts (bench/assemble/layouts.ts):
 * a 20,000-file image and a ~200 MB image, pushed once with skopeo.
 * Each round runs cairn then skopeo, in an order that alternates from round
 * to round; the medians of the wall times and of the CPU times (user +
 * system, from /usr/bin/time, Debian's `time`) and their ratios are printed.
 * On the shared development machine the CPU ratio is the steadier one: under
 * a load of several processes per core, wall time mostly measures waiting
 * for a core, which costs the process that needs more CPU the most.
 *
 * With a second argument, the directory of another cairn build (a copy of
 * main's `bin/`, `dist/` and `package.json`, with `node_modules` beside),
 * each round also runs that build, in a rotating order with the two others,
 * so a change is measured before and after in one run. The load average is
 * printed with each image's figures.
 *
 * A third figure is a floor for any Node program: a Node process that only
 * GETs each layer blob with node:http and discards the bytes (no hashing, no
 * writing, no checks). What cairn spends above it is cairn's; what the floor
 * spends above skopeo is Node's.
 *
 *   npm run build && node --import tsx bench/registry/pull.ts [N] [BASELINE_DIR]
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { TestRegistry } from "../../tests/registry/fixtures/registry-server.ts";
import { writeLargeLayout, writeSmallLayout } from "../assemble/layouts.ts";

const N = Number(process.argv[2] ?? 3);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-pull-"));
const cairnBin = join(import.meta.dirname, "..", "..", "bin", "cairn.js");
const baselineBin = process.argv[3] === undefined ? undefined : join(process.argv[3], "bin", "cairn.js");

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Runs a whole process; returns [wall seconds, CPU seconds (user + system)]. */
function timed(cmd: string, args: string[]): [number, number] {
  const t = performance.now();
  const r = spawnSync("/usr/bin/time", ["-f", "CPU %U %S", cmd, ...args], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, HOME: work } });
  const wall = (performance.now() - t) / 1000;
  const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(String(r.stderr));
  if (r.status !== 0 || m === null) throw new Error(`${cmd} failed: ${String(r.stderr).slice(0, 500)}`);
  return [wall, Number(m[1]) + Number(m[2])];
}

/** The floor: GET each URL with node:http, one after the other, and discard the body. */
const NODE_GET = `
const http = require("node:http");
(async () => {
  for (const url of process.argv.slice(1)) {
    await new Promise((resolve, reject) => {
      http.get(url, (res) => {
        if (res.statusCode !== 200) reject(new Error(url + ": " + res.statusCode));
        res.on("data", () => {});
        res.on("end", resolve);
      }).on("error", reject);
    });
  }
})().catch((e) => { console.error(e); process.exit(1); });
`;

const reg = await TestRegistry.create(join(work, "registry"));
try {
  const images = [
    { name: "20,000 files", img: writeSmallLayout(join(work, "small")) },
    { name: "~200 MB", img: writeLargeLayout(join(work, "large")) },
  ];
  for (const { name, img } of images) {
    const repo = `${reg.host}/bench/${name.startsWith("2") ? "small" : "large"}`;
    execFileSync("skopeo", ["copy", "--quiet", "--dest-tls-verify=false", "--preserve-digests", `oci:${img.dir}`, `docker://${repo}:b`]);
    const bytes = img.layers.reduce((n, l) => n + l.size, 0);
    // per runner: wall and CPU seconds of each counted round
    const runners: { label: string; run: (i: number) => [number, number]; wall: number[]; cpu: number[] }[] = [];
    const cairnRunner = (label: string, bin: string) => ({
      label,
      wall: [] as number[],
      cpu: [] as number[],
      run: (i: number) => {
        const r = timed(process.execPath, [
          bin,
          "pull",
          `${repo}:b`,
          "--oci",
          join(work, `${label}-${name.length}-${i}`),
          "--store",
          join(work, `store-${label}-${name.length}-${i}`),
          "--plain-http",
          "--json",
        ]);
        rmSync(join(work, `store-${label}-${name.length}-${i}`), { recursive: true, force: true });
        rmSync(join(work, `${label}-${name.length}-${i}`), { recursive: true, force: true });
        return r;
      },
    });
    runners.push(cairnRunner("cairn", cairnBin));
    if (baselineBin !== undefined) runners.push(cairnRunner("baseline", baselineBin));
    const urls = img.layers.map((l) => `http://${repo.replace("/bench/", "/v2/bench/")}/blobs/${l.digest}`);
    runners.push({
      label: "node-get",
      wall: [],
      cpu: [],
      run: () => timed(process.execPath, ["-e", NODE_GET, ...urls]),
    });
    runners.push({
      label: "skopeo",
      wall: [],
      cpu: [],
      run: (i: number) => {
        const out = join(work, `s-${name.length}-${i}`);
        const r = timed("skopeo", ["copy", "--quiet", "--src-tls-verify=false", "--preserve-digests", `docker://${repo}:b`, `oci:${out}:b`]);
        rmSync(out, { recursive: true, force: true });
        return r;
      },
    });
    const loads: number[] = [];
    for (let i = 0; i < N + 1; i++) {
      // rotate which runs first from round to round
      for (let k = 0; k < runners.length; k++) {
        const r = runners[(i + k) % runners.length]!;
        const [wall, cpu] = r.run(i);
        if (i === 0) continue; // warm-up round: page cache, registry start
        r.wall.push(wall);
        r.cpu.push(cpu);
      }
      loads.push(loadavg()[0]!);
    }
    const [c, ...others] = runners;
    const s = runners[runners.length - 1]!;
    const fig = (r: (typeof runners)[number]) => `${r.label} wall ${median(r.wall).toFixed(2)} s, CPU ${median(r.cpu).toFixed(2)} s`;
    const ratio = (r: (typeof runners)[number]) =>
      `${r.label}/skopeo wall ${(median(r.wall) / median(s.wall)).toFixed(2)}x, CPU ${(median(r.cpu) / median(s.cpu)).toFixed(2)}x`;
    console.log(
      `${name} (${(bytes / 1024 / 1024).toFixed(1)} MiB of layers, ${N} rounds, load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}): ` +
        `${[c!, ...others].map(fig).join("; ")}; ${runners.slice(0, -1).map(ratio).join("; ")}`,
    );
  }
} finally {
  await reg.stop();
  rmSync(work, { recursive: true, force: true });
}
