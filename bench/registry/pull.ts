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
 *   npm run build && node --import tsx bench/registry/pull.ts [N]
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { TestRegistry } from "../../tests/registry/fixtures/registry-server.ts";
import { writeLargeLayout, writeSmallLayout } from "../assemble/layouts.ts";

const N = Number(process.argv[2] ?? 3);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-pull-"));
const cairnBin = join(import.meta.dirname, "..", "..", "bin", "cairn.js");

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
    const cairn: number[] = [];
    const skopeo: number[] = [];
    const cairnCpu: number[] = [];
    const skopeoCpu: number[] = [];
    for (let i = 0; i < N + 1; i++) {
      const runCairn = () =>
        timed(process.execPath, [
          cairnBin,
          "pull",
          `${repo}:b`,
          "--oci",
          join(work, `c-${name.length}-${i}`),
          "--store",
          join(work, `store-${name.length}-${i}`),
          "--plain-http",
          "--json",
        ]);
      const runSkopeo = () =>
        timed("skopeo", [
          "copy",
          "--quiet",
          "--src-tls-verify=false",
          "--preserve-digests",
          `docker://${repo}:b`,
          `oci:${join(work, `s-${name.length}-${i}`)}:b`,
        ]);
      let c: [number, number];
      let s: [number, number];
      if (i % 2 === 0) {
        c = runCairn();
        s = runSkopeo();
      } else {
        s = runSkopeo();
        c = runCairn();
      }
      if (i === 0) continue; // warm-up round: page cache, registry start
      cairn.push(c[0]);
      skopeo.push(s[0]);
      cairnCpu.push(c[1]);
      skopeoCpu.push(s[1]);
      rmSync(join(work, `store-${name.length}-${i}`), { recursive: true, force: true });
    }
    const mc = median(cairn);
    const ms = median(skopeo);
    const uc = median(cairnCpu);
    const us = median(skopeoCpu);
    console.log(
      `${name} (${(bytes / 1024 / 1024).toFixed(1)} MiB of layers, ${N} rounds): wall cairn pull ${mc.toFixed(2)} s, skopeo copy ${ms.toFixed(2)} s, ratio ${(mc / ms).toFixed(2)}x; CPU ${uc.toFixed(2)} s vs ${us.toFixed(2)} s, ratio ${(uc / us).toFixed(2)}x`,
    );
  }
} finally {
  await reg.stop();
  rmSync(work, { recursive: true, force: true });
}
