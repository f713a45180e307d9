/**
 * Run inputs (`run.inputs: [{from: PATH, to: /GUEST/PATH}]`): host files
 * and directories copied, when the run is recorded, into one content-addressed
 * input tree whose `cairn.fs/1` digest is a field of the VM identity
 * (`run_inputs`), then laid into the workload's template at their `to` paths.
 *
 * The rule: a host input is read exactly like every other input, by core's
 * bounded reader and the tree area's one directory reader (no symlink
 * followed or recorded, no FIFO waited on, no device read, every file of the
 * size the walk saw), under named limits, and its host traces are removed
 * (owner 0:0, mtime 0, modes 0755/0644 by `normalizeMode`), so the same bytes
 * give the same tree on every host. The attack it stops: a spec that points
 * an input at a symlink to a secret, a FIFO that blocks the run forever, a
 * device that never ends, or a file that changes while read; and an input
 * that silently replaces a file of the workload (refused: the guest would run
 * another tree than the workload identity names).
 *
 * Which host files: only those beneath the spec's directory (or the
 * directory the user named with `--inputs-root`), resolved and opened by
 * tree/host-beneath.ts. A spec is someone else's input; it must not choose
 * to copy `/etc/shadow` or `~/.ssh` into a run and its bundle.
 *
 * Only recording reads the host. A replay takes the input tree from the store
 * by digest (input-listing.ts) and never looks at `from` again.
 */
import { lstatSync, type Stats } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { CairnError, checkLimit, compareBytes, FIXED_LIMIT_HINT, readFileBounded, sha256, type Sha256Digest } from "../core/index.ts";
import {
  ancestors,
  entriesTree,
  fsIdentity,
  readDirectory,
  resolveBeneath,
  specHostScope,
  withBeneath,
  type CanonicalTree,
  type ContentSource,
  type FsEntry,
  type HostScope,
  type TarEntry,
} from "../tree/index.ts";
import type { RunInput } from "./scenario.ts";
import { streamFrom } from "./content-stream.ts";

/** Named fixed limits of one run's inputs, all inputs together. */
export const RUN_INPUT_LIMITS = {
  /** Files, directories and created parents of the input tree. */
  "run.inputs-entries": 10_000,
  /** File bytes of the input tree (read into memory, then into the guest image). */
  "run.inputs-bytes": 256 * 1024 * 1024,
} as const;

/** The run's inputs as a canonical tree: "/", each `to`'s parents (0755, 0:0) and the inputs at their `to` paths. */
export interface RunInputTree {
  readonly tree: CanonicalTree;
  /** `cairn.fs/1` of `tree`: the VM identity's `run_inputs`. */
  readonly digest: Sha256Digest;
  /** The `to` paths, in the spec's order. */
  readonly tos: readonly string[];
  /** File bytes by sha256 (verified on every read). */
  readonly content: ContentSource;
  /** Every file's bytes, for publishing into the store. */
  readonly files: ReadonlyMap<Sha256Digest, Uint8Array>;
}

const HOST_HINT = "a run input must be a regular file or a directory of regular files and directories, which nothing writes to while the run is recorded";

function refuse(code: "SOURCE_NOT_REGULAR" | "RUN_INVALID", hostPath: string, field: string, message: string): never {
  throw new CairnError(code, `${field}: ${hostPath} ${message}`, { path: hostPath, hint: HOST_HINT });
}

/** The tree of `entries` with its file bytes, and the checks every input tree passes. */
export function inputTree(entries: readonly TarEntry[], tos: readonly string[]): RunInputTree {
  const tree = entriesTree(entries);
  const files = new Map<Sha256Digest, Uint8Array>();
  for (const e of entries) if (e.type === "file") files.set(sha256(e.data), e.data);
  return { tree, digest: fsIdentity(tree), tos, files, content: memoryContent(files) };
}

export function memoryContent(files: ReadonlyMap<Sha256Digest, Uint8Array>): ContentSource {
  return {
    async get(d: Sha256Digest): Promise<Uint8Array> {
      const b = files.get(d);
      if (b === undefined || sha256(b) !== d) throw new CairnError("STORE_MISSING", `${d} is not a file of the run's inputs`, { path: d });
      return b;
    },
  };
}

/** Where `run.inputs` are read from: relative to `base` (the spec's directory), and only beneath `root`. */
export interface RunInputScope {
  /** The directory of the spec (or lock) given to `cairn run`: a relative `from` starts here. */
  readonly base: string;
  /**
   * `--inputs-root DIR`: the directory inputs may come from, absolute paths
   * inside it allowed. Without it, inputs come from `base` and below, named
   * by relative paths only.
   */
  readonly root?: string;
}

/** The scope of a spec's host paths (run inputs, the served directory) for `cairn run`. */
export function runHostScope(s: RunInputScope): HostScope {
  return specHostScope(s.base, s.root);
}

/**
 * Reads every `run.inputs` entry from the host: a relative `from` against the
 * spec's directory, never leaving the scope's root (tree/host-beneath.ts:
 * absolute paths without `--inputs-root`, `..` above the root and symlinks
 * leading out are PATH_UNSAFE naming `/run/inputs/<i>/from`), every
 * component reached without following a symlink.
 */
