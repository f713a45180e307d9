/**
 * Issue 32's two directions, measured with Strata's own parser as the peer:
 *
 * - Strata → cairn: every lockfile and profile Strata's repository writes
 *   (strata-corpus.ts) is read by `cairn lock diff F F`, `cairn lock id` and
 *   `cairn profile validate`;
 * - cairn → Strata: lockfiles `cairn resolve` and `cairn freeze` write for the
 *   bundled example (examples/strata/), profiles `profileToYaml` writes, and
 *   the layer manifests and formation the example registry publishes, are
 *   read by the peer;
 * - EnvironmentID: on every lockfile Strata calls frozen and cairn reads
 *   with no problem listed, the peer's `EnvironmentID()` against the first
 *   line of `cairn lock id`.
 *
 * Shared by tests/strata/strata-peer.test.ts and bench/strata/interop.ts so
 * the table and the test count the same things.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildExampleRegistry } from "../../../examples/strata/build-registry.ts";
import { writeDemoIndexes } from "../../../examples/strata/package-indexes.ts";
import { parseProfileText, profileToYaml } from "../../../src/strata/index.ts";
import { runCli } from "../../helpers/cli.ts";
import { resolveArgs } from "../../helpers/resolve-args.ts";
import { PROJECT_ROOT } from "../../helpers/vectors.ts";
import { type PeerKind, peerRead, type PeerVerdict } from "./peer.ts";
import { strataCorpus } from "./strata-corpus.ts";

/** What cairn made of one file. */
export interface CairnVerdict {
  /**
   * `lock diff F F` showed a diff (the file was read, though it may have
   * problems: the seed wants `lock diff` to inspect a lockfile that breaks a
   * rule), or `profile validate F` exited 0.
   */
  readonly reads: boolean;
  /** Read with no problem listed (for a profile, the same as `reads`). */
  readonly valid: boolean;
  /** The error code, or for `lock diff` the codes of the problems it listed. */
  readonly codes: readonly string[];
  /** The first line of `cairn lock id F` when it exited 0. */
  readonly lockId?: string;
}

export interface InteropRow {
  readonly direction: "strata-to-cairn" | "cairn-to-strata";
  readonly kind: PeerKind;
  /** Where the file came from: the mirror's path:line, or what cairn command wrote it. */
  readonly origin: string;
  readonly path: string;
  readonly peer: PeerVerdict;
  readonly cairn: CairnVerdict;
}

const NOW = "2026-03-01T12:00:00.000Z";

interface Problem {
  code: string;
}

/** cairn's reading of a lockfile (`lock diff F F --json`, then `lock id F`) or a profile (`profile validate F --json`). */
export async function cairnRead(kind: "lockfile" | "profile", path: string): Promise<CairnVerdict> {
  if (kind === "profile") {
    const r = await runCli(["profile", "validate", path, "--json"]);
    const out = JSON.parse(r.stdout) as { error?: Problem };
    return { reads: r.code === 0, valid: r.code === 0, codes: out.error ? [out.error.code] : [] };
  }
  const d = await runCli(["lock", "diff", path, path, "--json"]);
  const out = JSON.parse(d.stdout) as { error?: Problem; problems_a?: Problem[] };
  const codes = out.error ? [out.error.code] : [...new Set((out.problems_a ?? []).map((p) => p.code))];
  const id = await runCli(["lock", "id", path]);
  const lockId = id.code === 0 ? (id.stdout.split("\n")[0] ?? "").trim() : undefined;
  const reads = out.error === undefined;
  return { reads, valid: reads && codes.length === 0, codes, ...(lockId !== undefined ? { lockId } : {}) };
}

/** Strata → cairn: the mirror's lockfiles and profiles, written under `dir`, read by both. */
export async function strataToCairn(bin: string, src: string, commit: string, dir: string): Promise<InteropRow[]> {
  mkdirSync(dir, { recursive: true });
  const rows: InteropRow[] = [];
  let n = 0;
  for (const f of strataCorpus(src, commit)) {
    const path = join(dir, `${String(++n).padStart(2, "0")}-${f.kind}.yaml`);
    writeFileSync(path, f.text);
    rows.push({
      direction: "strata-to-cairn",
      kind: f.kind,
      origin: f.origins.join(", "),
      path,
      peer: peerRead(bin, f.kind, path),
      cairn: await cairnRead(f.kind, path),
    });
  }
  return rows;
}

