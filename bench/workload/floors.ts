/**
 * The two floors `workload verify` is measured against (issue 15 item 4),
 * as plain Node over the same stored bytes verify reads, with no checks:
 *
 *   raw-sha256   sha256 of every object of the raw closure (spec, manifest,
 *                config, layers), streamed: the floor
 *   rules-floor  what re-deriving must do at least: per layer, read the
 *                stored blob once, sha256 it (its digest), gunzip it,
 *                sha256 the tar stream (its DiffID), and sha256 each
 *                regular member's bytes (the tree's content addresses),
 *                found by walking the 512-byte headers (size field only:
 *                no names, no pax, no limits, no tree)
 *
 *   gunzip       per layer, read the stored blob and inflate it, nothing
 *                else: one gzip stream inflates on one core, so no schedule
 *                can finish before it (the serial part of either floor)
 *
 * With two cores, max(gunzip, rules-floor CPU / 2) estimates the least wall
 * time a re-deriving verify can take (twoCoreEstimate): the inflate is serial,
 * and the rest of the required work shares the two cores at best. It is an
 * estimate, not a proof: it is measured with Node's stream gunzip, which a
 * reader inflating on its own thread can beat a little (verify of the large
 * layout has measured 0.91-1.00x of it).
 *
 * Verify also checks what these skip (every header field, the tree, the
 * identities, the stored pack and derived entry); the floors are what no
 * implementation of the rules can skip.
 */
import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { pipeline as streamPipeline, Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";

const MiB = 1 << 20;

function sink(each: (c: Buffer) => void): Writable {
  return new Writable({
    write(c: Buffer, _e, cb) {
      each(c);
      cb();
    },
  });
}

/** sha256 of each file, streamed in 1 MiB reads. */
export async function rawSha256(paths: readonly string[]): Promise<void> {
  for (const p of paths) {
    const h = createHash("sha256");
    await pipeline(
      createReadStream(p, { highWaterMark: MiB }),
      sink((c) => h.update(c)),
    );
    h.digest();
  }
}

/** Splits a tar stream into regular members' bytes, hashing each (headers by their size field alone). */
class ContentHashes {
  #header = Buffer.alloc(512);
  #fill = 0;
  #left = 0; // bytes of the current member's data still to come
  #pad = 0; // then padding to 512
  #h: Hash | undefined;
  contents = 0;

  push(c: Buffer): void {
    for (let at = 0; at < c.length; ) {
      if (this.#left > 0) {
        const n = Math.min(this.#left, c.length - at);
        this.#h?.update(c.subarray(at, at + n));
        at += n;
        this.#left -= n;
        if (this.#left === 0) this.#end();
      } else if (this.#pad > 0) {
        const n = Math.min(this.#pad, c.length - at);
        at += n;
        this.#pad -= n;
      } else {
        const n = Math.min(512 - this.#fill, c.length - at);
        c.copy(this.#header, this.#fill, at, at + n);
        at += n;
        this.#fill += n;
        if (this.#fill === 512) this.#begin();
      }
    }
  }

  #begin(): void {
    this.#fill = 0;
    if (this.#header[0] === 0) return; // end-of-archive blocks
    const size = Number.parseInt(this.#header.toString("latin1", 124, 136).replace(/\0.*$/, "").trim() || "0", 8);
    const type = this.#header[156];
    this.#h = type === 0x30 || type === 0 ? createHash("sha256") : undefined;
    this.#left = size;
    this.#pad = (512 - (size % 512)) % 512;
    if (size === 0) this.#end();
  }

  #end(): void {
    if (this.#h === undefined) return;
    this.#h.digest();
    this.#h = undefined;
    this.contents++;
  }
}

/** The rules' floor over gzip layer blobs; returns the number of regular members hashed. */
export async function rulesFloor(layers: readonly string[]): Promise<number> {
  let contents = 0;
  for (const p of layers) {
    const stored = createHash("sha256");
    const diffId = createHash("sha256");
    const members = new ContentHashes();
    // consumed like layer-reader consumes it (async iteration), so gunzip inflates the next chunk on the
    // thread pool while this thread hashes the last one; a synchronous sink would serialize the two
    const hashed = new Transform({
      transform(c: Buffer, _e, cb) {
        stored.update(c);
        cb(null, c);
      },
    });
    const tar = streamPipeline(createReadStream(p, { highWaterMark: MiB }), hashed, createGunzip({ chunkSize: MiB }), () => undefined);
    for await (const c of tar as AsyncIterable<Buffer>) {
      diffId.update(c);
      members.push(c);
    }
    stored.digest();
    diffId.digest();
    contents += members.contents;
  }
  return contents;
}

/** Inflates each gzip layer blob to nothing: the serial part no reader of one gzip stream can split. */
export async function gunzipOnly(layers: readonly string[]): Promise<void> {
  for (const p of layers) {
    await pipeline(
      createReadStream(p, { highWaterMark: MiB }),
      createGunzip({ chunkSize: MiB }),
      sink(() => undefined),
    );
  }
}

/** The least wall time `cores` cores can take for work of `cpu` ms whose serial part takes `serial` ms (as those were measured). */
export function twoCoreEstimate(serial: number, cpu: number, cores = 2): number {
  return Math.max(serial, cpu / cores);
}
