/**
 * The one entry that turns what a user (or a campaign file) names as a run
 * into a run directory on this node: a run directory as it is, a bundle file
 * imported (bundle-import.ts), or `oci://HOST/REPO@sha256:…` fetched and
 * imported (bundle-fetch.ts). `cairn replay` and the campaign's tasks both
 * call it, so a run reaches a replay through one set of checks whichever way
 * it travelled.
 */
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { CairnError, fileKind } from "../core/index.ts";
import type { RemoteOptions } from "../oci/index.ts";
import { BUNDLE_SCHEME } from "./bundle-artifact.ts";
import { importRegistryBundle, type FetchCounts } from "./bundle-fetch.ts";
import { importBundle, type ImportOptions } from "./bundle-import.ts";
import type { BundleInputs } from "./run-bundle.ts";

export interface LocalRunOptions extends ImportOptions {
  /** How to reach a registry; required for an `oci://` input (the CLI makes it from its flags). */
  readonly remote?: RemoteOptions;
  /** A relative path is taken from here (default: the process's). */
  readonly cwd?: string;
  readonly log?: (line: string) => void;
}

export interface LocalRun {
  readonly runDir: string;
  /** How the run got here. */
  readonly via: "run-dir" | "bundle" | "registry";
  /** What the bundle held of the run's inputs; undefined for a run directory. */
  readonly inputs: BundleInputs | undefined;
  /** The registry reference, canonical (`oci://HOST/REPO@sha256:…`), for a fetched run. */
  readonly reference?: string;
  /** For a fetched run: blobs fetched, and members this node had. */
  readonly counts?: FetchCounts;
}

/** The run directory for `input`: a run directory, a bundle file, or an `oci://HOST/REPO@sha256:…` reference. */
export async function localRun(input: string, opts: LocalRunOptions): Promise<LocalRun> {
  if (input.startsWith(BUNDLE_SCHEME)) {
    if (opts.remote === undefined)
      throw new CairnError("USAGE", `${input.slice(0, 200)} is a registry reference, and no registry options were given`, {
        path: input.slice(0, 200),
        hint: "pass `remote` (the transport and credentials) to localRun",
      });
    const r = await importRegistryBundle(input, { ...opts, remote: opts.remote });
    return { runDir: r.runDir, via: "registry", inputs: r.inputs, reference: r.reference, counts: r.counts };
  }
  const path = resolve(opts.cwd ?? process.cwd(), input);
  // a run directory or a bundle file, nothing else: a FIFO or device here is named as such, before any kit is looked for
  const st = statSync(path, { throwIfNoEntry: false });
  if (st === undefined || !(st.isFile() || st.isDirectory())) {
    const what = st === undefined ? "does not exist" : `is neither a run directory nor a bundle file (${fileKind(st)})`;
    throw new CairnError("RUN_INVALID", `${input} ${what}`, {
      path: input,
      hint: "give a run directory written by `cairn run`, a bundle written by `cairn bundle`, or oci://HOST/REPO@sha256:… from `cairn bundle push`",
    });
  }
  if (st.isDirectory()) return { runDir: path, via: "run-dir", inputs: undefined };
  opts.log?.(`importing ${input}`);
  const r = await importBundle(path, opts);
  return { runDir: r.runDir, via: "bundle", inputs: r.inputs };
}
