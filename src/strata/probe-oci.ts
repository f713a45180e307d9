/**
 * Probing a base from an OCI image: the library function behind
 * `--base oci:LAYOUT@sha256:DIGEST`. It composes the OCI area's reader
 * (digest-verified, bounded, no-follow, privately staged) and the tree area's
 * layer application (the strict tar gate, in memory) with the static probe,
 * which sees the image only as a read-only RootView. It used to live in the
 * CLI, out of reach of a library user, because strata could not import the
 * workload area that held the OCI code; both now sit on the floor below.
 *
 * The probe reads an ordinary distribution image, so its in-memory view copies
 * hard links and strips setuid/setgid bits (`hardlinks: copy, setid: strip`);
 * that relaxation shapes only what the probe reads and is not an identity.
 * File bytes are kept in memory only up to probe.max_cached_file_bytes each
 * (the probe reads os-release, ELF headers and libc, all far smaller).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseSha256, type Sha256Digest } from "../core/index.ts";
import { readOciSource } from "../oci/index.ts";
import { applyLayers, parsePolicy, treeView, wholeFileSink } from "../tree/index.ts";
import { probedBase, type LockBase } from "./base.ts";
import { probeRoot } from "./probe.ts";

/** probe.max_cached_file_bytes */
export const MAX_CACHED_FILE_BYTES = 32 * 1024 * 1024;

export interface ProbeOciOptions {
  /** The OCI image layout directory (absolute, or relative to the process's cwd). */
  readonly layoutDir: string;
  /** The image manifest to select from the layout's index.json (verified, never trusted). */
  readonly manifestDigest: string;
  /** The probe time recorded as `probed_at` (provenance, not identity). */
  readonly now: Date;
  /** Where private staging goes (a fresh directory is made inside and removed afterwards); default the OS temp dir. */
  readonly tmpDir?: string;
}

/** Probes the root filesystem of the selected image; the base records the image manifest digest and `source: oci:<layoutDir>`. */
export async function probeOciBase(options: ProbeOciOptions): Promise<LockBase> {
  const { layoutDir, now } = options;
  const manifest: Sha256Digest = parseSha256(options.manifestDigest, "--base");
  const staging = mkdtempSync(join(options.tmpDir ?? tmpdir(), "cairn-probe-"));
  try {
    const src = await readOciSource({ layoutDir, manifestDigest: manifest, stagingDir: join(staging, "oci") });
    const content = new Map<Sha256Digest, Uint8Array>();
    const sink = wholeFileSink(
      (a, data) => {
        if (data !== undefined) content.set(a.sha256, data);
      },
      (size) => size <= MAX_CACHED_FILE_BYTES,
    );
    const { tree } = await applyLayers({ layers: src.layers, policy: parsePolicy({ hardlinks: "copy", setid: "strip" }), sink });
    const where = `oci:${layoutDir}`;
    return probedBase(await probeRoot(treeView(tree, content), where), where, now, manifest);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
