import { resolve as resolvePath } from "node:path";
import type { Command } from "commander";
import { CairnError } from "../../core/index.ts";
import { CAPTURE_SOURCES, captureLayer, withBlobStaging, type CaptureReport, type CaptureSource } from "../../strata/index.ts";
import type { Context } from "../context.ts";
import { openOrInit, signingKeys } from "../flags.ts";
import { moduleFrom, recordedFrom, report, specFrom, withSpecOptions, type ModuleOpts, type SpecOpts } from "../layer-flags.ts";

interface CaptureOpts extends Omit<SpecOpts, "source">, ModuleOpts {
  /** --source: where the install comes from. */
  source: string;
  /** --build-source: recorded build sources (`layer build --source`). */
  buildSource: string[];
  prefix?: string;
  modulepath?: string;
  requireRelocatable?: boolean;
}

/** How many rewritten or left paths the text report lists before "and N more" (--json lists them all). */
const SHOWN_PATHS = 20;

/** A path as the text report prints it: quoted when it holds a control character, so a file name cannot forge report lines. */
function shownPath(p: string): string {
  return /[\u0000-\u001f\u007f]/.test(p) ? JSON.stringify(p) : p;
}

function pathLines(label: string, paths: readonly string[]): string[] {
  const shown = paths.slice(0, SHOWN_PATHS).map((p) => `  ${label} ${shownPath(p)}`);
  return paths.length > SHOWN_PATHS ? [...shown, `  … and ${paths.length - SHOWN_PATHS} more (--json lists all)`] : shown;
}

function captureLines(r: CaptureReport): string[] {
  return [
    `mounted  ${r.mount_path}`,
    `normalized ${r.normalized} (${r.rewritten.length} rewritten, ${r.left.length} binary file(s) left naming ${r.original_prefix})`,
    ...pathLines("rewritten", r.rewritten),
    ...pathLines("left     ", r.left),
    ...(r.packages !== undefined ? [`conda packages ${r.packages.length}`] : []),
    ...(r.modulefile !== undefined
      ? [`lmod modulefile ${r.modulefile.path} (${r.modulefile.kind}${r.modulefile.carried ? ", carried" : ", not carried: a layer's modulefile is Lua"})`]
      : []),
  ];
}

/** `cairn layer capture DIR --source filesystem|conda|lmod …`: an existing install as a signed layer (library: strata/capture.ts). */
export function registerLayerCapture(layer: Command, ctx: Context): void {
  withSpecOptions(
    layer
      .command("capture")
      .description("capture an existing install (a directory tree, a conda environment, an Lmod module and its software) as a signed layer")
      .argument("<dir>", "the install: the tree (filesystem), the environment (conda) or the Lmod tree holding modulefiles and software (lmod)")
      .requiredOption("--source <source>", `where the install comes from: ${CAPTURE_SOURCES.join(", ")}`)
      .option(
        "--prefix <path>",
        "the absolute install root (default: the directory's path; conda: the prefix conda-meta/history names; lmod: the NAME/VERSION root the modulefile names)",
      )
      .option("--modulepath <dir>", "lmod: the module path inside the tree (default modulefiles)")
      .option("--require-relocatable", "refuse when a binary file still names the install root after normalization")
      .option(
        "--generate-modulefile",
        "generate an Lmod modulefile from the layer's directories (not for an Lmod capture of a Lua module, which carries its own)",
      )
      .option(
        "--module-env <NAME=VALUE>",
        "a variable the generated modulefile sets (repeatable; implies --generate-modulefile)",
        (v: string, a: string[]) => [...a, v],
        [],
      ),
    undefined,
    { default: "prefix", text: "prefix (under /opt/NAME/VERSION, install root rewritten in text files) or rootfs (at the install root, nothing rewritten)" },
    { name: "--build-source", text: "what the install was built from (URL, VCS ref; repeatable; recorded sorted and unique)" },
  ).action(async (dir: string, opts: CaptureOpts) => {
    if (!(CAPTURE_SOURCES as readonly string[]).includes(opts.source))
      throw new CairnError("USAGE", `--source must be one of ${CAPTURE_SOURCES.join(", ")}`, { path: "--source" });
    const specOpts: SpecOpts = { ...opts, source: opts.buildSource };
    const spec = { ...specFrom(specOpts, recordedFrom(ctx, specOpts)), ...moduleFrom(ctx, opts) };
    const keys = signingKeys(opts);
    const reg = await openOrInit(ctx, opts.registry, opts.initRegistry, opts);
    const options = {
      source: opts.source as CaptureSource,
      ...(opts.prefix !== undefined ? { unsafePrefix: opts.prefix } : {}),
      ...(opts.modulepath !== undefined ? { modulepath: opts.modulepath } : {}),
      requireRelocatable: opts.requireRelocatable === true,
    };
    // Streamed to a private staged file and published from there only when the whole capture succeeded.
    const { doc, captured } = await withBlobStaging(async (staging) => {
      const c = await captureLayer(resolvePath(ctx.cwd, dir), spec, options, staging.path("captured.tar.gz"));
      return { doc: await reg.publishLayer({ path: c.blob.path }, c.manifest, keys), captured: c.report };
    });
    report(ctx, doc, opts.json, "captured", "cairn.cli.layer-capture/1", { json: { capture: captured }, lines: captureLines(captured) });
  });
}