/** The profiles in cairn's repository: the bundled example and the test fixtures. */
function cairnProfiles(): { origin: string; text: string }[] {
  const fixtures = join(PROJECT_ROOT, "tests/strata/fixtures");
  return [
    { origin: "examples/strata/profile.yaml", text: readFileSync(join(PROJECT_ROOT, "examples/strata/profile.yaml"), "utf8") },
    ...readdirSync(fixtures)
      .filter((n) => n.endsWith(".yaml"))
      .sort()
      .map((n) => ({ origin: `tests/strata/fixtures/${n}`, text: readFileSync(join(fixtures, n), "utf8") })),
  ];
}

/**
 * cairn → Strata: lockfiles cairn writes for the bundled example (resolved
 * signed and unsigned, then frozen against the demo pip index), and profiles
 * `profileToYaml` writes for cairn's own profiles and for every Strata profile
 * cairn reads, each read by the peer (and by cairn, as a control).
 */
export async function cairnToStrata(bin: string, dir: string, strataProfiles: readonly InteropRow[] = []): Promise<InteropRow[]> {
  mkdirSync(dir, { recursive: true });
  const env = { ...process.env, CAIRN_NOW: NOW };
  const ex = buildExampleRegistry(join(dir, "example"));
  writeDemoIndexes(join(dir, "indexes"));
  const profile = join(PROJECT_ROOT, "examples/strata/profile.yaml");
  const locks: { origin: string; path: string; args: string[] }[] = [];
  const signed = join(dir, "resolved-signed.lock");
  const unsigned = join(dir, "resolved-unsigned.lock");
  const frozen = join(dir, "frozen.lock");
  locks.push({ origin: "cairn resolve examples/strata/profile.yaml --sign", path: signed, args: resolveArgs(ex, profile, signed) });
  const unsignedArgs = resolveArgs(ex, profile, unsigned);
  unsignedArgs.splice(unsignedArgs.indexOf("--sign"), 2);
  locks.push({ origin: "cairn resolve examples/strata/profile.yaml (unsigned)", path: unsigned, args: unsignedArgs });
  locks.push({
    origin: "cairn freeze (pip, demo index) of the unsigned lockfile",
    path: frozen,
    args: ["freeze", unsigned, "--index", join(dir, "indexes/pypi"), "--out", frozen],
  });
  const rows: InteropRow[] = [];
  for (const l of locks) {
    const r = await runCli(l.args, env);
    if (r.code !== 0) throw new Error(`${l.origin}: exit ${r.code}: ${r.stderr}${r.stdout}`);
    rows.push({
      direction: "cairn-to-strata",
      kind: "lockfile",
      origin: l.origin,
      path: l.path,
      peer: peerRead(bin, "lockfile", l.path),
      cairn: await cairnRead("lockfile", l.path),
    });
  }
  const sources = [
    ...cairnProfiles(),
    ...strataProfiles.filter((r) => r.kind === "profile" && r.cairn.reads).map((r) => ({ origin: `Strata's ${r.origin}`, text: readFileSync(r.path, "utf8") })),
  ];
  rows.push(...registryDocuments(bin, ex.registry, join(dir, "registry-documents")));
  let n = 0;
  for (const s of sources) {
    const path = join(dir, `profile-${String(++n).padStart(2, "0")}.yaml`);
    writeFileSync(path, profileToYaml(parseProfileText(s.text, s.origin)));
    rows.push({
      direction: "cairn-to-strata",
      kind: "profile",
      origin: `profileToYaml of ${s.origin}`,
      path,
      peer: peerRead(bin, "profile", path),
      cairn: await cairnRead("profile", path),
    });
  }
  return rows;
}

/**
 * The layer manifests and formations a cairn registry holds (files under its
 * `layers/` and `formations/` directories), each as the document Strata's
 * registry would read: the file itself (since issue 32, the seed's document;
 * cairn's DSSE envelope is the `.dsse` file beside it).
 * cairn's own resolve read every one of them from this registry already.
 */
