/**
 * Replay bundles `cairn.bundle/1` (`cairn bundle RUNDIR --out run.cairn`):
 * one deterministic tar holding everything a replay needs on another
 * machine, and nothing private unless asked:
 *
 *   cairn-bundle.json          the index: schema, run id, QEMU version, the
 *                              kit facts, and every other member's path,
 *                              sha256 and size
 *   run/<file>                 run.json, events.json, assertions.json,
 *                              replay.log, lock.json (the workload lock),
 *                              and when present cost.json, environment.json, network.json,
 *                              receipt.dsse.json
 *   store/objects/<hex>        the workload lock's raw closure, and, only with
 *                              `includeInputs`, the run's input tree
 *                              (`run.inputs`): its listing and files
 *   store/derived/<hex>        the lock's derived entry (rebuilt and compared on verify)
 *   kit/kernels/<hex>          the kernel and modules the VM identity names
 *   kit/agents/<hex>           the agent the VM identity names
 *   private/...                only with `includePrivate`: streams/<n>.stdout|stderr,
 *                              console.log, protocol.bin (exact output bytes), and
 *                              checkpoints.qcow2 for a record with checkpoints (the
 *                              guest's RAM at each: private like the streams; checked
 *                              against run.json's size and sha256 before it is carried,
 *                              and again on import)
 *   private/branch-start.qcow2 a branch's files (branch-manifest.ts), always, with or
 *   private/branch-prefix.bin  without `includePrivate`: its replay needs them. Each is
 *   private/branch.json        checked against run.json's `branch` by size and sha256
 *                              before it is carried (and again on import). The start
 *                              snapshot is the guest's RAM and the prefix holds output
 *                              bytes, so the bundle of a branch is always owner-only
 *
 * A run's inputs are host files a spec named; they are left out unless asked
 * (`--include-inputs`), and the index says which: `inputs: {tree, included}`
 * (present only for a run with inputs). A bundle without them imports, and
 * its replay refuses before launch unless the store it replays from holds
 * the input tree already (STORE_MISSING naming `/run_inputs/listing`).
 *
 * Written with the tree area's deterministic tar writer (ustar, 0:0, mtime 0,
 * fixed modes, entries in byte order), uncompressed: the same run directory
 * gives the same bundle bytes. The reading side, with every hostile-input
 * rule, is bundle-import.ts.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { CairnError, checkLimit, compareBytes, readFileBounded, sha256, writeFileAtomic, type Sha256Digest } from "../core/index.ts";
import { writeTar, type TarEntry } from "../tree/index.ts";
import { Store } from "../store/index.ts";
import { readWorkloadLock } from "../workload/index.ts";
import { readKitObject, UNKNOWN_KIT_FACT, type Kit } from "./kit.ts";
import { readRunManifest, replayKit, RUN_READ_LIMITS } from "./replay-run.ts";
import { RUN_COST_FILE, RUN_ENV_MANIFEST_FILE, RUN_ENVIRONMENT_FILE, RUN_NETWORK_FILE } from "./run-facts.ts";
import { RECEIPT_FILE } from "./run-receipt.ts";
import { RUN_FILES } from "./rundir.ts";
import { CHECKPOINT_FILE } from "./checkpoint-take.ts";
import type { RunManifest } from "./run-manifest.ts";
import { BRANCH_FILES, type FileRef } from "./branch-manifest.ts";
import { parseModuleEntries } from "./vmid.ts";
import { runInputObjects } from "./input-listing.ts";

export const RUN_BUNDLE_SCHEMA = "cairn.bundle/1";
export const BUNDLE_INDEX = "cairn-bundle.json";
/** The run files a bundle carries: always, then when present. */
export const BUNDLE_RUN_FILES = [RUN_FILES.manifest, RUN_FILES.events, RUN_FILES.assertions, RUN_FILES.replayLog, RUN_FILES.lock] as const;
export const BUNDLE_OPTIONAL_RUN_FILES = [RUN_COST_FILE, RUN_ENVIRONMENT_FILE, RUN_ENV_MANIFEST_FILE, RUN_NETWORK_FILE, RECEIPT_FILE] as const;
/** bundle.max_bytes: the most a bundle may hold (read whole, in memory). */
export const BUNDLE_MAX_BYTES = 4 * 1024 * 1024 * 1024;
/**
 * bundle.max_index_bytes: the most an index (`cairn-bundle.json`) may be; it
 * is read whole and parsed. About 200 bytes a member, so far above the
 * index of a bundle at the tar reader's entry limit.
 */
