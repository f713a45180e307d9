/**
 * Resolver scaling: a synthetic catalog of N layers (N/5 names × 5 versions,
 * each providing its own capability, requiring glibc from the base and, for
 * every layer, the previous name's capability within a range) and a profile of
 * 100 refs spread over the catalog. Measured for N = 10k and 20k in one run,
 * reported as times and the 20k/10k ratio (a linear resolver gives ≈2).
 *
 * Two figures per size:
 * - in-memory: catalog indexing + resolveProfile (every stage, signatures of
 *   the 100 chosen layers verified);
 * - from disk: a local directory registry of N signed manifests read by
 *   `catalogFromRegistries`, then resolved — what `cairn resolve` does.
 *
 *   node --expose-gc --import tsx bench/resolve/run.ts [RUNS]
 *
 * Sizes are measured alternately (10k, 20k, 10k, …) after a collection, and
 * the median is reported, so a busy machine skews both sizes alike.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canonicalBytes, generateSigningKey, sha256, signEnvelope, type Sha256Digest, type SigningKey } from "../../src/core/index.ts";
import {
  Catalog,
  LocalRegistry,
  layerDocumentBytes,
  catalogFromRegistries,
  declaredBase,
  layerManifestToModel,
  parseProfileText,
  resolveProfile,
  LAYER_MANIFEST_TYPE,
  type LayerManifest,
  type LockBase,
  type Profile,
  type SignedDocument,
} from "../../src/strata/index.ts";
import { writeFileAtomic } from "../../src/core/index.ts";

const RUNS = Number(process.argv[2] ?? 5);
const VERSIONS = 5;
const REFS = 100;
const key: SigningKey = generateSigningKey();
const now = new Date("2026-03-01T00:00:00Z");

function manifest(nameIdx: number, v: number): LayerManifest {
  const name = `pkg-${String(nameIdx).padStart(5, "0")}`;
  const version = `1.${v}.0`;
  const content = new Map<string, Sha256Digest>();
  for (let f = 0; f < 4; f++) content.set(`/opt/${name}/${version}/file${f}`, sha256(`${name}${version}${f}`));
  return {
    id: `${name}-${version}-none-noarch`,
    name,
    version,
    arch: "noarch",
    abi: "none",
    install_layout: "rootfs",
    user_selectable: true,
    sha256: sha256(`${name}-${version}-blob`),
    size: 1000 + nameIdx,
    content_manifest: content,
    symlinks: new Map(),
    provides: [{ name, version }],
    requires: nameIdx % REFS === 0 ? [] : [{ name: `pkg-${String(nameIdx - 1).padStart(5, "0")}`, min: "1.0", max: "2.0" }],
    build: { builder: "bench", diff_id: sha256(`${name}-${version}-tar`) },
  };
}

function signed(m: LayerManifest): SignedDocument<LayerManifest> {
  const payload = canonicalBytes(layerManifestToModel(m));
  const envelope = signEnvelope(LAYER_MANIFEST_TYPE, payload, [key]);
  const bytes = Buffer.from(JSON.stringify(envelope));
  return { value: m, envelope, envelopeSha256: sha256(bytes), envelopeBytes: bytes, payloadSha256: sha256(payload) };
}

function docsFor(n: number): SignedDocument<LayerManifest>[] {
  const out: SignedDocument<LayerManifest>[] = [];
  for (let i = 0; i < n / VERSIONS; i++) for (let v = 0; v < VERSIONS; v++) out.push(signed(manifest(i, v)));
  return out;
}

/**
 * 100 refs: a chain of consecutive names in the middle of the catalog (every
 * name requires the previous one; a name divisible by 100 requires nothing),
 * listed highest first so the mount order has to reverse them.
 */
