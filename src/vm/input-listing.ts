/**
 * The run's input tree in the content store, so a replay (here or from a
 * bundle on a fresh home) finds it without the host paths it came from.
 * Every input file is a store object (by sha256), and the tree itself is one
 * more object, its listing `cairn.run-inputs/1`:
 *
 *   { "schema": "cairn.run-inputs/1",
 *     "inputs": ["/in/data.txt", ...],                      the `to` paths, in the spec's order
 *     "entries": [{"path","type":"dir","mode"} |
 *                 {"path","type":"file","mode","size","sha256"}, ...] }   sorted by path bytes, "/" left out
 *
 * written as JCS bytes, so one tree has one listing. The run manifest names
 * the listing (`run_inputs: {tree, listing, size}`); the VM identity names the
 * tree (`run_inputs`, its `cairn.fs/1` digest).
 *
 * The rule: a listing read back is hostile. It parses strictly, every entry
 * is owned 0:0 with mtime 0 and a normalized mode (what the host reader
 * writes), every file is read from the store and verified by digest, and the
 * tree's `cairn.fs/1` digest must be the one the run names, before launch.
 * The attack it stops: an edited store or run directory making a replay feed
 * the guest other input bytes than the recording's (the replay would then
 * diverge, or worse, be believed).
 */
import { CairnError, canonicalBytes, Checker, childPath, parseJsonBytes, parseSha256, sortByBytes, type Sha256Digest } from "../core/index.ts";
import { Store } from "../store/index.ts";
import type { TarEntry } from "../tree/index.ts";
import { inputTree, RUN_INPUT_LIMITS, type RunInputTree } from "./run-inputs.ts";

export const RUN_INPUTS_SCHEMA = "cairn.run-inputs/1";
/** run.inputs-listing-bytes: the most a stored listing may be (10,000 entries fit in far less). */
export const LISTING_MAX_BYTES = 16 * 1024 * 1024;

/** Where a run's input tree is: recorded in the run manifest. */
export interface RunInputsRef {
  /** `cairn.fs/1` of the input tree (equal to the VM identity's `run_inputs`). */
  readonly tree: Sha256Digest;
  /** sha256 of the listing object in the store. */
  readonly listing: Sha256Digest;
  readonly size: number;
}

export function encodeListing(t: RunInputTree): Buffer {
  const entries = sortByBytes(
    [...t.tree.values()].filter((e) => e.path !== "/"),
    (e) => e.path,
  ).map((e) =>
    e.type === "file" ? { path: e.path, type: "file", mode: e.mode, size: e.size, sha256: e.sha256 } : { path: e.path, type: e.type, mode: e.mode },
  );
  return canonicalBytes({ schema: RUN_INPUTS_SCHEMA, inputs: [...t.tos], entries });
}

interface ListedEntry {
  readonly path: string;
  readonly type: string;
  readonly mode: number;
  readonly size?: number;
  readonly sha256?: Sha256Digest;
}

/** Parses a listing strictly into its `to` paths and entries (no store access). */
export function parseListingModel(bytes: Buffer, where: string): { tos: string[]; entries: ListedEntry[] } {
  const c = new Checker("RUN_INVALID");
  const o = c.object(parseJsonBytes(bytes, { source: where }), "", ["schema", "inputs", "entries"]) ?? {};
  if (o.schema !== RUN_INPUTS_SCHEMA) c.add("/schema", `must be "${RUN_INPUTS_SCHEMA}"`);
  const tos = c.stringArray(c.required(o, "inputs", ""), "/inputs") ?? [];
  const list = c.array(c.required(o, "entries", ""), "/entries") ?? [];
  if (list.length > RUN_INPUT_LIMITS["run.inputs-entries"]) c.add("/entries", "limit run.inputs-entries exceeded", "LIMIT_EXCEEDED");
  const parsed: ListedEntry[] = [];
  list.forEach((item, i) => {
    const p = childPath("/entries", i);
    const e = c.object(item, p, ["path", "type", "mode", "size", "sha256"]);
    if (!e) return;
    const path = c.string(c.required(e, "path", p), childPath(p, "path"), { nonEmpty: true }) ?? "";
    const type = c.string(c.required(e, "type", p), childPath(p, "type"), { pattern: /^(dir|file)$/ }) ?? "dir";
    const mode = c.integer(c.required(e, "mode", p), childPath(p, "mode"), { min: 0, max: 0o7777 }) ?? 0;
    // the host reader writes only these modes: anything else was not written by it
    if (!(type === "dir" ? [0o755] : [0o644, 0o755]).includes(mode)) c.add(childPath(p, "mode"), "not a mode the input reader writes");
    if (type === "file") {
      const size = c.integer(c.required(e, "size", p), childPath(p, "size"), { min: 0, max: RUN_INPUT_LIMITS["run.inputs-bytes"] }) ?? 0;
      let sha = "" as Sha256Digest;
      try {
        sha = parseSha256(c.required(e, "sha256", p), childPath(p, "sha256"));
      } catch {
        c.add(childPath(p, "sha256"), "expected a sha256 digest", "DIGEST_INVALID");
      }
      parsed.push({ path, type, mode, size, sha256: sha });
    } else {
      if (e.size !== undefined || e.sha256 !== undefined) c.add(p, "a directory has no size or sha256");
      parsed.push({ path, type, mode });
    }
  });
  c.done(`invalid run input listing ${where}`, "the store's copy of the run's inputs was edited");
  return { tos, entries: parsed };
}