export const BUNDLE_INDEX_MAX_BYTES = 64 * 1024 * 1024;
const BUNDLE_HINT =
  "bundle.max_bytes is fixed in this version of cairn (a bundle is built in memory): a run whose workload's store objects are larger cannot be bundled; copy the store and the run directory instead";

export interface BundleMember {
  readonly path: string;
  readonly sha256: Sha256Digest;
  readonly size: number;
}

/** Kit facts a fresh home needs to write its kit.json (names, not bytes: the bytes are members). */
export interface BundleKitFacts {
  readonly kernel_package: string;
  readonly kernel_file: string;
  readonly agent_source: Sha256Digest;
  readonly agent_compiler: string;
}

export interface WriteBundleOptions {
  readonly runDir: string;
  readonly storeDir: string;
  readonly kit: Kit;
  readonly out: string;
  readonly includePrivate?: boolean;
  /** Also carry the run's input tree (the host files `run.inputs` named); the file is then owner-only. */
  readonly includeInputs?: boolean;
}

/**
 * A branch's files as bundle members (`private/<file>`), with the field of
 * run.json's `branch` that records each: the single list, for the writer and
 * the reader (bundle-import.ts).
 */
export const BRANCH_MEMBERS: ReadonlyArray<{ readonly field: "start" | "prefix" | "scenario"; readonly path: string }> = [
  { field: "start", path: `private/${BRANCH_FILES.start}` },
  { field: "prefix", path: `private/${BRANCH_FILES.prefix}` },
  { field: "scenario", path: `private/${BRANCH_FILES.scenario}` },
];

/** What a bundle says of the run's inputs: none, left out, or carried. */
export type BundleInputs = "none" | "left-out" | "included";

/** The index's `inputs` field: the input tree the run names, and whether its listing and files are members. */
export interface BundleInputsFact {
  readonly tree: Sha256Digest;
  readonly included: boolean;
}

function runFile(runDir: string, name: string): Buffer {
  return readFileBounded(join(runDir, name), RUN_READ_LIMITS["run.replay-log-bytes"], "run.replay-log-bytes", { missing: "RUN_INVALID" });
}

/** What a bundle of a run holds: the single definition, used by the tar (`cairn bundle`) and the registry (`cairn bundle push`). */
export interface CollectedBundle {
  /** Member path → bytes, every member but the index. */
  readonly files: ReadonlyMap<string, Buffer>;
  /** The members in the index's order (byte order of their paths). */
  readonly members: readonly BundleMember[];
  /** The index (`cairn-bundle.json`) bytes. */
  readonly index: Buffer;
  readonly runId: string;
  readonly inputs: BundleInputs;
  /** The bundle holds private bytes (`includePrivate`, the run's inputs, or a branch's start and prefix): a file of it is owner-only. */
  readonly owned: boolean;
}

