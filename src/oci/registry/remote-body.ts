/**
 * Reading registry response bodies under cairn's rules: a bounded read that
 * refuses a body over its named limit before reading it (from
 * `Content-Length`) or as soon as it passes the limit (a body without a
 * length), and a verified stream that hashes and counts while the bytes go
 * by and stops the transfer at the first byte past the declared size. The
 * caller sees bytes only through `onChunk`, so unverified bytes are never
 * held whole; what the caller writes stays in its private staging until
 * `streamVerified` returned.
 */
import { CairnError, Sha256Hasher, checkLimit, type Sha256Digest } from "../../core/index.ts";

/** The declared length of a response, or undefined when absent or not a number. */
export function contentLength(res: Response): number | undefined {
  const v = res.headers.get("content-length");
  if (v === null || !/^\d{1,15}$/.test(v)) return undefined;
  return Number(v);
}

async function cancel(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}

function broken(what: string, cause: unknown): CairnError {
  return new CairnError("REMOTE_UNREACHABLE", `the connection broke while reading ${what}`, { path: what, cause, hint: "try again; nothing partial was kept" });
}

/** The whole body, at most `max` bytes (limit `limit`): refused before reading when `Content-Length` is over. */
export async function readBodyBounded(res: Response, max: number, limit: string, what: string): Promise<Buffer> {
  const declared = contentLength(res);
  if (declared !== undefined && declared > max) {
    await cancel(res);
    checkLimit(limit, declared, max, what, "bytes");
  }
  const parts: Buffer[] = [];
  let n = 0;
  try {
    if (res.body !== null) {
      for await (const chunk of res.body) {
        n += chunk.length;
        if (n > max) {
          await cancel(res);
          checkLimit(limit, n, max, what, "bytes");
        }
        parts.push(Buffer.from(chunk));
      }
    }
  } catch (e) {
    if (e instanceof CairnError) throw e;
    throw broken(what, e);
  }
  return Buffer.concat(parts, n);
}

/**
 * Streams a body that must be exactly `size` bytes hashing to `digest`.
 * SIZE_MISMATCH as soon as a byte past `size` arrives (or when the declared
 * length differs, before reading), SIZE_MISMATCH or DIGEST_MISMATCH at the
 * end. `onChunk` sees each chunk after it was counted and hashed.
 */
export async function streamVerified(
  res: Response,
  digest: Sha256Digest,
  size: number,
  what: string,
  onChunk: (chunk: Uint8Array) => Promise<void> | void,
): Promise<void> {
  const declared = contentLength(res);
  if (declared !== undefined && declared !== size) {
    await cancel(res);
    throw new CairnError("SIZE_MISMATCH", `${what}: the registry declares ${declared} bytes, the descriptor says ${size}`, {
      path: what,
      hint: "the registry serves other content than the descriptor names",
    });
  }
  const hasher = new Sha256Hasher();
  let n = 0;
  try {
    if (res.body !== null) {
      for await (const chunk of res.body) {
        n += chunk.length;
        if (n > size) {
          await cancel(res);
          throw new CairnError("SIZE_MISMATCH", `${what}: the registry sent more than the descriptor's ${size} bytes`, {
            path: what,
            hint: "the registry serves other content than the descriptor names",
          });
        }
        hasher.update(chunk);
        await onChunk(chunk);
      }
    }
  } catch (e) {
    if (e instanceof CairnError) throw e;
    throw broken(what, e);
  }
  if (n !== size)
    throw new CairnError("SIZE_MISMATCH", `${what}: the registry sent ${n} bytes, the descriptor says ${size}`, {
      path: what,
      hint: "the transfer was cut short or the registry serves other content",
    });
  const actual = hasher.digest();
  if (actual !== digest)
    throw new CairnError("DIGEST_MISMATCH", `${what}: the bytes served do not match the requested digest`, {
      path: what,
      hint: `expected ${digest}, computed ${actual}`,
    });
}
