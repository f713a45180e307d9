/**
 * The single definition of how a cairn identity is hashed, and of the shape
 * that says what an identity covers. Before this file there were five
 * hashing idioms (a tag and NUL in front of JCS, written three times; the tag
 * as a `schema` field; the tag as a `tag` field; a core carrying its own
 * `schema`; plain JCS) and five shapes of scope table. Two idioms for one
 * rule drift apart, and a value computed the "other" way is a silent identity
 * change; so every identity is now a declared value, and one function hashes
 * a model under a declaration.
 *
 * Framings (what exactly is hashed):
 *   tag-nul-jcs      H( tag || 0x00 || JCS(model) )           — new identities use this
 *   tag-nul-binary   H( tag || 0x00 || framed bytes )          — binary framings (cairn.fs/1), streamed
 *   jcs-schema-field H( JCS(model with `schema: tag`) )        — EnvironmentID, derived entry (kept for value stability)
 *   jcs-tag-field    H( JCS(model with `tag: tag`) )           — base digest (kept for value stability)
 *   jcs-own-schema   H( JCS(model) ), the model carries `schema: tag` itself — manifest address (kept for value stability)
 *   jcs              H( JCS(model) ), no tag at all            — integrity digests only, never an identity
 * The tag is versioned (`cairn.x/N`); a change to what a framing hashes is a
 * new version of the tag, never a silent change of value.
 *
 * An *identity* says what a thing is and is compared across sources. An
 * *integrity* digest (the workload lock's `lock_digest`, the profile digest,
 * the agent source digest) only notices that one document or input changed;
 * it is declared here too, marked `role: "integrity"`, so no digest is an
 * inline idiom. docs/identities.md is checked against every declaration.
 */
import { blake3, sha256, Sha256Hasher, type Blake3Digest, type DigestAlgorithm, type Sha256Digest } from "./digest.ts";
import { canonicalBytes } from "./jcs.ts";

export type IdentityFraming = "tag-nul-jcs" | "tag-nul-binary" | "jcs-schema-field" | "jcs-tag-field" | "jcs-own-schema" | "jcs";
export type IdentityRole = "identity" | "integrity";

export interface IdentityDeclaration<A extends DigestAlgorithm = DigestAlgorithm> {
  /** What people call it ("EnvironmentID", "workload lock_digest"). */
  readonly name: string;
  /** The versioned domain tag. For framing `jcs` it names the document the digest is recorded in, and is not hashed. */
  readonly tag: string;
  readonly algorithm: A;
  readonly framing: IdentityFraming;
  readonly role: IdentityRole;
  /** The source file that computes it (repository-relative). */
  readonly definedIn: string;
}

export type IdentityDigest<A extends DigestAlgorithm> = A extends "blake3" ? Blake3Digest : Sha256Digest;

/**
 * Tags are cairn's own (`cairn.<name>/<n>`) or a standard's that cairn
 * implements (`sandbox.<name>/<n>`: the environment manifest standard fixes
 * its core's tag as `sandbox.env-manifest/1`, and an address is only shared
 * with other conforming implementations when the tag is exactly that). Any
 * other namespace is refused, so a typo cannot mint a new domain.
 */
const TAG_RE = /^(?:cairn|sandbox)\.[a-z0-9][a-z0-9.-]*\/[1-9][0-9]*$/;

/** Declares an identity (checked once, frozen). Untagged `jcs` is allowed only for integrity digests. */
export function declareIdentity<const D extends IdentityDeclaration>(d: D): Readonly<D> {
  if (!TAG_RE.test(d.tag)) throw new TypeError(`identity ${d.name}: tag ${JSON.stringify(d.tag)} is not cairn.<name>/<version> or sandbox.<name>/<version>`);
  if (d.framing === "jcs" && d.role !== "integrity") throw new TypeError(`identity ${d.name}: an untagged framing is only for integrity digests`);
  if (d.framing === "tag-nul-binary" && d.algorithm !== "sha256") throw new TypeError(`identity ${d.name}: binary framings stream into SHA-256`);
  return Object.freeze({ ...d });
}

/** True for a value made by `declareIdentity` (used by the docs test to collect every declaration). */
export function isIdentityDeclaration(v: unknown): v is IdentityDeclaration {
  if (typeof v !== "object" || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.name === "string" &&
    typeof o.tag === "string" &&
    typeof o.framing === "string" &&
    typeof o.definedIn === "string" &&
    (o.algorithm === "sha256" || o.algorithm === "blake3") &&
    (o.role === "identity" || o.role === "integrity")
  );
}

