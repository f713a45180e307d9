/**
 * Expansion: a campaign file becomes a plan of tasks, each named by the
 * identities it runs (task-identity.ts), in a fixed order (runs in file
 * order, matrix points with the first axis slowest, then repeats).
 *
 * Every point is checked before anything runs, by the same code a run uses:
 * its spec by the workload spec reader, its run section by the scenario
 * reader, its host inputs read and hashed in the spec's own scope, its
 * workload assembled into the store (what `cairn run` does first) so the
 * name carries the workload identity. A point that does not validate is
 * CAMPAIGN_INVALID naming the run entry, the point and the spec's field.
 * Points that give the same task collapse into one, listed in the plan.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  CAMPAIGN_LIMITS,
  CairnError,
  checkLimit,
  isCairnError,
  isJsonObject,
  parseYamlBytes,
  readFileBounded,
  sha256,
  type JsonModel,
  type JsonObject,
  type Sha256Digest,
} from "../core/index.ts";
import { specHostScope } from "../tree/index.ts";
import { assembleWorkload, parseWorkloadSpec, SPEC_MAX_BYTES, type WorkloadIdentities } from "../workload/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import {
  assembleLockfileWorkload,
  BUNDLE_SCHEME,
  openBundle,
  parseScenario,
  readHttpRoot,
  readRegistryRunManifest,
  readRunInputs,
  readRunManifest,
  runHostScope,
  type RunManifest,
} from "../vm/index.ts";
import type { CampaignFile, RunEntry } from "./campaign-file.ts";
import { lockExportOptions } from "./lock-entry.ts";
import type { Collapsed, Expansion, PlannedTask, TaskInput } from "./plan-file.ts";
import { taskName, type TaskIdentityModel } from "./task-identity.ts";
import { readPublishedRuns } from "./published-runs.ts";
import { readVaryFile, variations, type Variation } from "./explore-file.ts";
import { copyModel as copy, matrixPoints as points, setAt } from "./matrix.ts";

export interface ExpandOptions {
  /** The store record tasks assemble into (the one their runs use). */
  readonly storeDir: string;
  readonly cairnVersion: string;
  /** `campaign.plan-bytes`: the matrix points' specs together (each is kept in the plan); default CAMPAIGN_LIMITS. */
  readonly maxPlanBytes?: number;
  /** `campaign.tasks`: tasks in the plan, counted as they are made (a `campaign:` entry names as many runs as its plan); default CAMPAIGN_LIMITS. */
  readonly maxTasks?: number;
  /** How to reach a registry a `bundle: oci://…` entry names (its manifest and run.json are read when the plan is made). */
  readonly remote?: RemoteOptions;
  /** The environment a `lock:` entry's `oci://` registries read their credentials from (by their files' names); default none. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The time a `lock:` entry's lockfile is verified at (its max age, its keys' validity); default now. */
  readonly now?: Date;
}

/** A lock entry's task model: verified and exported as `cairn run LOCKFILE` does, its workload assembled, no VM. */
async function lockIdentity(entry: Extract<RunEntry, { kind: "lock" }>, ri: number, opts: ExpandOptions): Promise<TaskIdentityModel> {
  const at = `/runs/${ri}/lock`;
  try {
    const exp = await lockExportOptions(entry.path, entry.policy, {
      env: opts.env ?? {},
      ...(opts.remote !== undefined ? { remote: opts.remote } : {}),
      storeDir: opts.storeDir,
      now: opts.now ?? new Date(),
    });
    const { identities: w } = await assembleLockfileWorkload({ export: exp, storeDir: opts.storeDir, cairnVersion: opts.cairnVersion });
    // the same model as a spec's: the exported image's workload identities (its manifest carries the EnvironmentID), no run section
    return {
      mode: "record",
      workload: { workload: w.workload, source: w.source, fs: w.fs, launch: w.launch },
      run: null,
      host_inputs: { run_inputs: null, http_root: null },
      repeat: 0,
    };
  } catch (e) {
    if (!isCairnError(e) || e.code === "INTERNAL") throw e;
    if (TRANSPORT.has(e.code)) throw new CairnError(e.code, `runs entry ${ri}: ${entry.path}: ${e.message}`, { path: at, cause: e, hint: e.hint });
    throw new CairnError(
      "CAMPAIGN_INVALID",
      `runs entry ${ri}: ${entry.path} cannot be verified and exported under the entry's policy (pub, registry, base, cmd): ${e.code} ${e.path ? `at ${e.path} ` : ""}${e.message}`,
      { path: at, cause: e, hint: "the entry's pub, registry, base and cmd are what `cairn run LOCKFILE` takes as --pub, --registry, --base and --cmd" },
    );
  }
}

