/**
 * Big images run by the CLI as a user would (issue 31, case 15): an OCI
 * layout of N GiB, generated here, with a spec that names no limit and no
 * root (only what the run should print), through `cairn workload check`
 * and `cairn run --follow`, against hello (the same program alone).
 *
 *   node --import tsx bench/root-disk/big.ts [--sizes=0,4,8] [--kit=DIR] [--work=DIR] [--keep]
 *
 * The image (one uncompressed layer, as `docker save` of many images has):
 * `/bin/first` (first.c, static: prints "first output" at once, then the
 * SHA-256 of the first MiB of the file it is given) and N GiB of files of
 * 256 MiB (the default `fileSize`), each with its own bytes (no file is
 * another's, so the store keeps them all). Size 0 is hello: the program
 * alone (an initramfs root, as a small tree gets by default).
 *
 * Per size, one cold run (assembly into an empty store) and one warm run
 * (the store and the verify memo already hold the workload), each measured
 * from outside the CLI process:
 *   - first output: wall time from the start of `cairn run` to the line the
 *     workload prints first (through --follow), and to "recording" (QEMU
 *     starts; before it: assembly or verify, the guest images hashed);
 *   - host memory: peak RSS (VmHWM, /proc polled every 200 ms) of the cairn
 *     process and of QEMU;
 *   - host disk: the store (du), the root disk and the initramfs written for
 *     the boot (their sizes in run.json; removed after the boot), the run
 *     directory (du).
 * Ratios are against hello's. The child runs under `nice -n 10`.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const FILE = 256 * MiB;
const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const sizes = arg("sizes", "0,4,8").split(",").map(Number);
const kit = arg("kit", "/tmp/cairn-test-kit");
const work = mkdtempSync(join(arg("work", "/tmp"), "cairn-big-"));
const cairn = arg("cairn", join(import.meta.dirname, "..", "..", "bin", "cairn.js"));

function buildFirst(): Buffer {
  const out = join(work, "first");
  const r = spawnSync("gcc", ["-static", "-O2", "-o", out, join(import.meta.dirname, "first.c"), join(import.meta.dirname, "../../agent/sha256.c")], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`gcc failed: ${r.stderr}`);
  return readFileSync(out);
}

function header(name: string, type: "0" | "5", size: number, mode: number): Buffer {
  const b = Buffer.alloc(512);
  b.write(name, 0, 100, "utf8");
  const oct = (off: number, len: number, v: number) => b.write(`${v.toString(8).padStart(len - 1, "0")}\0`, off, len, "latin1");
  oct(100, 8, mode);
  oct(108, 8, 0);
  oct(116, 8, 0);
  oct(124, 12, size);
  oct(136, 12, 1_700_000_000);
  b.write(type, 156, 1, "latin1");
  b.write("ustar\u000000", 257, 8, "latin1");
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const x of b) sum += x;
  b.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
  return b;
}

const pad = (n: number) => Buffer.alloc((512 - (n % 512)) % 512);

/** Writes the layout; returns its manifest digest and the SHA-256 of the first MiB of the last file. */
async function writeLayout(dir: string, program: Buffer, gib: number): Promise<{ manifest: string; last?: string; lastPath?: string }> {
  const blobs = join(dir, "blobs", "sha256");
  mkdirSync(blobs, { recursive: true });
  const tmp = join(blobs, "layer.tmp");
  const out = createWriteStream(tmp);
  const hash = createHash("sha256");
  let size = 0;
  const put = async (b: Buffer) => {
    hash.update(b);
    size += b.length;
    if (!out.write(b)) await once(out, "drain");
  };
  await put(header("bin/", "5", 0, 0o755));
  await put(header("bin/first", "0", program.length, 0o755));
  await put(Buffer.concat([program, pad(program.length)]));
  const files = Math.round((gib * GiB) / FILE);
  let last: string | undefined;
  let lastPath: string | undefined;
  if (files > 0) await put(header("data/", "5", 0, 0o755));
  const base = randomBytes(MiB);
  for (let f = 0; f < files; f++) {
    const name = `data/part-${String(f).padStart(3, "0")}`;
    await put(header(name, "0", FILE, 0o644));
    for (let m = 0; m < FILE / MiB; m++) {
      // every MiB of every file its own: the file's and the MiB's number over shared random bytes
      const chunk = Buffer.from(base);
      chunk.writeUInt32LE(f, 0);
      chunk.writeUInt32LE(m, 4);
      if (m === 0 && f === files - 1) {
        last = createHash("sha256").update(chunk).digest("hex");
        lastPath = `/${name}`;
      }
      await put(chunk);
    }
  }
  await put(Buffer.alloc(1024));
  out.end();
  await once(out, "finish");
  const layer = hash.digest("hex");
  renameSync(tmp, join(blobs, layer));
  const blob = (bytes: Buffer): string => {
    const hex = createHash("sha256").update(bytes).digest("hex");
    writeFileSync(join(blobs, hex), bytes);
    return `sha256:${hex}`;
  };
  const argv = ["/bin/first", ...(lastPath ? [lastPath] : [])];
  const config = Buffer.from(
    JSON.stringify({
      architecture: "amd64",
      os: "linux",
      config: { Entrypoint: argv, User: "1000:1000", WorkingDir: "/" },
      rootfs: { type: "layers", diff_ids: [`sha256:${layer}`] },
    }),
  );
  const configDigest = blob(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: configDigest, size: config.length },
      layers: [{ mediaType: "application/vnd.oci.image.layer.v1.tar", digest: `sha256:${layer}`, size }],
    }),
  );
  const manifestDigest = blob(manifest);
  writeFileSync(
    join(dir, "index.json"),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [
        {
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          digest: manifestDigest,
          size: manifest.length,
          platform: { architecture: "amd64", os: "linux" },
        },
      ],
    }),
  );
  writeFileSync(join(dir, "oci-layout"), JSON.stringify({ imageLayoutVersion: "1.0.0" }));
  return { manifest: manifestDigest, ...(last ? { last, lastPath } : {}) };
}

