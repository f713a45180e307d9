/**
 * Reading a replay bundle from an OCI registry (`cairn replay
 * oci://HOST/REPO@sha256:…`): the artifact of bundle-artifact.ts, fetched
 * member by member, only what this node lacks, and then the same checks and
 * the same import a bundle file gets (bundle-import.ts `checkMembers` and
 * `writeImport`): one code path for both, never a weaker one for the
 * registry. In this order, and nothing is imported before the last check:
 *
 *   1. the reference names a digest (a tag is refused: it could move between
 *      two nodes of one campaign); the manifest is fetched by that digest and
 *      verified against it (the client), bounded by manifestBytes, and parsed
 *      strictly;
 *   2. before any blob is asked for: the sum of the sizes it names (the index
 *      and every member) is at most bundle.max_bytes, every member path is in
 *      a place a bundle has (the tar reader's own rule: no `..`, a
 *      content-addressed member named by its digest), and no path is there
 *      twice;
 *   3. the index (the config) is read, from this node's cache or fetched, and
 *      lists exactly the members the manifest names, each with the same
 *      digest and size; the host's QEMU is the one it names (VM_MISMATCH
 *      before a member is fetched);
 *   4. every member this node lacks is fetched by its digest, verified by
 *      digest and size while it streams (the client), into the same private
 *      spill a bundle file's members go to (bundle-spill.ts); a member this
 *      node has (its store, its kit, or the cache) is copied into the spill
 *      from there, verified again by its digest, so what is checked is what
 *      is imported;
 *   5. the bundle reader's steps 4–6, then its import.
 *
 * The cache is this node's content store: store members are where the import
 * puts them, kit members in the kit, and the index, run files and private
 * members (small, and owner-only like the whole store) as raw objects, put
 * there only after an import succeeded. So a second replay of the same
 * reference fetches the manifest and no blob, and a run sharing a kernel and
 * a workload with one fetched before fetches its own run files only. `cairn
 * store gc` may remove the cached run files (no lock names them); they are
 * then fetched again.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { CairnError, checkLimit, FIXED_LIMIT_HINT, type Sha256Digest } from "../core/index.ts";
import { registryClientFor, type RegistryClient, type RemoteOptions } from "../oci/index.ts";
import { Store, STORE_ROOT } from "../store/index.ts";
import { formatBundleRef, parseBundleManifest, parseBundleRef } from "./bundle-artifact.ts";
import { BUNDLE_LIMITS, checkMemberPlace, checkMembers, parseIndex, writeImport, type ImportOptions } from "./bundle-import.ts";
import { BundleSpill } from "./bundle-spill.ts";
import { hasKitObject, qemuVersion, readKitObject, type Kit } from "./kit.ts";
import { BUNDLE_INDEX, BUNDLE_INDEX_MAX_BYTES, BUNDLE_MAX_BYTES, type BundleInputs } from "./run-bundle.ts";
import { parseRunManifest, type RunManifest } from "./run-manifest.ts";
import { RUN_FILES } from "./rundir.ts";

export interface FetchBundleOptions extends ImportOptions {
  /** How to reach the registry (transport flags, credentials, bounds). */
  readonly remote: RemoteOptions;
  readonly log?: (line: string) => void;
}

/** What a fetch did: blobs asked of the registry, and members this node already had. */
export interface FetchCounts {
  readonly fetched: number;
  readonly fetchedBytes: number;
  readonly local: number;
  /** Members whose cached copy on this node was corrupt: fetched again (counted in `fetched`) and put in its place. */
  readonly repaired: number;
}

export interface FetchedBundle {
  readonly runDir: string;
  readonly kit: Kit;
  readonly manifest: RunManifest;
  readonly inputs: BundleInputs;
  /** The reference, canonical: `oci://HOST/REPO@sha256:…`. */
  readonly reference: string;
  readonly counts: FetchCounts;
}

function refuse(path: string, message: string): never {
  throw new CairnError("BUNDLE_INVALID", message, {
    path,
    hint: "the registry's artifact is damaged or was not pushed by `cairn bundle push`; nothing was imported",
  });
}

type Area = { readonly kind: "store"; readonly area: "objects" | "derived" } | { readonly kind: "kit"; readonly area: "kernels" | "agents" };

/** Where a member lives on a node once imported, and so where this node's copy is looked for: the run files and the index are cached as raw objects. */
function homeOf(path: string): Area {
  if (path.startsWith("store/derived/")) return { kind: "store", area: "derived" };
  if (path.startsWith("kit/kernels/")) return { kind: "kit", area: "kernels" };
  if (path.startsWith("kit/agents/")) return { kind: "kit", area: "agents" };
  return { kind: "store", area: "objects" };
}