function registryDocuments(bin: string, registry: string, out: string): InteropRow[] {
  mkdirSync(out, { recursive: true });
  const rows: InteropRow[] = [];
  const walk = (d: string, kind: "layer" | "formation"): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p, kind);
      else if (/\.(json|ya?ml)$/.test(name)) {
        // The file itself, as Strata's registry would read it (the signature beside it, `.dsse`, is cairn's and not matched here).
        const doc = readFileSync(p, "utf8");
        const path = join(out, `${kind}-${rows.length + 1}.yaml`);
        writeFileSync(path, doc);
        const origin = `the example registry's ${p.slice(registry.length + 1)}`;
        rows.push({ direction: "cairn-to-strata", kind, origin, path, peer: peerRead(bin, kind, path), cairn: { reads: true, valid: true, codes: [] } });
      }
    }
  };
  for (const [sub, kind] of [
    ["layers", "layer"],
    ["formations", "formation"],
  ] as const) {
    try {
      if (statSync(join(registry, sub)).isDirectory()) walk(join(registry, sub), kind);
    } catch {
      // a registry without that directory
    }
  }
  return rows;
}

/** Strata reads a file when its own parser returns no error (ParseLockFileBytes; for a profile, ParseProfileBytes, which also validates; yaml.Unmarshal for a layer manifest or formation). */
export function strataReads(v: PeerVerdict): boolean {
  return v.parse_error === null;
}

/** Both sides call the file frozen and cairn's `lock id` prints Strata's EnvironmentID on its first line. */
export function environmentIdEqual(row: InteropRow): boolean {
  const id = row.peer.environment_id;
  if (id === undefined || id === "" || row.cairn.lockId === undefined) return false;
  return row.cairn.lockId.split(/\s+/).includes(id);
}

export interface InteropTable {
  strataToCairn: { lockfiles: number; lockfilesRead: number; lockfilesValid: number; profiles: number; profilesRead: number; strataAccepts: number };
  cairnToStrata: {
    lockfiles: number;
    lockfilesRead: number;
    lockfilesStrict: number;
    profiles: number;
    profilesDecoded: number;
    profilesRead: number;
    registryDocuments: number;
    registryDocumentsRead: number;
  };
  environmentId: { frozen: number; equal: number };
}

/** The counts of the report (bench/strata/interop.ts prints them). */
export function tabulate(rows: readonly InteropRow[]): InteropTable {
  const s2c = rows.filter((r) => r.direction === "strata-to-cairn");
  const c2s = rows.filter((r) => r.direction === "cairn-to-strata");
  const count = (xs: readonly InteropRow[], p: (r: InteropRow) => boolean): number => xs.filter(p).length;
  // Frozen for Strata (non-empty digests) and read by cairn with no problem listed.
  const frozen = rows.filter((r) => r.kind === "lockfile" && (r.peer.environment_id ?? "") !== "" && r.cairn.valid);
  return {
    strataToCairn: {
      lockfiles: count(s2c, (r) => r.kind === "lockfile"),
      lockfilesRead: count(s2c, (r) => r.kind === "lockfile" && r.cairn.reads),
      lockfilesValid: count(s2c, (r) => r.kind === "lockfile" && r.cairn.valid),
      profiles: count(s2c, (r) => r.kind === "profile"),
      profilesRead: count(s2c, (r) => r.kind === "profile" && r.cairn.reads),
      strataAccepts: count(s2c, (r) => strataReads(r.peer)),
    },
    cairnToStrata: {
      lockfiles: count(c2s, (r) => r.kind === "lockfile"),
      lockfilesRead: count(c2s, (r) => r.kind === "lockfile" && strataReads(r.peer)),
      lockfilesStrict: count(c2s, (r) => r.kind === "lockfile" && r.peer.strict_error === null),
      profiles: count(c2s, (r) => r.kind === "profile"),
      profilesDecoded: count(c2s, (r) => r.kind === "profile" && r.peer.decode_error === null),
      profilesRead: count(c2s, (r) => r.kind === "profile" && strataReads(r.peer)),
      registryDocuments: count(c2s, (r) => r.kind === "layer" || r.kind === "formation"),
      registryDocumentsRead: count(c2s, (r) => (r.kind === "layer" || r.kind === "formation") && strataReads(r.peer)),
    },
    environmentId: { frozen: frozen.length, equal: count(frozen, environmentIdEqual) },
  };
}
