// The packed package runs without tsx: `npm pack` of this checkout (dist/
// built by the test script, as `npm ci`'s prepare step builds it), installed
// into an empty project whose node_modules holds only the package's
// runtime dependencies (copied from this checkout's node_modules, the same
// versions the lockfile pins), then `cairn --version`, `cairn manifest
// ingest`, an OCI `cairn workload assemble` (the vendored schemas) and a
// full `cairn workload verify` (the inflate worker) run from the installed
// bin, which runs the CLI bundle (dist/cli/bundle.js). Control: the same install without dist/ refuses
// with exit 3 instead of running anything.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { runCli } from "../helpers/cli.ts";
import { ociWorkspace } from "../workload/fixtures/workspace.ts";

const npm = (args: string[], cwd: string) => spawnSync("npm", args, { cwd, encoding: "utf8", timeout: 120_000 });

/** The package's runtime closure as the lockfile pins it (neither dev nor optional). */
function runtimePackages(): string[] {
  const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean; optional?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([k, v]) => k !== "" && v.dev !== true && v.optional !== true)
    .map(([k]) => k);
}

test("the packed package, installed without tsx, runs cairn --version, manifest ingest and an OCI assemble from dist/", { timeout: 240_000 }, async () => {
  assert.ok(existsSync(join(PROJECT_ROOT, "dist", "cli", "main.js")), "dist/ is built (npm run build)");
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { version: string; dependencies: Record<string, string> };
  assert.equal(pkg.dependencies.tsx, undefined, "tsx is not a runtime dependency");
  assert.ok(!runtimePackages().includes("node_modules/tsx"), "the lockfile marks tsx dev-only");
  const dir = mkdtempSync(join(tmpdir(), "cairn-packed-"));
  try {
    // npm packs a copy of what the package's `files` names (plus package.json and the docs npm always adds): other test
    // files write into the checkout while this one runs, and npm pack over a changing tree warned "tarball data ...
    // seems to be corrupted", retried, and produced a tarball without dist/ (seen once here and once in CI).
    const source = join(dir, "source");
    const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { files: string[] };
    for (const f of [...manifest.files, "package.json", "README.md", "CHANGELOG.md", ".npmignore"]) {
      if (existsSync(join(PROJECT_ROOT, f))) cpSync(join(PROJECT_ROOT, f), join(source, f), { recursive: true });
    }
    const packed = npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dir, "--cache", join(dir, "npm-cache")], source);
    assert.equal(packed.status, 0, packed.stderr);
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    // What the tarball holds, read from the tarball itself (npm's own listing is printed beside it when they differ).
    const listed = spawnSync("tar", ["-tzf", join(dir, info!.filename)], { encoding: "utf8", timeout: 60_000, maxBuffer: 16 << 20 });
    assert.equal(listed.status, 0, listed.stderr);
    const shipped = new Set(listed.stdout.split("\n").map((l) => l.replace(/^package\//, "")));
    const diagnosis = () =>
      [
        `npm ${npm(["--version"], PROJECT_ROOT).stdout.trim()}`,
        `dist entries: ${[...shipped].filter((p) => p.startsWith("dist/")).length} in the tarball, ${info!.files.filter((f) => f.path.startsWith("dist/")).length} in npm's listing`,
        `npm pack stderr: ${packed.stderr.slice(-2000)}`,
      ].join("; ");
    for (const f of [
      "bin/cairn.js",
      "dist/cli/bundle.js",
      "dist/core/inflate-worker.js",
      "dist/vm/responder-main.js",
      "dist/cli/main.js",
      "dist/oci/schemas/image-manifest-schema.json",
      "agent/main.c",
      "package.json",
    ]) {
      assert.ok(shipped.has(f), `the package ships ${f} (${diagnosis()})`);
    }
    const proj = join(dir, "proj");
    mkdirSync(join(proj, "node_modules"), { recursive: true });
    writeFileSync(join(proj, "package.json"), JSON.stringify({ name: "empty", version: "1.0.0", private: true }));
    for (const p of runtimePackages()) {
      if (!existsSync(join(PROJECT_ROOT, p))) continue; // an optional peer that is not installed
      mkdirSync(dirname(join(proj, p)), { recursive: true });
      cpSync(join(PROJECT_ROOT, p), join(proj, p), { recursive: true });
    }
    // npm would re-fetch copied packages that have a bin (yaml) to relink it, so the package is installed as npm lays it out:
    // the tarball's package/ as node_modules/cairn, and its bin linked into node_modules/.bin.
    mkdirSync(join(proj, "node_modules", "cairn"));
    const untar = spawnSync("tar", ["-xzf", join(dir, info!.filename), "-C", join(proj, "node_modules", "cairn"), "--strip-components=1"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(untar.status, 0, untar.stderr);
    mkdirSync(join(proj, "node_modules", ".bin"), { recursive: true });
    symlinkSync("../cairn/bin/cairn.js", join(proj, "node_modules", ".bin", "cairn"));
    assert.ok(!existsSync(join(proj, "node_modules", "tsx")), "tsx is not installed");
    assert.ok(!existsSync(join(proj, "node_modules", "esbuild")), "esbuild is not installed");
    const bin = join(proj, "node_modules", ".bin", "cairn");
    const cairn = (args: string[]) =>
      spawnSync(bin, args, { cwd: proj, encoding: "utf8", timeout: 90_000, env: { ...process.env, CAIRN_HOME: join(dir, "home") } });

    const version = cairn(["--version"]);
    assert.equal(version.status, 0, version.stderr);
    assert.equal(version.stdout, `${pkg.version}\n`);
    const help = cairn(["--help"]); // the whole program, loaded from dist/
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /workload/);

    const devcontainer = join(dir, "devcontainer.json");
    writeFileSync(devcontainer, JSON.stringify({ image: `debian@sha256:${"a".repeat(64)}`, remoteUser: "dev" }));
    const ingest = cairn(["manifest", "ingest", devcontainer, "--json"]);
    assert.equal(ingest.status, 0, ingest.stderr);
    const fromSources = await runCli(["manifest", "ingest", devcontainer, "--json"]);
    assert.equal(fromSources.code, 0, fromSources.stderr);
    assert.equal(JSON.parse(ingest.stdout).manifest.address, JSON.parse(fromSources.stdout).manifest.address, "dist and sources give the same address");

    const ws = ociWorkspace();
    try {
      const assembled = cairn(["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--json"]);
      assert.equal(assembled.status, 0, assembled.stderr);
      assert.match(JSON.parse(assembled.stdout).workload, /^sha256:[0-9a-f]{64}$/);
      // a full verify re-derives on the inflate thread, whose worker the bundled CLI finds as a file of dist/
      const verified = cairn(["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--full", "--json"]);
      assert.equal(verified.status, 0, verified.stderr);
      const report = JSON.parse(verified.stdout);
      assert.equal(report.derivation, "re-derived");
      assert.equal(report.workload, JSON.parse(assembled.stdout).workload);
    } finally {
      rmSync(ws.dir, { recursive: true, force: true });
    }

    // control: the same installed package without its compiled library refuses (exit 3) and runs nothing
    rmSync(join(proj, "node_modules", "cairn", "dist"), { recursive: true, force: true });
    const missing = cairn(["manifest", "ingest", devcontainer, "--json"]);
    assert.equal(missing.status, 3);
    assert.equal(missing.stdout, "");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
