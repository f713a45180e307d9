/**
 * `cairn freeze` against pip's own resolver, on one generated PEP 503 index:
 * LAYERS × WIDTH projects, VERSIONS wheels each (py3-none-any), every version
 * of a project in layer k requiring two projects of layer k+1 with a lower
 * bound (so both resolvers must read most project pages and the picked
 * wheels' METADATA), and one root requesting every project of layer 0.
 *
 *   node --import tsx bench/freeze/setup.ts OUT [LAYERS] [WIDTH] [VERSIONS]
 *
 * writes OUT/pypi (the index), OUT/env.lock (a lockfile requesting `root`) and
 * prints the two commands to time side by side: cairn freeze (which downloads,
 * hash-checks and pins every chosen wheel) and `pip download` of the same
 * request for the same target (which also resolves, downloads and checks the
 * hashes). Figures: bench/freeze/README.md.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { writePipIndex, type ProjectSpec } from "../../examples/strata/package-indexes.ts";
import { Catalog, parseProfileText, probedBase, resolveProfile, writeLockfile } from "../../src/strata/index.ts";

const out = resolve(process.argv[2] ?? "/tmp/cairn-freeze-bench");
const LAYERS = Number(process.argv[3] ?? 6);
const WIDTH = Number(process.argv[4] ?? 20);
const VERSIONS = Number(process.argv[5] ?? 4);

const name = (k: number, i: number): string => `p${k}-${i}`;
const projects: Record<string, ProjectSpec> = {};
for (let k = 0; k < LAYERS; k++) {
  for (let i = 0; i < WIDTH; i++) {
    const deps = k + 1 < LAYERS ? [name(k + 1, i), name(k + 1, (i + 1) % WIDTH)].map((d) => `${d}>=1.1`) : [];
    projects[name(k, i)] = { wheels: Array.from({ length: VERSIONS }, (_, v) => ({ version: `1.${v}`, requires: deps })) };
  }
}
projects.root = { wheels: [{ version: "1.0", requires: Array.from({ length: WIDTH }, (_, i) => name(0, i)) }] };
mkdirSync(out, { recursive: true });
writePipIndex(join(out, "pypi"), projects);
const profile = parseProfileText("name: bench\nbase: {os: debian12}\nsoftware: []\npackages: [{manager: pip, packages: [{name: root}]}]\n");
const base = probedBase(
  { name: "debian12", os_id: "debian", version_id: "12", arch: "x86_64", abi: "gnu", capabilities: [{ name: "glibc", version: "2.36" }] },
  "rootfs:bench",
  new Date(),
);
writeLockfile(
  join(out, "env.lock"),
  resolveProfile({ profile, catalog: new Catalog().seal(), probedBase: base, allowUnsignedOffline: false, now: new Date(), cairnVersion: "bench" }),
);
const wheels = LAYERS * WIDTH * VERSIONS + 1;
process.stdout.write(`${Object.keys(projects).length} projects, ${wheels} wheels in ${join(out, "pypi")}\n`);
process.stdout.write(`A: node bin/cairn.js freeze ${join(out, "env.lock")} --index ${join(out, "pypi")} --python 3.12 --out ${join(out, "frozen.lock")}\n`);
process.stdout.write(
  `B: python3 -m pip --isolated download -q --no-cache-dir --disable-pip-version-check -d ${join(out, "dl")} --index-url file://${join(out, "pypi")}/ --python-version 3.12 --platform manylinux_2_36_x86_64 --only-binary=:all: root\n`,
);