function profileFor(n: number): Profile {
  const first = Math.floor(n / VERSIONS / 2 / REFS) * REFS;
  const refs: string[] = [];
  for (let i = REFS - 1; i >= 0; i--) refs.push(i % 2 === 0 ? `pkg-${String(first + i).padStart(5, "0")}` : `pkg-${String(first + i).padStart(5, "0")}@1`);
  return parseProfileText(`name: bench\nbase: {os: debian12}\nsoftware:\n${refs.map((r) => `  - "${r}"`).join("\n")}\n`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeIt(fn: () => void): number {
  (globalThis as { gc?: () => void }).gc?.();
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** Catalog indexing and resolution of one size, timed apart (indexing grows with the catalog; resolution mostly with the profile). */
function inMemory(n: number, split: { index: number[]; resolve: number[] }): () => void {
  const docs = docsFor(n);
  const profile = profileFor(n);
  const base: LockBase = declaredBase("debian12", "x86_64");
  const source = { url: "bench", keys: [key] };
  return () => {
    const t0 = process.hrtime.bigint();
    const c = new Catalog();
    for (const doc of docs) c.addLayer({ doc, source });
    c.seal();
    const t1 = process.hrtime.bigint();
    const lock = resolveProfile({ profile, catalog: c, probedBase: base, allowUnsignedOffline: false, now, cairnVersion: "bench" });
    split.index.push(Number(t1 - t0) / 1e6);
    split.resolve.push(Number(process.hrtime.bigint() - t1) / 1e6);
    if (lock.layers.length !== REFS) throw new Error(`expected ${REFS} layers, got ${lock.layers.length}`);
  };
}

/** Alternates the two runs RUNS times after a warm-up; returns both medians. */
function alternate(a: () => void, b: () => void, runs: number): [number, number] {
  a();
  b();
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < runs; i++) {
    ta.push(timeIt(a));
    tb.push(timeIt(b));
  }
  return [median(ta), median(tb)];
}

function fromDisk(n: number, dirs: string[]): { write: number; run: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-reg-"));
  dirs.push(dir);
  const reg = LocalRegistry.init(dir);
  const docs = docsFor(n);
  const write = timeIt(() => {
    for (const d of docs) {
      writeFileAtomic(reg.layerSignaturePath(d.value.id), `${JSON.stringify(d.envelope)}\n`);
      writeFileAtomic(reg.layerPath(d.value.id), layerDocumentBytes(d.value, d.envelope));
    }
  });
  const profile = profileFor(n);
  const base = declaredBase("debian12", "x86_64");
  return {
    write,
    run: () => {
      const catalog = catalogFromRegistries([{ registry: LocalRegistry.open(dir), source: { url: dir, keys: [key] } }]);
      resolveProfile({ profile, catalog, probedBase: base, allowUnsignedOffline: false, now, cairnVersion: "bench" });
    },
  };
}

console.log(`resolver bench: ${REFS}-ref profile, ${VERSIONS} versions per name, median of ${RUNS} runs, node ${process.version}`);
const s10 = { index: [] as number[], resolve: [] as number[] };
const s20 = { index: [] as number[], resolve: [] as number[] };
const [mem10, mem20] = alternate(inMemory(10_000, s10), inMemory(20_000, s20), RUNS);
console.log(`in-memory  10k layers: ${mem10.toFixed(1)} ms   20k layers: ${mem20.toFixed(1)} ms   ratio 20k/10k: ${(mem20 / mem10).toFixed(2)}`);
console.log(
  `  of which catalog indexing: ${median(s10.index).toFixed(1)} / ${median(s20.index).toFixed(1)} ms (ratio ${(median(s20.index) / median(s10.index)).toFixed(2)}); resolution stages: ${median(s10.resolve).toFixed(1)} / ${median(s20.resolve).toFixed(1)} ms (ratio ${(median(s20.resolve) / median(s10.resolve)).toFixed(2)}; mostly the 100 signature checks)`,
);
const dirs: string[] = [];
try {
  const d10 = fromDisk(10_000, dirs);
  const d20 = fromDisk(20_000, dirs);
  const [disk10, disk20] = alternate(d10.run, d20.run, Math.max(1, Math.min(RUNS, 3)));
  console.log(
    `from disk  10k layers: ${disk10.toFixed(1)} ms   20k layers: ${disk20.toFixed(1)} ms   ratio 20k/10k: ${(disk20 / disk10).toFixed(2)}   (publishing the manifests, fsync each: ${(d10.write / 1000).toFixed(1)} s / ${(d20.write / 1000).toFixed(1)} s, not part of resolve)`,
  );
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
