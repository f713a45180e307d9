import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import {
  ABIS,
  ARCHES,
  INSTALL_LAYOUTS,
  buildLayerFromDirectory,
  foldLayers,
  parseCapability,
  parseRequirement,
  readTrust,
  type Abi,
  type InstallLayout,
  type LayerArch,
  type LayerManifest,
  type LayerSpec,
  type SignedDocument,
} from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { printJson } from "../output.ts";
import { CAIRN_VERSION } from "../cairn-version.ts";
import { collect, openOrInit, signingKeys } from "../flags.ts";

interface SpecOpts {
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
}

function oneOf<T extends string>(flag: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new CairnError("USAGE", `${flag} must be one of ${allowed.join(", ")}`);
  return v as T;
}

export function specFrom(o: SpecOpts): LayerSpec {
  return {
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

function withSpecOptions(c: Command): Command {
  return c
    .requiredOption("--name <name>", "layer name")
    .requiredOption("--version <version>", "layer version (dotted)")
    .option("--provides <name@version>", "a capability the layer provides (repeatable)", collect, [])
    .option("--requires <requirement>", "a requirement: name, name>=a, name<b or name>=a,<b (repeatable)", collect, [])
    .option("--arch <arch>", `machine architecture: ${[...ARCHES, "noarch"].join(", ")}`, "noarch")
    .option("--abi <abi>", `ABI: ${ABIS.join(", ")} (none = no native code)`, "none")
    .option("--install-layout <layout>", "rootfs (paths as in the directory) or prefix (under opt/NAME/VERSION)", "rootfs")
    .option("--internal", "not user-selectable: only reachable through a formation")
    .option("--registry <dir>", "local directory registry to publish to (default $CAIRN_HOME/registry or $XDG_DATA_HOME/cairn/registry)")
    .option("--init-registry", "create the registry if it does not exist")
    .option("--key <key>", "Ed25519 private key to sign the layer manifest")
    .option("--unsigned", "publish without a signature (resolving it then needs --allow-unsigned-offline)")
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
      .argument("<dir>", "directory whose contents become the layer"),
  ).action((dir: string, opts: SpecOpts) => {
    const spec = specFrom(opts);
    const keys = signingKeys(opts);
    const reg = openOrInit(ctx, opts.registry, opts.initRegistry);
    const built = buildLayerFromDirectory(resolvePath(ctx.cwd, dir), spec);
    report(ctx, reg.publishLayer(built.blob.blob, built.manifest, keys), opts.json, "published");
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
    const spec = specFrom(opts);
    const keys = signingKeys(opts);
    const reg = openOrInit(ctx, opts.registry, opts.initRegistry);
    const trust = { keys: opts.trust.map((t) => readTrust(t, ctx.cwd)), allowUnsignedOffline: opts.allowUnsignedOffline === true };
    // Without --provides/--requires the folded layer inherits its sources' capabilities.
    const built = await foldLayers(reg, ids, spec, trust, opts.provides.length === 0 && opts.requires.length === 0);
    report(ctx, reg.publishLayer(built.blob.blob, built.manifest, keys), opts.json, "folded");
  });
}
