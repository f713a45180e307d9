/**
 * Typed digests. This is the single definition of the digest format:
 * `sha256:<64 lowercase hex>` or `blake3:<64 lowercase hex>`. A digest string
 * from any source is parsed here once; code past this point holds a `Digest`
 * and never compares unvalidated strings.
 */
import { createHash, hash, type Hash } from "node:crypto";
import { blake3 as nobleBlake3 } from "@noble/hashes/blake3.js";
import { CairnError } from "./errors.ts";

export type DigestAlgorithm = "sha256" | "blake3";

declare const digestBrand: unique symbol;
/** A validated digest string such as `sha256:ab12…`. */
export type Digest = string & { readonly [digestBrand]: DigestAlgorithm };
export type Sha256Digest = Digest & `sha256:${string}`;
export type Blake3Digest = Digest & `blake3:${string}`;

const DIGEST_RE = /^(sha256|blake3):([0-9a-f]{64})$/;

/** Validates `unsafeValue` as a digest; `path` names the field for the error. */
export function parseDigest(unsafeValue: unknown, path = "", expect?: DigestAlgorithm): Digest {
  if (typeof unsafeValue !== "string" || unsafeValue.length === 0) {
    throw new CairnError("DIGEST_INVALID", "digest is empty or not a string", {
      path,
      hint: "a digest is sha256:<64 lowercase hex> or blake3:<64 lowercase hex>",
    });
  }
  const m = DIGEST_RE.exec(unsafeValue);
  if (m === null) {
    throw new CairnError("DIGEST_INVALID", "digest is not <algorithm>:<64 lowercase hex>", {
      path,
      hint: "a digest is sha256:<64 lowercase hex> or blake3:<64 lowercase hex>",
    });
  }
  if (expect !== undefined && m[1] !== expect) {
    throw new CairnError("DIGEST_INVALID", `digest must use ${expect}, found ${m[1]}`, { path });
  }
  return unsafeValue as Digest;
}

export function parseSha256(unsafeValue: unknown, path = ""): Sha256Digest {
  return parseDigest(unsafeValue, path, "sha256") as Sha256Digest;
}

export function isDigest(value: unknown): value is Digest {
  return typeof value === "string" && DIGEST_RE.test(value);
}

const SHA256_TEXT_LENGTH = "sha256:".length + 64;
const SCRATCH_DIGEST = new Uint8Array(32);

/**
 * `value` is a sha256 digest's text, exactly what parseSha256 accepts
 * ("sha256:" and 64 lower-case hex digits), checked through the hex table
 * instead of the regex: for checks run once per file of a tree.
 */
export function isSha256(value: unknown): value is Sha256Digest {
  return typeof value === "string" && value.length === SHA256_TEXT_LENGTH && value.startsWith("sha256:") && hexDigestBytes(value, 7, SCRATCH_DIGEST, 0, false);
}

export function digestAlgorithm(d: Digest): DigestAlgorithm {
  return d.slice(0, d.indexOf(":")) as DigestAlgorithm;
}

/** The 64 hex characters of a digest. */
export function digestHex(d: Digest): string {
  return d.slice(d.indexOf(":") + 1);
}

const HEX_CODES = Buffer.from("0123456789abcdef", "latin1");
const DIGEST_TEXT = Buffer.from(`sha256:${"0".repeat(64)}`, "latin1");

/**
 * "sha256:" and the hex of 32 digest bytes, as one flat string. A template
 * string of that length is a V8 cons string (the prefix and the hex apart,
 * joined by a third object) until something reads it whole: kept in every
 * file entry of a tree, that was about 30 bytes more per file than the flat
 * string (tests/workload/memory-footprint.test.ts).
 */
export function sha256Text(raw: Uint8Array): Sha256Digest {
  if (raw.length !== 32) throw new CairnError("INTERNAL", `a sha256 digest has 32 bytes, not ${raw.length}`, { path: "digest" });
  for (let i = 0; i < 32; i++) {
    const b = raw[i]!;
    DIGEST_TEXT[7 + 2 * i] = HEX_CODES[b >> 4]!;
    DIGEST_TEXT[8 + 2 * i] = HEX_CODES[b & 15]!;
  }
  return DIGEST_TEXT.toString("latin1") as Sha256Digest;
}

