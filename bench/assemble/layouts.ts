/**
 * Bench inputs, generated (never downloaded): two single-layer gzip OCI
 * layouts written by the test fixtures' tar and OCI writers.
 *   large: a few large files adding up to ~200 MB uncompressed
 *   small: 20,000 small files (0.5–8 KiB) in 200 directories
 * File bytes are pseudo-random words (deterministic PRNG) so they compress
 * about as well as ordinary text and binaries, rather than being all zeros
 * (which gunzip expands absurdly fast) or pure noise (stored, not deflated).
 */
import { writeOciLayout, type WrittenImage } from "../../tests/workload/fixtures/oci-writer.ts";
import { dir, file, type TarMember } from "../../tests/workload/fixtures/tar-writer.ts";

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

const WORDS = Array.from({ length: 4096 }, (_, i) => {
  const r = prng(i + 1);
  return Array.from({ length: 3 + (r() % 8) }, () => String.fromCharCode(97 + (r() % 26))).join("");
});

/** `size` bytes of word soup, deterministic in `seed`. */
export function content(size: number, seed: number): Buffer {
  const r = prng(seed);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  while (at < size) {
    const w = WORDS[r() % WORDS.length]!;
    at += out.write(r() % 11 === 0 ? `${w}\n` : `${w} `, at, "latin1");
  }
  return out;
}

export function writeLargeLayout(layoutDir: string, totalMiB = 200, files = 8): WrittenImage {
  const each = Math.floor((totalMiB * 1024 * 1024) / files);
  const members: TarMember[] = [dir("data")];
  for (let i = 0; i < files; i++) members.push(file(`data/blob-${i}.bin`, content(each, 1000 + i), { mode: 0o644, mtime: 1_700_000_000 }));
  return writeOciLayout(layoutDir, { layers: [{ entries: members }], config: { Cmd: ["/data/blob-0.bin"] } });
}

export function writeSmallLayout(layoutDir: string, count = 20_000, dirs = 200): WrittenImage {
  const members: TarMember[] = [];
  const r = prng(7);
  for (let d = 0; d < dirs; d++) members.push(dir(`usr/share/d${d}`, { mtime: 1_700_000_000 }));
  for (let i = 0; i < count; i++) {
    const size = 512 + (r() % (8 * 1024 - 512));
    members.push(file(`usr/share/d${i % dirs}/f${i}.txt`, content(size, i), { mode: 0o644, mtime: 1_700_000_000 }));
  }
  return writeOciLayout(layoutDir, { layers: [{ entries: [dir("usr"), dir("usr/share"), ...members] }], config: { Cmd: ["/bin/true"] } });
}
