/**
 * Mounts in both devcontainer forms — the Docker `--mount` string
 * (`source=…,target=…,type=…[,readonly]`) and the schema's object form
 * (`{type, source, target}`) — normalized to one tuple
 * (source, target, kind, read_only).
 *
 * Refused, each naming the attack or ambiguity it prevents:
 *   - keys that widen the sandbox or reach outside it: `volume-opt`
 *     (can bind arbitrary host paths through the local driver),
 *     `volume-driver`, `bind-propagation` (lets host mounts appear inside),
 *     and every key not listed below;
 *   - a bind source of `/`, of a container-engine socket (`*.sock`, which
 *     hands the container control of the host), or anything under `/run`,
 *     `/var/run`, `/proc`, `/sys`, `/dev` or an engine's state directory
 *     (host kernel and engine interfaces), matched by prefix;
 *   - a relative bind source (it would depend on the current directory);
 *   - quotes and repeated keys in the string form: Docker parses the string
 *     as CSV and lets the last repeated key win, so another reader could see
 *     a different mount than the one checked here.
 * `consistency` is accepted and dropped: it is a macOS performance hint with
 * no effect on Linux (listed in NOT_COVERED).
 */
import { posix } from "node:path";
import type { JsonModel } from "../core/index.ts";
import { isJsonObject } from "../core/index.ts";

export type MountKind = "bind" | "volume" | "tmpfs";

/** The normalized mount tuple; `source` is null for tmpfs and anonymous volumes. */
export interface NormalizedMount {
  source: string | null;
  target: string;
  kind: MountKind;
  read_only: boolean;
}

export type MountResult = { ok: true; mount: NormalizedMount } | { ok: false; problems: { path: string; why: string }[] };

const SOURCE_KEYS = new Set(["source", "src"]);
const TARGET_KEYS = new Set(["target", "destination", "dst"]);
const READONLY_KEYS = new Set(["readonly", "ro"]);
const WIDENING_KEYS = new Set(["volume-opt", "volume-driver", "bind-propagation"]);
const CONSISTENCY = new Set(["consistent", "cached", "delegated", "default"]);
const VOLUME_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/;
/**
 * Bind sources refused by prefix: the path itself and anything under it.
 * An exact-path list let `/proc/1/root` (the host's root through PID 1),
 * `/run/user/1000`, `/var/run/docker` and `/dev/sda` through while `/run`
 * itself was refused. The engines' state directories hold their sockets and
 * every container's filesystem.
 */
export const FORBIDDEN_SOURCE_PREFIXES: readonly string[] = [
  "/proc",
  "/sys",
  "/dev",
  "/run",
  "/var/run",
  "/var/lib/docker",
  "/var/lib/containerd",
  "/var/lib/containers",
];

function forbiddenSource(source: string): boolean {
  return source === "/" || FORBIDDEN_SOURCE_PREFIXES.some((p) => source === p || source.startsWith(`${p}/`));
}

/** Absolute POSIX path without `.`/`..` segments or a trailing slash. */
export function normalizeMountPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith("/") ? n.slice(0, -1) : n;
}

interface RawMount {
  type: string | undefined;
  source: string | undefined;
  target: string | undefined;
  readOnly: boolean;
}

function parseString(unsafe: string, path: string, problems: { path: string; why: string }[]): RawMount {
  const raw: RawMount = { type: undefined, source: undefined, target: undefined, readOnly: false };
  if (unsafe.includes('"') || unsafe.includes("'")) {
    problems.push({ path, why: "quotes are refused in a mount string (Docker parses it as CSV; another reader may split it differently)" });
    return raw;
  }
  const seen = new Set<string>();
  for (const part of unsafe.split(",")) {
    const eq = part.indexOf("=");
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? undefined : part.slice(eq + 1);
    const canonicalKey = SOURCE_KEYS.has(key) ? "source" : TARGET_KEYS.has(key) ? "target" : READONLY_KEYS.has(key) ? "readonly" : key;
    if (seen.has(canonicalKey)) {
      problems.push({ path, why: `mount key "${canonicalKey}" is given twice (Docker lets the last one win)` });
      continue;
    }
    seen.add(canonicalKey);
    if (canonicalKey === "type") raw.type = value;
    else if (canonicalKey === "source") raw.source = value;
    else if (canonicalKey === "target") raw.target = value;
    else if (canonicalKey === "readonly") {
      if (value === undefined || value === "true" || value === "1") raw.readOnly = true;
      else if (value === "false" || value === "0") raw.readOnly = false;
      else problems.push({ path, why: "readonly must be true, false, 1 or 0" });
    } else if (canonicalKey === "consistency") {
      if (value === undefined || !CONSISTENCY.has(value)) problems.push({ path, why: "consistency must be consistent, cached, delegated or default" });
    } else if (WIDENING_KEYS.has(canonicalKey)) {
      problems.push({ path, why: `mount key "${canonicalKey}" widens the sandbox` });
    } else {
      problems.push({ path, why: `unknown mount key "${canonicalKey.slice(0, 40)}"` });
    }
  }
  return raw;
}

