/**
 * Issue 10's measurements, each side by side with its peer in one run:
 *
 *   export    `exportLock` of a signed lockfile of 10 layers (~200 MB of
 *             incompressible files, 20 MB a layer) over a toy rootfs base,
 *             against umoci packing the same trees: `umoci init`, `umoci new`,
 *             one `umoci insert` per layer directory (umoci compresses each
 *             layer; cairn copies the already-built layer blobs and computes
 *             their diff_ids, so the ratio also shows what building layers
 *             ahead of time saves).
 *   bundle    the size of a replay bundle of a recorded run against the sum
 *             of its members (the tar's own overhead), and against a gzip of
 *             the bundle (what compression would save).
 *   replay    replay from the bundle on a fresh home (import + verify +
 *             replay) against replay of the run directory in place.
 *
 * Runs are interleaved (cairn, peer, cairn, peer, ...); medians of N. Wall
 * time on a shared machine is noisy: quote the ratios.
 *
 *   node --import tsx bench/pipeline/run.ts [N]
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { buildExampleRegistry, toySpec } from "../../examples/strata/build-registry.ts";
import { readVerifyingKey } from "../../src/core/index.ts";
import { buildLayerFromDirectory, exportLock, LocalRegistry } from "../../src/strata/index.ts";
import { importBundle, loadKit, recordLockfileRun, replayRun, writeRunBundle } from "../../src/vm/index.ts";
import { runCli } from "../../tests/helpers/cli.ts";
import { resolveArgs } from "../../tests/helpers/resolve-args.ts";
import { staticFixture } from "../../tests/vm/fixtures/programs.ts";
import { TEST_KIT_DIR, testKit } from "../../tests/vm/fixtures/kit.ts";

const N = Number(process.argv[2] ?? 3);
const work = mkdtempSync(join(tmpdir(), "cairn-bench-pipeline-"));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = async (fn: () => unknown): Promise<number> => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};

// ---- export: 10 layers, 200 MB
const ex = buildExampleRegistry(join(work, "strata"));
const reg = LocalRegistry.open(ex.registry);
const layerDirs: string[] = [];
for (let i = 0; i < 10; i++) {
  const dir = join(work, "layers", `big${i}`);
  mkdirSync(join(dir, `opt/big${i}`), { recursive: true });
  for (let f = 0; f < 20; f++) writeFileSync(join(dir, `opt/big${i}/f${f}.bin`), randomBytes(1024 * 1024));
  layerDirs.push(dir);
  const built = buildLayerFromDirectory(dir, toySpec({ name: `big${i}`, version: "1.0", provides: [`big${i}@1.0`], files: {} }));
  reg.publishLayer(built.blob.blob, built.manifest, [ex.registryKey]);
}
const profile = join(work, "big.yaml");
writeFileSync(profile, `name: big\nversion: "1"\nbase:\n  os: debian12\n  arch: x86_64\nsoftware:\n${layerDirs.map((_, i) => `  - big${i}`).join("\n")}\n`);
const lock = join(work, "big.lock");
const env = { ...process.env, CAIRN_KIT: TEST_KIT_DIR, CAIRN_HOME: join(work, "home") };
const reso = await runCli(resolveArgs(ex, profile, lock), env);
if (reso.code !== 0) throw new Error(reso.stderr);
const verify = { keys: [readVerifyingKey(join(ex.root, "lock.pub"))], now: new Date(), registries: [reg], layerKeys: [], allowUnsignedOffline: false };
const cairnExport: number[] = [];
const umociPack: number[] = [];
let exportedBytes = 0;
for (let r = 0; r < N; r++) {
  const out = join(work, `export-${r}`);
  cairnExport.push(
    await ms(async () => {
      const x = await exportLock({
        lockPath: lock,
        verify,
        base: { kind: "rootfs", dir: ex.rootfs },
        launch: { user: "1000:1000", workdir: "/" },
        outDir: out,
      });
      exportedBytes = x.layout.layerBytes;
    }),
  );
  rmSync(out, { recursive: true, force: true });
  const u = join(work, `umoci-${r}`);
  umociPack.push(
    await ms(() => {
      execFileSync("umoci", ["init", "--layout", u]);
      execFileSync("umoci", ["new", "--image", `${u}:t`]);
      execFileSync("umoci", ["insert", "--image", `${u}:t`, ex.rootfs, "/"]);
      for (const d of layerDirs) execFileSync("umoci", ["insert", "--image", `${u}:t`, d, "/"]);
    }),
  );
  rmSync(u, { recursive: true, force: true });
}

// ---- bundle and replay: the example environment plus a static program
await testKit();
const kit = loadKit(TEST_KIT_DIR)!;
const ex2 = buildExampleRegistry(join(work, "strata2"));
const src = join(work, "lstree");
mkdirSync(join(src, "usr/local/bin"), { recursive: true });
copyFileSync(staticFixture("lstree"), join(src, "usr/local/bin/lstree"));
const built = buildLayerFromDirectory(src, toySpec({ name: "lstree", version: "1.0", provides: ["lstree@1.0"], files: {} }));
LocalRegistry.open(ex2.registry).publishLayer(built.blob.blob, built.manifest, [ex2.registryKey]);
const p2 = join(work, "p2.yaml");
writeFileSync(p2, readFileSync(join(import.meta.dirname, "../../examples/strata/profile.yaml"), "utf8").replace("  - numpy\n", "  - numpy\n  - lstree\n"));
const lock2 = join(work, "p2.lock");
const r2 = await runCli(resolveArgs(ex2, p2, lock2), env);
if (r2.code !== 0) throw new Error(r2.stderr);
const storeDir = join(work, "store");
const rec = await recordLockfileRun({
  storeDir,
  runsDir: join(work, "runs"),
  kit,
  cairnVersion: "bench",
  export: {
    lockPath: lock2,
    verify: { ...verify, keys: [readVerifyingKey(join(ex2.root, "lock.pub"))], registries: [LocalRegistry.open(ex2.registry)] },
    base: { kind: "rootfs", dir: ex2.rootfs },
    launch: { argv: ["/usr/local/bin/lstree"], user: "1000:1000", workdir: "/" },
  },
});
const bundleFile = join(work, "run.cairn");
const b = writeRunBundle({ runDir: rec.runDir, storeDir, kit, out: bundleFile });
const parts = b.members.reduce((n, m) => n + m.size, 0);
const gz = gzipSync(readFileSync(bundleFile), { level: 6 }).length;
const fromBundle: number[] = [];
const inPlace: number[] = [];
for (let r = 0; r < N; r++) {
  inPlace.push(await ms(() => replayRun({ runDir: rec.runDir, storeDir, kit })));
  const home = join(work, `fresh-${r}`);
  fromBundle.push(
    await ms(async () => {
      const imp = await importBundle(bundleFile, { storeDir: join(home, "store"), kitDir: join(home, "kit"), runsDir: join(home, "runs") });
      await replayRun({ runDir: imp.runDir, storeDir: join(home, "store"), kit: imp.kit });
    }),
  );
  rmSync(home, { recursive: true, force: true });
}

const f = (x: number): string => (x / 1000).toFixed(2);
console.log(`runs: ${N}, interleaved; medians (min–max) in seconds`);
console.log(`export, 10 layers, ${(exportedBytes / 1e6).toFixed(0)} MB of layer blobs:`);
console.log(`  cairn lock export   ${f(median(cairnExport))} s (${f(Math.min(...cairnExport))}–${f(Math.max(...cairnExport))})`);
console.log(`  umoci init+new+insert ×11   ${f(median(umociPack))} s (${f(Math.min(...umociPack))}–${f(Math.max(...umociPack))})`);
console.log(`  ratio cairn/umoci   ${(median(cairnExport) / median(umociPack)).toFixed(2)}`);
console.log(
  `bundle: ${b.size} bytes; members ${parts} bytes (tar overhead ${(((b.size - parts) / parts) * 100).toFixed(2)} %); gzip -6 of the bundle ${gz} bytes (${((gz / b.size) * 100).toFixed(0)} %)`,
);
console.log(
  `replay: from bundle on a fresh home ${f(median(fromBundle))} s (${f(Math.min(...fromBundle))}–${f(Math.max(...fromBundle))}), in place ${f(median(inPlace))} s (${f(Math.min(...inPlace))}–${f(Math.max(...inPlace))}), ratio ${(median(fromBundle) / median(inPlace)).toFixed(2)}`,
);
console.log(`guest image ${rec.imageSize} bytes; bundle file ${statSync(bundleFile).size} bytes`);
rmSync(work, { recursive: true, force: true });