/** Hex digit values by character code below 128, -1 for anything else: lower case only, and upper and lower case (as Buffer's "hex"). */
const HEX_LOWER = new Int8Array(128).fill(-1);
const HEX_ANY_CASE = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX_LOWER[0x30 + c] = HEX_ANY_CASE[0x30 + c] = c;
for (let c = 0; c < 6; c++) HEX_LOWER[0x61 + c] = HEX_ANY_CASE[0x61 + c] = HEX_ANY_CASE[0x41 + c] = 10 + c;

/**
 * Decodes the 64 hex digits of `text` from `from` into 32 bytes of `out` at
 * `at`, through a table (no sliced string, no native call: this runs once per
 * file of a tree); false, with `out` partly written, when a character there is
 * not a hex digit (`anyCase`: upper case counts too, as Buffer's "hex" reads;
 * otherwise lower case only, as a digest's text is written) or fewer than 64
 * follow. The caller checks what lies before and after them.
 */
export function hexDigestBytes(text: string, from: number, out: Uint8Array, at: number, anyCase: boolean): boolean {
  if (text.length - from < 64) return false;
  const hex = anyCase ? HEX_ANY_CASE : HEX_LOWER;
  for (let j = 0; j < 32; j++) {
    const x = text.charCodeAt(from + 2 * j);
    const y = text.charCodeAt(from + 2 * j + 1);
    const hi = x < 128 ? hex[x]! : -1;
    const lo = y < 128 ? hex[y]! : -1;
    if ((hi | lo) < 0) return false;
    out[at + j] = (hi << 4) | lo;
  }
  return true;
}

export function sha256(data: Uint8Array | string): Sha256Digest {
  return sha256Text(createHash("sha256").update(data).digest());
}

export function blake3(data: Uint8Array | string): Blake3Digest {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return `blake3:${Buffer.from(nobleBlake3(bytes)).toString("hex")}` as Blake3Digest;
}

/** An incremental SHA-256 that yields a typed digest. */
export class Sha256Hasher {
  readonly #hash = createHash("sha256");
  #size = 0;
  update(chunk: Uint8Array): this {
    this.#hash.update(chunk);
    this.#size += chunk.length;
    return this;
  }
  get size(): number {
    return this.#size;
  }
  digest(): Sha256Digest {
    return sha256Text(this.#hash.digest());
  }
}

/**
 * sha256 and byte count of one content whose size is declared before its
 * bytes arrive (a tar member's header size). A content that arrives as one
 * chunk of exactly that size, as nearly every small file of a layer does, is
 * hashed in one call without a native hash object: on a layer of 20,000 small
 * files one object per file was a measurable share of CPU and collection.
 * Anything else is hashed incrementally. Bytes beyond a content hashed in one
 * call cannot be added to its digest and are refused (INTERNAL: the caller
 * declared a wrong size).
 */
export class ContentHasher {
  readonly #declared: number;
  #hash: Hash | undefined;
  #raw: Buffer | undefined;
  #size = 0;

  constructor(declared: number) {
    this.#declared = declared;
  }

  update(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.#raw !== undefined) throw new CairnError("INTERNAL", `content has more bytes than its declared ${this.#declared}`, { path: "content" });
    if (this.#hash === undefined && chunk.length === this.#declared) this.#raw = hash("sha256", chunk, "buffer");
    else (this.#hash ??= createHash("sha256")).update(chunk);
    this.#size += chunk.length;
  }

  get size(): number {
    return this.#size;
  }

  /** The 32 bytes of the sha256 (ends the content: nothing more may be added). */
  raw(): Buffer {
    this.#raw ??= (this.#hash ?? createHash("sha256")).digest();
    return this.#raw;
  }

  digest(): Sha256Digest {
    return sha256Text(this.raw());
  }
}

/** Compares the digest of `data` with `expected`; throws DIGEST_MISMATCH naming `path`. */
export function verifyDigest(data: Uint8Array, expected: Digest, path: string): void {
  const actual = digestAlgorithm(expected) === "sha256" ? sha256(data) : blake3(data);
  if (actual !== expected) {
    throw new CairnError("DIGEST_MISMATCH", `content of ${path} does not match its digest`, {
      path,
      hint: `expected ${expected}, computed ${actual}`,
    });
  }
}
