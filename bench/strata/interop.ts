/**
 * Issue 32's interoperability table, with Strata's own parser as the peer:
 * how many of the lockfiles and profiles written in Strata's repository cairn
 * reads, how many of the files cairn writes Strata reads, and on how many
 * frozen lockfiles the two give one EnvironmentID. The counting is
 * tests/strata/peer/interop.ts, the same code tests/strata/strata-peer.test.ts
 * asserts with; see bench/strata/README.md.
 *
 *   node --import tsx bench/strata/interop.ts [--files]
 *
 * Needs the Strata mirror (CAIRN_STRATA_SRC) and Go (scripts/strata-peer.sh
 * builds the peer); exits 3 naming what is missing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cairnToStrata, environmentIdEqual, strataReads, strataToCairn, tabulate, type InteropRow } from "../../tests/strata/peer/interop.ts";
import { strataPeer } from "../../tests/strata/peer/peer.ts";

const peer = strataPeer();
if (!("bin" in peer)) {
  process.stderr.write(`strata interop: ${peer.missing}\n`);
  process.exit(3);
}
const dir = mkdtempSync(join(tmpdir(), "cairn-strata-interop-"));
try {
  const fromStrata = await strataToCairn(peer.bin, peer.src, peer.commit, join(dir, "strata"));
  const fromCairn = await cairnToStrata(peer.bin, join(dir, "cairn"), fromStrata);
  const t = tabulate([...fromStrata, ...fromCairn]);
  const s = t.strataToCairn;
  const c = t.cairnToStrata;
  const out = [
    `peer: Strata spec at ${peer.commit} (${peer.src})`,
    "",
    "| direction | files | read by the other side |",
    "|---|---|---|",
    `| Strata → cairn, lockfiles (\`lock diff\`) | ${s.lockfiles} | ${s.lockfilesRead} (no problem listed: ${s.lockfilesValid}) |`,
    `| Strata → cairn, profiles (\`profile validate\`) | ${s.profiles} | ${s.profilesRead} |`,
    `| cairn → Strata, lockfiles (ParseLockFileBytes) | ${c.lockfiles} | ${c.lockfilesRead} (no unknown field: ${c.lockfilesStrict}) |`,
    `| cairn → Strata, profiles (decode / ParseProfileBytes) | ${c.profiles} | ${c.profilesDecoded} / ${c.profilesRead} |`,
    `| cairn → Strata, layer manifests and formations (yaml.Unmarshal) | ${c.registryDocuments} | ${c.registryDocumentsRead} |`,
    `| EnvironmentID equal, lockfiles Strata calls frozen (cairn: no problem) | ${t.environmentId.frozen} | ${t.environmentId.equal} |`,
    "",
    `Strata v0.22.0 itself reads ${s.strataAccepts} of the ${s.lockfiles + s.profiles} files from its repository.`,
  ];
  if (process.argv.includes("--files")) {
    const line = (r: InteropRow): string =>
      `${r.direction} ${r.kind} ${r.origin}: strata ${strataReads(r.peer) ? "reads" : (r.peer.parse_error ?? "").split("\n").slice(0, 2).join(" ")}; cairn ${r.cairn.reads ? `reads${r.cairn.codes.length ? ` with problems [${r.cairn.codes.join(", ")}]` : ""}` : `refuses [${r.cairn.codes.join(", ")}]`}${r.kind === "lockfile" && (r.peer.environment_id ?? "") !== "" ? `; id ${environmentIdEqual(r) ? "equal" : "differs"}` : ""}`;
    out.push("", ...[...fromStrata, ...fromCairn].map(line));
  }
  process.stdout.write(`${out.join("\n")}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
