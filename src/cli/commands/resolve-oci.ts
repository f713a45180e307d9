/**
 * `--base oci:LAYOUT@sha256:DIGEST`: the CLI composes the workload area's OCI
 * reader and layer application (digest-verified, bounded, path-safe) with the
 * strata probe, which sees the image only as a read-only RootView. Strata
 * never imports workload; this file is the seam.
 *
 * The probe reads an ordinary distribution image, so its in-memory view copies
 * hard links and strips setuid/setgid bits (`hardlinks: copy, setid: strip`);
 * that relaxation shapes only what the probe reads and is not an identity.
 * File bytes are kept in memory only up to probe.max_cached_file_bytes each
 * (the probe reads os-release, ELF headers and libc, all far smaller).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { CairnError, parseSha256, sha256, type Sha256Digest } from "../../core/index.ts";
import { parsePolicy, type CanonicalTree, type ContentSink } from "../../workload/index.ts";
import { readOciSource } from "../../workload/oci/index.ts";
import { applyLayers } from "../../workload/layers/index.ts";
import { probeRoot, probedBase, type LockBase, type RootView } from "../../strata/index.ts";
import type { Context } from "../main.ts";

/** probe.max_cached_file_bytes */
export const MAX_CACHED_FILE_BYTES = 32 * 1024 * 1024;

/** A RootView over a canonical tree and the bytes its sink kept. */
export function treeView(tree: CanonicalTree, content: ReadonlyMap<Sha256Digest, Uint8Array>): RootView {
  const children = new Map<string, string[]>();
  for (const path of tree.keys()) {
    if (path === "/") continue;
    const cut = path.lastIndexOf("/");
    const parent = cut === 0 ? "/" : path.slice(0, cut);
    const list = children.get(parent) ?? [];
    list.push(path.slice(cut + 1));
    children.set(parent, list);
  }
  const norm = (p: string): string => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p);
  return {
    async readFile(path, maxBytes) {
      const e = tree.get(norm(path));
      if (e?.type !== "file") return undefined;
      const bytes = content.get(e.sha256);
      return bytes?.subarray(0, Math.min(bytes.length, maxBytes));
    },
    async readlink(path) {
      const e = tree.get(norm(path));
      return e?.type === "symlink" ? e.target : undefined;
    },
    async list(path) {
      const e = tree.get(norm(path));
      return e?.type === "dir" ? [...(children.get(norm(path)) ?? [])].sort() : undefined;
    },
  };
}

export async function probeOciBase(ctx: Context, spec: string, now: Date): Promise<LockBase> {
  const m = /^(.+)@(sha256:[0-9a-f]{64})$/.exec(spec);
  if (m === null) throw new CairnError("USAGE", "--base oci: needs LAYOUT@sha256:DIGEST (the image manifest digest)");
  const layoutDir = resolvePath(ctx.cwd, m[1]!);
  const manifest = parseSha256(m[2], "--base");
  const staging = mkdtempSync(join(tmpdir(), "cairn-probe-"));
  try {
    const src = await readOciSource({ layoutDir, manifestDigest: manifest, stagingDir: join(staging, "oci") });
    const content = new Map<Sha256Digest, Uint8Array>();
    const sink: ContentSink = {
      async put(data) {
        const d = sha256(data);
        if (data.length <= MAX_CACHED_FILE_BYTES) content.set(d, data);
        return { sha256: d, size: data.length };
      },
    };
    const { tree } = await applyLayers({ layers: src.layers, policy: parsePolicy({ hardlinks: "copy", setid: "strip" }), sink });
    const where = `oci:${layoutDir}`;
    return probedBase(await probeRoot(treeView(tree, content), where), where, now, manifest);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
