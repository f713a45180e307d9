/**
 * The campaign file (`schema: cairn.campaign/1`, docs/fleet.md): what to
 * run, over which scenario parameters, and how. Hostile like every input:
 * read bounded, parsed by core's strict YAML reader (duplicate keys,
 * aliases, custom tags, null entries refused), unknown fields refused, every
 * bound named (`CAMPAIGN_LIMITS`), and the size of the expansion checked from
 * the counts before a single point is built, so a small file cannot make
 * cairn build millions of tasks.
 *
 *   schema: cairn.campaign/1
 *   mode: record | replay | verify
 *   runs:                         # record: spec or lock; replay/verify: run, campaign or bundle
 *     - spec: ./http.yaml
 *     - {lock: ./env.lock, pub: ./lock.pub, registry: ./registry, base: rootfs:./rootfs, cmd: [/bin/prog]}
 *   matrix:                       # record only, specs only: the cross product of every axis
 *     - set: /run/steps/1/after/contains
 *       values: ["fetch 1: 200", "fetch 1:"]
 *   repeat: 1
 *   resources: {cpus: 2, memory-mib: 2048, time-minutes: 30}
 *   retries: 1
 */
import { isAbsolute, resolve, dirname } from "node:path";
import { CAMPAIGN_LIMITS, Checker, checkLimit, childPath, isJsonObject, readFileBounded, readYamlText, decodeUtf8 } from "../core/index.ts";
import { BUNDLE_SCHEME } from "../vm/index.ts";
import type { TaskResources } from "./executor.ts";
import { LOCK_ENTRY_FIELDS, readLockPolicy, type LockPolicy } from "./lock-entry.ts";
import { readMatrixAxes, type MatrixAxis } from "./matrix.ts";

export type { MatrixAxis } from "./matrix.ts";

export const CAMPAIGN_SCHEMA = "cairn.campaign/1";

export type CampaignMode = "record" | "replay" | "verify" | "branch";

/** One entry of `runs:`, paths made absolute against the campaign file's directory. */
export type RunEntry =
  | { readonly kind: "spec"; readonly path: string }
  | { readonly kind: "run"; readonly path: string }
  | { readonly kind: "campaign"; readonly path: string }
  /** A bundle file (path made absolute) or `oci://HOST/REPO@sha256:…` (kept as written): pulled where its task runs. */
  | { readonly kind: "bundle"; readonly path: string }
  /** An environment lockfile and the policy it is verified and exported by (lock-entry.ts): recorded as `cairn run LOCKFILE` does. */
  | { readonly kind: "lock"; readonly path: string; readonly policy: LockPolicy };

/**
 * A branch campaign's what (`mode: branch`, issue 35 item 5 on the fleet's
 * executors): every `runs:` entry is a parent run directory, and each
 * variation of the vary file (explore-file.ts) is one task that records a
 * branch from checkpoint `at`, as `cairn explore` records each.
 */
export interface BranchEntry {
  readonly at: string;
  /** The vary file, absolute. */
  readonly vary: string;
  /** The directory the parents' http responder served (`--serve`), absolute; null when they had none. */
  readonly serve: string | null;
}

export interface CampaignFile {
  readonly path: string;
  readonly bytes: Buffer;
  readonly mode: CampaignMode;
  readonly runs: readonly RunEntry[];
  readonly matrix: readonly MatrixAxis[];
  readonly repeat: number;
  readonly resources: TaskResources;
  readonly retries: number;
  /** `mode: branch` only. */
  readonly branch?: BranchEntry;
}

export const DEFAULT_RESOURCES: TaskResources = { cpus: 2, memoryMiB: 2048, timeMinutes: 30 };
export const DEFAULT_RETRIES = 1;

/**
 * Where a matrix may write: the run section (steps, their conditions and
 * data, inputs, expectations) or a binary's or image's argv. Anything else
 * (the source's path, the policy) changes what is read from the host and is
 * a different spec, not a scenario parameter.
 */
const SETTABLE = /^\/run(\/|$)|^\/source\/(binary|oci)\/args(\/|$)/;

