/**
 * Reading a replay bundle (`cairn replay run.cairn`): hostile input, like an
 * OCI layout. In this order, and nothing is imported before the last check:
 *
 *   1. the file is copied once, bounded (bundle.max_bytes), chunk by chunk
 *      into a private directory (bundle-spill.ts), so what is checked is
 *      what is imported;
 *   2. the copy is read by the tree area's strict tar gate (the one tar
 *      reader: strict headers, no devices, FIFOs, hard links or setid bits,
 *      no member twice, no `..`, parents required); small members are held
 *      in memory, large ones (layer blobs, kernels) are spilled to private
 *      files as they stream out, so an import holds at most one member's
 *      bytes, never the bundle;
 *   3. every member is in its place: the index, run/<known file>,
 *      store/objects|derived/<hex>, kit/kernels|agents/<hex>,
 *      private/...; anything else, and any symlink, is refused (BUNDLE_INVALID
 *      naming the member);
 *   4. the index parses strictly and lists exactly the members there are,
 *      each with the sha256 and size it has; a content-addressed member is
 *      named by its own digest;
 *   5. what the run names is contained: the workload lock's raw closure and
 *      derived entry, the run's input tree (listing and files, with the
 *      digest the VM identity names) unless the index says the bundle was
 *      made without it (`inputs: {tree, included: false}`: then none of it
 *      may be there, and the replay needs it in its own store), the kernel,
 *      modules and agent of the VM identity, the replay log's digest, and
 *      every digest a receipt names, and for a branch its start snapshot,
 *      stream prefix and tail (`private/branch-*`, always there for a
 *      branch, never for another run), each by run.json's size and sha256;
 *   6. the host's QEMU version is the recorded one (VM_MISMATCH /vm/qemu,
 *      naming the version needed), before anything touches the disk.
 *
 * Then the import: store objects by the store's atomic publish, kit objects
 * by digest (each appears whole or not at all), the kit's kit.json only when
 * the kit has none (written last), and the run directory written into
 * private staging inside the runs directory and renamed into place. A copy
 * interrupted at any point leaves complete verified objects and no partial
 * run directory; replay then verifies every byte again from the store.
 */
