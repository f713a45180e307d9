/**
 * The single definition of how a cairn identity is hashed: the domain tag
 * (for example `cairn.launch/1`) in UTF-8, one NUL byte, then the content
 * bytes, all under SHA-256. The tag keeps two identities whose content bytes
 * happen to coincide (a launch model and a source model, say) from sharing a
 * digest, and its version number changes whenever the content rules change.
 */
import { canonicalBytes, sha256, type Sha256Digest } from "../core/index.ts";

export function taggedDigest(tag: string, content: Uint8Array): Sha256Digest {
  const head = Buffer.from(`${tag}\0`, "utf8");
  return sha256(Buffer.concat([head, content]));
}

/** A JSON identity: the tag, NUL, then the RFC 8785 (JCS) bytes of `model`. */
export function taggedJsonDigest(tag: string, model: unknown): Sha256Digest {
  return taggedDigest(tag, canonicalBytes(model));
}
