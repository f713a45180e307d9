/**
 * `checkWorkload`: every problem of a workload's source in one pass, each
 * with the policy that would admit it, without assembling and without
 * touching the store. Assembly stops at the first refusal, which made people
 * fix an upstream image one attempt at a time (issue 9); check runs the same
 * rules (the OCI reader, layer application, the launch rules) in their
 * collecting modes, so its list is the list assembly would refuse, in order.
 *
 * The rules are not copied here: each area hands over what it would have
 * thrown (tree `applyLayers({collect})`, oci `readOciSource({report})`,
 * launch `ociConfigRefusals`, `launchTreeProblems`). A member refused by a
 * policy that is not taken is then treated as that policy would treat it,
 * so later members are checked against a plausible tree; a refusal of a
 * layer's stream leaves that layer out.
 *
 * Nothing is written but a private temporary staging directory (removed
 * before returning); file bytes are hashed and dropped.
 *
 * What `cairn run` checks beyond assembly (the spec's run section, the
 * guest's sizing by root, the runtime overlay) belongs to the runs code,
 * a floor up: it comes in as a `RunCheck` (vm/run-check.ts), whose problems
 * are listed here in the order run meets them (the run section before the
 * source, the tree's after it), so check and run share each rule's one
 * definition.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CairnError, MAX_ISSUES, type ErrorCode } from "../core/index.ts";
import { readOciSource } from "../oci/index.ts";
import {
  applyLayers,
  policyName,
  policyValue,
  HASH_ONLY_SINK,
  type CanonicalTree,
  type DroppedXattrs,
  type PolicyKey,
  type SkippedMember,
} from "../tree/index.ts";
import { deriveBinary } from "./derive.ts";
import { launchFromOci, ociConfigRefusals, ociLaunchWithSpec, type Launch } from "./launch.ts";
import { readSourceFile, readSpecExecutable, specLayoutDir, type SourceScope } from "./source-file.ts";
import { parseWorkloadSpec, SPEC_MAX_BYTES, type WorkloadSpec } from "./spec.ts";

/** One problem: what assembly would refuse, and the policy that would admit it. */
export interface CheckProblem {
  readonly code: ErrorCode;
  /** Where: a JSON pointer of the image's documents, or `/layers/<i>:<member path>`. */
  readonly path: string;
  readonly message: string;
  /** The relaxation that admits it (`"devices: skip"`), or null when no policy does. */
  readonly policy: string | null;
  /** The layer could not be read on from here (framing, gzip, DiffID, a limit); it was left out. */
  readonly fatal?: true;
}

export interface CheckResult {
  readonly kind: "binary" | "oci";
  /** The first MAX_ISSUES problems, in the order assembly meets them. */
  readonly problems: readonly CheckProblem[];
  /** How many problems there were in all. */
  readonly problemCount: number;
  /** The policy keys that would admit some problem, with the relaxation each names (e.g. devices → skip). */
  readonly suggested: Readonly<Partial<Record<PolicyKey, string>>>;
  /** True when every problem is admitted by a policy: the spec assembles with `suggested` added. */
  readonly admissible: boolean;
  /** Under the spec's own policy: device nodes and FIFOs that assembly leaves out and xattrs it drops. */
  readonly skipped: readonly SkippedMember[];
  readonly droppedXattrs: readonly DroppedXattrs[];
}

/**
 * The checks `cairn run` makes that assembly does not: each returns what it
 * refuses (errors; none when all is well), never throws for a refusal.
 */
export interface RunCheck {
  /** The spec's run section (and what it reads), before the source is read, as run does. */
  section(spec: WorkloadSpec, specPath: string): readonly unknown[];
  /** The workload's tree as the source gives it (run's checks before launch: sizing by root, the overlay's rules). */
  tree(tree: CanonicalTree): readonly unknown[];
}

class Problems {
  readonly list: CheckProblem[] = [];
  count = 0;
  readonly keys = new Set<PolicyKey>();
  unadmitted = 0;
  fatal = 0;

  add(e: unknown, policy: PolicyKey | undefined, fatal = false): void {
    if (!(e instanceof CairnError)) throw e;
    // a refusal listing several fields (a run section's) is that many problems, each once
    if (e.issues.length > 1) {
      for (const i of e.issues) this.add(new CairnError(i.code, i.message, { path: i.path }), policy, fatal);
      return;
    }
    this.count++;
    if (policy !== undefined) this.keys.add(policy);
    else this.unadmitted++;
    if (fatal) this.fatal++;
    if (this.list.length >= MAX_ISSUES) return;
    this.list.push({
      code: e.code,
      path: e.path ?? "",
      message: e.message,
      policy: policy === undefined ? null : policyName(policy),
      ...(fatal ? { fatal: true as const } : {}),
    });
  }
}