/** VmHWM of `pid` in bytes, or undefined once it is gone. */
function hwm(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

interface RunFigures {
  status: number | null;
  recordingS?: number;
  firstS?: number;
  totalS: number;
  cairnRss: number;
  qemuRss: number;
  stdout: string;
}

async function run(args: string[], env: NodeJS.ProcessEnv): Promise<RunFigures> {
  const t0 = performance.now();
  const child = spawn("nice", ["-n", "10", process.execPath, cairn, ...args], { stdio: ["ignore", "pipe", "pipe"], env });
  const pid = child.pid!;
  const fig: RunFigures = { status: null, totalS: 0, cairnRss: 0, qemuRss: 0, stdout: "" };
  const qemus = new Set<number>();
  const poll = setInterval(() => {
    fig.cairnRss = Math.max(fig.cairnRss, hwm(pid) ?? 0);
    for (const c of childrenOf(pid)) qemus.add(c);
    for (const q of qemus) fig.qemuRss = Math.max(fig.qemuRss, hwm(q) ?? 0);
  }, 200);
  child.stdout.on("data", (c: Buffer) => {
    fig.stdout += c.toString("utf8");
    if (fig.firstS === undefined && fig.stdout.includes("first output")) fig.firstS = (performance.now() - t0) / 1000;
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
    if (fig.recordingS === undefined && stderr.includes("recording (")) fig.recordingS = (performance.now() - t0) / 1000;
  });
  const [code] = (await once(child, "exit")) as [number | null];
  clearInterval(poll);
  fig.status = code;
  fig.totalS = (performance.now() - t0) / 1000;
  if (code !== 0) fig.stdout += `\n[stderr] ${stderr.slice(-1500)}`;
  return fig;
}

function du(path: string): number {
  const r = spawnSync("du", ["-sb", path], { encoding: "utf8" });
  return Number(r.stdout.split("\t")[0]);
}

const fmt = (b: number) => (b >= GiB ? `${(b / GiB).toFixed(2)} GiB` : `${(b / MiB).toFixed(1)} MiB`);
const program = buildFirst();
const rows: string[] = [];
let hello: { first: number; warmFirst: number; disk: number; cairnRss: number; qemuRss: number } | undefined;
console.log(`work directory ${work}; kit ${kit}`);
for (const gib of sizes) {
  const dir = join(work, `img-${gib}`);
  const t = performance.now();
  const img = await writeLayout(join(dir, "layout"), program, gib);
  console.log(`${gib} GiB: layout written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const spec = join(dir, "spec.json");
  const expected = ["first output", ...(img.last ? [img.last] : [])];
  // no limits and no root: only what the run should print (a partial run section: the default steps)
  writeFileSync(
    spec,
    JSON.stringify({
      schema: "cairn.workload/1",
      source: { oci: { layout: "./layout", manifest: img.manifest } },
      run: { expect: [{ "exit-code": 0, "stdout-lines": expected }] },
    }),
  );
  const store = join(dir, "store");
  const env = { ...process.env, CAIRN_HOME: join(dir, "home") };
  const tc = performance.now();
  const check = spawnSync("nice", ["-n", "10", process.execPath, cairn, "workload", "check", spec], { encoding: "utf8", env });
  console.log(`  workload check: exit ${check.status} in ${((performance.now() - tc) / 1000).toFixed(1)} s: ${check.stdout.trim().slice(0, 300)}`);
  const figs: RunFigures[] = [];
  for (const which of ["cold", "warm"]) {
    const runs = join(dir, `runs-${which}`);
    const f = await run(["run", spec, "--follow", "--store", store, "--runs", runs, "--kit", kit], env);
    figs.push(f);
    const runDir = readdirSync(runs).find((d) => /^\d{8}T/.test(d));
    const m = runDir
      ? (JSON.parse(readFileSync(join(runs, runDir, "run.json"), "utf8")) as {
          status: string;
          vm: { root_disk: { size: number } | null; memory_mib: number };
          guest_image: { size: number };
        })
      : undefined;
    const storeBytes = du(store);
    const diskBytes = m?.vm.root_disk?.size ?? 0;
    const initramfs = m?.guest_image.size ?? 0;
    const runBytes = runDir ? du(join(runs, runDir)) : 0;
    const total = storeBytes + diskBytes + initramfs;
    const printed = f.stdout.includes(expected.at(-1)!) ? "ok" : "MISSING";
    console.log(
      `  ${which}: exit ${f.status}, status ${m?.status}, recording at ${f.recordingS?.toFixed(1)} s, first output at ${f.firstS?.toFixed(1)} s, done ${f.totalS.toFixed(1)} s; cairn ${fmt(f.cairnRss)}, QEMU ${fmt(f.qemuRss)}; store ${fmt(storeBytes)}, root disk ${fmt(diskBytes)}, initramfs ${fmt(initramfs)}, run dir ${fmt(runBytes)}; guest RAM ${m?.vm.memory_mib} MiB; printed digest ${printed}`,
    );
    if (f.status !== 0) console.log(f.stdout.slice(-2000));
    if (which === "warm") {
      const cold = figs[0]!;
      if (gib === 0)
        hello = {
          first: cold.firstS ?? Number.NaN,
          warmFirst: f.firstS ?? Number.NaN,
          disk: total,
          cairnRss: Math.max(cold.cairnRss, f.cairnRss),
          qemuRss: Math.max(cold.qemuRss, f.qemuRss),
        };
      const r = (a: number, b: number | undefined) => (b ? `${(a / b).toFixed(2)}×` : "–");
      const cairnRss = Math.max(cold.cairnRss, f.cairnRss);
      const qemuRss = Math.max(cold.qemuRss, f.qemuRss);
      rows.push(
        `| ${gib === 0 ? "hello" : `${gib} GiB`} | ${m?.vm.root_disk ? "disk" : "initramfs"} | ${cold.firstS?.toFixed(1)} s (${r(cold.firstS ?? Number.NaN, hello?.first)}) | ${f.firstS?.toFixed(1)} s (${r(f.firstS ?? Number.NaN, hello?.warmFirst)}) | ${fmt(storeBytes)} + ${fmt(diskBytes + initramfs)} = ${fmt(total)} (${r(total, hello?.disk)}) | ${fmt(cairnRss)} (${r(cairnRss, hello?.cairnRss)}) | ${fmt(qemuRss)} (${r(qemuRss, hello?.qemuRss)}) | ${m?.status}, ${printed} |`,
      );
    }
  }
  if (!process.argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
}
console.log(
  "| image | root | first output, cold (× hello) | first output, warm (× hello) | host disk: store + guest images (× hello) | cairn peak RSS (× hello) | QEMU peak RSS (× hello) | run |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const r of rows) console.log(r);
if (!process.argv.includes("--keep")) rmSync(work, { recursive: true, force: true });
