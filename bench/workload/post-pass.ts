/**
 * The steps `workload verify` runs on one core after the last layer chunk
 * of the 20,000-file layout, while the other core idles (issue 15 item 4):
 * each timed alone on the verified tree, for this tree's compiled dist/ and
 * for other builds' (each a repository root with its own `npm run build`
 * done), interleaved in one process, the order rotated each round. Prints
 * the minimum and the median of each step per build (the minimum is the
 * steadier figure on a shared host: these steps do no I/O).
 *
 *   freeze         the tree's entries sorted into a FrozenTree (TreeModel.freeze)
 *   sortedEntries  the tree's invariants checked once for both encoders
 *   fsIdentity     the cairn.fs/1 frames hashed
 *   derivedEntry   the derived entry's JCS bytes hashed (hashDerived)
 *   packLookups    one pack-index lookup per file (what the content source does)
 *
 *   npm run build && node --import tsx bench/workload/post-pass.ts N [ROOT...]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { workload } from "../assemble/compiled.ts";
import { assembledSmall } from "./common.ts";

const N = Number(process.argv[2] ?? 21);
const roots = [join(import.meta.dirname, "..", ".."), ...process.argv.slice(3)];

interface Build {
  readonly root: string;
  readonly workload: typeof import("../../src/workload/index.ts");
  readonly tree: typeof import("../../src/tree/index.ts");
  readonly frozen: typeof import("../../src/tree/frozen-tree.ts");
  readonly derived: typeof import("../../src/workload/derived-entry.ts");
  readonly packEntries: typeof import("../../src/store/pack-entries.ts");
  readonly core: typeof import("../../src/core/index.ts");
}

const at = (root: string, file: string): Promise<never> => import(join(root, "dist", file)) as Promise<never>;
const builds: Build[] = [];
for (const root of roots) {
  builds.push({
    root,
    workload: root === roots[0] ? workload : await at(root, "workload/index.js"),
    tree: await at(root, "tree/index.js"),
    frozen: await at(root, "tree/frozen-tree.js"),
    derived: await at(root, "workload/derived-entry.js"),
    packEntries: await at(root, "store/pack-entries.js"),
    core: await at(root, "core/index.js"),
  });
}

const base = mkdtempSync(join(tmpdir(), "cairn-bench-post-pass-"));
try {
  const { store, lock } = await assembledSmall(base, workload.assembleWorkload);
  // each build verifies the store itself, so each times its own tree and entry objects
  const verified = await Promise.all(builds.map((b) => b.workload.openVerifiedWorkload(lock, store)));
  const times = new Map<string, number[]>();
  const time = (key: string, fn: () => unknown): void => {
    const t0 = performance.now();
    fn();
    const ms = performance.now() - t0;
    const list = times.get(key) ?? [];
    list.push(ms);
    times.set(key, list);
  };
  for (let round = 0; round < N; round++) {
    for (let k = 0; k < builds.length; k++) {
      const i = (round + k) % builds.length;
      const b = builds[i]!;
      const v = verified[i]!;
      const entries = [...v.tree.values()];
      const shuffled = entries.map((_e, j) => entries[(j * 7919) % entries.length]!); // another order of the same entries
      const { FrozenTree } = b.frozen as { FrozenTree: { fromEntries?: (e: unknown[]) => unknown; new (e: unknown[]): unknown } };
      time(
        `${b.root} freeze`,
        () => (FrozenTree.fromEntries !== undefined ? FrozenTree.fromEntries(shuffled) : new FrozenTree(b.core.sortByBytes(shuffled, (e) => e.path))), // what freeze did before fromEntries
      );
      let checked: ReturnType<typeof b.tree.sortedEntries> | undefined;
      time(`${b.root} sortedEntries`, () => (checked = b.tree.sortedEntries(v.tree)));
      time(`${b.root} fsIdentity`, () => b.tree.fsIdentityOf(checked!));
      const d = { kind: v.kind, identities: v.identities, policy: v.spec.policy, launch: v.launch, raw: v.lock.raw, tree: v.tree };
      time(`${b.root} derivedEntry`, () => b.derived.hashDerived(d, undefined, checked));
      const pack = new b.packEntries.PackEntries();
      const files = entries.flatMap((e) => (e.type === "file" ? [e.sha256] : []));
      for (const [j, sha256] of files.entries()) pack.add(sha256, j, 1);
      time(`${b.root} packLookups`, () => {
        for (const sha256 of files) if (pack.indexOf(sha256) < 0) throw new Error("a file's digest is missing from the pack index");
      });
    }
  }
  console.log(`after-layer steps on ${verified[0]!.tree.size} entries, ${N} rounds (ms: min / median)`);
  for (const step of ["freeze", "sortedEntries", "fsIdentity", "derivedEntry", "packLookups"]) {
    const row = builds.map((b) => {
      const xs = [...(times.get(`${b.root} ${step}`) ?? [])].sort((x, y) => x - y);
      return `${xs[0]!.toFixed(1).padStart(6)} / ${xs[Math.floor(xs.length / 2)]!.toFixed(1).padStart(6)}`;
    });
    console.log(`  ${step.padEnd(14)} ${row.join("   ")}`);
  }
  console.log(`  builds: ${builds.map((b) => b.root).join(", ")}`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
