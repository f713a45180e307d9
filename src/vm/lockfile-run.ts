/**
 * `cairn run env.lock --cmd ...`: an environment lockfile run directly. The
 * lockfile is exported (strata's `exportLock`: verified as `lock verify`
 * does, base re-probed, every layer checked) into a private staging
 * directory, together with a workload spec naming the exported image by
 * manifest digest; `recordRun` then assembles that spec like any OCI spec,
 * so the run's workload lock, raw closure and replay are those of an OCI
 * workload whose manifest carries the EnvironmentID and the lockfile digest
 * (its annotations are covered by the manifest digest, the source identity).
 * The staging directory is removed when the run is recorded or refused: the
 * store holds everything replay needs.
 *
 * The same run can be described by a spec that names the lockfile, so it
 * carries a `run` section (steps, expectations) like any workload spec:
 *
 *   schema: cairn.workload/1
 *   source:
 *     lockfile: {path: ./env.lock, cmd: [/usr/local/bin/prog, arg], user: "1000:1000", workdir: /, env: {KEY: VAL}}
 *   run: {...}            # and limits, policy: passed to the exported OCI spec unchanged
 *
 * `path` is a locator relative to the spec; the verification policy (keys,
 * registries, base) stays on the command line, never in a file.
 *
 * Variables set over the lockfile's `env` (`--env KEY=VAL`, `env:` above)
 * are written into the exported spec's `source.oci.launch.env`, never into
 * the image: the image stays exactly what `lock export` makes of the
 * lockfile (its manifest digest, its EnvironmentID), and the variables enter
 * the launch identity like any spec's launch (run-env.ts says why and what
 * is refused). environment.json lists their names (`run_env`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { hostPathBeneath, specHostScope } from "../tree/index.ts";
import { Checker, compareBytes, isJsonObject, parseYamlBytes, readFileBounded, readFilePrefix, writeFileAtomic, type JsonModel } from "../core/index.ts";
import { DEFAULT_EXPORT_LAUNCH, exportLock, type ExportLaunch, type ExportLockOptions, type ExportResult } from "../strata/index.ts";
import { assembleWorkload, SPEC_MAX_BYTES, type WorkloadIdentities } from "../workload/index.ts";
import { recordRun, type RecordOptions, type RecordResult } from "./record.ts";
import { checkRunEnv } from "./run-env.ts";

/** Enough of a file to see whether it is an environment lockfile (its `format` is the first key cairn writes; the rest is never needed here). */
const SNIFF_BYTES = 64 * 1024;