/** The bytes of a run's run.json and the manifest they hold, however the entry names the run; and the task's input. */
async function readRecord(entry: RunEntry, ref: string, opts: ExpandOptions): Promise<{ bytes: Buffer; manifest: RunManifest; input: TaskInput }> {
  if (entry.kind !== "bundle") {
    const manifest = readRunManifest(ref);
    return { manifest, bytes: readFileBounded(join(ref, "run.json"), 1024 * 1024, "run.manifest-bytes"), input: { run: ref } };
  }
  if (ref.startsWith(BUNDLE_SCHEME)) {
    if (opts.remote === undefined)
      throw new CairnError("USAGE", `${ref.slice(0, 200)} is a registry reference, and no registry options were given`, { path: ref.slice(0, 200) });
    const r = await readRegistryRunManifest(ref, opts.remote);
    return { bytes: r.bytes, manifest: r.manifest, input: { bundle: r.reference } };
  }
  const b = await openBundle(ref);
  try {
    const bytes = b.members.get("run/run.json");
    if (bytes === undefined) throw new CairnError("BUNDLE_INVALID", `${ref} holds no run/run.json`, { path: ref });
    return { bytes: Buffer.from(bytes), manifest: b.manifest, input: { bundle: ref } };
  } finally {
    b.dispose();
  }
}

/** Why a spec naming a lockfile is not an entry: its policy has no place beside `spec:`; a `lock:` entry carries it. */
const SPEC_LOCKFILE_REFUSED =
  "`cairn run` verifies the lockfile against a policy (--pub, --registry, --base) a spec entry has no place for; name the lockfile in a lock: entry with its pub, registry, base and cmd";

/** A registry that cannot be reached is not a wrong campaign: said with its own code, naming the entry. */
const TRANSPORT = new Set(["REMOTE_UNREACHABLE", "REMOTE_TIMEOUT", "REMOTE_AUTH", "REMOTE_INSECURE", "REMOTE_CA_INVALID"]);

function invalid(message: string, path: string, cause?: unknown): CairnError {
  const inner = isCairnError(cause) ? `: ${cause.code} ${cause.path ? `at ${cause.path} ` : ""}${cause.message}` : "";
  return new CairnError("CAMPAIGN_INVALID", `${message}${inner}`, {
    path,
    cause,
    hint: "every matrix point must give a spec that `cairn workload check` accepts",
  });
}

/**
 * A branch campaign's tasks for one parent (`runs[ri]`): one per variation
 * of the vary file and repeat, each named by the parent's run.json, the
 * checkpoint, the tail's bytes and the served directory's digest. The
 * parent, its checkpoint, the vary file and the served directory are all
 * read and checked here, before anything runs.
 */
function branchTasks(file: CampaignFile, entry: RunEntry, ri: number): PlannedTask[] {
  const b = file.branch!;
  const at = `/runs/${ri}/run`;
  let manifest: RunManifest;
  let record: Sha256Digest;
  try {
    manifest = readRunManifest(entry.path);
    record = sha256(readFileBounded(join(entry.path, "run.json"), 1024 * 1024, "run.manifest-bytes"));
  } catch (e) {
    if (!isCairnError(e) || e.code === "INTERNAL") throw e;
    throw invalid(`runs entry ${ri}: ${entry.path.slice(0, 300)} is not a recorded run`, at, e);
  }
  const taken = manifest.checkpoints?.taken.map((t) => t.name) ?? [];
  if (!taken.includes(b.at))
    throw new CairnError(
      "CAMPAIGN_INVALID",
      `runs entry ${ri}: run ${manifest.run_id} took no checkpoint "${b.at}"${taken.length > 0 ? `; it took ${taken.join(", ")}` : " (it was recorded without checkpoints)"}`,
      { path: "/branch/at", hint: "cairn runs show RUN lists a run's checkpoints" },
    );
  let vs: Variation[];
  let httpRoot: Sha256Digest | null = null;
  try {
    vs = variations(readVaryFile(b.vary));
    if (b.serve !== null) httpRoot = readHttpRoot(".", specHostScope(b.serve, b.serve)).digest;
  } catch (e) {
    if (!isCairnError(e) || e.code === "INTERNAL") throw e;
    throw invalid(`the branch entry's files cannot be read`, b.serve !== null && e.path === "/run/network/http/root" ? "/branch/serve" : "/branch/vary", e);
  }
  // the directory served again is the parent's own (recordBranch checks it again when the task runs): said here, once, not by every task
  const recordedRoot = manifest.vm.network?.responders.find((r) => r.kind === "http")?.root ?? null;
  if (recordedRoot !== httpRoot)
    throw new CairnError(
      "CAMPAIGN_INVALID",
      recordedRoot === null
        ? `runs entry ${ri}: run ${manifest.run_id} served no directory over http; branch.serve names one`
        : httpRoot === null
          ? `runs entry ${ri}: run ${manifest.run_id} served a directory over http (run.network.http.root); its branches need it as branch.serve`
          : `runs entry ${ri}: ${b.serve} is not the directory run ${manifest.run_id} served (its tree digest differs from the recorded one)`,
      { path: "/branch/serve", hint: "branch.serve is the directory the parent's spec names as run.network.http.root" },
    );
  const out: PlannedTask[] = [];
  for (const v of vs)
    for (let r = 0; r < file.repeat; r++) {
      const model: TaskIdentityModel = { mode: "branch", record, checkpoint: b.at, tail: sha256(v.tail), http_root: httpRoot, repeat: r };
      out.push({
        id: taskName(model),
        identity: model,
        input: { parent: entry.path, at: b.at, tail: JSON.parse(v.tail.toString("utf8")) as JsonObject, served: b.serve },
        origin: { run: ri, point: v.set.map((x) => x.value), repeat: r },
      });
    }
  return out;
}