export function readRunInputs(inputs: readonly RunInput[], scope: string | RunInputScope, fieldBase = "/run/inputs"): RunInputTree {
  const hostScope = runHostScope(typeof scope === "string" ? { base: scope } : scope);
  const entries: TarEntry[] = [];
  const dirs = new Set<string>();
  let bytes = 0;
  const count = (n: number, at: string) =>
    checkLimit("run.inputs-entries", n, RUN_INPUT_LIMITS["run.inputs-entries"], at, "count", `${FIXED_LIMIT_HINT}; give fewer or larger files`);
  inputs.forEach((input, i) => {
    const field = `${fieldBase}/${i}/from`;
    const unsafeFrom = input.from;
    const where = resolveBeneath(hostScope, unsafeFrom, field);
    if (where === undefined) refuse("RUN_INVALID", isAbsolute(unsafeFrom) ? unsafeFrom : resolve(hostScope.base, unsafeFrom), field, "does not exist");
    const host = where.shown;
    const rel = input.to.slice(1);
    for (const a of ancestors(input.to)) {
      if (!dirs.has(a)) entries.push({ type: "dir", path: a.slice(1), mode: 0o755 });
      dirs.add(a);
    }
    withBeneath(where, (at) => {
      let st: Stats;
      try {
        st = lstatSync(at);
      } catch {
        refuse("RUN_INVALID", host, field, "does not exist");
      }
      // resolved without a symlink in it: one here now was swapped in since, and is not followed
      if (st.isSymbolicLink()) refuse("SOURCE_NOT_REGULAR", host, field, "is a symlink; run inputs are never followed through links");
      const remaining = RUN_INPUT_LIMITS["run.inputs-bytes"] - bytes;
      if (st.isFile()) {
        checkLimit("run.inputs-bytes", bytes + st.size, RUN_INPUT_LIMITS["run.inputs-bytes"], host, "bytes", FIXED_LIMIT_HINT);
        const data = readFileBounded(at, remaining, "run.inputs-bytes", {
          shownAs: host,
          expectedSize: st.size,
          notRegular: "SOURCE_NOT_REGULAR",
          changed: "SOURCE_CHANGED",
          notRegularHint: HOST_HINT,
          changedHint: HOST_HINT,
          limitHint: FIXED_LIMIT_HINT,
        });
        bytes += data.length;
        entries.push({ type: "file", path: rel, mode: st.mode & 0o7777, data });
      } else if (st.isDirectory()) {
        const names = { entries: "run.inputs-entries", fileBytes: "run.inputs-bytes", totalBytes: "run.inputs-bytes" };
        const limits = { maxEntries: RUN_INPUT_LIMITS["run.inputs-entries"] - entries.length, maxFileBytes: remaining, maxTotalBytes: remaining, names };
        // prefix: the walk names entries by their guest paths and adds `to` and its parents as directories;
        // it walks through descriptors opened with O_NOFOLLOW, so no directory swapped for a link is followed
        const walked = readDirectory(at, rel, limits, { shownAs: host });
        for (const e of walked) {
          if (e.type === "symlink")
            refuse("SOURCE_NOT_REGULAR", `${host}/${e.path.slice(rel.length + 1)}`, field, "is a symlink; run inputs are never followed through links");
          if (e.type === "dir" && dirs.has(`/${e.path}`)) continue;
          if (e.type === "dir") dirs.add(`/${e.path}`);
          if (e.type === "file") bytes += e.data.length;
          entries.push(e);
        }
      } else {
        refuse("SOURCE_NOT_REGULAR", host, field, "is a socket, FIFO or device");
      }
    });
    count(entries.length + 1, host);
  });
  return inputTree(
    entries,
    inputs.map((x) => x.to),
  );
}

/**
 * The workload's tree with the inputs laid in. Each `to` (and everything
 * under it) must be absent from the workload's tree, and each of its parents
 * a directory there or absent (then created 0755, 0:0): an input never
 * replaces, shadows or writes through anything of the workload.
 */
export function mergeRunInputs(workload: CanonicalTree, inputs: RunInputTree, fieldBase = "/run/inputs"): CanonicalTree {
  const out = new Map<string, FsEntry>(workload);
  inputs.tos.forEach((to, i) => {
    const field = `${fieldBase}/${i}/to`;
    for (const a of ancestors(to)) {
      const e = workload.get(a);
      if (e !== undefined && e.type !== "dir")
        throw new CairnError("RUN_INVALID", `${field}: ${a} is a ${e.type} in the workload's tree; an input cannot go below it`, {
          path: field,
          hint: "choose a `to` below a directory of the workload, or a new one",
        });
    }
    for (const p of workload.keys()) {
      if (p === to || p.startsWith(`${to}/`))
        throw new CairnError("RUN_INVALID", `${field}: the workload's tree already has ${p}; an input never replaces a workload file`, {
          path: field,
          hint: "choose a `to` the workload does not use",
        });
    }
  });
  for (const e of inputs.tree.values()) if (!out.has(e.path)) out.set(e.path, e);
  return new Map([...out.entries()].sort((a, b) => compareBytes(a[0], b[0])));
}

/** Reads a file from the input tree when it holds it, else from the workload. */
export function withInputContent(workload: ContentSource, inputs: RunInputTree): ContentSource {
  return {
    get: (d: Sha256Digest) => (inputs.files.has(d) ? inputs.content.get(d) : workload.get(d)),
    // the workload's files keep their streamed reads (the input tree's are in memory already)
    stream: (d: Sha256Digest, chunk: (bytes: Uint8Array) => void) => streamFrom(inputs.files.has(d) ? inputs.content : workload, d, chunk),
  };
}