function parseObject(obj: { [k: string]: JsonModel }, path: string, problems: { path: string; why: string }[]): RawMount {
  const raw: RawMount = { type: undefined, source: undefined, target: undefined, readOnly: false };
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (k !== "type" && k !== "source" && k !== "target") {
      problems.push({ path: `${path}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`, why: `unknown mount field "${k.slice(0, 40)}"` });
      continue;
    }
    if (typeof v !== "string") {
      problems.push({ path: `${path}/${k}`, why: "must be a string" });
      continue;
    }
    raw[k] = v;
  }
  return raw;
}

/** Normalizes one mount in either form; `path` is its JSON pointer. */
export function normalizeMount(unsafe: JsonModel, path: string): MountResult {
  const problems: { path: string; why: string }[] = [];
  let raw: RawMount;
  if (typeof unsafe === "string") raw = parseString(unsafe, path, problems);
  else if (isJsonObject(unsafe)) raw = parseObject(unsafe, path, problems);
  else return { ok: false, problems: [{ path, why: "a mount is a string or an object" }] };

  const kind = raw.type ?? (typeof unsafe === "string" ? "volume" : undefined);
  if (kind !== "bind" && kind !== "volume" && kind !== "tmpfs") {
    problems.push({ path, why: kind === undefined ? "mount type is missing" : "mount type must be bind, volume or tmpfs" });
  } else if (kind === "tmpfs" && typeof unsafe !== "string") {
    problems.push({ path, why: "the object form allows only bind and volume mounts" });
  }
  if (raw.target === undefined || !raw.target.startsWith("/")) {
    problems.push({ path, why: "mount target must be an absolute path" });
  } else if (normalizeMountPath(raw.target) === "/") {
    problems.push({ path, why: "a mount over / replaces the whole environment" });
  }
  for (const [field, value] of [
    ["source", raw.source],
    ["target", raw.target],
  ] as const) {
    // A comma, quote or control character has no single meaning in the string form.
    if (value !== undefined && /[,"'\u0000-\u001f\u007f]/.test(value)) problems.push({ path, why: `mount ${field} holds a comma, quote or control character` });
  }
  let source: string | null = raw.source === undefined || raw.source === "" ? null : raw.source;
  if (kind === "bind") {
    if (source === null || !source.startsWith("/")) {
      problems.push({ path, why: "a bind source must be an absolute path" });
    } else {
      source = normalizeMountPath(source);
      if (forbiddenSource(source))
        problems.push({
          path,
          why: "bind source is the host root or lies under /proc, /sys, /dev, /run, /var/run or a container engine's directory (host kernel and engine interfaces)",
        });
      else if (source.endsWith(".sock"))
        problems.push({ path, why: "bind source is a socket (such as the Docker socket), which hands over control of the host" });
    }
  } else if (kind === "volume" && source !== null && !VOLUME_NAME.test(source)) {
    // Docker's own rule; a path here would be read as a bind by some engines.
    problems.push({ path, why: "a volume source must be a volume name ([a-zA-Z0-9][a-zA-Z0-9_.-]+)" });
  } else if (kind === "tmpfs" && source !== null) {
    problems.push({ path, why: "a tmpfs mount has no source" });
  }
  if (problems.length > 0 || raw.target === undefined || kind === undefined) return { ok: false, problems };
  return { ok: true, mount: { source, target: normalizeMountPath(raw.target), kind: kind as MountKind, read_only: raw.readOnly } };
}

/** The string form of a normalized mount; normalizing it again gives the same tuple. */
export function mountToString(m: NormalizedMount): string {
  const parts = [`type=${m.kind}`];
  if (m.source !== null) parts.push(`source=${m.source}`);
  parts.push(`target=${m.target}`);
  if (m.read_only) parts.push("readonly");
  return parts.join(",");
}