function withField(decl: IdentityDeclaration, model: unknown, field: "schema" | "tag"): Record<string, unknown> {
  if (typeof model !== "object" || model === null || Array.isArray(model)) throw new TypeError(`identity ${decl.name}: the model must be an object`);
  const o = model as Record<string, unknown>;
  if (Object.hasOwn(o, field) && o[field] !== decl.tag) throw new TypeError(`identity ${decl.name}: the model's ${field} is not ${decl.tag}`);
  return { ...o, [field]: decl.tag };
}

/** Exactly the bytes an identity hashes (a manifest is signed over these; a derived entry is stored as these). */
export function identityBytes(decl: IdentityDeclaration, model: unknown): Buffer {
  switch (decl.framing) {
    case "tag-nul-jcs":
      return Buffer.concat([Buffer.from(`${decl.tag}\0`, "utf8"), canonicalBytes(model)]);
    case "jcs-schema-field":
      return canonicalBytes(withField(decl, model, "schema"));
    case "jcs-tag-field":
      return canonicalBytes(withField(decl, model, "tag"));
    case "jcs-own-schema":
    // The model carries `schema` itself. Not enforced here: a reader hashes a stored core exactly as stored, before validating it (tamper check first).
    case "jcs":
      return canonicalBytes(model);
    case "tag-nul-binary":
      throw new TypeError(`identity ${decl.name}: a binary framing is hashed with identityHasher`);
  }
}

/** The digest of `model` under `decl`: the one function every JSON identity and integrity digest goes through. */
export function identityDigest<A extends DigestAlgorithm>(decl: IdentityDeclaration<A>, model: unknown): IdentityDigest<A> {
  const bytes = identityBytes(decl, model);
  return (decl.algorithm === "blake3" ? blake3(bytes) : sha256(bytes)) as IdentityDigest<A>;
}

/** A SHA-256 hasher already fed `tag || 0x00`, for binary framings streamed entry by entry. */
export function identityHasher(decl: IdentityDeclaration<"sha256">): Sha256Hasher {
  if (decl.framing !== "tag-nul-binary") throw new TypeError(`identity ${decl.name}: only a binary framing is streamed`);
  return new Sha256Hasher().update(Buffer.from(`${decl.tag}\0`, "utf8"));
}

/**
 * What an identity covers and what it deliberately leaves out, each field
 * with the reason. The one shape of every scope table.
 *
 * Field paths are JSON pointers into the identity's model ("/base/digest").
 * `*` stands for every element of an array ("/layers/* /id", without the
 * space). When an identity spans several models, the pointer is prefixed by
 * the model's name and a colon ("spec:/limits", "lock:/lock_digest"). A field
 * listed with children listed too is walked into by the exhaustiveness test;
 * a field listed without children is classified whole.
 */
export interface IdentityScope {
  /** The identity's tag (its declaration's `tag`). */
  readonly identity: string;
  readonly covers: Readonly<Record<string, string>>;
  readonly excludes: Readonly<Record<string, string>>;
}

const FIELD_RE = /^(?:[a-z][a-z0-9-]*:)?(?:\/[^/]+)+$/;

/** Declares a scope: paths well formed, every reason said, no field in both lists. Frozen. */
export function defineScope<const S extends IdentityScope>(scope: S): Readonly<S> {
  for (const list of [scope.covers, scope.excludes]) {
    for (const [field, why] of Object.entries(list)) {
      if (!FIELD_RE.test(field)) throw new TypeError(`scope ${scope.identity}: ${JSON.stringify(field)} is not a field path`);
      if (why.trim().length < 8) throw new TypeError(`scope ${scope.identity}: ${field} needs a reason`);
    }
  }
  for (const field of Object.keys(scope.covers)) {
    if (Object.hasOwn(scope.excludes, field)) throw new TypeError(`scope ${scope.identity}: ${field} is both covered and excluded`);
  }
  return Object.freeze({ ...scope, covers: Object.freeze({ ...scope.covers }), excludes: Object.freeze({ ...scope.excludes }) });
}

/** The names of the fields directly under `parent` ("" for the top level, "/layers/*"), in table order. */
export function scopeFieldNames(scope: IdentityScope, list: "covers" | "excludes", parent = ""): string[] {
  const out: string[] = [];
  for (const field of Object.keys(scope[list])) {
    if (!field.startsWith(`${parent}/`)) continue;
    const rest = field.slice(parent.length + 1);
    if (!rest.includes("/")) out.push(rest);
  }
  return out;
}
