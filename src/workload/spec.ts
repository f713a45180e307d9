/**
 * The workload spec `cairn.workload/1`, YAML or JSON, parsed strictly: every
 * unknown field is refused, with one exception — the optional top-level
 * `run` section belongs to the runs code (src/vm), which parses it strictly
 * itself; here it is only required to be an object and is kept as its raw
 * model in `spec.run`. `run` is not part of the workload identity.
 *
 *   schema: cairn.workload/1
 *   source:                       # exactly one of binary / oci
 *     binary: {path, args?, env?, workdir?, user}
 *     oci:    {layout, manifest: "sha256:…"}
 *         or  {ref: "HOST/REPO@sha256:…", manifest?: "sha256:…"}
 *   policy: {…}                   # optional, OCI layer policy (see policy.ts)
 *   limits: {…}                   # optional, named input limits (see limits.ts)
 *   run: {…}                      # optional, opaque here
 *
 * `path` and `layout` are locators: resolved against the spec's directory,
 * used to find bytes, and never part of any identity. `ref` is a locator
 * too (where the image is pulled from): it must name a digest, because a
 * tag is a claim that can change; without `manifest`, the manifest the ref
 * selects (directly, or linux/amd64 of an index) becomes the spec's
 * manifest at assembly. `manifest` selects content and is then verified
 * against the bytes, never trusted.
 */
import { Checker, childPath, parseJsonBytes, parseYamlBytes, parseSha256, type JsonModel, type JsonObject, type Sha256Digest } from "../core/index.ts";
import { limitsModel, parseLimits, parsePolicy, policyModel, type LayerLimits, type LayerPolicy } from "../tree/index.ts";
import { formatImageRef, parseImageRef, type ImageRef } from "../oci/index.ts";

export const WORKLOAD_SPEC_SCHEMA = "cairn.workload/1";

/** A spec is a short document; this bounds its read (limit "specBytes") before parsing. */
export const SPEC_MAX_BYTES = 1024 * 1024;

export interface BinarySourceSpec {
  readonly kind: "binary";
  /** Locator: the executable, relative to the spec's directory. */
  readonly path: string;
  readonly args: readonly string[];
  /** Name → value, in document order (the launch model sorts them). Values are secrets in messages. */
  readonly env: ReadonlyMap<string, string>;
  readonly workdir: string;
  /** Numeric "uid:gid", checked by the launch model. */
  readonly user: string;
}

export interface OciSourceSpec {
  readonly kind: "oci";
  /** Locator: the OCI image layout directory, relative to the spec's directory ("" when the image comes from `ref`). */
  readonly layout: string;
  /** Locator: `HOST/REPO@sha256:…`, pulled into the store at assembly (absent for a layout). */
  readonly ref?: string;
  /** The image manifest; for a `ref` without `manifest`, the ref's digest until assembly resolves the selection. */
  readonly manifest: Sha256Digest;
  /** True when `manifest` was not written and stands for the ref's digest. */
  readonly manifestFromRef?: boolean;
  /** `source.oci.launch`: the spec's launch over the image config's (launch.ts `ociLaunchWithSpec`). */
  readonly launch?: OciLaunchSpec;
}

/**
 * What a spec may set of an OCI image's launch: `args` replaces `Cmd` (the
 * Entrypoint stays; without one `args[0]` is the program, absolute), `env`
 * sets variables by name over the image's `Env`, `workdir` and `user`
 * replace `WorkingDir` and `User`. Each is optional; all are part of the
 * launch identity through the launch they produce.
 */
export interface OciLaunchSpec {
  readonly args?: readonly string[];
  /** Name → value, in document order. Values are secrets in messages. */
  readonly env?: ReadonlyMap<string, string>;
  readonly workdir?: string;
  readonly user?: string;
}

export type SourceSpec = BinarySourceSpec | OciSourceSpec;

export interface WorkloadSpec {
  readonly schema: typeof WORKLOAD_SPEC_SCHEMA;
  readonly source: SourceSpec;
  /** The layer policy (the strict profile when the spec names none). */
  readonly policy: LayerPolicy;
  /** The effective named limits (defaults where the spec names none). */
  readonly limits: LayerLimits;
  /** The raw `run` section for the runs code; never part of the workload identity. */
  readonly run: JsonObject | undefined;
}

const TOP_KEYS = ["schema", "source", "policy", "limits", "run"] as const;
const BINARY_KEYS = ["path", "args", "env", "workdir", "user"] as const;
const OCI_KEYS = ["layout", "manifest", "ref", "launch"] as const;
const OCI_LAUNCH_KEYS = ["args", "env", "workdir", "user"] as const;

/** A required string field: one issue when missing, one when mistyped, never both. */
function requiredString(c: Checker, o: JsonObject, key: string, path: string, max?: number): string | undefined {
  const v = c.required(o, key, path);
  return v === undefined ? undefined : c.string(v, childPath(path, key), { nonEmpty: true, max });
}