/** Steps 1–5, then the import. Returns the run directory (new, or the same run imported before). */
export async function importRegistryBundle(unsafeRef: string, opts: FetchBundleOptions): Promise<FetchedBundle> {
  const ref = parseBundleRef(unsafeRef, "reference", "digest");
  const text = formatBundleRef(ref);
  const digest = ref.digest!;
  const client = registryClientFor({ registry: ref.registry }, opts.remote);
  // 1. the manifest, by digest (verified by the client), strictly
  const fetched = await client.fetchManifest(ref.repository, digest);
  const art = parseBundleManifest(fetched.bytes, `manifest ${text}`);
  // 2. bounds and places, before any blob
  const total = art.members.reduce((n, m) => n + m.size, art.index.size);
  checkLimit("bundle.max_bytes", total, BUNDLE_MAX_BYTES, text, "bytes", "a bundle larger than bundle.max_bytes is refused before any of it is fetched");
  // the tar reader's bounds, by the same names: members, one member's size, and the index (read whole)
  checkLimit("entries", art.members.length + 1, BUNDLE_LIMITS.entries, `${text}#/layers`, "count", FIXED_LIMIT_HINT);
  checkLimit("bundle.max_index_bytes", art.index.size, BUNDLE_INDEX_MAX_BYTES, `${text}#/config`, "bytes", FIXED_LIMIT_HINT);
  const byPath = new Map<string, { sha256: Sha256Digest; size: number }>();
  art.members.forEach((m, i) => {
    checkLimit("fileSize", m.size, BUNDLE_LIMITS.fileSize, `${text}#/layers/${i}`, "bytes", FIXED_LIMIT_HINT);
    if (m.path === BUNDLE_INDEX || byPath.has(m.path)) refuse(`/layers/${i}`, `the manifest names the member ${m.path} twice`);
    checkMemberPlace(m.path, m.sha256, `/layers/${i}/annotations`);
    byPath.set(m.path, { sha256: m.sha256, size: m.size });
  });
  const spill = new BundleSpill();
  const counts = { fetched: 0, fetchedBytes: 0, local: 0, repaired: new Set<Sha256Digest>() };
  const local = localStore(opts.storeDir);
  try {
    const hold = (path: string, d: Sha256Digest, size: number): Promise<void> =>
      holdMember(spill, client, ref.repository, local, opts.kitDir, homeOf(path), d, size, counts, opts.log);
    // 3. the index lists exactly the manifest's members, and names this host's QEMU, before a member is fetched
    await hold(BUNDLE_INDEX, art.index.digest, art.index.size);
    const index = parseIndex(spill.bytes(art.index.digest, art.index.size, "bundle.max_member_bytes")!);
    const listed = new Set<string>();
    index.members.forEach((m, i) => {
      const named = byPath.get(m.path);
      if (named === undefined) refuse(`/members/${i}`, `the index lists ${m.path}, which the manifest does not name`);
      if (named.sha256 !== m.sha256 || named.size !== m.size)
        refuse(`/members/${i}`, `the manifest names ${m.path} with another digest or size than the index`);
      listed.add(m.path);
    });
    art.members.forEach((m, i) => {
      if (!listed.has(m.path)) refuse(`/layers/${i}`, `the manifest names the member ${m.path}, which the index does not list`);
    });
    const host = opts.anyQemu === true ? index.qemu : (opts.qemu ?? qemuVersion());
    if (host !== index.qemu) {
      throw new CairnError("VM_MISMATCH", `this run needs QEMU ${index.qemu}; this host has ${host}`, {
        path: "/vm/qemu",
        hint: `replay needs the QEMU build that recorded the run: install qemu-system-x86 ${index.qemu}; nothing was fetched`,
      });
    }
    // 4. each member: this node's copy, or fetched
    const files = new Map<string, { sha256: Sha256Digest; size: number }>([[BUNDLE_INDEX, { sha256: art.index.digest, size: art.index.size }]]);
    for (const [path, m] of byPath) {
      files.set(path, m);
      if (spill.held(m.sha256) === undefined) await hold(path, m.sha256, m.size);
    }
    opts.log?.(
      `${text}: ${counts.fetched} blobs fetched (${counts.fetchedBytes} bytes), ${counts.local} from this node${counts.repaired.size > 0 ? `, ${counts.repaired.size} corrupt cached cop(ies) replaced` : ""}`,
    );
    // 5. the bundle reader's own checks and import
    const b = checkMembers(files, spill);
    const r = writeImport(b, { ...opts, qemu: host, repair: counts.repaired }, { via: "registry", input: text }); // QEMU asked once (a process start)
    cacheRunFiles(opts.storeDir, files, b.members, b.index, counts.repaired);
    const { repaired, ...rest } = counts;
    return { ...r, inputs: b.inputs, reference: text, counts: { ...rest, repaired: repaired.size } };
  } finally {
    spill.dispose();
  }
}

/** This node's store for reading, or undefined when it has none yet (a fresh home: nothing is created before the import). */
function localStore(dir: string): Store | undefined {
  return existsSync(join(dir, STORE_ROOT.marker)) ? new Store(dir, { write: false }) : undefined;
}