/** True when `path` holds an environment lockfile (Strata's LockFile, or cairn's earlier format, which reading then refuses naming `cairn lock convert`), not a workload spec or workload lock. */
export function isEnvironmentLockfile(path: string): boolean {
  const head = readFilePrefix(path, SNIFF_BYTES);
  if (head === undefined) return false;
  // Top-level keys only (a lockfile's inline content manifests can make it far longer than the head).
  const keys = new Set<string>();
  for (const line of head.toString("utf8").split("\n")) {
    const m = /^([a-z_]+):/.exec(line);
    if (m !== null) keys.add(m[1]!);
  }
  if (keys.has("format") && /^format:\s*["']?cairn\.lock\/1/m.test(head.toString("utf8"))) return true;
  return keys.has("strata_version") || (keys.has("profile") && keys.has("profile_sha256"));
}

export interface LockfileRunOptions extends Omit<RecordOptions, "input"> {
  /** What `exportLock` takes, minus where to write: the image goes to private staging. */
  readonly export: Omit<ExportLockOptions, "outDir">;
  /** The `run`, `limits` and `policy` sections of a spec that named the lockfile (checked by the workload spec reader). */
  readonly specSections?: Readonly<Record<string, JsonModel>>;
  /** Variables set over the lockfile's env for this run (`--env`), checked by run-env.ts; part of the launch identity. */
  readonly env?: ReadonlyMap<string, string>;
}

/** A workload spec whose source is `lockfile`: where the lockfile is, the launch, and the other sections. */
export interface LockfileSpec {
  readonly lockPath: string;
  /** The spec's directory: its `run.inputs` and served directory stay relative to it (`recordRun`'s `inputsBase`). */
  readonly specDir: string;
  readonly launch: ExportLaunch;
  /** `source.lockfile.env`: variables set over the lockfile's env (empty when absent). */
  readonly env: ReadonlyMap<string, string>;
  readonly sections: Readonly<Record<string, JsonModel>>;
}

const SPEC_SECTIONS = ["run", "limits", "policy"] as const;

/**
 * Reads `path` as a spec naming an environment lockfile; undefined when it
 * is not one (another spec, a lock, a lockfile). A spec that names a
 * lockfile is read strictly (WORKLOAD_SPEC_INVALID lists every issue); the
 * lockfile it names must lie beneath the spec's directory, or beneath
 * `hostRoot` (--inputs-root), else PATH_UNSAFE naming /source/lockfile/path.
 */
export function readLockfileSpec(path: string, hostRoot?: string): LockfileSpec | undefined {
  let model: JsonModel;
  try {
    model = parseYamlBytes(readFileBounded(path, SPEC_MAX_BYTES, "spec.max_bytes"));
  } catch {
    return undefined;
  }
  if (!isJsonObject(model) || !isJsonObject(model.source) || !Object.hasOwn(model.source, "lockfile")) return undefined;
  const c = new Checker("WORKLOAD_SPEC_INVALID");
  const o = c.object(model, "", ["schema", "source", ...SPEC_SECTIONS]) ?? {};
  if (o.schema !== "cairn.workload/1") c.add("/schema", 'must be "cairn.workload/1"');
  const src = c.object(o.source, "/source", ["lockfile"]) ?? {};
  const l = c.object(src.lockfile, "/source/lockfile", ["path", "cmd", "user", "workdir", "env"]) ?? {};
  const lockPath = c.string(c.required(l, "path", "/source/lockfile"), "/source/lockfile/path", { nonEmpty: true }) ?? "";
  const argv = c.stringArray(c.required(l, "cmd", "/source/lockfile"), "/source/lockfile/cmd") ?? [];
  const user = Object.hasOwn(l, "user") ? c.string(l.user, "/source/lockfile/user") : undefined;
  const workdir = Object.hasOwn(l, "workdir") ? c.string(l.workdir, "/source/lockfile/workdir") : undefined;
  const unsafeEnv = Object.hasOwn(l, "env") ? c.stringMap(l.env, "/source/lockfile/env") : undefined;
  c.done(`invalid spec ${path}`, "see docs/runs.md: a spec naming a lockfile");
  const env = checkRunEnv(unsafeEnv ?? new Map<string, string>(), "/source/lockfile/env");
  const sections: Record<string, JsonModel> = {};
  for (const k of SPEC_SECTIONS) if (Object.hasOwn(o, k)) sections[k] = o[k]!;
  // the exported spec is written elsewhere: run.inputs stay relative to this spec's directory, which the
  // caller passes as recordRun's inputsBase (never rewritten to absolute paths, which a spec may not name)
  return {
    // the lockfile is a host file the spec names: beneath the spec's directory, or --inputs-root (tree/host-beneath.ts)
    lockPath: hostPathBeneath(specHostScope(dirname(path), hostRoot), lockPath, "/source/lockfile/path"),
    specDir: dirname(path),
    launch: { argv, user: user ?? DEFAULT_EXPORT_LAUNCH.user, workdir: workdir ?? DEFAULT_EXPORT_LAUNCH.workdir },
    env,
    sections,
  };
}

export interface LockfileRunResult extends RecordResult {
  readonly exported: ExportResult;
  /** The names of the variables set over the lockfile's env, sorted by bytes (environment.json's `run_env`). */
  readonly runEnv: readonly string[];
}

/** The exported image, in private staging, and the OCI workload spec naming it (what `recordRun` and the plan assemble). */
interface StagedExport {
  readonly exported: ExportResult;
  readonly spec: string;
  readonly names: readonly string[];
}

/**
 * Exports the lockfile into `staging/image` and writes `staging/workload.json`
 * naming it by manifest digest: the one definition of what a lockfile run
 * assembles, shared by the record and by a campaign's plan (which needs the
 * workload identity before anything runs, fleet/lock-entry.ts).
 */
async function stageExport(
  opts: Pick<LockfileRunOptions, "export" | "specSections">,
  runEnv: ReadonlyMap<string, string>,
  staging: string,
): Promise<StagedExport> {
  const exported = await exportLock({ ...opts.export, outDir: join(staging, "image") });
  const spec = join(staging, "workload.json");
  const names = [...runEnv.keys()].sort(compareBytes);
  const oci = {
    layout: "./image",
    manifest: exported.layout.manifest.digest,
    ...(runEnv.size > 0 ? { launch: { env: Object.fromEntries(runEnv) } } : {}),
  };
  const model = { schema: "cairn.workload/1", source: { oci }, ...opts.specSections };
  writeFileAtomic(spec, `${JSON.stringify(model)}\n`, { mode: 0o600 });
  return { exported, spec, names };
}

export interface LockfileAssembleOptions {
  readonly export: Omit<ExportLockOptions, "outDir">;
  readonly env?: ReadonlyMap<string, string>;
  readonly storeDir: string;
  readonly cairnVersion: string;
}

/**
 * Verifies and exports the lockfile as `recordLockfileRun` does, and
 * assembles the exported workload into the store, without a VM: the
 * workload identities a record of it will run (a campaign names its task by
 * them). The staging directory, and the workload lock, are removed.
 */
export async function assembleLockfileWorkload(opts: LockfileAssembleOptions): Promise<{ identities: WorkloadIdentities; exported: ExportResult }> {
  const runEnv = checkRunEnv(opts.env ?? new Map<string, string>(), "/env");
  const staging = mkdtempSync(join(opts.export.tmpDir ?? tmpdir(), "cairn-lockfile-plan-"));
  try {
    const s = await stageExport(opts, runEnv, staging);
    const r = await assembleWorkload({
      specPath: s.spec,
      storeDir: opts.storeDir,
      lockOut: join(staging, "workload.lock.json"),
      cairnVersion: opts.cairnVersion,
    });
    return { identities: r.identities, exported: s.exported };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Exports the lockfile, then records the exported image as an OCI workload. */
export async function recordLockfileRun(opts: LockfileRunOptions): Promise<LockfileRunResult> {
  const runEnv = checkRunEnv(opts.env ?? new Map<string, string>(), "/env"); // before the export: a refused variable costs nothing
  const staging = mkdtempSync(join(opts.export.tmpDir ?? tmpdir(), "cairn-lockfile-run-"));
  try {
    const { exported, spec, names } = await stageExport(opts, runEnv, staging);
    const { export: _export, specSections: _sections, env: _env, ...record } = opts;
    // environment.json goes into the run directory before it is published (run-staging.ts: whole or absent)
    const environment = {
      environment_id: exported.environmentId,
      lockfile_sha256: exported.lockfileSha256,
      image_manifest: exported.layout.manifest.digest,
      ...(runEnv.size > 0 ? { run_env: [...names] } : {}),
    };
    // the run's origin is the file the user gave (a lockfile, or a spec naming one), not the exported spec
    const r = await recordRun({ ...record, input: spec, environment, origin: opts.origin ?? opts.export.lockPath });
    return { ...r, exported, runEnv: [...names] };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
