/**
 * What the workload benches share: the 20,000-file layout's members, the
 * spec that names a written layout, and the timing of one step (wall,
 * process CPU, and the main thread's own CPU from
 * /proc/thread-self/schedstat) with the medians and load figures printed
 * beside it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { writeOciLayout } from "../../tests/workload/fixtures/oci-writer.ts";
import { dir, file, type TarMember } from "../../tests/workload/fixtures/tar-writer.ts";
import { content } from "../assemble/layouts.ts";

/** The image config every layout runs: assemble checks that the program exists in the image. */
export const CONFIG = { Entrypoint: ["/bin/app"], User: "1000:1000" };

/** The program CONFIG names; these bytes are never run. */
export const program = (): TarMember[] => [dir("bin"), file("bin/app", "placeholder program", { mode: 0o755 })];

/** 20,000 files of 0.5–8 KiB in 200 directories: the layout where per-member cost shows. */
export function smallLayout(): TarMember[] {
  const m: TarMember[] = [...program(), dir("usr"), dir("usr/share")];
  for (let d = 0; d < 200; d++) m.push(dir(`usr/share/d${d}`, { mtime: 1_700_000_000 }));
  for (let i = 0; i < 20_000; i++)
    m.push(file(`usr/share/d${i % 200}/f${i}.txt`, content(512 + ((i * 7919) % 7680), i), { mode: 0o644, mtime: 1_700_000_000 }));
  return m;
}

/**
 * The 20,000-file layout written under `base`, its spec, and a store
 * assembled from it by `assemble` (a build's assembleWorkload): what the
 * verify benches time against.
 */
export async function assembledSmall(
  base: string,
  assemble: (o: { specPath: string; storeDir: string; lockOut: string; cairnVersion: string }) => Promise<unknown>,
): Promise<{ store: string; lock: string }> {
  const image = writeOciLayout(join(base, "image"), { layers: [{ entries: smallLayout() }], config: CONFIG });
  const spec = join(base, "spec.json");
  writeSpec(spec, image.manifestDigest);
  const store = join(base, "store");
  const lock = join(base, "lock.json");
  await assemble({ specPath: spec, storeDir: store, lockOut: lock, cairnVersion: "bench" });
  return { store, lock };
}

/** Writes a workload spec naming the layout `./image` beside it. */
export function writeSpec(path: string, manifestDigest: string): void {
  writeFileSync(path, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: manifestDigest } } }));
}

export interface Sample {
  wall: number;
  cpu: number;
  main: number;
}

/** Nanoseconds this thread (the main one) ran on a CPU. */
const mainThreadNs = (): number => Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]);

export async function timed(fn: () => Promise<unknown>): Promise<Sample> {
  const m0 = mainThreadNs();
  const u0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const u = process.cpuUsage(u0);
  return { wall, cpu: (u.user + u.system) / 1000, main: (mainThreadNs() - m0) / 1e6 };
}

export const median = (xs: Sample[], k: keyof Sample): number => xs.map((x) => x[k]).sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