/** Checks an OCI source read from `layoutDir` under the spec's rules; see the module comment. */
async function checkOci(spec: WorkloadSpec, layoutDir: string, found: Problems, run?: RunCheck): Promise<Pick<CheckResult, "skipped" | "droppedXattrs">> {
  if (spec.source.kind !== "oci") throw new CairnError("INTERNAL", "not an OCI spec");
  const staging = mkdtempSync(join(tmpdir(), "cairn-check-"));
  try {
    let src: Awaited<ReturnType<typeof readOciSource>>;
    try {
      src = await readOciSource({
        layoutDir,
        manifestDigest: spec.source.manifest,
        stagingDir: join(staging, "oci"),
        limits: spec.limits,
        platform: spec.policy.platform ?? "refuse",
        report: (e, policy) => found.add(e, policy),
      });
    } catch (e) {
      found.add(e, undefined, true);
      return { skipped: [], droppedXattrs: [] };
    }
    const fields = ociLaunchWithSpec(src.launch, spec.source.launch);
    for (const e of ociConfigRefusals(fields)) found.add(e, undefined);
    let launch: Launch | undefined;
    try {
      launch = launchFromOci({ ...fields, volumes: undefined, stopSignal: undefined, argsEscaped: undefined });
    } catch (e) {
      found.add(e, undefined);
    }
    const under = { skipped: [] as SkippedMember[], droppedXattrs: [] as DroppedXattrs[] };
    const applied = await applyLayers({
      layers: src.layers,
      policy: spec.policy,
      limits: spec.limits,
      sink: HASH_ONLY_SINK, // check stores nothing
      collect: (i) => found.add(i.error, i.policy, i.fatal),
    });
    // what the spec's own policy takes out (a listing, not a problem): the collected ones are problems already
    for (const s of applied.skipped) if (policyValue(spec.policy, "devices") === "skip") under.skipped.push(s);
    for (const x of applied.droppedXattrs) if (policyValue(spec.policy, "xattrs") === "drop") under.droppedXattrs.push(x);
    // loaded on demand, as assembly loads it: a binary workload never needs the OCI path
    const { launchTreeProblems } = await import("./oci-workload.ts");
    if (launch !== undefined)
      for (const e of await launchTreeProblems(applied.tree, launch, spec.source.launch?.workdir !== undefined)) found.add(e, undefined);
    for (const e of run?.tree(applied.tree) ?? []) found.add(e, undefined);
    return under;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Lists every problem of the spec's source (see the module comment). A spec
 * that does not parse, or names a registry `ref` (check reads local layouts
 * only; `cairn pull` one first), is refused as it would be by assembly.
 */
export async function checkWorkload(opts: { readonly specPath: string; readonly run?: RunCheck; readonly hostRoot?: string }): Promise<CheckResult> {
  const specPath = resolve(opts.specPath);
  // the source's host paths, in the scope assembly reads them in (the spec's directory, or --inputs-root)
  const scope: SourceScope = { specPath, hostRoot: opts.hostRoot };
  const spec = parseWorkloadSpec(readSourceFile(specPath, SPEC_MAX_BYTES, "specBytes"), specPath);
  const found = new Problems();
  for (const e of opts.run?.section(spec, specPath) ?? []) found.add(e, undefined);
  let listing: Pick<CheckResult, "skipped" | "droppedXattrs"> = { skipped: [], droppedXattrs: [] };
  if (spec.source.kind === "binary") {
    try {
      const exe = readSpecExecutable(scope, spec.source.path, spec.limits.fileSize, "fileSize");
      const derived = deriveBinary(spec, exe.bytes, exe.path);
      for (const e of opts.run?.tree(derived.tree) ?? []) found.add(e, undefined);
    } catch (e) {
      found.add(e, undefined);
    }
  } else {
    if (spec.source.ref !== undefined) {
      throw new CairnError("USAGE", "cairn workload check reads a local image layout; this spec names a registry ref", {
        path: "/source/oci/ref",
        hint: "pull it first (`cairn pull REF --oci DIR`) and check a spec whose source is {layout: DIR, manifest: …}",
      });
    }
    let layoutDir: string | undefined;
    try {
      layoutDir = specLayoutDir(scope, spec.source.layout);
    } catch (e) {
      found.add(e, undefined); // a layout outside the spec's directory is listed as assembly would refuse it
    }
    if (layoutDir !== undefined) listing = await checkOci(spec, layoutDir, found, opts.run);
  }
  const suggested: Partial<Record<PolicyKey, string>> = {};
  for (const k of found.keys) suggested[k] = policyName(k).slice(k.length + 2);
  return {
    kind: spec.source.kind,
    problems: found.list,
    problemCount: found.count,
    suggested,
    admissible: found.unadmitted === 0,
    ...listing,
  };
}