/** The members of the bundle of `opts.runDir` and its index, read and bounded (bundle.max_bytes); nothing is written. */
export function collectRunBundle(opts: Omit<WriteBundleOptions, "out"> & { readonly out?: string }): CollectedBundle {
  const where = opts.out ?? opts.runDir;
  const m = readRunManifest(opts.runDir);
  const lock = readWorkloadLock(join(opts.runDir, RUN_FILES.lock));
  const files = new Map<string, Buffer>();
  for (const name of BUNDLE_RUN_FILES) files.set(`run/${name}`, runFile(opts.runDir, name));
  for (const name of BUNDLE_OPTIONAL_RUN_FILES) if (existsSync(join(opts.runDir, name))) files.set(`run/${name}`, runFile(opts.runDir, name));
  const store = new Store(opts.storeDir, { write: false });
  // the run's inputs, only when asked (they are host files a spec named), read back and verified from the store:
  // a fresh home has no host paths to read them from
  const inputsFact: BundleInputsFact | undefined = m.run_inputs === undefined ? undefined : { tree: m.run_inputs.tree, included: opts.includeInputs === true };
  const inputObjects = m.run_inputs !== undefined && opts.includeInputs === true ? runInputObjects(opts.storeDir, m.run_inputs) : [];
  // A bundle is built in memory: its store objects' sizes (the lock's and the inputs' own records) are summed before
  // one is read, so a run of a big image (a root disk of GiBs) is refused naming bundle.max_bytes, instead of its
  // layers being read whole into memory first (past Node's largest buffer, a RangeError; below it, GiBs of RAM)
  const branchRefs = m.branch === undefined ? [] : BRANCH_MEMBERS.map((b) => m.branch![b.field]);
  const objectBytes = [...lock.raw, ...inputObjects, lock.derived, ...branchRefs].reduce((n, o) => n + o.size, 0);
  checkLimit("bundle.max_bytes", objectBytes, BUNDLE_MAX_BYTES, where, "bytes", BUNDLE_HINT);
  for (const r of lock.raw) files.set(`store/objects/${hex(r.digest)}`, store.read("objects", r.digest, r.size, "bundle.object"));
  for (const o of inputObjects) files.set(`store/objects/${hex(o.digest)}`, store.read("objects", o.digest, o.size, "bundle.object"));
  files.set(`store/derived/${hex(lock.derived.digest)}`, store.read("derived", lock.derived.digest, lock.derived.size, "bundle.derived"));
  const kernels = [m.vm.kernel, ...parseModuleEntries(m.vm.kernel_modules, "/vm/kernel_modules").map((x) => x.digest)];
  for (const [i, d] of kernels.entries()) {
    const field = i === 0 ? "/vm/kernel" : `/vm/kernel_modules/${i - 1}`;
    files.set(`kit/kernels/${hex(d)}`, readKitObject(opts.kit.dir, "kernels", d, field).bytes);
  }
  files.set(`kit/agents/${hex(m.vm.agent)}`, readKitObject(opts.kit.dir, "agents", m.vm.agent, "/vm/agent").bytes);
  if (opts.includePrivate) {
    const sdir = join(opts.runDir, RUN_FILES.streams);
    if (existsSync(sdir))
      for (const n of readdirSync(sdir).filter((x) => /^[0-9]+\.(stdout|stderr)$/.test(x))) files.set(`private/streams/${n}`, runFile(sdir, n));
    for (const n of ["console.log", "protocol.bin"]) if (existsSync(join(opts.runDir, n))) files.set(`private/${n}`, runFile(opts.runDir, n));
    const qcow2 = bundledCheckpoints(opts.runDir, m, where);
    if (qcow2 !== undefined) files.set(`private/${CHECKPOINT_FILE}`, qcow2);
  }
  // a branch's replay needs its start snapshot, the parent's stream prefix and its tail: always carried
  if (m.branch !== undefined) for (const b of BRANCH_MEMBERS) files.set(b.path, bundledBranchFile(opts.runDir, b.path, b.field, m.branch[b.field], where));
  const members = [...files.entries()].map(([path, b]) => ({ path, sha256: sha256(b), size: b.length })).sort((a, b) => compareBytes(a.path, b.path));
  // the recording kit's names, when its kit.json describes this run's kernel and agent (a kit an import filled does not)
  const described = ![opts.kit.kernel.package, opts.kit.kernel.file, opts.kit.agent.compiler].includes(UNKNOWN_KIT_FACT);
  const kitFacts: BundleKitFacts | null =
    described && opts.kit.kernel.digest === m.vm.kernel && opts.kit.agent.digest === m.vm.agent
      ? {
          kernel_package: opts.kit.kernel.package,
          kernel_file: opts.kit.kernel.file,
          agent_source: opts.kit.agent.source,
          agent_compiler: opts.kit.agent.compiler,
        }
      : null;
  const index = Buffer.from(
    `${JSON.stringify({ schema: RUN_BUNDLE_SCHEMA, run_id: m.run_id, qemu: m.vm.qemu, kit: kitFacts, ...(inputsFact ? { inputs: inputsFact } : {}), members }, null, 1)}\n`,
  );
  // a bundle without --include-private or --include-inputs holds no private bytes, unless it is a branch's
  const owned = opts.includePrivate === true || inputsFact?.included === true || m.branch !== undefined;
  const inputs: BundleInputs = inputsFact === undefined ? "none" : inputsFact.included ? "included" : "left-out";
  return { files, members, index, runId: m.run_id, inputs, owned };
}