/** One member's bytes into the spill: this node's verified copy when it has one, else fetched, verified while it streams. */
async function holdMember(
  spill: BundleSpill,
  client: RegistryClient,
  repo: string,
  store: Store | undefined,
  kitDir: string,
  home: Area,
  digest: Sha256Digest,
  size: number,
  counts: { fetched: number; fetchedBytes: number; local: number; repaired: Set<Sha256Digest> },
  log: ((line: string) => void) | undefined,
): Promise<void> {
  let w = spill.sink().begin(size);
  let local = false;
  try {
    if (home.kind === "store" && store?.has(home.area, digest, size) === true) {
      store.stream(home.area, digest, size, (c) => w.write(c), "bundle.max_member_bytes");
      local = true;
    } else if (home.kind === "kit" && hasKitObject(kitDir, home.area, digest)) {
      w.write(readKitObject(kitDir, home.area, digest, `kit/${home.area}`).bytes);
      local = true;
    }
  } catch (e) {
    // this node's cached copy is not the bytes its name says (a bad disk, a stray write): it is not used, the member is
    // fetched (verified) like a missing one, and the import puts the verified bytes in its place (`repair`)
    if (!(e instanceof CairnError) || (e.code !== "STORE_CORRUPT" && e.code !== "DIGEST_MISMATCH")) throw e;
    log?.(`this node's copy of ${digest} (${home.kind === "store" ? `store ${home.area}` : `kit ${home.area}`}) is corrupt: discarded, fetched again`);
    w = spill.sink().begin(size); // the partly written one is abandoned (the spill disposes it)
    counts.repaired.add(digest);
  }
  if (local) counts.local++;
  else {
    await client.fetchBlob(repo, digest, size, (c) => w.write(c));
    counts.fetched++;
    counts.fetchedBytes += size;
  }
  const got = w.end();
  // the client and the store verified these bytes; a kit object of another size is not this member
  if (got.sha256 !== digest || got.size !== size) refuse(`/${digest}`, `this node's copy of ${digest} is not ${size} bytes`);
}

/** After an import: the index, run files and private members kept as raw objects of this node's store, so the next replay of the reference fetches none. */
function cacheRunFiles(
  storeDir: string,
  files: ReadonlyMap<string, { readonly sha256: Sha256Digest }>,
  members: ReadonlyMap<string, Uint8Array>,
  index: Uint8Array,
  repair: ReadonlySet<Sha256Digest>,
): void {
  const store = new Store(storeDir);
  try {
    // a copy found corrupt is replaced (checkExisting re-reads it and puts the verified bytes in its place)
    store.put("objects", index, { checkExisting: repair.size > 0 });
    for (const [path, f] of files) {
      if (!path.startsWith("run/") && !path.startsWith("private/")) continue;
      if (repair.has(f.sha256) || !store.has("objects", f.sha256)) store.put("objects", members.get(path)!, { checkExisting: repair.has(f.sha256) });
    }
  } finally {
    store.close();
  }
}

/** run.json read back at plan time is at most this large (the task reads it with the same bound). */
const RUN_JSON_MAX_BYTES = 1024 * 1024;

/**
 * What a campaign's plan needs of a bundle in a registry, without pulling it:
 * the manifest fetched by the reference's digest (verified by the client,
 * parsed strictly) and the one member `run/run.json` fetched by its digest
 * (verified while it streams), parsed as a run manifest. Nothing is written
 * to a store: the bundle is pulled where its task runs.
 */
export async function readRegistryRunManifest(
  unsafeRef: string,
  remote: RemoteOptions,
): Promise<{ readonly reference: string; readonly bytes: Buffer; readonly manifest: RunManifest }> {
  const ref = parseBundleRef(unsafeRef, "reference", "digest");
  const text = formatBundleRef(ref);
  const client = registryClientFor({ registry: ref.registry }, remote);
  const fetched = await client.fetchManifest(ref.repository, ref.digest!);
  const art = parseBundleManifest(fetched.bytes, `manifest ${text}`);
  const path = `run/${RUN_FILES.manifest}`;
  const at = art.members.findIndex((m) => m.path === path);
  if (at < 0) refuse("/layers", `the manifest of ${text} names no ${path}`);
  // the import refuses a member named twice; the plan must not pick one of two run.json the import would refuse
  const twice = art.members.findIndex((m, i) => i > at && m.path === path);
  if (twice >= 0) refuse(`/layers/${twice}`, `the manifest of ${text} names the member ${path} twice`);
  const m = art.members[at]!;
  checkLimit("run.manifest-bytes", m.size, RUN_JSON_MAX_BYTES, `${text}#/layers/${at}`, "bytes", FIXED_LIMIT_HINT);
  const chunks: Buffer[] = [];
  await client.fetchBlob(ref.repository, m.sha256, m.size, (c) => void chunks.push(Buffer.from(c)));
  const bytes = Buffer.concat(chunks);
  return { reference: text, bytes, manifest: parseRunManifest(bytes, `${text} run/${RUN_FILES.manifest}`) };
}