import { existsSync, lstatSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import {
  CairnError,
  Checker,
  checkLimit,
  FIXED_LIMIT_HINT,
  hashFileBounded,
  isJsonObject,
  openRoot,
  parseEnvelope,
  parseJsonBytes,
  readFileBounded,
  tempSibling,
  writeFileAtomic,
  type JsonModel,
  type Sha256Digest,
} from "../core/index.ts";
import { Store } from "../store/index.ts";
import { applyLayers, DEFAULT_LIMITS, STRICT_POLICY, type LayerLimits } from "../tree/index.ts";
import { BundleSpill } from "./bundle-spill.ts";
import { parseWorkloadLock } from "../workload/index.ts";
import { KIT_ROOT, kitForRun, putKitObject, qemuVersion, type Kit } from "./kit.ts";
import { runKitNeeds } from "./replay-run.ts";
import { RUNS_ROOT } from "./record.ts";
import { parseRunManifest, type RunManifest } from "./run-manifest.ts";
import {
  BUNDLE_INDEX,
  BUNDLE_INDEX_MAX_BYTES,
  BUNDLE_MAX_BYTES,
  BUNDLE_MAX_MEMBER_BYTES,
  BUNDLE_OPTIONAL_RUN_FILES,
  BUNDLE_RUN_FILES,
  BRANCH_MEMBERS,
  RUN_BUNDLE_SCHEMA,
  type BundleInputs,
  type BundleInputsFact,
  type BundleKitFacts,
} from "./run-bundle.ts";
import { IN_TOTO_PAYLOAD_TYPE } from "./run-receipt.ts";
import { RUN_ENV_MANIFEST_FILE } from "./run-facts.ts";
import { removeDeadStaging } from "./run-staging.ts";
import { RUN_FILES } from "./rundir.ts";
import type { FileRef } from "./branch-manifest.ts";
import { QCOW2_HEADER_BYTES, qcow2Header, qcow2NotStandalone } from "./qcow2-header.ts";
import { CHECKPOINT_FILE } from "./checkpoint-take.ts";
import { writeRunOrigin } from "./run-origin.ts";
import { parseModuleEntries } from "./vmid.ts";
import { parseListing } from "./input-listing.ts";

const HEX = "[0-9a-f]{64}";
/** Run files kept owner-only once imported, as `cairn run` writes them. */
const PRIVATE_RUN_FILES = new Set<string>([RUN_FILES.replayLog, RUN_FILES.lock, RUN_ENV_MANIFEST_FILE]);
/** Where a member may be. The pattern is the whole path: nothing outside these places. */
const PLACES: ReadonlyArray<{ readonly re: RegExp; readonly addressed: boolean }> = [
  { re: new RegExp(`^/run/(${[...BUNDLE_RUN_FILES, ...BUNDLE_OPTIONAL_RUN_FILES].map((n) => n.replace(".", "\\.")).join("|")})$`), addressed: false },
  { re: new RegExp(`^/store/(objects|derived)/${HEX}$`), addressed: true },
  { re: new RegExp(`^/kit/(kernels|agents)/${HEX}$`), addressed: true },
  { re: /^\/private\/streams\/[0-9]{1,9}\.(stdout|stderr)$/, addressed: false },
  { re: /^\/private\/(console\.log|protocol\.bin|checkpoints\.qcow2)$/, addressed: false },
  // a branch's files: their exact names (BRANCH_MEMBERS)
  ...BRANCH_MEMBERS.map((b) => ({ re: new RegExp(`^/${b.path.replace(/\./g, "\\.")}$`), addressed: false })),
];
const DIRS = new Set(["/", "/run", "/store", "/store/objects", "/store/derived", "/kit", "/kit/kernels", "/kit/agents", "/private", "/private/streams"]);

/** The tree limits a bundle is read under: its whole size is bounded by bundle.max_bytes before the gate. */
export const BUNDLE_LIMITS: LayerLimits = Object.freeze({
  ...DEFAULT_LIMITS,
  compressedBytes: BUNDLE_MAX_BYTES,
  expandedBytes: BUNDLE_MAX_BYTES,
  fileSize: BUNDLE_MAX_MEMBER_BYTES,
  entries: 100_000,
});

function refuse(path: string, message: string): never {
  throw new CairnError("BUNDLE_INVALID", message, { path, hint: "the bundle is damaged or was not written by `cairn bundle`; nothing was imported" });
}

export interface OpenedBundle {
  readonly manifest: RunManifest;
  readonly runId: string;
  /** Member path (no leading slash) → verified bytes (a large member is read back from its private file each time it is asked for). */
  readonly members: ReadonlyMap<string, Uint8Array>;
  /** The index (`cairn-bundle.json`) as the bundle holds it. */
  readonly index: Uint8Array;
  readonly kit: BundleKitFacts | null;
  /** What the bundle holds of the run's inputs (the index's `inputs`): "left-out" when it was made without `--include-inputs`. */
  readonly inputs: BundleInputs;
  /** The private file holding a large member's verified bytes, or undefined when the member is held in memory. */
  spilled(path: string): string | undefined;
  /** Removes the private copy and spilled members. */
  dispose(): void;
}

export interface IndexEntry {
  readonly path: string;
  readonly sha256: Sha256Digest;
  readonly size: number;
}

export function parseIndex(bytes: Uint8Array): {
  runId: string;
  qemu: string;
  kit: BundleKitFacts | null;
  inputs: BundleInputsFact | undefined;
  members: IndexEntry[];
} {
  const c = new Checker("BUNDLE_INVALID");
  const o = c.object(parseJsonBytes(bytes, { source: BUNDLE_INDEX }), "", ["schema", "run_id", "qemu", "kit", "inputs", "members"]) ?? {};
  if (o.schema !== RUN_BUNDLE_SCHEMA) c.add("/schema", `must be "${RUN_BUNDLE_SCHEMA}"`);
  const runId = c.string(c.required(o, "run_id", ""), "/run_id", { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/ }) ?? "";
  const qemu = c.string(c.required(o, "qemu", ""), "/qemu") ?? "";
  let kit: BundleKitFacts | null = null;
  if (c.required(o, "kit", "") !== null) {
    const k = c.object(o.kit, "/kit", ["kernel_package", "kernel_file", "agent_source", "agent_compiler"]) ?? {};
    const s = (key: string, pattern?: RegExp) => c.string(c.required(k, key, "/kit"), `/kit/${key}`, pattern ? { pattern } : {}) ?? "";
    kit = {
      kernel_package: s("kernel_package", /^[A-Za-z0-9._+~:-]{1,255}$/),
      kernel_file: s("kernel_file", /^[A-Za-z0-9._+~-]{1,255}$/),
      agent_source: s("agent_source", /^sha256:[0-9a-f]{64}$/) as Sha256Digest,
      agent_compiler: s("agent_compiler"),
    };
  }
  let inputs: BundleInputsFact | undefined;
  if ("inputs" in o) {
    const io = c.object(o.inputs, "/inputs", ["tree", "included"]) ?? {};
    const tree = c.string(c.required(io, "tree", "/inputs"), "/inputs/tree", { pattern: /^sha256:[0-9a-f]{64}$/ }) as Sha256Digest | undefined;
    const included = c.boolean(c.required(io, "included", "/inputs"), "/inputs/included");
    if (tree !== undefined && included !== undefined) inputs = { tree, included };
  }
  const list = c.array(c.required(o, "members", ""), "/members") ?? [];
  const members: IndexEntry[] = list.map((m, i) => {
    const mo = c.object(m, `/members/${i}`, ["path", "sha256", "size"]) ?? {};
    return {
      path: c.string(c.required(mo, "path", `/members/${i}`), `/members/${i}/path`) ?? "",
      sha256: (c.string(c.required(mo, "sha256", `/members/${i}`), `/members/${i}/sha256`, { pattern: /^sha256:[0-9a-f]{64}$/ }) ?? "") as Sha256Digest,
      size: c.integer(c.required(mo, "size", `/members/${i}`), `/members/${i}/size`, { min: 0 }) ?? 0,
    };
  });
  c.done(`invalid ${BUNDLE_INDEX}`, "the bundle was not written by this cairn");
  return { runId, qemu, kit, inputs, members };
}

/** Steps 1–5: the bundle read, checked member by member, and its closure complete. Nothing is written. */
export async function openBundle(file: string): Promise<OpenedBundle> {
  const spill = new BundleSpill();
  try {
    return await checkBundle(file, spill);
  } catch (e) {
    spill.dispose();
    throw e;
  }
}

async function checkBundle(file: string, spill: BundleSpill): Promise<OpenedBundle> {
  const copy = spill.copyBundle(file, BUNDLE_MAX_BYTES, "bundle.max_bytes");
  const { tree } = await applyLayers({
    layers: [{ path: copy, compression: "none", where: "bundle" }],
    policy: STRICT_POLICY,
    limits: BUNDLE_LIMITS,
    sink: spill.sink(),
    parents: "required",
  });
  const files = new Map<string, { sha256: Sha256Digest; size: number }>();
  for (const e of tree.values()) {
    if (e.type === "dir") {
      if (!DIRS.has(e.path)) refuse(e.path, `the bundle has a directory ${e.path} where none belongs`);
      continue;
    }
    if (e.type !== "file") refuse(e.path, `the bundle member ${e.path} is a ${e.type}; a bundle holds regular files only`);
    if (e.path !== `/${BUNDLE_INDEX}`) checkMemberPlace(e.path.slice(1), e.sha256, e.path);
    files.set(e.path.slice(1), { sha256: e.sha256, size: e.size });
  }
  return checkMembers(files, spill);
}

/**
 * Step 3 for one member: `unsafePath` (no leading slash) is in one of the
 * places a bundle has (the whole path matches: no `..`, no other directory),
 * and a content-addressed member is named by the digest of its bytes. The
 * tar reader and the registry reader (bundle-fetch.ts) both ask this, so a
 * member path from a registry's annotation is held to the tar's rule.
 */
export function checkMemberPlace(unsafePath: string, digest: Sha256Digest, field: string): void {
  const path = `/${unsafePath}`;
  const place = PLACES.find((p) => p.re.test(path));
  if (place === undefined) refuse(field, `the bundle member ${unsafePath.slice(0, 300)} is outside every place a bundle has`);
  // a content-addressed member is named by the digest of its bytes
  if (place.addressed && path.slice(-64) !== digest.slice(7)) refuse(field, `the bundle member ${path} is not named by its digest`);
}

/**
 * Steps 4–5 over the members a reader found (path → digest and size, the
 * bytes held in `spill` by digest, verified as they were read), the index
 * among them: the one check of a bundle's contents, whether the members came
 * out of a tar file or from a registry (bundle-fetch.ts). Nothing is written.
 */
export function checkMembers(files: ReadonlyMap<string, { readonly sha256: Sha256Digest; readonly size: number }>, spill: BundleSpill): OpenedBundle {
  const indexRef = files.get(BUNDLE_INDEX);
  if (indexRef === undefined) refuse(`/${BUNDLE_INDEX}`, `the bundle has no ${BUNDLE_INDEX}`);
  checkLimit("bundle.max_index_bytes", indexRef.size, BUNDLE_INDEX_MAX_BYTES, `/${BUNDLE_INDEX}`, "bytes", FIXED_LIMIT_HINT);
  const index = parseIndex(spill.bytes(indexRef.sha256, indexRef.size, "bundle.max_member_bytes")!);
  const listed = new Set<string>();
  index.members.forEach((m, i) => {
    const f = files.get(m.path);
    if (f === undefined) refuse(`/members/${i}`, `the index lists ${m.path}, which the bundle does not contain`);
    if (f.sha256 !== m.sha256 || f.size !== m.size) refuse(`/members/${i}`, `${m.path} does not have the digest and size the index gives`);
    listed.add(m.path);
  });
  for (const p of files.keys()) if (p !== BUNDLE_INDEX && !listed.has(p)) refuse(`/${p}`, `the bundle member ${p} is not in the index`);
  const members = spill.members(files);
  const get = (p: string): Uint8Array => members.get(p) ?? refuse(`/${p}`, `the bundle has no ${p}`);

  // 5. the closure the run names is in the bundle
  const manifest = parseRunManifest(Buffer.from(get(`run/${RUN_FILES.manifest}`)), `bundle run/${RUN_FILES.manifest}`);
  if (manifest.run_id !== index.runId) refuse("/run_id", "the index and run.json name different runs");
  if (manifest.vm.qemu !== index.qemu) refuse("/qemu", "the index and run.json name different QEMU versions");
  const lock = parseWorkloadLock(get(`run/${RUN_FILES.lock}`), `bundle run/${RUN_FILES.lock}`);
  const need = (path: string, digest: Sha256Digest, field: string): void => {
    const f = files.get(path);
    if (f === undefined || f.sha256 !== digest) refuse(field, `the run names ${digest} (${field}), which the bundle does not contain`);
  };
  for (const [i, r] of lock.raw.entries()) need(`store/objects/${r.digest.slice(7)}`, r.digest, `lock.json#/raw/${i}`);
  need(`store/derived/${lock.derived.digest.slice(7)}`, lock.derived.digest, "lock.json#/derived");
  need(`kit/kernels/${manifest.vm.kernel.slice(7)}`, manifest.vm.kernel, "run.json#/vm/kernel");
  for (const [i, m] of parseModuleEntries(manifest.vm.kernel_modules, "/vm/kernel_modules").entries())
    need(`kit/kernels/${m.digest.slice(7)}`, m.digest, `run.json#/vm/kernel_modules/${i}`);
  need(`kit/agents/${manifest.vm.agent.slice(7)}`, manifest.vm.agent, "run.json#/vm/agent");
  need(`run/${RUN_FILES.replayLog}`, manifest.replay_log.sha256, "run.json#/replay_log/sha256");
  const inputs = manifest.run_inputs;
  if (index.inputs !== undefined && index.inputs.tree !== inputs?.tree)
    refuse("/inputs/tree", "the index names another input tree than run.json (or the run has none)");
  if (inputs !== undefined && index.inputs?.included === false) {
    // made without --include-inputs: none of the input tree may be here (the index would then not say what the bundle holds)
    if (files.has(`store/objects/${inputs.listing.slice(7)}`))
      refuse("/inputs/included", "the index says the run's inputs were left out, but their listing is here");
  } else if (inputs !== undefined) {
    need(`store/objects/${inputs.listing.slice(7)}`, inputs.listing, "run.json#/run_inputs/listing");
    const t = parseListing(
      Buffer.from(get(`store/objects/${inputs.listing.slice(7)}`)),
      (sha, _size, path) => {
        need(`store/objects/${sha.slice(7)}`, sha, `run.json#/run_inputs (${path})`);
        return get(`store/objects/${sha.slice(7)}`);
      },
      "bundle run input listing",
    );
    if (t.digest !== inputs.tree || t.digest !== manifest.vm.run_inputs)
      refuse("run.json#/run_inputs/tree", "the bundle's input tree is not the one the run names");
  }
  // the checkpoints' qcow2 (only in a bundle with private members): the file run.json records, by size and digest
  const qcow2 = files.get(`private/${CHECKPOINT_FILE}`);
  if (qcow2 !== undefined) {
    if (manifest.checkpoints === undefined) refuse(`/private/${CHECKPOINT_FILE}`, `the bundle holds ${CHECKPOINT_FILE}, but the run recorded no checkpoints`);
    if (qcow2.size !== manifest.checkpoints.file.size) refuse("run.json#/checkpoints/file/size", `${CHECKPOINT_FILE} is not the size run.json records`);
    need(`private/${CHECKPOINT_FILE}`, manifest.checkpoints.file.sha256, "run.json#/checkpoints/file/sha256");
  }
  checkBranchMembers(manifest, files);
  // a qcow2 member naming a host file (a backing or data file) is refused here, whatever run.json says of its digest
  for (const [path, field] of [
    [`private/${CHECKPOINT_FILE}`, "run.json#/checkpoints/file"],
    [BRANCH_MEMBERS.find((b) => b.field === "start")!.path, "run.json#/branch/start"],
  ] as const) {
    const f = files.get(path);
    if (f === undefined) continue;
    const file = spill.held(f.sha256)?.file;
    const why = qcow2NotStandalone(file !== undefined ? qcow2Header(file) : get(path).subarray(0, QCOW2_HEADER_BYTES));
    if (why !== undefined) refuse(field, `${path} ${why}`);
  }
  const receipt = members.get("run/receipt.dsse.json");
  if (receipt !== undefined) checkReceiptClosure(receipt, files);
  const spilled = (p: string): string | undefined => {
    const f = files.get(p);
    return f === undefined ? undefined : spill.held(f.sha256)?.file;
  };
  const held: BundleInputs = inputs === undefined ? "none" : index.inputs?.included === false ? "left-out" : "included";
  const indexBytes = spill.bytes(indexRef.sha256, indexRef.size, "bundle.max_member_bytes")!;
  return { manifest, runId: index.runId, members, index: indexBytes, kit: index.kit, inputs: held, spilled, dispose: () => spill.dispose() };
}

/**
 * A branch's replay needs its start snapshot, the parent's stream prefix and
 * its tail: each must be in the bundle, with the size and sha256 run.json's
 * `branch` records (BUNDLE_INVALID naming `run.json#/branch/<field>/...`);
 * in the bundle of a run that is not a branch they are refused, naming the
 * member (they would be written into its run directory and vouched for).
 */
function checkBranchMembers(manifest: RunManifest, files: ReadonlyMap<string, { readonly sha256: Sha256Digest; readonly size: number }>): void {
  for (const b of BRANCH_MEMBERS) {
    const f = files.get(b.path);
    if (manifest.branch === undefined) {
      if (f !== undefined) refuse(`/${b.path}`, `the bundle holds ${b.path}, but its run is not a branch`);
      continue;
    }
    const ref = manifest.branch[b.field];
    if (f === undefined) refuse(`run.json#/branch/${b.field}`, `the run is a branch and the bundle has no ${b.path}: its replay needs it`);
    if (f.size !== ref.size) refuse(`run.json#/branch/${b.field}/size`, `${b.path} is not the size run.json records`);
    if (f.sha256 !== ref.sha256) refuse(`run.json#/branch/${b.field}/sha256`, `${b.path} is not the file run.json records (sha256)`);
  }
}

/** Every file digest an enclosed receipt names must be the bundle's file (the signature is checked by `receipt verify`). */
function checkReceiptClosure(bytes: Uint8Array, files: ReadonlyMap<string, { sha256: Sha256Digest }>): void {
  const env = parseEnvelope(parseJsonBytes(bytes, { source: "bundle run/receipt.dsse.json" }));
  if (env.payloadType !== IN_TOTO_PAYLOAD_TYPE) refuse("run/receipt.dsse.json#/payloadType", "the enclosed receipt is not an in-toto statement");
  const st: JsonModel = parseJsonBytes(Buffer.from(env.payload, "base64"), { source: "bundle receipt payload" });
  const p = isJsonObject(st) && isJsonObject(st.predicate) ? st.predicate : undefined;
  if (p === undefined) refuse("run/receipt.dsse.json#/predicate", "the enclosed receipt has no predicate");
  const named: Array<[string, string, unknown]> = [
    ["run/run.json", "/predicate/run_manifest/sha256", isJsonObject(p.run_manifest) ? p.run_manifest.sha256 : undefined],
    ["run/replay.log", "/predicate/replay_log/sha256", isJsonObject(p.replay_log) ? p.replay_log.sha256 : undefined],
    ["run/events.json", "/predicate/events/sha256", isJsonObject(p.events) ? p.events.sha256 : undefined],
    ["run/assertions.json", "/predicate/assertions/sha256", isJsonObject(p.assertions) ? p.assertions.sha256 : undefined],
  ];
  for (const [path, field, digest] of named) {
    if (files.get(path)?.sha256 !== digest) refuse(`run/receipt.dsse.json#${field}`, `the enclosed receipt names a ${path} the bundle does not contain`);
  }
}

export interface ImportOptions {
  readonly storeDir: string;
  readonly kitDir: string;
  readonly runsDir: string;
  /** The host's QEMU version; default: asked from QEMU. */
  readonly qemu?: string;
  /**
   * Import a run this host's QEMU could not replay (default false: refused,
   * VM_MISMATCH, before anything is written). A campaign's verify task
   * needs no QEMU at all, and its replay task lets the replay refuse,
   * naming /vm/qemu as a finding, as it does for a run directory.
   */
  readonly anyQemu?: boolean;
}

/** Steps 1–6, then the import. Returns the run directory (new, or the same run imported before) and the kit to replay with. */
export async function importBundle(file: string, opts: ImportOptions): Promise<{ runDir: string; kit: Kit; manifest: RunManifest; inputs: BundleInputs }> {
  const b = await openBundle(file);
  try {
    return { ...writeImport(b, opts, { via: "bundle", input: resolve(file) }), inputs: b.inputs };
  } finally {
    b.dispose();
  }
}

/**
 * Step 6 and the import of a checked bundle (from a file, or from a registry:
 * bundle-fetch.ts). `origin` is what `runs list` says the run came from.
 */
export function writeImport(
  b: OpenedBundle,
  opts: ImportOptions & {
    /** Members (by digest) whose copy on this node was found corrupt: the verified bytes replace it (bundle-fetch.ts). */
    readonly repair?: ReadonlySet<Sha256Digest>;
  },
  origin: { readonly via: "bundle" | "registry"; readonly input: string },
): { runDir: string; kit: Kit; manifest: RunManifest } {
  const host = opts.anyQemu === true ? b.manifest.vm.qemu : (opts.qemu ?? qemuVersion());
  if (host !== b.manifest.vm.qemu) {
    throw new CairnError("VM_MISMATCH", `this run needs QEMU ${b.manifest.vm.qemu}; this host has ${host}`, {
      path: "/vm/qemu",
      hint: `replay needs the QEMU build that recorded the run: install qemu-system-x86 ${b.manifest.vm.qemu}; nothing was imported`,
    });
  }
  const store = new Store(opts.storeDir);
  try {
    for (const p of b.members.keys()) {
      const area = p.startsWith("store/objects/") ? "objects" : p.startsWith("store/derived/") ? "derived" : undefined;
      if (area === undefined) continue;
      const file = b.spilled(p);
      const digest = `sha256:${p.slice(-64)}` as Sha256Digest;
      const replace = opts.repair?.has(digest) === true;
      // a large member (a layer blob) is published from its private file in chunks, never read whole
      if (file !== undefined) store.putFile(area, file, digest, statSync(file).size, { replace });
      else store.put(area, b.members.get(p)!, { checkExisting: replace });
    }
  } finally {
    store.close();
  }
  openRoot(opts.kitDir, KIT_ROOT, { create: true });
  for (const p of b.members.keys()) {
    const replace = opts.repair?.has(`sha256:${p.slice(-64)}` as Sha256Digest) === true;
    if (p.startsWith("kit/kernels/")) putKitObject(opts.kitDir, "kernels", Buffer.from(b.members.get(p)!), { replace });
    else if (p.startsWith("kit/agents/")) putKitObject(opts.kitDir, "agents", Buffer.from(b.members.get(p)!), { replace });
  }
  const m = b.manifest;
  // No kit.json is written: the kernel, modules and agent came from the bundle, which is hostile input. A kit.json
  // naming them (as imports wrote before) was a set-up kit to `cairn run`: a bundle naming all eleven modules and the
  // current agent sources would have chosen the kernel and agent of this home's next records. Replay and bundle ask
  // the kit only for what a run names, by digest (kitForRun), so an imported run needs no kit.json.
  const kit = kitForRun(opts.kitDir, runKitNeeds(m));
  openRoot(opts.runsDir, RUNS_ROOT, { create: true });
  removeDeadStaging(opts.runsDir);
  const runDir = join(opts.runsDir, b.runId);
  if (existsSync(runDir)) return { runDir: sameRun(b, runDir), kit, manifest: m };
  const staging = tempSibling(runDir);
  try {
    mkdirSync(staging, { mode: 0o700 });
    mkdirSync(join(staging, RUN_FILES.streams), { mode: 0o700 });
    for (const p of b.members.keys()) {
      if (!p.startsWith("run/") && !p.startsWith("private/")) continue;
      const bytes = b.members.get(p)!;
      if (p.startsWith("run/")) writeFileAtomic(join(staging, p.slice(4)), bytes, { mode: PRIVATE_RUN_FILES.has(p.slice(4)) ? 0o600 : 0o644 });
      else if (p.startsWith("private/streams/")) writeFileAtomic(join(staging, RUN_FILES.streams, p.slice("private/streams/".length)), bytes, { mode: 0o600 });
      else if (p.startsWith("private/")) writeFileAtomic(join(staging, p.slice("private/".length)), bytes, { mode: 0o600 });
    }
    // where this run came from, for `runs list` (private, never bundled again)
    writeRunOrigin(staging, { ...origin, command: null });
    renameSync(staging, runDir);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    // another import of this run (a second process: a campaign's tasks on one node) renamed its copy into
    // place first; that copy is whole (it was renamed complete), so it is reused when it is this run
    const code = (e as { code?: string } | null)?.code;
    if ((code === "ENOTEMPTY" || code === "EEXIST") && existsSync(runDir)) return { runDir: sameRun(b, runDir), kit, manifest: m };
    throw e;
  }
  return { runDir, kit, manifest: m };
}

/** A run directory imported before is reused only when every run file the bundle carries is there, byte for byte. */
function sameRun(b: OpenedBundle, runDir: string): string {
  for (const p of b.members.keys()) {
    if (!p.startsWith("run/")) continue;
    const bytes = b.members.get(p)!;
    const f = join(runDir, p.slice(4));
    const there = existsSync(f) ? readFileBounded(f, bytes.length + 1, "bundle.existing-run-bytes", { missing: "RUN_INVALID" }) : undefined;
    if (there === undefined || !there.equals(bytes)) {
      throw new CairnError("USAGE", `${runDir} holds another copy of this run (${p.slice(4)} differs)`, {
        path: f,
        hint: "pass --runs with another directory",
      });
    }
  }
  // the run imported before without its private members: its checkpoints (checked against this same run.json) join it;
  // a copy there that is not run.json's (damaged, or put there by hand) is replaced by them, never left for the import
  // to vouch for (it was: the import succeeded and the run was `tampered`). A branch's files likewise.
  const recorded: Array<[string, FileRef | undefined]> = [
    [`private/${CHECKPOINT_FILE}`, b.manifest.checkpoints?.file],
    ...BRANCH_MEMBERS.map((x): [string, FileRef | undefined] => [x.path, b.manifest.branch?.[x.field]]),
  ];
  for (const [path, ref] of recorded) {
    const bytes = b.members.get(path);
    const file = join(runDir, path.slice("private/".length));
    if (bytes !== undefined && !holdsRecorded(file, ref)) writeFileAtomic(file, bytes, { mode: 0o600 });
  }
  return runDir;
}

/** A regular file (not a link to one) of the size and sha256 run.json records (`recorded`). */
function holdsRecorded(file: string, recorded: FileRef | undefined): boolean {
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (st?.isDirectory() === true)
    throw new CairnError("USAGE", `${file} is a directory, not the run's ${basename(file)}`, {
      path: file,
      hint: "remove it, or pass --runs with another directory",
    });
  if (st === undefined || recorded === undefined || !st.isFile() || st.size !== recorded.size) return false;
  // the size is run.json's: the bound is the file itself
  return hashFileBounded(file, recorded.size, "bundle.max_member_bytes").digest === recorded.sha256;
}