/** Writes the bundle of `runDir` to `out` (atomically); returns its members and size. */
export function writeRunBundle(opts: WriteBundleOptions): {
  file: string;
  size: number;
  members: readonly BundleMember[];
  inputs: BundleInputs;
  /** The file is owner-only: it holds private bytes (`includePrivate`, the run's inputs, or a branch's start snapshot and stream prefix). */
  owned: boolean;
  /** The run is a branch: its start snapshot (guest RAM), the parent's stream prefix and its tail are members. */
  branch: boolean;
} {
  const { files, members, index, inputs, owned } = collectRunBundle(opts);
  const entries: TarEntry[] = [{ type: "file", path: BUNDLE_INDEX, mode: 0o644, data: index }];
  const dirs = new Set<string>();
  for (const mb of members) {
    const parts = mb.path.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
  }
  for (const d of [...dirs].sort(compareBytes)) entries.push({ type: "dir", path: d, mode: 0o755 });
  for (const mb of members) entries.push({ type: "file", path: mb.path, mode: 0o644, data: files.get(mb.path)! });
  const tar = writeTar(entries);
  if (tar.length > BUNDLE_MAX_BYTES) {
    throw new CairnError("LIMIT_EXCEEDED", `the bundle would be ${tar.length} bytes, more than bundle.max_bytes`, { path: opts.out });
  }
  // a bundle with private bytes is owner-only
  writeFileAtomic(opts.out, tar, { mode: owned ? 0o600 : 0o644 });
  return { file: opts.out, size: tar.length, members, inputs, owned, branch: members.some((mb) => BRANCH_MEMBERS.some((b) => b.path === mb.path)) };
}

/**
 * bundle.max_member_bytes: the most one member may be (the bundle tar reader's
 * file-size limit; a qcow2 of checkpoints is the one member that may come near
 * it: about 90 MiB per checkpoint of a 256 MiB guest, so 2 GiB holds ~22).
 */
export const BUNDLE_MAX_MEMBER_BYTES = 2 * 1024 * 1024 * 1024 - 1;

/**
 * The run's checkpoints.qcow2, for a bundle with private members: undefined
 * when the run has none (or a bundle it came from left them out), else its
 * bytes, refused unless they are the size and sha256 run.json records.
 */
function bundledCheckpoints(runDir: string, m: RunManifest, where: string): Buffer | undefined {
  if (m.checkpoints === undefined || !existsSync(join(runDir, CHECKPOINT_FILE))) return undefined;
  checkLimit(
    "bundle.max_member_bytes",
    m.checkpoints.file.size,
    BUNDLE_MAX_MEMBER_BYTES,
    where,
    "bytes",
    `bundle.max_member_bytes is fixed in this version of cairn: bundle the run without --include-private, and copy its ${CHECKPOINT_FILE} (private) beside it`,
  );
  const bytes = readFileBounded(join(runDir, CHECKPOINT_FILE), BUNDLE_MAX_MEMBER_BYTES, "bundle.max_member_bytes");
  if (bytes.length !== m.checkpoints.file.size || sha256(bytes) !== m.checkpoints.file.sha256)
    throw new CairnError("RUN_INVALID", `${CHECKPOINT_FILE} is not the file run.json records (size and sha256)`, {
      path: "/checkpoints/file/sha256",
      hint: "the run directory was edited; it is not bundled",
    });
  return bytes;
}

/**
 * One of a branch's files (`private/<name>`), refused unless it is there and
 * the size and sha256 run.json's `branch` records (RUN_INVALID naming the
 * field): a bundle never carries a branch its replay would refuse.
 */
function bundledBranchFile(runDir: string, member: string, field: string, ref: FileRef, where: string): Buffer {
  const name = member.slice("private/".length);
  checkLimit(
    "bundle.max_member_bytes",
    ref.size,
    BUNDLE_MAX_MEMBER_BYTES,
    where,
    "bytes",
    `bundle.max_member_bytes is fixed in this version of cairn: copy the branch's run directory (its ${name} is private) instead`,
  );
  const file = join(runDir, name);
  const bad = (why: string, at: "sha256" | "size"): never => {
    throw new CairnError("RUN_INVALID", `the branch's ${name} ${why}`, {
      path: `/branch/${field}/${at}`,
      hint: "the branch cannot be replayed from this run directory (replay refuses it too); it is not bundled",
    });
  };
  if (!existsSync(file)) bad("is missing", "sha256");
  const bytes = readFileBounded(file, BUNDLE_MAX_MEMBER_BYTES, "bundle.max_member_bytes", { missing: "RUN_INVALID", notRegular: "RUN_INVALID" });
  if (bytes.length !== ref.size) bad("is not the size run.json records", "size");
  if (sha256(bytes) !== ref.sha256) bad("is not the file run.json records (sha256)", "sha256");
  return bytes;
}

function hex(d: Sha256Digest): string {
  return d.slice("sha256:".length);
}

/**
 * The kit `cairn bundle` reads the run's kernel, modules and agent from: the
 * objects the run names, by digest (kit.ts `kitForRun`), so a run imported
 * from a bundle can be bundled again from the kit the import filled.
 */
export function bundleKit(dir: string, runDir: string): Kit {
  return replayKit(dir, runDir, "bundle on the host that recorded the run (or pass --kit)");
}
