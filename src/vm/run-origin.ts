/**
 * `origin.json` (`cairn.run-origin/1`, 0600): where a run came from on this
 * host, so `cairn runs list` can say which run is which: the file given to
 * `cairn run` (a workload spec, a workload lock or an environment lockfile,
 * as an absolute path) or the bundle a run was imported from, and the
 * command the guest ran (the launch argv; never the environment).
 *
 * Private and local: it holds host paths and the command line, so it is
 * never in run.json, a receipt or a bundle. It is provenance, not identity:
 * no digest covers it, so `runs list` shows it as what this host wrote, and
 * the run's own checks (run-dir-check.ts) never read it.
 */
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { Checker, parseJsonBytes, readFileBounded, writeFileAtomic } from "../core/index.ts";
import { shellQuote } from "./rundir.ts";

export const RUN_ORIGIN_FILE = "origin.json";
export const RUN_ORIGIN_SCHEMA = "cairn.run-origin/1";
/** run.origin-bytes: a path and a command line; anything larger is not an origin file. */
const RUN_ORIGIN_MAX_BYTES = 256 * 1024;

export interface RunOrigin {
  /** How the run came here: recorded by `cairn run`, imported from a bundle file, fetched from a registry (`cairn replay oci://…`), or branched (`cairn branch`). */
  readonly via: "run" | "bundle" | "registry" | "branch";
  /** The file given to `cairn run`, or the bundle file, as an absolute path; the `oci://HOST/REPO@sha256:…` reference of a fetched one; a branch's `PARENT_DIR@CHECKPOINT`. */
  readonly input: string;
  /** The launch argv the guest ran; null when not known here (an imported run). */
  readonly command: readonly string[] | null;
}

export function writeRunOrigin(runDir: string, origin: RunOrigin): void {
  const model = { schema: RUN_ORIGIN_SCHEMA, via: origin.via, input: origin.input, command: origin.command };
  writeFileAtomic(join(runDir, RUN_ORIGIN_FILE), `${JSON.stringify(model, null, 2)}\n`, { mode: 0o600 });
}

/** The run's origin, or null when it has none (a run recorded before origins were written); RUN_INVALID when malformed. */
export function readRunOrigin(runDir: string): RunOrigin | null {
  const file = join(runDir, RUN_ORIGIN_FILE);
  if (!existsSync(file)) return null;
  const model = parseJsonBytes(readFileBounded(file, RUN_ORIGIN_MAX_BYTES, "run.origin-bytes"), { source: file });
  const c = new Checker("RUN_INVALID");
  const o = c.object(model, "", ["schema", "via", "input", "command"]) ?? {};
  if (o.schema !== RUN_ORIGIN_SCHEMA) c.add("/schema", `must be "${RUN_ORIGIN_SCHEMA}"`);
  const via = c.string(c.required(o, "via", ""), "/via", { pattern: /^(run|bundle|registry|branch)$/ }) ?? "run";
  const input = c.string(c.required(o, "input", ""), "/input", { nonEmpty: true }) ?? "";
  const command = c.required(o, "command", "") === null ? null : (c.stringArray(o.command, "/command") ?? null);
  c.done(`invalid ${file}`, "the run directory was edited");
  return { via: via as RunOrigin["via"], input, command };
}

/**
 * Where a run came from, in one column: the file given (its name) and the
 * command, "bundle NAME" for an import, "branch PARENT@CHECKPOINT" for a
 * branch (the parent's directory name and the checkpoint), or "origin unknown".
 */
export function describeOrigin(o: RunOrigin | null): string {
  if (o === null) return "origin unknown";
  const what =
    o.via === "bundle"
      ? `bundle ${basename(o.input)}`
      : o.via === "registry"
        ? `registry ${o.input}`
        : o.via === "branch"
          ? `branch ${basename(o.input)}`
          : basename(o.input);
  return o.command === null ? what : `${what}: ${o.command.map(shellQuote).join(" ")}`;
}
