/**
 * Pinning a devcontainer.json: every OCI reference that names a tag (the
 * `image`, and each OCI feature id) is resolved through its registry to the
 * digest the tag names now, and the file is rewritten with `@sha256:…`
 * appended, in place, so comments, order and formatting survive (only the
 * bytes of the rewritten strings change). Alongside, the devcontainers CLI's
 * own lockfile (`devcontainer-lock.json`: `features.<id as written>` →
 * `{version, resolved, integrity}`) records what each feature tag resolved
 * to. Nothing is pinned that cannot be: https tarballs, local features,
 * legacy ids and Dockerfile builds are reported as left unpinned.
 *
 * The text is validated by the same strict parser ingest uses before any
 * edit; a reference that is already pinned is left as it is.
 */
import { parseTree, type Node } from "jsonc-parser";
import { CairnError, isJsonObject, parseJsonBytes, sortedRecord, type Sha256Digest } from "../core/index.ts";
import { parseImageRef, registryClientFor, type ImageRef, type RemoteOptions } from "../oci/index.ts";
import { parseInputText } from "./read.ts";
import { normalizeFeatureId, parseReference } from "./reference.ts";

export interface PinChange {
  /** JSON pointer of the rewritten string (`/image`, `/features/<id>`). */
  readonly path: string;
  readonly from: string;
  readonly to: string;
}

export interface FeatureLock {
  readonly version: string;
  readonly resolved: string;
  readonly integrity: string;
}

export interface PinResult {
  /** The pinned devcontainer.json text. */
  readonly text: string;
  readonly changes: readonly PinChange[];
  /** What could not be pinned, and why (pointer → reason). */
  readonly unpinnable: readonly { readonly path: string; readonly why: string }[];
  /** The devcontainers CLI lockfile model. */
  readonly lock: { readonly features: Readonly<Record<string, FeatureLock>> };
}

/** How one reference resolves: its manifest digest and, for a feature, its version. */
export type Resolver = (ref: ImageRef, kind: "image" | "feature") => Promise<{ digest: Sha256Digest; version: string | undefined }>;

const escapeKey = (k: string): string => k.replaceAll("~", "~0").replaceAll("/", "~1");

/** Resolves through the registries the references name (see `RemoteOptions`); a feature's version comes from its `dev.containers.metadata` annotation. */
export function registryResolver(opts: RemoteOptions): Resolver {
  return async (ref, kind) => {
    const client = registryClientFor(ref, opts);
    const d = await client.resolve(ref.repository, ref.tag ?? "latest");
    let version: string | undefined;
    if (kind === "feature") {
      const m = await client.fetchManifest(ref.repository, d.digest, d.size);
      const doc = parseJsonBytes(m.bytes, { source: `feature manifest ${d.digest}` });
      const meta = isJsonObject(doc) && isJsonObject(doc.annotations) ? doc.annotations["dev.containers.metadata"] : undefined;
      if (typeof meta === "string") {
        try {
          const parsed = parseJsonBytes(Buffer.from(meta, "utf8"), { source: "dev.containers.metadata" });
          if (isJsonObject(parsed) && typeof parsed.version === "string") version = parsed.version;
        } catch {
          version = undefined; // an unreadable annotation: the tag stands in below
        }
      }
    }
    return { digest: d.digest, version };
  };
}

/** Pins `text` (a devcontainer.json) with `resolve`; see the module comment. */
export async function pinDevcontainer(text: string, source: string, resolve: Resolver): Promise<PinResult> {
  parseInputText(text, source); // strict: duplicates, __proto__, bad numbers are refused before any edit
  const tree = parseTree(text);
  if (tree === undefined || tree.type !== "object") throw new CairnError("MANIFEST_REFUSED", `${source} is not a JSON object`, { path: "" });
  const edits: { node: Node; replacement: string }[] = [];
  const changes: PinChange[] = [];
  const unpinnable: { path: string; why: string }[] = [];
  const features: Record<string, FeatureLock> = {};
  const prop = (name: string): Node | undefined => tree.children?.find((p) => p.children?.[0]?.value === name);

  const image = prop("image")?.children?.[1];
  if (image?.type === "string" && typeof image.value === "string") {
    const value: string = image.value;
    const r = parseReference(value);
    if (r.ok && !r.ref.pinned) {
      const ref = parseImageRef(value, "/image");
      const { digest } = await resolve(ref, "image");
      const to = `${value}@${digest}`;
      edits.push({ node: image, replacement: JSON.stringify(to) });
      changes.push({ path: "/image", from: value, to });
    }
  } else if (prop("build") !== undefined || prop("dockerFile") !== undefined) {
    unpinnable.push({ path: "/build", why: "a Dockerfile build has no registry digest; pin its FROM lines instead" });
  }

  const feats = prop("features")?.children?.[1];
  for (const p of feats?.type === "object" ? (feats.children ?? []) : []) {
    const keyNode = p.children?.[0];
    const id = keyNode?.value;
    if (keyNode === undefined || typeof id !== "string") continue;
    const path = `/features/${escapeKey(id)}`;
    const n = normalizeFeatureId(id);
    if (!n.ok) continue; // ingest refuses it, naming why
    if (n.kind !== "oci") {
      unpinnable.push({ path, why: `a ${n.kind} feature has no registry digest` });
      continue;
    }
    if (n.pinned) continue;
    const ref = parseImageRef(n.id, path);
    const { digest, version } = await resolve(ref, "feature");
    const to = `${n.base}@${digest}`;
    edits.push({ node: keyNode, replacement: JSON.stringify(to) });
    changes.push({ path, from: id, to });
    features[id] = { version: version ?? ref.tag ?? "latest", resolved: to, integrity: digest };
  }

  let out = text;
  for (const e of edits.sort((a, b) => b.node.offset - a.node.offset))
    out = out.slice(0, e.node.offset) + e.replacement + out.slice(e.node.offset + e.node.length);
  parseInputText(out, source); // the rewritten text still reads strictly
  return { text: out, changes, unpinnable, lock: { features } };
}

/** The lockfile text as the devcontainers CLI writes it (2-space JSON, features sorted by id). */
export function lockfileText(lock: PinResult["lock"]): string {
  const features = sortedRecord(new Map(Object.entries(lock.features)));
  return `${JSON.stringify({ features }, null, 2)}\n`;
}