/** Every field the spec parser accepts, for the identity scope test (identity.ts places each one). */
export const SPEC_FIELDS = { top: TOP_KEYS, binary: BINARY_KEYS, oci: OCI_KEYS, ociLaunch: OCI_LAUNCH_KEYS } as const;

/** `file`: a spec a user wrote (locators required). `stored`: a canonical spec from the store (locators refused). */
type SpecForm = "file" | "stored";

/** The locator field: required in a spec file; in a stored canonical spec its presence means it was edited. */
function locator(c: Checker, o: JsonObject, key: string, path: string, form: SpecForm): string | undefined {
  if (form === "file") return requiredString(c, o, key, path, 4096);
  if (key in o) c.add(childPath(path, key), "a canonical spec holds no locator", "MODEL_UNKNOWN_FIELD");
  return "";
}

function checkBinary(c: Checker, o: JsonObject, path: string, form: SpecForm): BinarySourceSpec | undefined {
  const unsafePath = locator(c, o, "path", path, form);
  const args = "args" in o ? c.stringArray(o.args, childPath(path, "args")) : [];
  const env = "env" in o ? c.stringMap(o.env, childPath(path, "env")) : new Map<string, string>();
  const workdir = "workdir" in o ? c.string(o.workdir, childPath(path, "workdir"), { nonEmpty: true }) : "/";
  const user = requiredString(c, o, "user", path);
  if (unsafePath === undefined || args === undefined || env === undefined || workdir === undefined || user === undefined) return undefined;
  return { kind: "binary", path: unsafePath, args, env, workdir, user };
}

/** The `ref` locator: it must parse and name a digest (REFERENCE_INVALID otherwise, with the way to pin it). */
function checkRef(c: Checker, unsafe: JsonModel | undefined, path: string): ImageRef | undefined {
  try {
    const ref = parseImageRef(unsafe, path);
    if (ref.digest === undefined) {
      c.add(
        path,
        "names a tag, which can move; a workload needs a digest (HOST/REPO@sha256:…): run `cairn pull REF --oci DIR --json` and use its ref",
        "REFERENCE_INVALID",
      );
      return undefined;
    }
    return ref;
  } catch (e) {
    c.add(path, e instanceof Error ? e.message : "invalid image reference", "REFERENCE_INVALID");
    return undefined;
  }
}

/**
 * `source.oci.launch`, the one parse for every OCI form (a layout, a registry
 * `ref`, a stored canonical spec): undefined when absent, false when it is
 * not an object (the issue is added). The ref form used to return before
 * reading it, so a ref spec's launch was neither validated nor applied and
 * the image's own Cmd ran.
 */
function checkOciLaunch(c: Checker, o: JsonObject, path: string): OciLaunchSpec | undefined | false {
  if (!("launch" in o)) return undefined;
  const lp = childPath(path, "launch");
  const l = c.object(o.launch, lp, OCI_LAUNCH_KEYS);
  if (l === undefined) return false;
  const args = "args" in l ? c.stringArray(l.args, childPath(lp, "args")) : undefined;
  const env = "env" in l ? c.stringMap(l.env, childPath(lp, "env")) : undefined;
  const workdir = "workdir" in l ? c.string(l.workdir, childPath(lp, "workdir"), { nonEmpty: true }) : undefined;
  const user = "user" in l ? c.string(l.user, childPath(lp, "user"), { nonEmpty: true }) : undefined;
  return { ...(args ? { args } : {}), ...(env ? { env } : {}), ...(workdir ? { workdir } : {}), ...(user ? { user } : {}) };
}

