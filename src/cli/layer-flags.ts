/**
 * The layer spec's flags and the published-layer report, shared by the
 * `layer` verbs that make a layer (build, fold, freeze, capture).
 */
import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError, parseSha256, readFileBounded, sha256 } from "../core/index.ts";
import {
  ABIS,
  ARCHES,
  INSTALL_LAYOUTS,
  buildProvenanceLines,
  checkModulefile,
  MAX_MODULEFILE_BYTES,
  parseModuleEnv,
  layerManifestToModel,
  parseCapability,
  parseRequirement,
  type Abi,
  type InstallLayout,
  type LayerArch,
  type LayerManifest,
  type LayerSpec,
  type RecordedBuild,
  type SignedDocument,
} from "../strata/index.ts";
import type { Context } from "./context.ts";
import { type JsonTag, printJson } from "./output.ts";
import { CAIRN_VERSION } from "./cairn-version.ts";
import { clock, collect } from "./flags.ts";
import { remoteFlags, type RemoteFlags } from "./remote-flags.ts";

export interface SpecOpts extends RemoteFlags {
  name: string;
  version: string;
  provides: string[];
  requires: string[];
  arch: string;
  abi: string;
  installLayout: string;
  internal?: boolean;
  registry?: string;
  key?: string;
  unsigned?: boolean;
  initRegistry?: boolean;
  json?: boolean;
  recipe?: string;
  buildLockId?: string;
  buildBase?: string;
  builtAt?: string;
  source: string[];
}

/** Recorded-build provenance from the flags: the recipe is hashed (bounded read), `now` is the command's clock. */
export function recordedFrom(ctx: Context, o: SpecOpts): RecordedBuild {
  const lock_id = o.buildLockId === undefined ? undefined : parseSha256(o.buildLockId, "--build-lock-id");
  const base_digest = o.buildBase === undefined ? undefined : parseSha256(o.buildBase, "--build-base");
  const built_at =
    o.builtAt === "now"
      ? clock(ctx.env)
          .toISOString()
          .replace(/\.\d{3}Z$/, "Z")
      : o.builtAt;
  return {
    ...(o.recipe !== undefined ? { recipe: sha256(readFileBounded(resolvePath(ctx.cwd, o.recipe), MAX_RECIPE_BYTES, "build.max_recipe_bytes")) } : {}),
    ...(lock_id !== undefined || base_digest !== undefined
      ? { environment: { ...(lock_id !== undefined ? { lock_id } : {}), ...(base_digest !== undefined ? { base_digest } : {}) } }
      : {}),
    ...(built_at !== undefined ? { built_at } : {}),
    ...(o.source.length > 0 ? { sources: o.source } : {}),
  };
}

export interface ModuleOpts {
  modulefile?: string;
  generateModulefile?: boolean;
  moduleEnv: string[];
}

/** The modulefile a `layer build` carries: given (bounded, UTF-8), generated, or none. */
export function moduleFrom(ctx: Context, o: ModuleOpts): Pick<LayerSpec, "modulefile"> {
  const generate = o.generateModulefile === true || o.moduleEnv.length > 0;
  if (o.modulefile !== undefined && generate) throw new CairnError("USAGE", "give --modulefile or --generate-modulefile/--module-env, not both");
  if (o.modulefile !== undefined) {
    const path = resolvePath(ctx.cwd, o.modulefile);
    return { modulefile: { kind: "given", text: checkModulefile(readFileBounded(path, MAX_MODULEFILE_BYTES, "layer.max_modulefile_bytes"), path) } };
  }
  return generate ? { modulefile: { kind: "generated", env: parseModuleEnv(o.moduleEnv) } } : {};
}

/** build.max_recipe_bytes: a recipe is a script or spec file, not a payload. */
const MAX_RECIPE_BYTES = 16 * 1024 * 1024;

function oneOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new CairnError("USAGE", `${flag} must be one of ${allowed.join(", ")}`);
  return v as T;
}

export function specFrom(o: SpecOpts, recorded?: RecordedBuild): LayerSpec {
  return {
    ...(recorded !== undefined ? { recorded } : {}),
    name: o.name,
    version: o.version,
    arch: oneOf<LayerArch>("--arch", o.arch, [...ARCHES, "noarch"]),
    abi: oneOf<Abi>("--abi", o.abi, ABIS),
    install_layout: oneOf<InstallLayout>("--install-layout", o.installLayout, INSTALL_LAYOUTS),
    user_selectable: o.internal !== true,
    provides: o.provides.map((p, i) => parseCapability(p, `--provides[${i}]`)),
    requires: o.requires.map((r, i) => parseRequirement(r, `--requires[${i}]`)),
    builder: `cairn ${CAIRN_VERSION}`,
  };
}

