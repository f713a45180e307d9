/**
 * Stage 5, conflicts. Two chosen layers conflict when
 * - both provide a capability of the same name (two pythons: which one is
 *   `python`?), or
 * - both hold the same path with different content (a file with another
 *   digest, a symlink with another target, or a file in one and a symlink in
 *   the other; or a file or symlink in one where the other has files
 *   below, i.e. a directory: which one an overlay shows depends on the order), or
 * - they are two versions of the same layer name.
 * Layers of one formation never conflict with each other: the formation fixed
 * their order. Every conflict is reported at once.
 */
import { CairnError, type Issue } from "../../core/index.ts";
import { pickId, type Pick } from "./pick.ts";

function sameFormation(a: Pick, b: Pick): boolean {
  return a.from_formation !== undefined && a.from_formation === b.from_formation;
}

export function checkConflicts(picks: readonly Pick[]): void {
  const issues: Issue[] = [];
  const capOwner = new Map<string, Pick>();
  const nameOwner = new Map<string, Pick>();
  // Every owner of a path, not only the first: members of one formation may differ among themselves, and a layer outside it must be checked against each of them.
  const pathOwners = new Map<string, { pick: Pick; content: string }[]>();
  // Directories are implied by the paths below them (manifests list only files and symlinks).
  const dirOwners = new Map<string, Set<Pick>>();
  const reported = new Set<string>();
  const clash = (a: Pick, b: Pick, what: string): void => {
    const key = `${pickId(a)}\0${pickId(b)}\0${what}`;
    if (reported.has(key)) return; // one directory clash would otherwise repeat for every file below it
    reported.add(key);
    issues.push({ code: "RESOLVE_CONFLICT", path: pickId(b), message: `${pickId(a)} and ${pickId(b)} ${what}` });
  };
  for (const p of picks) {
    const m = p.layer.doc.value;
    const sameName = nameOwner.get(m.name);
    if (sameName !== undefined && !sameFormation(sameName, p)) clash(sameName, p, `are two versions of ${m.name}`);
    else nameOwner.set(m.name, p);
    for (const c of m.provides) {
      const other = capOwner.get(c.name);
      if (other !== undefined && other !== p && !sameFormation(other, p)) clash(other, p, `both provide ${c.name}`);
      else capOwner.set(c.name, p);
    }
    const entries: Array<[string, string]> = [
      ...[...m.content_manifest].map(([path, d]): [string, string] => [path, `file ${d}`]),
      ...[...m.symlinks].map(([path, t]): [string, string] => [path, `symlink ${t}`]),
    ];
    for (const [path, content] of entries) {
      const owners = pathOwners.get(path) ?? [];
      const other = owners.find((o) => o.content !== content && !sameFormation(o.pick, p));
      if (other !== undefined) clash(other.pick, p, `hold different content at ${path}`);
      owners.push({ pick: p, content });
      pathOwners.set(path, owners);
      const differs = (o: Pick): boolean => o !== p && !sameFormation(o, p);
      const asDir = [...(dirOwners.get(path) ?? [])].find(differs);
      if (asDir !== undefined) clash(asDir, p, `disagree on ${path}: a directory in one, not in the other`);
      for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) {
        const dir = path.slice(0, i);
        const notDir = (pathOwners.get(dir) ?? []).find((o) => differs(o.pick));
        if (notDir !== undefined) clash(notDir.pick, p, `disagree on ${dir}: a directory in one, not in the other`);
        const dirs = dirOwners.get(dir) ?? new Set<Pick>();
        dirs.add(p);
        dirOwners.set(dir, dirs);
      }
    }
  }
  if (issues.length > 0) {
    throw new CairnError("RESOLVE_CONFLICT", `conflicting layers:\n${issues.map((i) => `  ${i.message}`).join("\n")}`, {
      path: issues[0]!.path,
      issues,
      hint: "drop one of the conflicting layers from the profile, or fold them into one formation",
    });
  }
}