/** Why a matrix is refused on a campaign naming a lock: nothing in a lock run is a scenario parameter. */
export const LOCK_MATRIX_REFUSED =
  "a matrix varies a spec's run section or argv, and a lock entry has neither: `cairn run LOCKFILE` records the exported image with no run section, and its command is part of the policy; give a spec for a matrix";

const TOP = ["schema", "mode", "runs", "matrix", "repeat", "resources", "retries", "branch"];

function hintFor(): string {
  return "see docs/fleet.md for the campaign file's fields";
}

/** Reads and checks a campaign file; every problem is listed at once, each with its pointer. */
export function readCampaignFile(unsafePath: string): CampaignFile {
  const path = resolve(unsafePath);
  const bytes = readFileBounded(path, CAMPAIGN_LIMITS["campaign.file-bytes"], "campaign.file-bytes", {
    missing: "USAGE",
    notRegular: "CAMPAIGN_INVALID",
    notRegularHint: "give the campaign file itself, a regular file",
  });
  return parseCampaign(bytes, path);
}

export function parseCampaign(bytes: Buffer, path: string): CampaignFile {
  const text = decodeUtf8(bytes, path);
  const { model, issues } = readYamlText(text, path);
  const c = new Checker("CAMPAIGN_INVALID");
  c.adopt(issues);
  const top = c.object(model, "", TOP) ?? Object.create(null);
  const schema = c.requiredString(top, "schema", "");
  if (schema !== undefined && schema !== CAMPAIGN_SCHEMA) c.add("/schema", `expected ${CAMPAIGN_SCHEMA}`, "CAMPAIGN_INVALID");
  const mode = c.requiredString(top, "mode", "");
  if (mode !== undefined && mode !== "record" && mode !== "replay" && mode !== "verify" && mode !== "branch")
    c.add("/mode", "expected record, replay, verify or branch");
  const base = dirname(path);
  const runs: RunEntry[] = [];
  const runList = c.array(c.required(top, "runs", ""), "/runs");
  if (runList !== undefined) {
    checkLimit("campaign.runs", runList.length, CAMPAIGN_LIMITS["campaign.runs"], "/runs");
    if (runList.length === 0) c.add("/runs", "must name at least one run");
    runList.forEach((item, i) => {
      const at = childPath("/runs", i);
      const isLock = isJsonObject(item) && Object.hasOwn(item, "lock");
      const o = c.object(item, at, isLock ? [...LOCK_ENTRY_FIELDS] : ["spec", "run", "campaign", "bundle"]);
      if (o === undefined) return;
      if (isLock) {
        const p = c.string(o.lock, childPath(at, "lock"), { nonEmpty: true });
        if (p?.includes("\0")) c.add(childPath(at, "lock"), "must not hold a NUL");
        if (mode !== undefined && mode !== "record") c.add(childPath(at, "lock"), `a ${mode} campaign names a run, campaign or bundle`);
        const policy = readLockPolicy(c, o, at, base);
        if (p !== undefined && !p.includes("\0") && policy !== undefined) runs.push({ kind: "lock", path: isAbsolute(p) ? p : resolve(base, p), policy });
        return;
      }
      const keys = Object.keys(o);
      if (keys.length !== 1) {
        c.add(at, "give exactly one of spec, run, campaign, bundle, lock");
        return;
      }
      const kind = keys[0] as Exclude<RunEntry["kind"], "lock">;
      const p = c.string(o[kind], childPath(at, kind), { nonEmpty: true });
      if (p === undefined) return;
      if (p.includes("\0")) {
        c.add(childPath(at, kind), "must not hold a NUL");
        return;
      }
      const wanted = mode === "record" ? "spec" : mode === "branch" ? "run (a parent run directory)" : "run, campaign or bundle";
      if (mode === "branch" ? kind !== "run" : (mode === "record") !== (kind === "spec") && mode !== undefined)
        c.add(childPath(at, kind), `a ${mode} campaign names a ${wanted}`);
      // a registry reference is kept as written (its digest is checked when the plan is made); a path is made absolute
      const registry = kind === "bundle" && p.startsWith(BUNDLE_SCHEME);
      runs.push({ kind, path: registry || isAbsolute(p) ? p : resolve(base, p) });
    });
  }
  const matrix: MatrixAxis[] = [];
  if (Object.hasOwn(top, "matrix")) {
    const axes = c.array(top.matrix, "/matrix");
    if (axes !== undefined) {
      checkLimit("campaign.matrix-axes", axes.length, CAMPAIGN_LIMITS["campaign.matrix-axes"], "/matrix");
      if (mode !== undefined && mode !== "record" && axes.length > 0)
        c.add("/matrix", "a matrix applies to the specs a record campaign runs; a replay or verify runs what was recorded");
      else if (axes.length > 0 && runs.some((r) => r.kind === "lock")) c.add("/matrix", LOCK_MATRIX_REFUSED);
      matrix.push(
        ...readMatrixAxes(c, axes, "/matrix", {
          settable: SETTABLE,
          settableMessage: "must be a JSON pointer under /run or /source/binary|oci/args",
          valuesLimit: ["campaign.matrix-values", CAMPAIGN_LIMITS["campaign.matrix-values"]],
        }),
      );
    }
  }
  const count = (key: string, limit: keyof typeof CAMPAIGN_LIMITS, min: number, dflt: number): number => {
    if (!Object.hasOwn(top, key)) return dflt;
    const v = c.integer(top[key], `/${key}`, { min });
    if (v !== undefined) checkLimit(limit, v, CAMPAIGN_LIMITS[limit], `/${key}`);
    return v ?? dflt;
  };
  const repeat = count("repeat", "campaign.repeat", 1, 1);
  const retries = count("retries", "campaign.retries", 0, DEFAULT_RETRIES);
  let resources = DEFAULT_RESOURCES;
  if (Object.hasOwn(top, "resources")) {
    const r = c.object(top.resources, "/resources", ["cpus", "memory-mib", "time-minutes"]) ?? Object.create(null);
    const n = (k: string, d: number, max: number) => (Object.hasOwn(r, k) ? (c.integer(r[k], `/resources/${k}`, { min: 1, max }) ?? d) : d);
    resources = {
      cpus: n("cpus", DEFAULT_RESOURCES.cpus, 1024),
      memoryMiB: n("memory-mib", DEFAULT_RESOURCES.memoryMiB, 16 * 1024 * 1024),
      timeMinutes: n("time-minutes", DEFAULT_RESOURCES.timeMinutes, 366 * 24 * 60),
    };
  }
  let branch: BranchEntry | undefined;
  if (mode === "branch" || Object.hasOwn(top, "branch")) {
    const b = c.object(c.required(top, "branch", ""), "/branch", ["at", "vary", "serve"]);
    if (mode !== "branch" && Object.hasOwn(top, "branch")) c.add("/branch", "only a branch campaign (mode: branch) names a checkpoint and a vary file");
    const at = b !== undefined ? c.requiredString(b, "at", "/branch", { nonEmpty: true }) : undefined;
    const vary = b !== undefined ? c.requiredString(b, "vary", "/branch", { nonEmpty: true }) : undefined;
    const serve = b !== undefined && Object.hasOwn(b, "serve") ? c.string(b.serve, "/branch/serve", { nonEmpty: true }) : undefined;
    for (const [k, v] of [
      ["vary", vary],
      ["serve", serve],
    ] as const)
      if (v?.includes("\0")) c.add(`/branch/${k}`, "must not hold a NUL");
    const abs = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
    if (at !== undefined && vary !== undefined) branch = { at, vary: abs(vary), serve: serve !== undefined ? abs(serve) : null };
  }
  c.done(`invalid campaign file ${path}`, hintFor());
  // the expansion's size from the counts alone, before a point is built
  const points = matrix.reduce((n, a) => n * a.values.length, 1);
  checkLimit("campaign.matrix-points", points, CAMPAIGN_LIMITS["campaign.matrix-points"], "/matrix");
  checkLimit("campaign.tasks", runs.length * points * repeat, CAMPAIGN_LIMITS["campaign.tasks"], "/runs");
  return { path, bytes, mode: mode as CampaignMode, runs, matrix, repeat, resources, retries, ...(branch !== undefined ? { branch } : {}) };
}
