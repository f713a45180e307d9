/**
 * The single place that turns an id or a digest into a path component.
 * `path.join` resolves `..` instead of rejecting it, so every path built from
 * an id, a layer name or a digest must go through here first.
 */
import { CairnError } from "./errors.ts";
import { digestAlgorithm, digestHex, parseDigest, type Digest } from "./digest.ts";

const SAFE_COMPONENT = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

/** Returns `unsafeName` if it is one safe path component; refuses `..`, `/`, NUL, empty, hidden names. */
export function safeComponent(unsafeName: unknown, path = ""): string {
  if (typeof unsafeName !== "string" || !SAFE_COMPONENT.test(unsafeName) || unsafeName.includes("..")) {
    throw new CairnError("PATH_UNSAFE", `${JSON.stringify(String(unsafeName)).slice(0, 80)} is not a safe single path component`, {
      path,
      hint: "use letters, digits, '.', '_', '+', '-'; no '/', no '..', not starting with '.'",
    });
  }
  return unsafeName;
}

/** `[algorithm, hex]` components for a digest, validated first. */
export function digestComponents(unsafeDigest: unknown, path = ""): [string, string] {
  const d: Digest = parseDigest(unsafeDigest, path);
  return [digestAlgorithm(d), digestHex(d)];
}
