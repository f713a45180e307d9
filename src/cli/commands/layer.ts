import { dirname, resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError, parseSha256, readFileBounded, readSigningKey, sha256 } from "../../core/index.ts";
import {
  ABIS,
  ARCHES,
  INSTALL_LAYOUTS,
  withBlobStaging,
  writeLayerFromDirectory,
  buildProvenanceLines,
  catalogFromRegistries,
  environmentId,
  freezeUpperLayer,
  frozenProfile,
  requireDirty,
  openRegistries,
  readLockfile,
  readProfileFile,
  requireLayerBlobs,
  resolveProfile,
  writeLockfile,
  checkModulefile,
  MAX_MODULEFILE_BYTES,
  modulefilePath,
  parseModuleEnv,
  foldLayers,
  layerManifestToModel,
  parseCapability,
  parseRequirement,
  readTrust,
  type Abi,
  type InstallLayout,
  type LayerArch,
  type LayerManifest,
  type LayerSpec,
  type RecordedBuild,
  type SignedDocument,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { clock, collect, openOrInit, registryPlace, signingKeys } from "../flags.ts";
import { remoteFlags, type RemoteFlags } from "../remote-flags.ts";

interface SpecOpts extends RemoteFlags {
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
function recordedFrom(ctx: Context, o: SpecOpts): RecordedBuild {
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

interface ModuleOpts {
  modulefile?: string;
  generateModulefile?: boolean;
  moduleEnv: string[];
}

/** The modulefile a `layer build` carries: given (bounded, UTF-8), generated, or none. */
function moduleFrom(ctx: Context, o: ModuleOpts): Pick<LayerSpec, "modulefile"> {
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

/** The layer spec's flags; `nameFrom` says where --name and --version come from when they are not given (else they are required). */
function withSpecOptions(c: Command, nameFrom?: string): Command {
  const named =
    nameFrom === undefined
      ? remoteFlags(c).requiredOption("--name <name>", "layer name").requiredOption("--version <version>", "layer version (dotted)")
      : remoteFlags(c).option("--name <name>", `layer name (default: ${nameFrom}'s)`).option("--version <version>", `layer version (default: ${nameFrom}'s)`);
  return named
    .option("--provides <name@version>", "a capability the layer provides (repeatable)", collect, [])
    .option("--requires <requirement>", "a requirement: name, name>=a, name<b or name>=a,<b (repeatable)", collect, [])
    .option("--arch <arch>", `machine architecture: ${[...ARCHES, "noarch"].join(", ")}`, "noarch")
    .option("--abi <abi>", `ABI: ${ABIS.join(", ")} (none = no native code)`, "none")
    .option("--install-layout <layout>", "rootfs (paths as in the directory) or prefix (under opt/NAME/VERSION)", "rootfs")
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
    .option("--source <text>", "what it was built from (URL, VCS ref; repeatable; recorded sorted and unique)", collect, [])
    .option("--json", "print the result as JSON");
}

function report(ctx: Context, doc: SignedDocument<LayerManifest>, json: boolean | undefined, verb: string): void {
  const m = doc.value;
  const signed = doc.envelope.signatures.length > 0 ? `signed by ${doc.envelope.signatures.map((s) => s.keyid).join(", ")}` : "UNSIGNED";
  if (json) {
    printJson(ctx.io, {
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
    ].join("\n"),
  );
}

/** `cairn layer build DIR …` and `cairn layer fold ID ID… …`. */
export function registerLayer(program: Command, ctx: Context): void {
  // `layer build --version V` and `formation build --version V` name the
  // layer's version; without positional options the root's own --version
  // would swallow the flag wherever it appears. Root options go before the
  // noun (`cairn --version`), which is how cairn is invoked anyway.
  program.enablePositionalOptions();
  const layer = program.command("layer").description("reproducible, signed, content-addressed layers");
  withSpecOptions(
    layer
      .command("build")
      .description("pack a directory into a reproducible layer blob (tar+gzip), sign its manifest and publish it")
      .argument("<dir>", "directory whose contents become the layer")
      .option("--modulefile <file>", `an Lmod modulefile the layer carries, at ${modulefilePath("NAME", "VERSION")}`)
      .option(
        "--generate-modulefile",
        "generate the Lmod modulefile from the prefix, the directories the layer holds (bin, lib, …), --provides and --module-env",
      )
      .option("--module-env <NAME=VALUE>", "a variable the generated modulefile sets (repeatable; implies --generate-modulefile)", collect, []),
  ).action(async (dir: string, opts: SpecOpts & ModuleOpts) => {
    const spec = { ...specFrom(opts, recordedFrom(ctx, opts)), ...moduleFrom(ctx, opts) };
    const keys = signingKeys(opts);
    const reg = await openOrInit(ctx, opts.registry, opts.initRegistry, opts);
    // Streamed: the blob goes to a private staged file and is published from there.
    const doc = await withBlobStaging(async (staging) => {
      const built = await writeLayerFromDirectory(resolvePath(ctx.cwd, dir), spec, staging.path("layer.tar.gz"));
      return reg.publishLayer({ path: built.blob.path }, built.manifest, keys);
    });
    report(ctx, doc, opts.json, "published");
  });
  withSpecOptions(
    layer
      .command("fold")
      .description(
        "merge published layers into one (later layers win at the same path), recording folded_from; without --provides/--requires it inherits its sources' capabilities",
      )
      .argument("<ids...>", "layer ids, lowest first")
      .option("--trust <keyfile>", "keyfile://PATH of a key whose signatures on the source layers are accepted (repeatable)", collect, [])
      .option("--allow-unsigned-offline", "fold sources that no trusted key signed (your key then signs what nobody vouched for)"),
  ).action(async (ids: string[], opts: SpecOpts & { trust: string[]; allowUnsignedOffline?: boolean }) => {
    const spec = specFrom(opts, recordedFrom(ctx, opts));
    const keys = signingKeys(opts);
    const reg = await openOrInit(ctx, opts.registry, opts.initRegistry, opts);
    const trust = { keys: opts.trust.map((t) => readTrust(t, ctx.cwd)), allowUnsignedOffline: opts.allowUnsignedOffline === true };
    // Without --provides/--requires the folded layer inherits its sources' capabilities.
    const doc = await withBlobStaging(async (staging) => {
      const built = await foldLayers(reg, ids, spec, trust, opts.provides.length === 0 && opts.requires.length === 0, staging);
      return reg.publishLayer({ path: built.blob.path }, built.manifest, keys);
    });
    report(ctx, doc, opts.json, "folded");
  });
  registerLayerFreeze(layer, ctx);
}

interface FreezeOpts extends Omit<SpecOpts, "name" | "version"> {
  /** Default: the dirty lock's mutable_layer name and version. */
  name?: string;
  version?: string;
  lock: string;
  profile?: string;
  out?: string;
  sign?: string;
  trust: string[];
}

/**
 * `cairn layer freeze UPPER --lock DIRTY …`: the upper directory becomes a
 * published layer (whiteouts converted, provenance naming the dirty lock);
 * with `--profile P --out LOCK` the environment is resolved again with that
 * layer and without the mutable one, on the dirty lock's base.
 */
function registerLayerFreeze(layer: Command, ctx: Context): void {
  withSpecOptions(
    layer
      .command("freeze")
      .description("turn an overlayfs upper directory (a dirty environment's mutable layer) into a signed layer, and resolve the environment again with it")
      .argument("<upper>", "the overlayfs upper directory as the user left it (read as root to see trusted.overlay.* attributes)")
      .requiredOption("--lock <lock>", "the dirty lockfile (with mutable_layer) the upper directory belongs to")
      .option("--profile <profile>", "the profile the dirty lock was resolved from: resolve it again with the frozen layer (needs --out)")
      .option("--out <lock>", "where to write the re-resolved lockfile")
      .option("--sign <key>", "sign the re-resolved lockfile")
      .option("--trust <keyfile>", "keyfile://PATH trusted for the --registry layers when resolving again (repeatable)", collect, []),
    "the dirty lock's mutable_layer",
  ).action(async (upper: string, opts: FreezeOpts) => {
    if ((opts.profile === undefined) !== (opts.out === undefined)) throw new CairnError("USAGE", "--profile and --out go together");
    const read = readLockfile(resolvePath(ctx.cwd, opts.lock));
    // The seed's MutableLayerSpec names the layer the upper directory becomes: its name and version are the defaults.
    const ml = read.lock.mutable_layer;
    const name = opts.name ?? ml?.name;
    const version = opts.version ?? ml?.version;
    if (name === undefined || version === undefined) requireDirty(read.lock); // only a clean lock leaves them unset, and it is refused
    const named = { ...opts, name: name!, version: version! };
    const spec = specFrom(named, recordedFrom(ctx, named));
    const keys = signingKeys(opts);
    const reg = await openOrInit(ctx, opts.registry, opts.initRegistry, opts);
    const { built, doc } = await withBlobStaging(async (staging) => {
      const b = await freezeUpperLayer(resolvePath(ctx.cwd, upper), { lock: read.lock, bytes: read.bytes }, spec, staging.path("frozen.tar.gz"));
      return { built: b, doc: await reg.publishLayer({ path: b.blob.path }, b.manifest, keys) };
    });
    if (opts.profile === undefined || opts.out === undefined) {
      report(ctx, doc, opts.json, "frozen");
      return;
    }
    const profilePath = resolvePath(ctx.cwd, opts.profile);
    const profile = frozenProfile(readProfileFile(profilePath), read.lock, built.manifest);
    const regs = await openRegistries({
      ...registryPlace(ctx, opts),
      registries: opts.registry === undefined ? [] : [opts.registry],
      trust: opts.trust,
      profile,
      profileDir: dirname(profilePath),
    });
    const base = read.lock.base.source === "declared" ? {} : { probedBase: read.lock.base };
    const lock = resolveProfile({
      profile,
      catalog: catalogFromRegistries(regs),
      ...base,
      allowUnsignedOffline: false,
      now: clock(ctx.env),
      cairnVersion: CAIRN_VERSION,
    });
    const key = opts.sign === undefined ? undefined : readSigningKey(opts.sign);
    if (key !== undefined)
      await requireLayerBlobs(
        lock,
        regs.map((r) => r.registry),
      );
    const out = resolvePath(ctx.cwd, opts.out);
    const written = writeLockfile(out, lock, key);
    if (opts.json) {
      printJson(ctx.io, {
        layer: built.manifest.id,
        sha256: built.manifest.sha256,
        whiteouts: built.manifest.whiteouts ?? [],
        lockfile: out,
        environment_id: environmentId(lock),
        signature: written.signature ?? null,
      });
      return;
    }
    report(ctx, doc, false, "frozen");
    ctx.io.out(
      [
        `resolved again without the mutable layer: ${lock.layers.length} layer(s)`,
        `environment ${environmentId(lock)}`,
        `wrote ${out}${written.signature ? " (signed)" : " (unsigned)"}`,
      ].join("\n"),
    );
  });
}
