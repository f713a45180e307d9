/**
 * Package indexes written by code, for `cairn freeze` (docs/strata.md): a PEP
 * 503 simple index of wheels (zip files made by the `zip` program, each with
 * its `NAME-VER.dist-info/METADATA`) and sdists (made by `tar`), a conda
 * channel (repodata.json with each package's sha256 and size) and a CRAN
 * repository (src/contrib/PACKAGES with MD5sum). The tests build their
 * indexes with these writers; run as a script it writes the small demo set
 * the README's freeze example uses. Nothing is downloaded and nothing written
 * here is ever executed.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export function sha256Hex(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

const stagings: string[] = [];
process.on("exit", () => {
  for (const d of stagings) rmSync(d, { recursive: true, force: true });
});

function staging(): string {
  const d = mkdtempSync(join(tmpdir(), "cairn-index-stage-"));
  stagings.push(d);
  return d;
}

export interface WheelSpec {
  readonly version: string;
  /** `py3-none-any` (default) or e.g. `cp312-cp312-manylinux_2_17_x86_64`. */
  readonly tag?: string;
  readonly requires?: readonly string[];
  readonly requiresPython?: string;
  readonly extras?: readonly string[];
  readonly yanked?: boolean;
}

export interface SdistSpec {
  readonly version: string;
  /** Serve PEP 658 metadata beside the sdist (Metadata-Version 2.2, static Requires-Dist). */
  readonly metadata?: readonly string[];
}

export interface ProjectSpec {
  readonly wheels?: readonly WheelSpec[];
  readonly sdists?: readonly SdistSpec[];
}

function metadataText(
  name: string,
  version: string,
  requires: readonly string[],
  o: { requiresPython?: string; extras?: readonly string[]; mv?: string } = {},
): string {
  const lines = [`Metadata-Version: ${o.mv ?? "2.1"}`, `Name: ${name}`, `Version: ${version}`];
  if (o.requiresPython !== undefined) lines.push(`Requires-Python: ${o.requiresPython}`);
  for (const e of o.extras ?? []) lines.push(`Provides-Extra: ${e}`);
  for (const r of requires) lines.push(`Requires-Dist: ${r}`);
  return `${lines.join("\n")}\n\nA test package.\n`;
}

/** Writes a wheel with the zip program; returns its file name. */
export function writeWheel(dir: string, name: string, w: WheelSpec): string {
  const dist = name.replace(/-/g, "_");
  const filename = `${dist}-${w.version}-${w.tag ?? "py3-none-any"}.whl`;
  const stage = staging();
  const info = join(stage, `${dist}-${w.version}.dist-info`);
  mkdirSync(info);
  mkdirSync(join(stage, dist));
  writeFileSync(join(stage, dist, "__init__.py"), `VERSION = "${w.version}"\n`);
  writeFileSync(
    join(info, "METADATA"),
    metadataText(name, w.version, w.requires ?? [], {
      ...(w.requiresPython ? { requiresPython: w.requiresPython } : {}),
      ...(w.extras ? { extras: w.extras } : {}),
    }),
  );
  writeFileSync(join(info, "WHEEL"), `Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: ${w.tag ?? "py3-none-any"}\n`);
  // RECORD (the wheel spec's list of every file with its urlsafe-base64 sha256), so pip can install the wheel.
  const record = [`${dist}/__init__.py`, `${dist}-${w.version}.dist-info/METADATA`, `${dist}-${w.version}.dist-info/WHEEL`].map((f) => {
    const data = readFileSync(join(stage, f));
    return `${f},sha256=${createHash("sha256").update(data).digest("base64url")},${data.length}`;
  });
  writeFileSync(join(info, "RECORD"), `${[...record, `${dist}-${w.version}.dist-info/RECORD,,`].join("\n")}\n`);
  execFileSync("zip", ["-q", "-X", "-r", join(dir, filename), "."], { cwd: stage });
  return filename;
}

export function writeSdist(dir: string, name: string, s: SdistSpec): string {
  const base = `${name.replace(/-/g, "_")}-${s.version}`;
  const stage = staging();
  mkdirSync(join(stage, base));
  writeFileSync(join(stage, base, "PKG-INFO"), metadataText(name, s.version, s.metadata ?? [], { mv: "2.2" }));
  writeFileSync(join(stage, base, "setup.py"), "raise SystemExit('never run by cairn')\n");
  const filename = `${base}.tar.gz`;
  execFileSync("tar", ["-czf", join(dir, filename), "--owner=0", "--group=0", "--mtime=@0", base], { cwd: stage });
  if (s.metadata !== undefined) writeFileSync(join(dir, `${filename}.metadata`), metadataText(name, s.version, s.metadata, { mv: "2.2" }));
  return filename;
}

/** Writes a PEP 503 index: ROOT/NAME/index.html linking each archive (in the same directory) with its sha256. */
export function writePipIndex(root: string, projects: Readonly<Record<string, ProjectSpec>>): void {
  const names: string[] = [];
  for (const [name, spec] of Object.entries(projects)) {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    const links: string[] = [];
    for (const w of spec.wheels ?? []) {
      const f = writeWheel(dir, name, w);
      const py = w.requiresPython ? ` data-requires-python="${w.requiresPython.replace(/</g, "&lt;").replace(/>/g, "&gt;")}"` : "";
      links.push(`<a href="${f}#sha256=${sha256Hex(readFileSync(join(dir, f)))}"${py}${w.yanked ? ' data-yanked=""' : ""}>${f}</a>`);
    }
    for (const s of spec.sdists ?? []) {
      const f = writeSdist(dir, name, s);
      const meta = s.metadata !== undefined ? ` data-core-metadata="sha256=${sha256Hex(readFileSync(join(dir, `${f}.metadata`)))}"` : "";
      links.push(`<a href="${f}#sha256=${sha256Hex(readFileSync(join(dir, f)))}"${meta}>${f}</a>`);
    }
    writeFileSync(join(dir, "index.html"), `<!DOCTYPE html>\n<html><body>\n${links.join("<br/>\n")}\n</body></html>\n`);
    names.push(name);
  }
  writeFileSync(join(root, "index.html"), names.map((n) => `<a href="${n}/">${n}</a>`).join("\n"));
}

