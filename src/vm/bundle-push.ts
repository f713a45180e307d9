/**
 * Pushing a replay bundle to an OCI registry (`cairn bundle push RUN_DIR|BUNDLE
 * oci://HOST/REPO[:TAG]`) as the artifact of bundle-artifact.ts: every
 * member a blob (skipped when the registry has it: a kernel or a workload's
 * layer shared with a run pushed before is sent once), the index as the
 * config, then the manifest, under the tag or else under its own digest.
 * The manifest goes last: a push interrupted at any point leaves at most
 * unreferenced blobs, never a manifest naming a missing member.
 *
 * What is pushed is what `cairn bundle` would write, from the one collector
 * (run-bundle.ts `collectRunBundle`): nothing private unless
 * `includePrivate`, no run input unless `includeInputs`, under the same
 * rules. A bundle file is pushed as it is, after the bundle reader's checks
 * (bundle-import.ts `openBundle`): its private members are those its maker
 * chose, so the private flags are refused with a file (they could not add
 * or remove anything).
 */
import { statSync } from "node:fs";
import { CairnError, sha256, type Progress, type Sha256Digest } from "../core/index.ts";
import { OCI_MANIFEST, registryClientFor, type RemoteOptions } from "../oci/index.ts";
import { bundleManifestBytes, formatBundleRef, parseBundleRef } from "./bundle-artifact.ts";
import { openBundle, parseIndex } from "./bundle-import.ts";
import { bundleKit, collectRunBundle, type BundleInputs, type BundleMember } from "./run-bundle.ts";

export interface PushBundleOptions {
  /** A run directory (written by `cairn run`, or imported) or a bundle file (written by `cairn bundle`). */
  readonly source: string;
  /** `oci://HOST[:PORT]/REPO[:TAG]`. */
  readonly reference: string;
  readonly storeDir: string;
  readonly kitDir: string;
  readonly remote: RemoteOptions;
  readonly includePrivate?: boolean;
  readonly includeInputs?: boolean;
  /** Progress: phase "push" in bytes of the bundle's members and index, as each blob is sent (or found present). */
  readonly progress?: Progress | undefined;
}

export interface PushedBundle {
  /** `oci://HOST/REPO@sha256:…`: what `cairn replay` takes. */
  readonly reference: string;
  readonly digest: Sha256Digest;
  readonly tag: string | undefined;
  readonly runId: string;
  readonly members: number;
  readonly memberBytes: number;
  /** Blobs uploaded, and blobs the registry had already. */
  readonly uploaded: number;
  readonly present: number;
  /** The bundle holds private members (streams, console, protocol, checkpoints; always a branch's start and prefix) or the run's inputs. */
  readonly private: boolean;
  readonly inputs: BundleInputs;
}

interface PushSource {
  readonly runId: string;
  readonly index: Uint8Array;
  readonly members: readonly BundleMember[];
  bytes(path: string): Uint8Array;
  readonly private: boolean;
  readonly inputs: BundleInputs;
  dispose(): void;
}

async function sourceOf(opts: PushBundleOptions): Promise<PushSource> {
  const st = statSync(opts.source, { throwIfNoEntry: false });
  if (st?.isFile() === true) {
    if (opts.includePrivate === true || opts.includeInputs === true) {
      throw new CairnError("USAGE", "--include-private and --include-inputs apply to a run directory; a bundle file is pushed as it was written", {
        path: opts.source,
        hint: "run `cairn bundle RUN_DIR --out FILE` with those flags, or push the run directory",
      });
    }
    const b = await openBundle(opts.source);
    const paths = [...b.members.keys()];
    return {
      runId: b.runId,
      index: b.index,
      members: parseIndex(b.index).members,
      bytes: (p) => b.members.get(p)!,
      private: paths.some((p) => p.startsWith("private/")) || b.inputs === "included",
      inputs: b.inputs,
      dispose: () => b.dispose(),
    };
  }
  if (st?.isDirectory() !== true) {
    throw new CairnError("RUN_INVALID", `${opts.source} is neither a run directory nor a bundle file`, {
      path: opts.source,
      hint: "give a run directory written by `cairn run` or a bundle written by `cairn bundle`",
    });
  }
  const c = collectRunBundle({
    runDir: opts.source,
    storeDir: opts.storeDir,
    kit: bundleKit(opts.kitDir, opts.source),
    includePrivate: opts.includePrivate === true,
    includeInputs: opts.includeInputs === true,
  });
  return { runId: c.runId, index: c.index, members: c.members, bytes: (p) => c.files.get(p)!, private: c.owned, inputs: c.inputs, dispose: () => {} };
}

/** Pushes the bundle of `opts.source` to `opts.reference`; returns the manifest's reference by digest. */
export async function pushBundle(opts: PushBundleOptions): Promise<PushedBundle> {
  const ref = parseBundleRef(opts.reference, "reference", "tag-or-none");
  const src = await sourceOf(opts);
  try {
    const client = registryClientFor({ registry: ref.registry }, opts.remote);
    let uploaded = 0;
    let present = 0;
    const count = (r: "pushed" | "present"): void => void (r === "pushed" ? uploaded++ : present++);
    const sent = new Set<Sha256Digest>();
    const unique = src.members.filter((m) => !sent.has(m.sha256) && sent.add(m.sha256) !== undefined);
    const total = unique.reduce((n, m) => n + m.size, 0) + src.index.length;
    let done = 0;
    opts.progress?.({ phase: "push", done, total, unit: "bytes" });
    for (const m of unique) {
      count(await client.pushBlob(ref.repository, m.sha256, src.bytes(m.path)));
      done += m.size;
      opts.progress?.({ phase: "push", done, total, unit: "bytes" });
    }
    const index = { digest: sha256(src.index), size: src.index.length };
    count(await client.pushBlob(ref.repository, index.digest, src.index));
    opts.progress?.({ phase: "push", done: total, total, unit: "bytes" });
    const manifest = bundleManifestBytes(index, src.members);
    const digest = await client.pushManifest(ref.repository, ref.tag ?? sha256(manifest), manifest, OCI_MANIFEST);
    return {
      reference: formatBundleRef({ ...ref, tag: undefined, digest }),
      digest,
      tag: ref.tag,
      runId: src.runId,
      members: src.members.length,
      memberBytes: src.members.reduce((n, m) => n + m.size, 0),
      uploaded,
      present,
      private: src.private,
      inputs: src.inputs,
    };
  } finally {
    src.dispose();
  }
}