/** Expands a checked campaign file into tasks. */
export async function expandCampaign(file: CampaignFile, opts: ExpandOptions): Promise<Expansion> {
  const tasks: PlannedTask[] = [];
  const collapsed: Collapsed[] = [];
  const byId = new Map<string, PlannedTask>();
  const maxTasks = opts.maxTasks ?? CAMPAIGN_LIMITS["campaign.tasks"];
  const add = (t: PlannedTask) => {
    // the file's counts bound a record campaign before expansion; a replay's `campaign:` entries are counted here
    checkLimit("campaign.tasks", tasks.length + collapsed.length + 1, maxTasks, "/runs");
    const first = byId.get(t.id);
    if (first !== undefined) collapsed.push({ ...t.origin, same_as: t.id });
    else {
      byId.set(t.id, t);
      tasks.push(t);
    }
  };
  const pts = points(file.matrix);
  // each point's spec is built and kept in the plan: a 1 MiB file of 10,000 points must not make gigabytes
  const maxPlanBytes = opts.maxPlanBytes ?? CAMPAIGN_LIMITS["campaign.plan-bytes"];
  let planBytes = 0;
  // replay, verify: every entry's runs first (a `campaign:` entry names as many as its plan), counted before one is read
  const entryRuns =
    file.mode === "record" || file.mode === "branch"
      ? []
      : file.runs.map((entry, ri) => (entry.kind === "campaign" ? readPublishedRuns(entry.path, `/runs/${ri}/campaign`) : [entry.path]));
  checkLimit("campaign.tasks", entryRuns.reduce((n, r) => n + r.length, 0) * file.repeat, maxTasks, "/runs");
  const scratch = mkdtempSync(join(tmpdir(), "cairn-plan-"));
  try {
    const assembled = new Map<string, WorkloadIdentities>();
    for (const [ri, entry] of file.runs.entries()) {
      const at = `/runs/${ri}`;
      if (entry.kind === "lock") {
        const identity = await lockIdentity(entry, ri, opts);
        for (let r = 0; r < file.repeat; r++) {
          const model = { ...identity, repeat: r } as TaskIdentityModel;
          add({ id: taskName(model), identity: model, input: { lock: entry.path, policy: entry.policy }, origin: { run: ri, point: null, repeat: r } });
        }
      } else if (file.mode === "branch") {
        for (const t of branchTasks(file, entry, ri)) add(t);
      } else if (file.mode === "record") {
        const bytes = readFileBounded(entry.path, SPEC_MAX_BYTES, "spec.max_bytes", { missing: "CAMPAIGN_INVALID", notRegular: "CAMPAIGN_INVALID" });
        const original = parseYamlBytes(bytes, entry.path);
        if (!isJsonObject(original)) throw invalid(`${entry.path} is not a workload spec`, `${at}/spec`);
        // a spec naming a lockfile runs only with the verification policy `cairn run` takes on its command line, which a spec entry has no place for
        if (isJsonObject(original.source) && Object.hasOwn(original.source, "lockfile"))
          throw new CairnError("CAMPAIGN_INVALID", `runs entry ${ri}: ${entry.path} names a lockfile (source.lockfile): ${SPEC_LOCKFILE_REFUSED}`, {
            path: `${at}/spec`,
            hint: "see docs/fleet.md: lockfiles and campaigns",
          });
        for (const point of pts) {
          const variant = copy(original) as JsonObject;
          file.matrix.forEach((axis, i) => {
            const why = setAt(variant, axis.set, point[i]!);
            if (why !== undefined) throw invalid(`runs entry ${ri}, matrix axis ${i} (${axis.set}): ${why}`, `/matrix/${i}/set`);
          });
          const described = file.matrix.length === 0 ? "" : ` at matrix point ${JSON.stringify(point)}`;
          const variantBytes = Buffer.from(`${JSON.stringify(variant)}\n`, "utf8");
          planBytes += variantBytes.length;
          checkLimit("campaign.plan-bytes", planBytes, maxPlanBytes, "/matrix", "bytes");
          let identity: TaskIdentityModel | undefined;
          try {
            if (variantBytes.length > SPEC_MAX_BYTES)
              throw new CairnError("LIMIT_EXCEEDED", `limit spec.max_bytes exceeded (${variantBytes.length} > ${SPEC_MAX_BYTES})`);
            const spec = parseWorkloadSpec(variantBytes, entry.path);
            const scenario = parseScenario(spec.run);
            const scope = { base: dirname(entry.path) };
            const runInputs: Sha256Digest | null = scenario.inputs !== undefined ? readRunInputs(scenario.inputs, scope).digest : null;
            const http = scenario.network?.http;
            const httpRoot: Sha256Digest | null = http !== undefined ? readHttpRoot(http.unsafeRoot, runHostScope(scope)).digest : null;
            // the workload identity does not cover the run section: one assembly per distinct rest of the spec
            const rest = copy(variant) as JsonObject;
            delete rest.run;
            const key = JSON.stringify(rest);
            let w = assembled.get(key);
            if (w === undefined) {
              const r = await assembleWorkload({
                specPath: entry.path,
                specBytes: variantBytes,
                storeDir: opts.storeDir,
                lockOut: join(scratch, `${assembled.size}.lock.json`),
                cairnVersion: opts.cairnVersion,
              });
              w = r.identities;
              assembled.set(key, w);
            }
            identity = {
              mode: "record",
              workload: { workload: w.workload, source: w.source, fs: w.fs, launch: w.launch },
              run: (variant.run ?? null) as JsonModel,
              host_inputs: { run_inputs: runInputs, http_root: httpRoot },
              repeat: 0,
            };
          } catch (e) {
            if (!isCairnError(e) || e.code === "INTERNAL") throw e;
            throw invalid(`runs entry ${ri} (${entry.path})${described} does not give a spec cairn can run`, `${at}/spec`, e);
          }
          for (let r = 0; r < file.repeat; r++) {
            const model = { ...identity, repeat: r } as TaskIdentityModel;
            add({
              id: taskName(model),
              identity: model,
              input: { spec: entry.path, variant },
              origin: { run: ri, point: file.matrix.length === 0 ? null : point, repeat: r },
            });
          }
        }
      } else {
        const runDirs = entryRuns[ri]!;
        for (const runRef of runDirs) {
          let identity: TaskIdentityModel;
          let input: TaskInput;
          try {
            const { bytes, manifest: m, input: i } = await readRecord(entry, runRef, opts);
            identity = { mode: file.mode as "replay" | "verify", record: sha256(bytes), workload: m.workload.workload, vm: m.vm_digest, repeat: 0 };
            input = i;
          } catch (e) {
            if (!isCairnError(e) || e.code === "INTERNAL") throw e;
            const what = entry.kind === "bundle" ? "a replay bundle cairn can read" : "a recorded run";
            if (TRANSPORT.has(e.code))
              throw new CairnError(e.code, `runs entry ${ri}: ${runRef.slice(0, 300)}: ${e.message}`, { path: `${at}/${entry.kind}`, cause: e, hint: e.hint });
            throw invalid(`runs entry ${ri}: ${runRef.slice(0, 300)} is not ${what}`, `${at}/${entry.kind}`, e);
          }
          for (let r = 0; r < file.repeat; r++) {
            const model = { ...identity, repeat: r } as TaskIdentityModel;
            add({ id: taskName(model), identity: model, input, origin: { run: ri, point: null, repeat: r } });
          }
        }
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { tasks, collapsed };
}
