/**
 * A replay bundle in an OCI registry (`cairn bundle push`, `cairn replay
 * oci://…`): the single definition of the artifact cairn pushes and the only
 * shape it accepts back. No I/O.
 *
 * An OCI image manifest with `artifactType` BUNDLE_ARTIFACT; its config is
 * the bundle's index (`cairn-bundle.json`, the same bytes a bundle file
 * holds), and each of its layers is one other member of the bundle, its
 * bytes as they are (no tar, no compression), annotated with its member path
 * (MEMBER_ANNOTATION). So a node fetches the members it lacks, each by its
 * own digest, and a member two runs share (a kernel, a workload's layer) is
 * one blob in the registry and one object on the node.
 *
 * The layers are in the index's order (member paths in byte order) and the
 * manifest is JCS bytes: the same run pushed twice has the same digest.
 * Parsing here is shape only (strict: every key known, no key twice); what a
 * member may be (its place, its digest as its name, the index agreeing with
 * the layers) is decided by the bundle reader's one check (bundle-import.ts).
 */
import { CairnError, canonicalBytes, Checker, parseJsonBytes, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { OCI_MANIFEST, splitImageReference } from "../oci/index.ts";
import type { BundleMember } from "./run-bundle.ts";

export const BUNDLE_ARTIFACT = "application/vnd.cairn.bundle.v1+json";
/** The config's media type: the bundle's index. */
export const BUNDLE_INDEX_TYPE = "application/vnd.cairn.bundle.index.v1+json";
/** Every member's media type: its bytes, as the bundle holds them. */
export const BUNDLE_MEMBER_TYPE = "application/vnd.cairn.bundle.member.v1";
/** The annotation naming a layer's member path (`run/run.json`, `store/objects/<hex>`, …). */
export const MEMBER_ANNOTATION = "org.cairn.bundle.member";

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** How a bundle in a registry is named on the command line and in campaign files. */
export const BUNDLE_SCHEME = "oci://";

/** A bundle's place in a registry: `oci://HOST/REPO` plus a tag (push) or a digest (replay). */
export interface BundleRef {
  /** The registry host as written, with port. */
  readonly registry: string;
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: Sha256Digest | undefined;
}

/** The canonical `oci://HOST/REPO@sha256:…` (or `:TAG`) spelling. */
export function formatBundleRef(r: BundleRef): string {
  const name = `${BUNDLE_SCHEME}${r.registry}/${r.repository}`;
  return r.digest !== undefined ? `${name}@${r.digest}` : r.tag !== undefined ? `${name}:${r.tag}` : name;
}

/**
 * Parses `oci://HOST[:PORT]/REPO[:TAG][@sha256:…]` through the one image
 * reference grammar (oci/registry/image-ref.ts); the host must be written
 * (no Docker Hub default: a bundle goes where it is told). `need` says what
 * the command requires: "digest" (replay: the digest is the run's address,
 * a tag could move between two nodes of one campaign, so it is refused, not
 * resolved) or "tag-or-none" (push: the digest is the registry's answer).
 */
export function parseBundleRef(unsafe: string, field: string, need: "digest" | "tag-or-none"): BundleRef {
  const bad = (why: string, hint: string): never => {
    throw new CairnError("REFERENCE_INVALID", `bundle reference ${JSON.stringify(unsafe.slice(0, 200))} ${why}`, { path: field, hint });
  };
  const form = need === "digest" ? "oci://HOST[:PORT]/REPO@sha256:<64 hex>" : "oci://HOST[:PORT]/REPO[:TAG]";
  if (!unsafe.startsWith(BUNDLE_SCHEME)) bad(`does not start with ${BUNDLE_SCHEME}`, `write ${form}`);
  const r = splitImageReference(unsafe.slice(BUNDLE_SCHEME.length));
  if (!r.ok) return bad(r.why, `write ${form}`);
  if (r.parts.host === undefined) bad("names no registry host", `write ${form}, e.g. oci://127.0.0.1:5000/runs`);
  const ref = { registry: r.parts.host!, repository: r.parts.path, tag: r.parts.tag, digest: r.parts.digest };
  if (need === "digest" && (ref.digest === undefined || ref.tag !== undefined))
    bad(
      ref.digest === undefined ? "names no digest" : "names a tag and a digest",
      `replay needs the bundle's digest (${form}), as \`cairn bundle push\` prints it: a tag can move between two replays`,
    );
  if (need === "tag-or-none" && ref.digest !== undefined) bad("names a digest", `push to ${form}: the registry's digest of the bundle is printed`);
  return ref;
}

export interface BundleArtifact {
  readonly index: { readonly digest: Sha256Digest; readonly size: number };
  readonly members: readonly BundleMember[];
}

/** The manifest bytes for a bundle whose index has `index` and whose members are `members` (in the index's order). */
export function bundleManifestBytes(index: { digest: Sha256Digest; size: number }, members: readonly BundleMember[]): Buffer {
  const layers: JsonModel[] = members.map((m) => ({
    mediaType: BUNDLE_MEMBER_TYPE,
    digest: m.sha256,
    size: m.size,
    annotations: { [MEMBER_ANNOTATION]: m.path },
  }));
  return canonicalBytes({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: BUNDLE_ARTIFACT,
    config: { mediaType: BUNDLE_INDEX_TYPE, digest: index.digest, size: index.size },
    layers,
  });
}

/**
 * Reads a manifest fetched by digest (hostile: a registry serves what it
 * likes under a digest it was told). BUNDLE_INVALID naming the field for
 * anything but the shape above; a manifest that is not a cairn bundle at
 * all (another artifact, an image) says so.
 */
export function parseBundleManifest(bytes: Uint8Array, source: string): BundleArtifact {
  const c = new Checker("BUNDLE_INVALID");
  const o = c.object(parseJsonBytes(bytes, { source }), "", ["schemaVersion", "mediaType", "artifactType", "config", "layers"]) ?? {};
  if (o.artifactType !== BUNDLE_ARTIFACT) {
    throw new CairnError("BUNDLE_INVALID", `${source} is not a cairn replay bundle (artifactType ${JSON.stringify(o.artifactType ?? null)})`, {
      path: "/artifactType",
      hint: `push one with \`cairn bundle push RUN_DIR oci://HOST/REPO\` (artifactType ${BUNDLE_ARTIFACT}); nothing was imported`,
    });
  }
  if (o.schemaVersion !== 2) c.add("/schemaVersion", "must be 2");
  if (o.mediaType !== OCI_MANIFEST) c.add("/mediaType", `must be "${OCI_MANIFEST}"`);
  const cfg = c.object(c.required(o, "config", ""), "/config", ["mediaType", "digest", "size"]) ?? {};
  if (cfg.mediaType !== BUNDLE_INDEX_TYPE) c.add("/config/mediaType", `must be "${BUNDLE_INDEX_TYPE}"`);
  const index = {
    digest: (c.string(c.required(cfg, "digest", "/config"), "/config/digest", { pattern: DIGEST }) ?? "") as Sha256Digest,
    size: c.integer(c.required(cfg, "size", "/config"), "/config/size", { min: 0 }) ?? 0,
  };
  const layers = c.array(c.required(o, "layers", ""), "/layers") ?? [];
  const members: BundleMember[] = layers.map((l, i) => {
    const at = `/layers/${i}`;
    const lo = c.object(l, at, ["mediaType", "digest", "size", "annotations"]) ?? {};
    if (lo.mediaType !== BUNDLE_MEMBER_TYPE) c.add(`${at}/mediaType`, `must be "${BUNDLE_MEMBER_TYPE}"`);
    const ann = c.object(c.required(lo, "annotations", at), `${at}/annotations`, [MEMBER_ANNOTATION]) ?? {};
    return {
      path: c.string(c.required(ann, MEMBER_ANNOTATION, `${at}/annotations`), `${at}/annotations/${MEMBER_ANNOTATION}`, { nonEmpty: true, max: 1024 }) ?? "",
      sha256: (c.string(c.required(lo, "digest", at), `${at}/digest`, { pattern: DIGEST }) ?? "") as Sha256Digest,
      size: c.integer(c.required(lo, "size", at), `${at}/size`, { min: 0 }) ?? 0,
    };
  });
  c.done(`invalid bundle manifest ${source}`, "the artifact was not pushed by `cairn bundle push`; nothing was imported");
  return { index, members };
}
