/**
 * cairn's rules on schema-valid OCI documents: descriptors, the platform, the
 * config's rootfs and launch fields. Each function takes a document that
 * already passed the image-spec schema and throws a typed refusal naming the
 * JSON pointer of the offending field. Nothing here does I/O.
 */
import { CairnError, childPath, isJsonObject, parseSha256, type JsonModel, type JsonObject, type Sha256Digest } from "../core/index.ts";

/** A checked content descriptor: sha256 only, no `urls`, no embedded `data`. */
export interface Descriptor {
  readonly mediaType: string;
  readonly digest: Sha256Digest;
  readonly size: number;
}

function str(obj: JsonObject, key: string): string | undefined {
  const v = obj[key];
  return typeof v === "string" ? v : undefined;
}

/**
 * Checks a descriptor. `urls` would point cairn at content outside the layout
 * and `data` would let a descriptor carry bytes that bypass the blob store;
 * both are refused on every descriptor cairn follows.
 */
export function checkDescriptor(unsafe: JsonModel | undefined, path: string): Descriptor {
  if (!isJsonObject(unsafe)) throw new CairnError("OCI_INVALID", "descriptor is not an object", { path });
  if (unsafe.urls !== undefined) {
    throw new CairnError("OCI_INVALID", "descriptor has urls; cairn reads content only from the layout", {
      path: childPath(path, "urls"),
      hint: "remove foreign-layer urls; every blob must be in the layout",
    });
  }
  if (unsafe.data !== undefined) {
    throw new CairnError("OCI_INVALID", "descriptor embeds data; cairn reads content only from blobs", {
      path: childPath(path, "data"),
      hint: "remove the embedded data field",
    });
  }
  const mediaType = str(unsafe, "mediaType");
  const size = unsafe.size;
  if (mediaType === undefined || typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
    throw new CairnError("OCI_INVALID", "descriptor needs mediaType and a non-negative safe integer size", { path });
  }
  const digest = parseSha256(unsafe.digest, childPath(path, "digest"));
  return { mediaType, digest, size };
}

const PLATFORM_EXTRAS = ["variant", "os.version", "os.features"] as const;

/**
 * The single platform rule: cairn runs linux/amd64 guests with no variant,
 * os.version or os.features (each would name a narrower platform that cairn
 * cannot promise). Used for both the index descriptor's `platform` and the
 * config's top-level fields.
 */
export function checkPlatform(unsafe: JsonObject, path: string): void {
  if (unsafe.os !== "linux" || unsafe.architecture !== "amd64") {
    throw new CairnError("OCI_PLATFORM", `platform is ${String(unsafe.os)}/${String(unsafe.architecture)}, cairn needs linux/amd64`, {
      path,
      hint: "select the linux/amd64 image manifest",
    });
  }
  for (const k of PLATFORM_EXTRAS) {
    if (unsafe[k] !== undefined) {
      throw new CairnError("OCI_PLATFORM", `platform declares ${k}; cairn accepts plain linux/amd64 only`, { path: childPath(path, k) });
    }
  }
}

/** The launch-relevant fields of an OCI config, exactly as the image gives them (validated by the launch identity). */
export interface OciLaunchConfig {
  /** `config.Entrypoint`; null or absent is `undefined`. */
  readonly entrypoint: readonly string[] | undefined;
  /** `config.Cmd`; null or absent is `undefined`. */
  readonly cmd: readonly string[] | undefined;
  /** `config.Env` ("NAME=value" strings); absent is `undefined`. Values are secrets for messages. */
  readonly env: readonly string[] | undefined;
  /** `config.WorkingDir`; absent is `undefined`. */
  readonly workingDir: string | undefined;
  /** `config.User`; absent is `undefined`. */
  readonly user: string | undefined;
  /** The paths of `config.Volumes` (its keys), absent or `{}` is `undefined`; a workload refuses them (launch.ts). */
  readonly volumes?: readonly string[];
  /** `config.StopSignal`; absent or "" is `undefined`; a workload refuses it. */
  readonly stopSignal?: string;
  /** `config.ArgsEscaped` when it is `true` (Windows' one-string command line); a workload refuses it. */
  readonly argsEscaped?: true;
}

function stringList(v: JsonModel | undefined, path: string): readonly string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((x): x is string => typeof x === "string")) {
    throw new CairnError("OCI_INVALID", "expected a list of strings", { path });
  }
  return Object.freeze([...v]);
}

function optString(v: JsonModel | undefined, path: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new CairnError("OCI_INVALID", "expected a string", { path });
  return v;
}

export interface CheckedConfig {
  readonly diffIds: readonly Sha256Digest[];
  readonly launch: OciLaunchConfig;
}

/** Checks a schema-valid config: platform, `rootfs.type = "layers"`, one sha256 DiffID per layer; extracts launch fields. */
export function checkConfig(config: JsonObject, layerCount: number): CheckedConfig {
  checkPlatform(config, "");
  const rootfs = config.rootfs;
  if (!isJsonObject(rootfs) || rootfs.type !== "layers" || !Array.isArray(rootfs.diff_ids)) {
    throw new CairnError("OCI_INVALID", 'config rootfs must be {"type": "layers", "diff_ids": [...]}', { path: "/rootfs" });
  }
  const unsafeIds = rootfs.diff_ids;
  if (unsafeIds.length !== layerCount) {
    throw new CairnError("OCI_DIFFID_MISMATCH", `config lists ${unsafeIds.length} DiffIDs for ${layerCount} layers`, {
      path: "/rootfs/diff_ids",
      hint: "the config and manifest disagree; rebuild the image",
    });
  }
  const diffIds = unsafeIds.map((d, i) => parseSha256(d, `/rootfs/diff_ids/${i}`));
  const c = config.config;
  const cfg: JsonObject = isJsonObject(c) ? c : Object.create(null);
  if (c !== undefined && c !== null && !isJsonObject(c)) throw new CairnError("OCI_INVALID", "config.config is not an object", { path: "/config" });
  const volumes = isJsonObject(cfg.Volumes) ? Object.keys(cfg.Volumes) : [];
  const stopSignal = optString(cfg.StopSignal, "/config/StopSignal");
  const launch: OciLaunchConfig = Object.freeze({
    entrypoint: stringList(cfg.Entrypoint, "/config/Entrypoint"),
    cmd: stringList(cfg.Cmd, "/config/Cmd"),
    env: stringList(cfg.Env, "/config/Env"),
    workingDir: optString(cfg.WorkingDir, "/config/WorkingDir"),
    user: optString(cfg.User, "/config/User"),
    ...(volumes.length > 0 ? { volumes: Object.freeze(volumes) } : {}),
    ...(stopSignal !== undefined && stopSignal !== "" ? { stopSignal } : {}),
    ...(cfg.ArgsEscaped === true ? { argsEscaped: true as const } : {}),
  });
  return { diffIds: Object.freeze(diffIds), launch };
}
