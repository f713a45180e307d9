/**
 * The run manifest `cairn.run/1` (`run.json` in a run directory): identities
 * only — no paths, no environment values, no output bytes — so it is safe to
 * share. This is the single definition of what it records; each field says
 * whether replay checks it before launch.
 */
import { Checker, childPath, defineScope, parseJsonBytes, parseSha256, scopeFieldNames, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { parseBranchRef, type RunBranch } from "./branch-manifest.ts";
import { RUN_STATUSES, type RunStatus } from "./checker.ts";
import { CHECKPOINT_NAME, MAX_CHECKPOINTS } from "./checkpoint-spec.ts";
import type { RunInputsRef } from "./input-listing.ts";
import { parseVmIdentity, type VmIdentity } from "./vmid.ts";

export const RUN_MANIFEST_SCHEMA = "cairn.run/1";

export interface RunManifest {
  readonly schema: typeof RUN_MANIFEST_SCHEMA;
  readonly run_id: string;
  readonly status: RunStatus;
  readonly workload: {
    readonly source_kind: string;
    readonly workload: Sha256Digest;
    readonly source: Sha256Digest;
    readonly fs: Sha256Digest;
    readonly launch: Sha256Digest;
    readonly derived: Sha256Digest;
  };
  readonly guest_image: { readonly initramfs: Sha256Digest; readonly size: number; readonly inputs: Sha256Digest };
  readonly vm: VmIdentity;
  readonly vm_digest: Sha256Digest;
  readonly replay_log: { readonly sha256: Sha256Digest; readonly size: number };
  readonly outcome: Sha256Digest;
  /** Where the run's input tree is in the store (`run.inputs`); absent without inputs. */
  readonly run_inputs?: RunInputsRef;
  /** A record with `run.checkpoints`: the checkpoints taken and the qcow2 holding them (checkpoints.qcow2); absent without. */
  readonly checkpoints?: RunCheckpoints;
  /** A branch (branch.ts): its parent, the checkpoint it starts from, and its files by digest (branch-manifest.ts); absent for a run from boot. */
  readonly branch?: RunBranch;
  /** Provenance only; never compared. */
  readonly recorded: { readonly at: string; readonly cairn_version: string };
}

export interface RunCheckpoints {
  /** checkpoints.qcow2: this record's bytes (two records of one run differ, docs/runs.md says why). */
  readonly file: { readonly sha256: Sha256Digest; readonly size: number };
  /** In the order taken; each at the guest's instruction count `icount`, after its event. */
  readonly taken: ReadonlyArray<{
    readonly name: string;
    readonly after: { readonly step: number } | { readonly output: "stdout" | "stderr"; readonly contains: string };
    readonly icount: number;
  }>;
}

/**
 * Every run manifest field and how replay treats it: `covers` are the fields
 * replay checks before launch or compares after it; `excludes` are recorded
 * but never compared.
 */
export const RUN_MANIFEST_SCOPE = defineScope({
  identity: RUN_MANIFEST_SCHEMA,
  covers: {
    "/schema": "checked: the reader must know this version",
    "/status": "compared after replay (derived from events and assertions, or from how QEMU ended: checker.ts RunStatus)",
    "/workload": "checked before launch: the workload is re-verified from the store and every identity must match",
    "/guest_image": "checked before launch: the recorded inputs and the rebuilt initramfs must match byte for byte (by digest)",
    "/vm": "checked before launch, field by field; the first difference is refused",
    "/vm_digest": "checked before launch: must be the digest of `vm`",
    "/replay_log": "checked before launch: size and sha256 of replay.log",
    "/outcome": "compared after replay",
    "/run_inputs":
      "checked before launch: the input tree's listing and files are read from the store by digest, and the tree's cairn.fs/1 digest must be the VM identity's run_inputs",
    "/branch":
      "a branch only: checked before launch, each of its files (the start snapshot, the parent's stream prefix, the scenario tail) by size and sha256; the parent and checkpoint it names are provenance the receipt binds",
  },
  excludes: {
    "/run_id": "names the record; not compared (two records of one workload have different ids)",
    "/recorded": "provenance only (wall clock, cairn version); never compared",
    "/checkpoints":
      "not used by a replay from boot, which runs without the snapshots (tests/vm/checkpoint.test.ts); the qcow2's size and sha256 are bound with run.json's own digest by the receipt, and whatever loads a checkpoint checks them first (checkpoint-file.ts)",
  },
});

const RUN_MANIFEST_FIELDS = [...scopeFieldNames(RUN_MANIFEST_SCOPE, "covers"), ...scopeFieldNames(RUN_MANIFEST_SCOPE, "excludes")];

function digestAt(c: Checker, o: Record<string, JsonModel>, key: string, path: string): Sha256Digest {
  try {
    return parseSha256(c.required(o, key, path), childPath(path, key));
  } catch {
    c.add(childPath(path, key), "expected a sha256 digest", "DIGEST_INVALID");
    return "" as Sha256Digest;
  }
}

function parseInputsRef(c: Checker, unsafe: JsonModel): RunInputsRef {
  const o = c.object(unsafe, "/run_inputs", ["tree", "listing", "size"]) ?? {};
  return {
    tree: digestAt(c, o, "tree", "/run_inputs"),
    listing: digestAt(c, o, "listing", "/run_inputs"),
    size: c.integer(c.required(o, "size", "/run_inputs"), "/run_inputs/size", { min: 1 }) ?? 0,
  };
}

function parseCheckpointsRef(c: Checker, unsafe: JsonModel): RunCheckpoints {
  const o = c.object(unsafe, "/checkpoints", ["file", "taken"]) ?? {};
  const f = c.object(c.required(o, "file", "/checkpoints"), "/checkpoints/file", ["sha256", "size"]) ?? {};
  const list = c.array(c.required(o, "taken", "/checkpoints"), "/checkpoints/taken") ?? [];
  if (list.length > MAX_CHECKPOINTS) c.add("/checkpoints/taken", `limit run.checkpoints exceeded (${list.length} > ${MAX_CHECKPOINTS})`, "LIMIT_EXCEEDED");
  const taken = list.slice(0, MAX_CHECKPOINTS).map((item, i) => {
    const p = `/checkpoints/taken/${i}`;
    const t = c.object(item, p, ["name", "after", "icount"]) ?? {};
    const a = c.object(c.required(t, "after", p), `${p}/after`, ["step", "output", "contains"]) ?? {};
    const after =
      a.step !== undefined
        ? { step: c.integer(a.step, `${p}/after/step`, { min: 0 }) ?? 0 }
        : {
            output: (c.string(c.required(a, "output", `${p}/after`), `${p}/after/output`, { pattern: /^(stdout|stderr)$/ }) ?? "stdout") as "stdout" | "stderr",
            contains: c.string(c.required(a, "contains", `${p}/after`), `${p}/after/contains`, { nonEmpty: true }) ?? "",
          };
    return {
      name: c.string(c.required(t, "name", p), `${p}/name`, { pattern: CHECKPOINT_NAME }) ?? "",
      after,
      icount: c.integer(c.required(t, "icount", p), `${p}/icount`, { min: 0 }) ?? 0,
    };
  });
  return {
    file: {
      sha256: digestAt(c, f, "sha256", "/checkpoints/file"),
      size: c.integer(c.required(f, "size", "/checkpoints/file"), "/checkpoints/file/size", { min: 1 }) ?? 0,
    },
    taken,
  };
}

export function parseRunManifest(bytes: Buffer, file: string): RunManifest {
  const model = parseJsonBytes(bytes);
  const c = new Checker("RUN_INVALID");
  const o = c.object(model, "", RUN_MANIFEST_FIELDS);
  if (!o) {
    c.done(`invalid run manifest ${file}`);
    throw new Error("unreachable");
  }
  if (o.schema !== RUN_MANIFEST_SCHEMA) c.add("/schema", `must be "${RUN_MANIFEST_SCHEMA}"`);
  const runId = c.string(c.required(o, "run_id", ""), "/run_id", { pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/ }) ?? "";
  const status = c.string(c.required(o, "status", ""), "/status", { pattern: new RegExp(`^(${RUN_STATUSES.join("|")})$`) });
  const w = c.object(c.required(o, "workload", ""), "/workload", ["source_kind", "workload", "source", "fs", "launch", "derived"]) ?? {};
  const g = c.object(c.required(o, "guest_image", ""), "/guest_image", ["initramfs", "size", "inputs"]) ?? {};
  const r = c.object(c.required(o, "replay_log", ""), "/replay_log", ["sha256", "size"]) ?? {};
  const rec = c.object(c.required(o, "recorded", ""), "/recorded", ["at", "cairn_version"]) ?? {};
  const m: RunManifest = {
    schema: RUN_MANIFEST_SCHEMA,
    run_id: runId,
    status: (status ?? "passed") as RunStatus,
    workload: {
      source_kind: c.string(c.required(w, "source_kind", "/workload"), "/workload/source_kind") ?? "",
      workload: digestAt(c, w, "workload", "/workload"),
      source: digestAt(c, w, "source", "/workload"),
      fs: digestAt(c, w, "fs", "/workload"),
      launch: digestAt(c, w, "launch", "/workload"),
      derived: digestAt(c, w, "derived", "/workload"),
    },
    guest_image: {
      initramfs: digestAt(c, g, "initramfs", "/guest_image"),
      size: c.integer(c.required(g, "size", "/guest_image"), "/guest_image/size", { min: 0 }) ?? 0,
      inputs: digestAt(c, g, "inputs", "/guest_image"),
    },
    vm: parseVmIdentity(c.required(o, "vm", ""), "/vm"),
    vm_digest: digestAt(c, o, "vm_digest", ""),
    replay_log: { sha256: digestAt(c, r, "sha256", "/replay_log"), size: c.integer(c.required(r, "size", "/replay_log"), "/replay_log/size", { min: 0 }) ?? 0 },
    outcome: digestAt(c, o, "outcome", ""),
    ...(o.run_inputs !== undefined ? { run_inputs: parseInputsRef(c, o.run_inputs) } : {}),
    ...(o.checkpoints !== undefined ? { checkpoints: parseCheckpointsRef(c, o.checkpoints) } : {}),
    ...(o.branch !== undefined ? { branch: parseBranchRef(c, o.branch) } : {}),
    recorded: {
      at: c.string(c.required(rec, "at", "/recorded"), "/recorded/at") ?? "",
      cairn_version: c.string(c.required(rec, "cairn_version", "/recorded"), "/recorded/cairn_version") ?? "",
    },
  };
  c.done(`invalid run manifest ${file}`, "the run directory was edited or written by another cairn version");
  return m;
}