export interface CondaPackageSpec {
  readonly name: string;
  readonly version: string;
  readonly build?: string;
  readonly build_number?: number;
  readonly depends?: readonly string[];
  readonly subdir?: string;
}

/** Writes a conda channel: SUBDIR/repodata.json and noarch/repodata.json with each package's sha256 and size. */
export function writeCondaChannel(root: string, pkgs: readonly CondaPackageSpec[], subdir = "linux-64"): void {
  const docs = new Map<string, Record<string, unknown>>();
  for (const p of pkgs) {
    const sd = p.subdir ?? subdir;
    const build = p.build ?? `h0_${p.build_number ?? 0}`;
    const filename = `${p.name}-${p.version}-${build}.conda`;
    mkdirSync(join(root, sd), { recursive: true });
    const bytes = Buffer.from(`conda package ${p.name} ${p.version} ${build}\n`);
    writeFileSync(join(root, sd, filename), bytes);
    const doc = docs.get(sd) ?? { info: { subdir: sd }, packages: {}, "packages.conda": {}, removed: [] };
    (doc["packages.conda"] as Record<string, unknown>)[filename] = {
      name: p.name,
      version: p.version,
      build,
      build_number: p.build_number ?? 0,
      depends: p.depends ?? [],
      sha256: sha256Hex(bytes),
      size: bytes.length,
      subdir: sd,
    };
    docs.set(sd, doc);
  }
  for (const sd of [subdir, "noarch"]) {
    mkdirSync(join(root, sd), { recursive: true });
    writeFileSync(join(root, sd, "repodata.json"), JSON.stringify(docs.get(sd) ?? { info: { subdir: sd }, packages: {} }, null, 1));
  }
}

export interface CranPackageSpec {
  readonly name: string;
  readonly version: string;
  readonly depends?: string;
  readonly imports?: string;
}

/** Writes a CRAN repository: src/contrib/PACKAGES with MD5sum and the tarballs (made by tar). */
export function writeCranRepo(root: string, pkgs: readonly CranPackageSpec[]): void {
  const contrib = join(root, "src", "contrib");
  mkdirSync(contrib, { recursive: true });
  const stanzas: string[] = [];
  for (const p of pkgs) {
    const stage = staging();
    mkdirSync(join(stage, p.name));
    writeFileSync(join(stage, p.name, "DESCRIPTION"), `Package: ${p.name}\nVersion: ${p.version}\n`);
    const file = join(contrib, `${p.name}_${p.version}.tar.gz`);
    execFileSync("tar", ["-czf", file, "--owner=0", "--group=0", "--mtime=@0", p.name], { cwd: stage });
    const md5 = createHash("md5").update(readFileSync(file)).digest("hex");
    const lines = [`Package: ${p.name}`, `Version: ${p.version}`];
    if (p.depends) lines.push(`Depends: ${p.depends}`);
    if (p.imports) lines.push(`Imports: ${p.imports.replace(/, /g, ",\n        ")}`);
    lines.push(`MD5sum: ${md5}`, "NeedsCompilation: no");
    stanzas.push(lines.join("\n"));
  }
  writeFileSync(join(contrib, "PACKAGES"), `${stanzas.join("\n\n")}\n`);
}

/** The demo set: pandas 2.2.2 (the example profile's pip request) with its dependencies, a conda channel and a CRAN repository. */
export function writeDemoIndexes(out: string): void {
  writePipIndex(join(out, "pypi"), {
    pandas: {
      wheels: [
        { version: "2.2.2", tag: "cp312-cp312-manylinux_2_17_x86_64", requires: ["python-dateutil>=2.8.2", "pytz>=2020.1", 'tzdata>=2022.7; python_version >= "3.9"'] },
        { version: "3.0.0rc0", tag: "cp312-cp312-manylinux_2_17_x86_64", requires: ["python-dateutil>=2.8.2"] },
      ],
      sdists: [{ version: "2.2.2" }],
    },
    "python-dateutil": { wheels: [{ version: "2.9.0.post0", requires: ["six>=1.5"] }] },
    pytz: { wheels: [{ version: "2024.1" }, { version: "2024.2", yanked: true }] },
    tzdata: { wheels: [{ version: "2024.1" }] },
    six: { wheels: [{ version: "1.16.0" }] },
  });
  writeCondaChannel(join(out, "conda"), [
    { name: "scipy", version: "1.13.1", depends: ["python >=3.12,<3.13.0a0", "libopenblas >=0.3.27"] },
    { name: "libopenblas", version: "0.3.27", build_number: 1 },
  ]);
  writeCranRepo(join(out, "cran"), [
    { name: "ggplot2", version: "3.5.1", depends: "R (>= 3.5)", imports: "rlang (>= 1.1.0), grid" },
    { name: "rlang", version: "1.1.4", depends: "R (>= 3.5.0)" },
  ]);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (out === undefined) {
    process.stderr.write("usage: node --import tsx examples/strata/package-indexes.ts OUT\n");
    process.exit(2);
  }
  writeDemoIndexes(resolve(out));
  process.stdout.write(`wrote ${join(resolve(out), "pypi")}, ${join(resolve(out), "conda")} and ${join(resolve(out), "cran")}\n`);
}
