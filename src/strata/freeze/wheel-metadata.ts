/**
 * A wheel's core metadata: `NAME-VERSION.dist-info/METADATA` read out of the
 * wheel (a zip file) without unpacking anything else, or the same file served
 * beside the wheel (PEP 658). The zip is hostile: the central directory must
 * lie inside the file, the entry must be stored or deflated, its inflated size
 * is bounded by freeze.metadata_max_bytes before and while inflating, and its
 * CRC-32 must match. Zip64 archives are refused (a wheel's METADATA never
 * needs them). Nothing is executed and nothing is written.
 */
import { crc32, inflateRawSync } from "node:zlib";
import { CairnError, checkLimit } from "../../core/index.ts";
import { normalizeName } from "./pep508.ts";

export interface CoreMetadata {
  readonly name: string;
  readonly version: string;
  readonly requiresDist: readonly string[];
  readonly requiresPython?: string;
  /** Fields the metadata declares as computed at build time (PEP 643). */
  readonly dynamic: readonly string[];
  readonly metadataVersion: string;
}

function bad(path: string, why: string): never {
  throw new CairnError("REGISTRY_INVALID", `${path}: ${why}`, { path, hint: "the archive is not a well-formed wheel" });
}

/** Parses METADATA (RFC 822 headers; the body after the first blank line is the description and is ignored). */
export function parseCoreMetadata(text: string, path: string): CoreMetadata {
  const headers: [string, string][] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line === "") break;
    if (/^[ \t]/.test(line) && headers.length > 0) {
      headers[headers.length - 1]![1] += `\n${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) bad(path, `METADATA line ${JSON.stringify(line.slice(0, 60))} is not a header`);
    headers.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
  }
  const all = (k: string): string[] => headers.filter(([h]) => h === k).map(([, v]) => v);
  const one = (k: string): string | undefined => all(k)[0];
  const name = one("name");
  const version = one("version");
  const metadataVersion = one("metadata-version");
  if (name === undefined || version === undefined || metadataVersion === undefined) bad(path, "METADATA lacks Metadata-Version, Name or Version");
  const requiresPython = one("requires-python");
  return {
    name,
    version,
    metadataVersion,
    requiresDist: all("requires-dist"),
    ...(requiresPython !== undefined ? { requiresPython } : {}),
    dynamic: all("dynamic").map((d) => d.toLowerCase()),
  };
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Reads `*.dist-info/METADATA` of `project` out of wheel bytes. */
export function wheelMetadata(zip: Buffer, project: string, maxBytes: number, path: string): CoreMetadata {
  const tail = Math.max(0, zip.length - 22 - 0xffff);
  let eocd = -1;
  for (let i = zip.length - 22; i >= tail; i--) {
    if (zip.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) bad(path, "no zip end-of-central-directory record");
  const count = zip.readUInt16LE(eocd + 10);
  const cdSize = zip.readUInt32LE(eocd + 12);
  const cdOffset = zip.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) bad(path, "a zip64 archive (refused: a wheel's METADATA never needs it)");
  if (cdOffset + cdSize > eocd) bad(path, "the central directory lies outside the archive");
  let at = cdOffset;
  let found: { method: number; crc: number; csize: number; usize: number; local: number } | undefined;
  for (let i = 0; i < count; i++) {
    if (at + 46 > eocd || zip.readUInt32LE(at) !== CENTRAL) bad(path, `central directory entry ${i} is malformed`);
    const method = zip.readUInt16LE(at + 10);
    const crc = zip.readUInt32LE(at + 16);
    const csize = zip.readUInt32LE(at + 20);
    const usize = zip.readUInt32LE(at + 24);
    const n = zip.readUInt16LE(at + 28);
    const e = zip.readUInt16LE(at + 30);
    const c = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    if (at + 46 + n > eocd) bad(path, `central directory entry ${i} runs past the directory`);
    const name = zip.toString("utf8", at + 46, at + 46 + n);
    const m = /^([^/]+)-([^/-]+)\.dist-info\/METADATA$/.exec(name);
    if (m !== null && normalizeName(m[1]!) === project) {
      if (found !== undefined) bad(path, "two METADATA files for the project");
      found = { method, crc, csize, usize, local };
    }
    at += 46 + n + e + c;
  }
  if (found === undefined) bad(path, `no ${project}-VERSION.dist-info/METADATA`);
  checkLimit("freeze.metadata_max_bytes", found.usize, maxBytes, path, "bytes");
  const l = found.local;
  if (l + 30 > cdOffset || zip.readUInt32LE(l) !== LOCAL) bad(path, "METADATA's local header is malformed");
  const start = l + 30 + zip.readUInt16LE(l + 26) + zip.readUInt16LE(l + 28);
  if (start + found.csize > cdOffset) bad(path, "METADATA's data runs past the archive");
  const data = zip.subarray(start, start + found.csize);
  let bytes: Buffer;
  if (found.method === 0) bytes = Buffer.from(data);
  else if (found.method === 8) {
    try {
      bytes = inflateRawSync(data, { maxOutputLength: maxBytes });
    } catch (e) {
      if (e instanceof RangeError || (e as { code?: string }).code === "ERR_BUFFER_TOO_LARGE")
        checkLimit("freeze.metadata_max_bytes", maxBytes + 1, maxBytes, path, "bytes");
      bad(path, "METADATA does not inflate");
    }
  } else bad(path, `METADATA uses zip compression method ${found.method} (stored and deflate only)`);
  if (bytes.length !== found.usize || crc32(bytes) !== found.crc) bad(path, "METADATA's size or CRC-32 does not match its zip header");
  return parseCoreMetadata(bytes.toString("utf8"), path);
}