/**
 * The layer spec's flags; `nameFrom` says where --name and --version come from when they are not given (else they are required);
 * `layout` is the default --install-layout and what it means; `sourceFlag` names the recorded-sources flag (its value lands in `source`).
 */
export function withSpecOptions(
  c: Command,
  nameFrom?: string,
  layout: { default: InstallLayout; text: string } = { default: "rootfs", text: "rootfs (paths as in the directory) or prefix (under opt/NAME/VERSION)" },
  sourceFlag: { name: string; text: string } = { name: "--source", text: "what it was built from (URL, VCS ref; repeatable; recorded sorted and unique)" },
): Command {
  const named =
    nameFrom === undefined
      ? remoteFlags(c).requiredOption("--name <name>", "layer name").requiredOption("--version <version>", "layer version (dotted)")
      : remoteFlags(c).option("--name <name>", `layer name (default: ${nameFrom}'s)`).option("--version <version>", `layer version (default: ${nameFrom}'s)`);
  return named
    .option("--provides <name@version>", "a capability the layer provides (repeatable)", collect, [])
    .option("--requires <requirement>", "a requirement: name, name>=a, name<b or name>=a,<b (repeatable)", collect, [])
    .option("--arch <arch>", `machine architecture: ${[...ARCHES, "noarch"].join(", ")}`, "noarch")
    .option("--abi <abi>", `ABI: ${ABIS.join(", ")} (none = no native code)`, "none")
    .option("--install-layout <layout>", layout.text, layout.default)
    .option("--internal", "not user-selectable: only reachable through a formation")
    .option("--registry <dir>", "a directory registry or oci://HOST/REPO to publish to (default $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)")
    .option("--init-registry", "create the registry if it does not exist")
    .option("--key <key>", "Ed25519 private key to sign the layer manifest")
    .option("--unsigned", "publish without a signature (resolving it then needs --allow-unsigned-offline)")
    .option("--recipe <file>", "the build script or spec that produced the directory: its sha256 is recorded (build provenance)")
    .option("--build-lock-id <digest>", "EnvironmentID of the lockfile the build ran in (build provenance)")
    .option("--build-base <digest>", "digest of the base the build ran on (build provenance)")
    .option(
      "--built-at <time>",
      "when it was built: RFC 3339 UTC to the second, or now (CAIRN_NOW when set); omitted by default so rebuilds stay byte-identical",
    )
    .option(`${sourceFlag.name} <text>`, sourceFlag.text, collect, [])
    .option("--json", "print the result as JSON");
}

/** Prints a published layer; `extra` adds fields to the JSON and lines to the text. */
export function report(
  ctx: Context,
  doc: SignedDocument<LayerManifest>,
  json: boolean | undefined,
  verb: string,
  tag: JsonTag,
  extra: { json: Record<string, unknown>; lines: string[] } = { json: {}, lines: [] },
): void {
  const m = doc.value;
  const signed = doc.envelope.signatures.length > 0 ? `signed by ${doc.envelope.signatures.map((s) => s.keyid).join(", ")}` : "UNSIGNED";
  if (json) {
    printJson(ctx.io, tag, {
      id: m.id,
      sha256: m.sha256,
      size: m.size,
      diff_id: m.build.diff_id,
      files: m.content_manifest.size,
      manifest_sha256: doc.payloadSha256,
      envelope_sha256: doc.envelopeSha256,
      signed: doc.envelope.signatures.length > 0,
      folded_from: m.build.folded_from ?? null,
      whiteouts: m.whiteouts ?? [],
      build: layerManifestToModel(m).build,
      modulefile: m.modulefile === undefined ? null : { path: m.modulefile, sha256: m.content_manifest.get(m.modulefile) },
      ...extra.json,
    });
    return;
  }
  ctx.io.out(
    [
      `${verb} layer ${m.id}`,
      `blob     ${m.sha256} (${m.size} bytes, ${m.content_manifest.size} files)`,
      `diff_id  ${m.build.diff_id}`,
      `manifest ${doc.payloadSha256} (${signed})`,
      ...(m.build.folded_from ? [`folded from ${m.build.folded_from.map((f) => f.id).join(", ")}`] : []),
      ...buildProvenanceLines(m.build),
      ...(m.whiteouts !== undefined ? [`whiteouts ${m.whiteouts.join(", ")}`] : []),
      ...(m.modulefile !== undefined ? [`modulefile ${m.modulefile} ${m.content_manifest.get(m.modulefile)}`] : []),
      ...extra.lines,
    ].join("\n"),
  );
}
