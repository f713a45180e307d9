/**
 * The name an image layout gives an image: the
 * `org.opencontainers.image.ref.name` annotation of a descriptor in
 * `index.json`, which `umoci … --image LAYOUT:NAME` and `skopeo …
 * oci:LAYOUT:NAME` look up. Its grammar is the image spec's (annotations.md,
 * pre-defined annotation keys): components of ASCII letters and digits
 * joined by one separator (`-` `.` `_` `:` `@` `+` or `--`), components
 * joined by `/`. A name outside it is refused rather than written: a peer
 * would not find the image by it, or would find it by another name (a space
 * or a second `/` changes how `LAYOUT:NAME` splits), and a non-ASCII or
 * control character would reach every tool that prints the index.
 *
 * The grammar sets no length; cairn bounds it (`oci.max_ref_name_bytes`).
 */
import { CairnError, checkLimit } from "../core/index.ts";

/** The annotation key of an image's name in a layout's index.json. */
export const REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name";

/** `oci.max_ref_name_bytes`: a ref name longer than this is refused (no peer needs one; a hostile one must not be unbounded). */
export const MAX_REF_NAME_BYTES = 1024;

const COMPONENT = "[A-Za-z0-9]+(?:(?:[-._:@+]|--)[A-Za-z0-9]+)*";
/** Separators are never letters or digits, so each position has one reading: the match is linear, with no backtracking blow-up. */
const REF_NAME = new RegExp(`^${COMPONENT}(?:/${COMPONENT})*$`);

/** The image spec's rule, as a message names it. */
export const REF_NAME_RULE = 'components of [A-Za-z0-9]+ joined by one of - . _ : @ + or "--", components joined by "/"';

/** Refuses `unsafeName` unless it is a ref name by the image spec's grammar, naming `path` (the flag or field it came from). */
export function checkRefName(unsafeName: string, path: string): string {
  checkLimit("oci.max_ref_name_bytes", Buffer.byteLength(unsafeName, "utf8"), MAX_REF_NAME_BYTES, path);
  if (!REF_NAME.test(unsafeName)) {
    throw new CairnError("REFERENCE_INVALID", `${JSON.stringify(unsafeName.slice(0, 200))} is not an OCI image ref name: ${REF_NAME_RULE}`, {
      path,
      hint: "the rule is the image spec's for org.opencontainers.image.ref.name (annotations.md), e.g. v1.0, 2026-03-01, team/app:stable",
    });
  }
  return unsafeName;
}