/** Parses a listing into the tree it names, file data looked up (and verified by the caller's reader) by `data`. */
export function parseListing(bytes: Buffer, data: (sha: Sha256Digest, size: number, path: string) => Uint8Array, where: string): RunInputTree {
  const { tos, entries: parsed } = parseListingModel(bytes, where);
  let bytes0 = 0;
  for (const e of parsed)
    if (!e.path.startsWith("/") || e.path === "/")
      throw new CairnError("RUN_INVALID", `${where}: entry ${e.path} is not an absolute path`, { path: "/entries" });
  const entries: TarEntry[] = parsed.map((e) => {
    if (e.type === "dir") return { type: "dir", path: e.path.slice(1), mode: e.mode };
    bytes0 += e.size!;
    if (bytes0 > RUN_INPUT_LIMITS["run.inputs-bytes"])
      throw new CairnError("LIMIT_EXCEEDED", `limit run.inputs-bytes exceeded by ${where}`, { path: "/entries" });
    return { type: "file", path: e.path.slice(1), mode: e.mode, data: data(e.sha256!, e.size!, e.path) };
  });
  // the tree model checks the rest of each path (canonical, parents present) when the digest is computed
  return inputTree(entries, tos);
}

/** Publishes the input files and the listing into the store; returns what the run manifest records. */
export function storeRunInputs(storeDir: string, t: RunInputTree): RunInputsRef {
  const listing = encodeListing(t);
  const store = new Store(storeDir);
  try {
    for (const b of t.files.values()) store.put("objects", b);
    const d = store.put("objects", listing);
    return { tree: t.digest, listing: d, size: listing.length };
  } finally {
    store.close();
  }
}

/**
 * The run's input tree from the store, every byte verified (the store checks
 * each object's digest on read), and its digest checked against `ref.tree`.
 * A missing or corrupt object keeps the store's code and names the field.
 */
export function loadRunInputs(storeDir: string, ref: RunInputsRef, field = "/run_inputs"): RunInputTree {
  const store = new Store(storeDir, { write: false });
  // no listing at all: the usual cause is a bundle made without --include-inputs, imported on another host
  if (!store.has("objects", ref.listing))
    throw new CairnError("STORE_MISSING", `the run's inputs (input tree ${ref.tree}, listing ${ref.listing}) are not in this store`, {
      path: `${field}/listing`,
      hint: "a bundle made without --include-inputs leaves them out: replay on the recording host, or import a bundle made with `cairn bundle --include-inputs`; nothing was launched",
    });
  const at = <T>(what: string, f: () => T): T => {
    try {
      return f();
    } catch (e) {
      if (e instanceof CairnError && (e.code === "STORE_MISSING" || e.code === "STORE_CORRUPT"))
        throw new CairnError(e.code, `the run's input tree: ${what}: ${e.message}`, {
          path: field,
          cause: e,
          hint: "the run's inputs are not in this store as recorded; replay from a bundle of the run, or record it again",
        });
      throw e;
    }
  };
  const listing = at("the listing", () => store.read("objects", ref.listing, Math.min(ref.size, LISTING_MAX_BYTES), "run.inputs-listing-bytes"));
  const t = parseListing(listing, (sha, size, path) => at(path, () => store.read("objects", sha, size, "run.inputs-bytes")), `store object ${ref.listing}`);
  if (t.digest !== ref.tree)
    throw new CairnError("REPLAY_MISMATCH", `the stored input tree has digest ${t.digest}, the run names ${ref.tree}`, {
      path: `${field}/tree`,
      hint: "this run cannot be replayed on this host as it is; nothing was launched",
    });
  return t;
}

/** The store objects a run's inputs occupy: the listing and every file (for bundles and gc). */
export function runInputObjects(storeDir: string, ref: RunInputsRef): Array<{ digest: Sha256Digest; size: number }> {
  const t = loadRunInputs(storeDir, ref);
  const out = [{ digest: ref.listing, size: ref.size }];
  for (const e of t.tree.values()) if (e.type === "file") out.push({ digest: e.sha256, size: e.size });
  return out;
}
