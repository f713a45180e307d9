/**
 * The ELF gate for binary workloads. A binary workload is exactly one file in
 * a RAM root with nothing beside it, so it must need nothing beside it: a
 * static, fixed-address (`ET_EXEC`) x86-64 executable with no `PT_INTERP`
 * (no dynamic loader to find) and no `PT_DYNAMIC` (no relocations or shared
 * libraries). Each way of failing has its own code so a user learns what to
 * change: ELF_DYNAMIC, ELF_STATIC_PIE, ELF_WRONG_ARCH, ELF_MALFORMED.
 *
 * This reads headers from bytes already copied and bounded; it never maps or
 * runs the file.
 */
import { CairnError } from "../core/index.ts";

const EM_X86_64 = 62;
const ET_EXEC = 2;
const ET_DYN = 3;
const PT_LOAD = 1;
const PT_DYNAMIC = 2;
const PT_INTERP = 3;
const EHDR_SIZE = 64;
const PHDR_SIZE = 56;

export interface ElfFacts {
  readonly entry: bigint;
  readonly loadSegments: number;
}

function malformed(what: string, path: string): never {
  throw new CairnError("ELF_MALFORMED", `${path} is not a well-formed ELF executable: ${what}`, {
    path,
    hint: "give a static x86-64 executable built with `gcc -static -no-pie`",
  });
}

/** Checks `bytes` (the whole executable) and returns a few facts; throws with the code of the first refusal. */
export function checkStaticExecutable(bytes: Uint8Array, path: string): ElfFacts {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < EHDR_SIZE) malformed("shorter than an ELF header", path);
  if (b[0] !== 0x7f || b[1] !== 0x45 || b[2] !== 0x4c || b[3] !== 0x46) malformed("no ELF magic", path);
  const wrongArch = (what: string): never => {
    throw new CairnError("ELF_WRONG_ARCH", `${path} is ${what}, not x86-64`, {
      path,
      hint: "cairn runs x86-64 guests; build the program for x86_64-linux",
    });
  };
  if (b[4] !== 2) wrongArch(b[4] === 1 ? "a 32-bit ELF" : "of an unknown ELF class");
  if (b[5] !== 1) wrongArch("big-endian or of an unknown byte order");
  if (b[6] !== 1) malformed("unknown ELF version", path);
  const type = b.readUInt16LE(16);
  const machine = b.readUInt16LE(18);
  if (machine !== EM_X86_64) wrongArch(`for ELF machine ${machine}`);
  if (b.readUInt32LE(20) !== 1) malformed("unknown ELF version", path);
  const entry = b.readBigUInt64LE(24);
  const phoff = b.readBigUInt64LE(32);
  const ehsize = b.readUInt16LE(52);
  const phentsize = b.readUInt16LE(54);
  const phnum = b.readUInt16LE(56);
  if (ehsize !== EHDR_SIZE) malformed("unexpected header size", path);
  if (phnum === 0 || phnum === 0xffff) malformed("no usable program header table", path);
  if (phentsize !== PHDR_SIZE) malformed("unexpected program header size", path);
  if (phoff > BigInt(b.length) || phoff + BigInt(phnum * PHDR_SIZE) > BigInt(b.length)) {
    malformed("program header table lies outside the file", path);
  }
  let interp = false;
  let dynamic = false;
  let loads = 0;
  let entryMapped = false;
  for (let i = 0; i < phnum; i++) {
    const at = Number(phoff) + i * PHDR_SIZE;
    const ptype = b.readUInt32LE(at);
    if (ptype === PT_INTERP) interp = true;
    if (ptype === PT_DYNAMIC) dynamic = true;
    if (ptype !== PT_LOAD) continue;
    loads++;
    const offset = b.readBigUInt64LE(at + 8);
    const vaddr = b.readBigUInt64LE(at + 16);
    const filesz = b.readBigUInt64LE(at + 32);
    const memsz = b.readBigUInt64LE(at + 40);
    if (offset + filesz > BigInt(b.length)) malformed(`loadable segment ${i} extends past the end of the file`, path);
    if (filesz > memsz) malformed(`loadable segment ${i} has more file bytes than memory bytes`, path);
    if (entry >= vaddr && entry < vaddr + memsz) entryMapped = true;
  }
  if (type === ET_DYN) {
    if (interp) {
      throw new CairnError("ELF_DYNAMIC", `${path} is dynamically linked (it names a program interpreter)`, {
        path,
        hint: "link it statically (`gcc -static -no-pie`), or package it with its libraries as an OCI image layout",
      });
    }
    // A static PIE is genuinely static (it relocates itself and needs nothing beside it); it is refused by the
    // fixed-address rule alone, and the message says so rather than calling it dynamic.
    throw new CairnError(
      "ELF_STATIC_PIE",
      `${path} is a static position-independent executable (ET_DYN, no interpreter): static, but binary workloads are fixed-address (ET_EXEC) executables`,
      {
        path,
        hint: "link with `-no-pie` (`gcc -static -no-pie`), or package it as an OCI image layout",
      },
    );
  }
  if (type !== ET_EXEC) malformed(`ELF type ${type} is not an executable`, path);
  if (interp) {
    throw new CairnError("ELF_DYNAMIC", `${path} is dynamically linked (PT_INTERP)`, {
      path,
      hint: "link it statically (`gcc -static -no-pie`), or package it with its libraries as an OCI image layout",
    });
  }
  if (dynamic) {
    // `gcc -no-pie -Wl,--no-dynamic-linker`: a dynamic section (libraries, relocations) that no loader would ever process.
    throw new CairnError(
      "ELF_DYNAMIC",
      `${path} has a dynamic section (PT_DYNAMIC) but no program interpreter: nothing would load its libraries or apply its relocations`,
      {
        path,
        hint: "link it statically (`gcc -static -no-pie`), or package it with its libraries as an OCI image layout",
      },
    );
  }
  if (loads === 0) malformed("no loadable segment", path);
  if (!entryMapped) malformed("the entry point lies outside every loadable segment", path);
  return { entry, loadSegments: loads };
}
