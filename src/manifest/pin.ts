/**
 * Pinning a devcontainer.json: every OCI reference that names a tag (the
 * `image`, and each OCI feature id) is resolved through its registry to the
 * digest the tag names now, and the file is rewritten with `@sha256:…`
 * appended, in place, so comments, order and formatting survive (only the
 * bytes of the rewritten strings change). Alongside, the devcontainers CLI's
 * own lockfile (devcontainer-lock.ts) records every feature of the resolved
 * `dependsOn` closure, keyed by the id as written in the file the lock will
 * sit beside: the rewritten file (`rewrite`), or the file as it is
 * (`keep`: what `devcontainer upgrade` writes). Nothing is pinned that
 * cannot be: https tarballs, local features, legacy ids and Dockerfile
 * builds are reported as left unpinned.
 *
 * The text is validated by the same strict parser ingest uses before any
 * edit; a reference that is already pinned is left as it is.
 */
import { parseTree, type Node } from "jsonc-parser";
import { CairnError, isJsonObject, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { parseImageRef, registryClientFor, type ImageRef, type RemoteOptions } from "../oci/index.ts";
import type { Store } from "../store/index.ts";
import { lockOfClosure, type DevcontainerLock } from "./devcontainer-lock.ts";
import { resolveFeatureClosure, type FeatureClosure } from "./feature-closure.ts";
import { registryFeatureSource, type FeatureOptionValues, type FeatureSource } from "./feature-metadata.ts";
import { parseInputText } from "./read.ts";
import { normalizeFeatureId, parseReference } from "./reference.ts";

export interface PinChange {
  /** JSON pointer of the rewritten string (`/image`, `/features/<id>`). */
  readonly path: string;
  readonly from: string;
  readonly to: string;
}

export interface PinResult {
  /** The pinned devcontainer.json text. */
  readonly text: string;
  readonly changes: readonly PinChange[];
  /** What could not be pinned, and why (pointer → reason). */
  readonly unpinnable: readonly { readonly path: string; readonly why: string }[];
  /** The devcontainers CLI lockfile for the file the lock sits beside (see `PinOptions.lockFor`). */
  readonly lock: DevcontainerLock;
  /** The resolved closure, in the CLI's install order. */
  readonly closure: FeatureClosure;
}

/** Where pinning resolves: the image's registry, and feature artifacts. */
export interface PinSources {
  readonly image: (ref: ImageRef) => Promise<Sha256Digest>;
  readonly features: FeatureSource;
}

export interface PinOptions {
  /** Which file the lock's keys follow: the rewritten one (default), or the file as it is. */
  readonly lockFor?: "rewrite" | "keep";
  /** A lockfile whose digests are used instead of the tags (the CLI's build; `--frozen-lockfile`): nothing is re-resolved. */
  readonly locked?: DevcontainerLock;
}

const escapeKey = (k: string): string => k.replaceAll("~", "~0").replaceAll("/", "~1");

/** Resolves through the registries the references name (see `RemoteOptions`), keeping fetched feature bytes in `store` when given. */
export function registryPinSources(opts: RemoteOptions, store?: Store): PinSources {
  return {
    image: async (ref) => (await registryClientFor(ref, opts).resolve(ref.repository, ref.tag ?? "latest")).digest,
    features: registryFeatureSource(opts, store),
  };
}

function optionsOf(v: JsonModel | undefined): FeatureOptionValues | undefined {
  if (typeof v === "string") return v;
  if (!isJsonObject(v)) return undefined;
  const out: { [k: string]: string | boolean } = {};
  for (const [k, o] of Object.entries(v)) if (typeof o === "string" || typeof o === "boolean") out[k] = o;
  return out;
}

/** Pins `text` (a devcontainer.json) with `sources`; see the module comment. */
export async function pinDevcontainer(text: string, source: string, sources: PinSources, options: PinOptions = {}): Promise<PinResult> {
  const model = parseInputText(text, source); // strict: duplicates, __proto__, bad numbers are refused before any edit
  const tree = parseTree(text);
  if (tree === undefined || tree.type !== "object" || !isJsonObject(model))
    throw new CairnError("MANIFEST_REFUSED", `${source} is not a JSON object`, { path: "" });
  const edits: { node: Node; replacement: string }[] = [];
  const changes: PinChange[] = [];
  const unpinnable: { path: string; why: string }[] = [];
  const prop = (name: string): Node | undefined => tree.children?.find((p) => p.children?.[0]?.value === name);
  const locked = options.locked;

  const image = prop("image")?.children?.[1];
  if (image?.type === "string" && typeof image.value === "string") {
    const value: string = image.value;
    const r = parseReference(value);
    if (r.ok && !r.ref.pinned && locked === undefined) {
      const digest = await sources.image(parseImageRef(value, "/image"));
      const to = `${value}@${digest}`;
      edits.push({ node: image, replacement: JSON.stringify(to) });
      changes.push({ path: "/image", from: value, to });
    }
  } else if (prop("build") !== undefined || prop("dockerFile") !== undefined) {
    unpinnable.push({ path: "/build", why: "a Dockerfile build has no registry digest; pin its FROM lines instead" });
  }

  const declaredOptions = isJsonObject(model.features) ? model.features : {};
  const digests = new Map<string, Sha256Digest>(); // id as written → the digest its tag names now
  const declared: [string, string, FeatureOptionValues | undefined][] = []; // [as written, as rewritten, options]
  const feats = prop("features")?.children?.[1];
  for (const p of feats?.type === "object" ? (feats.children ?? []) : []) {
    const keyNode = p.children?.[0];
    const id = keyNode?.value;
    if (keyNode === undefined || typeof id !== "string") continue;
    const path = `/features/${escapeKey(id)}`;
    const opts = optionsOf(declaredOptions[id]);
    const n = normalizeFeatureId(id);
    if (!n.ok) continue; // ingest refuses it, naming why
    if (n.kind !== "oci") {
      unpinnable.push({ path, why: `a ${n.kind} feature has no registry digest` });
      declared.push([id, id, opts]);
      continue;
    }
    if (n.pinned || locked !== undefined) {
      declared.push([id, id, opts]);
      continue;
    }
    const digest = await sources.features.resolve(parseImageRef(n.id, path), id);
    const to = `${n.base}@${digest}`;
    digests.set(id, digest);
    edits.push({ node: keyNode, replacement: JSON.stringify(to) });
    changes.push({ path, from: id, to });
    declared.push([id, to, opts]);
  }

  const keep = options.lockFor === "keep" || locked !== undefined;
  const closure = await resolveFeatureClosure(
    declared.map(([written, rewritten, o]) => [keep ? written : rewritten, o] as const),
    {
      source: sources.features,
      // fetch each declared tag at the digest just resolved (a tag that moves between two reads must not split the lock from the file)
      locked: (id) => (locked !== undefined ? lockedDigest(locked, id) : digests.get(id)),
      ...(Array.isArray(model.overrideFeatureInstallOrder)
        ? { overrideFeatureInstallOrder: model.overrideFeatureInstallOrder.filter((x): x is string => typeof x === "string") }
        : {}),
    },
  );

  let out = text;
  if (locked === undefined) {
    for (const e of edits.sort((a, b) => b.node.offset - a.node.offset))
      out = out.slice(0, e.node.offset) + e.replacement + out.slice(e.node.offset + e.node.length);
    parseInputText(out, source); // the rewritten text still reads strictly
  }
  return { text: out, changes, unpinnable, lock: lockOfClosure(closure), closure };
}

/** The digest a lock gives for a feature id (its `integrity`), when it is a well-formed digest. */
function lockedDigest(lock: DevcontainerLock, id: string): Sha256Digest | undefined {
  const e = Object.hasOwn(lock.features, id) ? lock.features[id] : undefined;
  return e !== undefined && /^sha256:[0-9a-f]{64}$/.test(e.integrity) ? (e.integrity as Sha256Digest) : undefined;
}