function checkOci(c: Checker, o: JsonObject, path: string, form: SpecForm): OciSourceSpec | undefined {
  if (form === "file" && "ref" in o) {
    if ("layout" in o) c.add(path, "must hold one of layout or ref, not both", "WORKLOAD_SPEC_INVALID");
    const ref = checkRef(c, o.ref, childPath(path, "ref"));
    let manifest: Sha256Digest | undefined = ref?.digest;
    if ("manifest" in o) {
      try {
        manifest = parseSha256(o.manifest, childPath(path, "manifest"));
      } catch {
        c.add(childPath(path, "manifest"), "must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
      }
    }
    const launch = checkOciLaunch(c, o, path);
    if (ref === undefined || manifest === undefined || launch === false) return undefined;
    return { kind: "oci", layout: "", ref: formatImageRef(ref), manifest, manifestFromRef: !("manifest" in o), ...(launch ? { launch } : {}) };
  }
  if (form === "stored" && "ref" in o) c.add(childPath(path, "ref"), "a canonical spec holds no locator", "MODEL_UNKNOWN_FIELD");
  const layout = locator(c, o, "layout", path, form);
  const unsafeManifest = c.required(o, "manifest", path);
  let manifest: Sha256Digest | undefined;
  if (unsafeManifest !== undefined) {
    try {
      manifest = parseSha256(unsafeManifest, childPath(path, "manifest"));
    } catch {
      c.add(childPath(path, "manifest"), "must be sha256:<64 lowercase hex>", "DIGEST_INVALID");
    }
  }
  const launch = checkOciLaunch(c, o, path);
  if (layout === undefined || manifest === undefined || launch === false) return undefined;
  return { kind: "oci", layout, manifest, ...(launch ? { launch } : {}) };
}

/** Checks a parsed model against `cairn.workload/1`; throws one error listing every problem. */
export function checkWorkloadSpec(model: JsonModel, form: SpecForm = "file"): WorkloadSpec {
  const c = new Checker("WORKLOAD_SPEC_INVALID");
  const top = c.object(model, "", TOP_KEYS);
  let source: SourceSpec | undefined;
  let unsafePolicy: JsonModel | undefined;
  let unsafeLimits: JsonModel | undefined;
  let run: JsonObject | undefined;
  if (top !== undefined) {
    const schema = c.required(top, "schema", "");
    if (schema !== undefined && schema !== WORKLOAD_SPEC_SCHEMA) c.add("/schema", `must be "${WORKLOAD_SPEC_SCHEMA}"`, "WORKLOAD_SPEC_INVALID");
    const src = c.object(c.required(top, "source", ""), "/source", ["binary", "oci"]);
    if (src !== undefined) {
      const kinds = Object.keys(src).filter((k) => k === "binary" || k === "oci");
      if (kinds.length !== 1) {
        c.add("/source", "must hold exactly one of binary or oci", "WORKLOAD_SPEC_INVALID");
      } else if (kinds[0] === "binary") {
        const b = c.object(src.binary, "/source/binary", BINARY_KEYS);
        if (b !== undefined) source = checkBinary(c, b, "/source/binary", form);
      } else {
        const o = c.object(src.oci, "/source/oci", OCI_KEYS);
        if (o !== undefined) source = checkOci(c, o, "/source/oci", form);
      }
    }
    unsafePolicy = top.policy;
    unsafeLimits = top.limits;
    if ("run" in top) run = c.object(top.run, "/run");
  }
  if (source?.kind === "binary" && unsafePolicy !== undefined) {
    c.add("/policy", "a policy applies to OCI layers only; a binary source has none", "MODEL_UNKNOWN_FIELD");
  }
  c.done("workload spec refused", `see docs/workload.md for the ${WORKLOAD_SPEC_SCHEMA} format`);
  const policy = parsePolicy(unsafePolicy, "/policy");
  const limits = parseLimits(unsafeLimits, "/limits");
  return { schema: WORKLOAD_SPEC_SCHEMA, source: source!, policy, limits, run };
}

/** Parses spec bytes: JSON when `name` ends in .json, YAML (1.2, strict) otherwise. */
export function parseWorkloadSpec(bytes: Uint8Array, name: string): WorkloadSpec {
  const model = name.endsWith(".json") ? parseJsonBytes(bytes, { source: name }) : parseYamlBytes(bytes, name);
  return checkWorkloadSpec(model);
}

/**
 * The canonical spec: the parsed model minus its locators (`path`, `layout`),
 * with every default filled in (the effective policy and limits), so two specs
 * that mean the same thing have the same bytes. Its JCS bytes are the spec's
 * raw object in the store; verify reparses those bytes, never the file the
 * user edited.
 */
export function canonicalSpecModel(spec: WorkloadSpec): JsonObject {
  const out: JsonObject = Object.create(null) as JsonObject;
  out.schema = spec.schema;
  const s = spec.source;
  if (s.kind === "binary") {
    const env: JsonObject = Object.create(null) as JsonObject;
    for (const [k, v] of s.env) env[k] = v;
    out.source = { binary: { args: [...s.args], env, workdir: s.workdir, user: s.user } };
  } else {
    const oci: JsonObject = Object.create(null) as JsonObject;
    oci.manifest = s.manifest;
    if (s.launch !== undefined) {
      const l: JsonObject = Object.create(null) as JsonObject;
      if (s.launch.args !== undefined) l.args = [...s.launch.args];
      if (s.launch.env !== undefined) {
        const env: JsonObject = Object.create(null) as JsonObject;
        for (const [k, v] of s.launch.env) env[k] = v;
        l.env = env;
      }
      if (s.launch.workdir !== undefined) l.workdir = s.launch.workdir;
      if (s.launch.user !== undefined) l.user = s.launch.user;
      oci.launch = l;
    }
    out.source = { oci };
  }
  if (s.kind === "oci") {
    const policy: JsonObject = Object.create(null) as JsonObject;
    for (const [k, v] of Object.entries(policyModel(spec.policy))) if (k !== "version") policy[k] = v;
    out.policy = policy;
  }
  out.limits = limitsModel(spec.limits);
  if (spec.run !== undefined) out.run = spec.run;
  return out;
}

/**
 * Parses a canonical spec read back from the store: the same rules, except
 * that locators must be absent (they are returned as "" and never used).
 */
export function parseCanonicalSpec(bytes: Uint8Array, name: string): WorkloadSpec {
  return checkWorkloadSpec(parseJsonBytes(bytes, { source: name }), "stored");
}
