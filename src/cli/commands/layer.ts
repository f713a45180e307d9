import { dirname, resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError, readSigningKey } from "../../core/index.ts";
import {
  withBlobStaging,
  writeLayerFromDirectory,
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
  modulefilePath,
  foldLayers,
  readTrust,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { clock, collect, openOrInit, registryPlace, signingKeys } from "../flags.ts";
import { registerLayerCapture } from "./layer-capture.ts";
import { moduleFrom, recordedFrom, report, specFrom, withSpecOptions, type ModuleOpts, type SpecOpts } from "../layer-flags.ts";

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
    report(ctx, doc, opts.json, "published", "cairn.cli.layer-build/1");
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
    report(ctx, doc, opts.json, "folded", "cairn.cli.layer-fold/1");
  });
  registerLayerFreeze(layer, ctx);
  registerLayerCapture(layer, ctx);
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
      report(ctx, doc, opts.json, "frozen", "cairn.cli.layer-freeze/1");
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
      printJson(ctx.io, "cairn.cli.layer-freeze/1", {
        layer: built.manifest.id,
        sha256: built.manifest.sha256,
        whiteouts: built.manifest.whiteouts ?? [],
        lockfile: out,
        environment_id: environmentId(lock),
        signature: written.signature ?? null,
      });
      return;
    }
    report(ctx, doc, false, "frozen", "cairn.cli.layer-freeze/1");
    ctx.io.out(
      [
        `resolved again without the mutable layer: ${lock.layers.length} layer(s)`,
        `environment ${environmentId(lock)}`,
        `wrote ${out}${written.signature ? " (signed)" : " (unsigned)"}`,
      ].join("\n"),
    );
  });
}
