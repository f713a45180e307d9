// Lmod modulefiles (issue 13 item 4): a layer carries a given or generated
// modulefile at /usr/share/modulefiles/<name>/<version>.lua; the lockfile
// records its path and sha256; Debian's Lmod, on the host, loads the
// modulefile read back from the layer blob and sets exactly the environment
// it declares. Refusals each next to a passing control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256, type JsonModel } from "../../src/core/index.ts";
import {
  buildLayerFromDirectory,
  generateModulefile,
  lmodLoginScript,
  LMOD_LOGIN_SCRIPT,
  layerManifestToModel,
  modulefilePath,
  parseLayerManifest,
  parseLockfileText,
  parseModuleEnv,
  readLayerBlobs,
  type LayerSpec,
} from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { exampleRegistry, resolveWithCli, tempDir } from "./fixtures.ts";

const LMOD_INIT = "/usr/share/lmod/lmod/init/bash";
const lmodMissing = existsSync(LMOD_INIT) ? undefined : "Lmod (Debian package lmod, scripts/setup-host.sh)";

const SPEC: LayerSpec = {
  name: "hello",
  version: "1.0",
  arch: "noarch",
  abi: "none",
  install_layout: "prefix",
  user_selectable: true,
  provides: [{ name: "hello", version: "1.0" }] as never,
  requires: [],
  builder: "cairn test",
};

/** A layer source with bin/ and lib/ (no share/man). */
function source(): string {
  const src = tempDir("cairn-mod-src-");
  mkdirSync(join(src, "bin"));
  mkdirSync(join(src, "lib"));
  writeFileSync(join(src, "bin", "hello"), "#!/bin/sh\necho hello\n", { mode: 0o755 });
  return src;
}

/** The modulefile bytes as the layer blob holds them (read back through the strict reader). */
async function modulefileInBlob(built: ReturnType<typeof buildLayerFromDirectory>): Promise<string> {
  const { tree, content } = await readLayerBlobs([{ blob: built.blob.blob, expected: built.blob, where: "test" }]);
  const e = tree.get(modulefilePath(SPEC.name, SPEC.version));
  assert.ok(e?.type === "file", "the blob holds the modulefile");
  return Buffer.from(content.get(e.sha256)!).toString("utf8");
}

/** Loads `name/version` from a module tree holding `text` with the host's Lmod, and returns the environment afterwards. */
function loadWithLmod(text: string, extraEnv: NodeJS.ProcessEnv = {}): Map<string, string> {
  const tree = tempDir("cairn-mod-tree-");
  mkdirSync(join(tree, SPEC.name));
  writeFileSync(join(tree, SPEC.name, `${SPEC.version}.lua`), text);
  const out = execFileSync(
    "bash",
    ["--noprofile", "--norc", "-c", `source ${LMOD_INIT} && module use "$1" && module load ${SPEC.name}/${SPEC.version} && env -0`, "lmod-test", tree],
    { env: { PATH: "/usr/bin:/bin", HOME: tempDir("cairn-mod-home-"), ...extraEnv } },
  );
  const env = new Map<string, string>();
  for (const kv of out.toString("utf8").split("\0")) {
    const eq = kv.indexOf("=");
    if (eq > 0) env.set(kv.slice(0, eq), kv.slice(eq + 1));
  }
  return env;
}

const TRICKY = 'hi "there" \\ $HOME ]] ..os.exit(1)';

test("a generated modulefile, read back from the layer blob, loads under Lmod and sets exactly what it declares", { skip: needs(lmodMissing) }, async () => {
  const built = buildLayerFromDirectory(source(), {
    ...SPEC,
    modulefile: { kind: "generated", env: parseModuleEnv([`HELLO_GREETING=${TRICKY}`, "HELLO_HOME=/opt/hello/1.0"]) },
  });
  assert.equal(built.manifest.modulefile, "/usr/share/modulefiles/hello/1.0.lua");
  const text = await modulefileInBlob(built);
  assert.equal(built.manifest.content_manifest.get(built.manifest.modulefile!), sha256(text));
  const env = loadWithLmod(text);
  assert.equal(env.get("PATH")?.split(":")[0], "/opt/hello/1.0/bin");
  assert.equal(env.get("LD_LIBRARY_PATH"), "/opt/hello/1.0/lib");
  assert.equal(env.get("HELLO_GREETING"), TRICKY, "a value with quotes, backslash and Lua syntax stays a literal string");
  assert.equal(env.get("HELLO_HOME"), "/opt/hello/1.0");
  // Control: no share/man and no lib64 in the layer, so no MANPATH entry for it; and a module not loaded sets nothing.
  assert.ok(!(env.get("MANPATH") ?? "").includes("/opt/hello"));
  const unloaded = loadWithLmod("-- empty\n");
  assert.equal(unloaded.get("HELLO_GREETING"), undefined);
});

test("a given modulefile (--modulefile) is carried byte for byte and loads under Lmod", { skip: needs(lmodMissing) }, async () => {
  const given = 'setenv("HELLO_FROM", "given")\nprepend_path("PATH", "/opt/hello/1.0/bin")\n';
  const built = buildLayerFromDirectory(source(), { ...SPEC, modulefile: { kind: "given", text: given } });
  assert.equal(await modulefileInBlob(built), given);
  assert.equal(loadWithLmod(given).get("HELLO_FROM"), "given");
});

test("the same layer gives the same modulefile and blob; another value gives another blob", () => {
  const a = buildLayerFromDirectory(source(), { ...SPEC, modulefile: { kind: "generated", env: [["A", "1"]] } });
  const b = buildLayerFromDirectory(source(), { ...SPEC, modulefile: { kind: "generated", env: [["A", "1"]] } });
  const c = buildLayerFromDirectory(source(), { ...SPEC, modulefile: { kind: "generated", env: [["A", "2"]] } });
  assert.equal(a.blob.sha256, b.blob.sha256);
  assert.notEqual(a.blob.sha256, c.blob.sha256);
  // Control: without a modulefile the manifest has no such field and the blob no such file.
  const none = buildLayerFromDirectory(source(), SPEC);
  assert.equal(none.manifest.modulefile, undefined);
  assert.ok(![...none.blob.content_manifest.keys()].some((k) => k.startsWith("/usr/share/modulefiles")));
});

test("hostile module input is refused; controls pass", () => {
  assertCode(() => parseModuleEnv(["A=line\nbreak"]), "USAGE");
  assertCode(() => parseModuleEnv(["1A=x"]), "USAGE");
  assertCode(() => parseModuleEnv(["A=1", "A=2"]), "USAGE");
  assert.deepEqual(parseModuleEnv(["B=2", "A=x=y"]), [
    ["A", "x=y"],
    ["B", "2"],
  ]);
  // The directory already holds the modulefile path, or `usr` is a file.
  const clash = source();
  mkdirSync(join(clash, "usr", "share", "modulefiles", "hello"), { recursive: true });
  writeFileSync(join(clash, "usr", "share", "modulefiles", "hello", "1.0.lua"), "-- mine\n");
  assertCode(() => buildLayerFromDirectory(clash, { ...SPEC, install_layout: "rootfs", modulefile: { kind: "given", text: "x" } }), "LAYER_INVALID");
  const fileUsr = source();
  writeFileSync(join(fileUsr, "usr"), "not a dir");
  assertCode(() => buildLayerFromDirectory(fileUsr, { ...SPEC, install_layout: "rootfs", modulefile: { kind: "given", text: "x" } }), "LAYER_INVALID");
  assert.ok(buildLayerFromDirectory(source(), { ...SPEC, install_layout: "rootfs", modulefile: { kind: "given", text: "x" } }).manifest.modulefile);
  // A manifest naming a modulefile elsewhere, or one its content manifest lacks.
  const model = layerManifestToModel(buildLayerFromDirectory(source(), { ...SPEC, modulefile: { kind: "given", text: "x" } }).manifest);
  parseLayerManifest(model as JsonModel);
  assertCode(() => parseLayerManifest({ ...model, modulefile: "/etc/profile.d/evil.lua" } as JsonModel), "LAYER_INVALID", "/modulefile");
  const noFile = layerManifestToModel(buildLayerFromDirectory(source(), SPEC).manifest);
  assertCode(() => parseLayerManifest({ ...noFile, modulefile: modulefilePath("hello", "1.0") } as JsonModel), "LAYER_INVALID", "/modulefile");
  // The generated text contains only what was declared (no code from values).
  const text = generateModulefile({ name: "x", version: "1", prefix: "", provides: [], env: [["V", '"); os.execute("id']] }, new Set());
  assert.match(text, /setenv\("V", "\\"\); os\.execute\(\\"id"\)/);
});

test("CLI: layer build --generate-modulefile --module-env; the lockfile records path and sha256; a lock naming another path is refused", async () => {
  const ex = exampleRegistry();
  const src = source();
  const b = await runCli([
    "layer",
    "build",
    src,
    "--name",
    "hello",
    "--version",
    "1.0",
    "--provides",
    "hello@1.0",
    "--install-layout",
    "prefix",
    "--module-env",
    "HELLO_GREETING=hi",
    "--registry",
    ex.registry,
    "--key",
    join(ex.root, "registry.key"),
    "--json",
  ]);
  assert.equal(b.code, 0, b.stderr);
  const built = JSON.parse(b.stdout);
  assert.equal(built.modulefile.path, "/usr/share/modulefiles/hello/1.0.lua");
  const both = await runCli([
    "layer",
    "build",
    src,
    "--name",
    "h2",
    "--version",
    "1",
    "--modulefile",
    join(src, "bin", "hello"),
    "--generate-modulefile",
    "--registry",
    ex.registry,
    "--unsigned",
  ]);
  assert.equal(both.code, 2, "--modulefile and --generate-modulefile together are a usage error");

  const profile = join(ex.root, "hello.yaml");
  writeFileSync(profile, 'name: hello\nversion: "1"\nbase:\n  os: debian12\n  arch: x86_64\nsoftware:\n  - hello@1.0\n');
  const lock = join(ex.root, "hello.lock");
  const r = await resolveWithCli(ex, profile, lock);
  assert.equal(r.code, 0, r.stderr);
  const v = await runCli(["lock", "verify", lock, "--pub", join(ex.root, "lock.pub"), "--registry", ex.registry]);
  assert.equal(v.code, 0, v.stderr);
  const text = readFileSync(lock, "utf8");
  const read = parseLockfileText(text);
  const layer = read.layers.find((l) => l.id === "hello-1.0-none-noarch")!;
  assert.equal(layer.manifest.has_modulefile, true, "the lockfile says the layer carries a modulefile");
  assert.deepEqual({ ...layer.modulefile }, built.modulefile, "its path is the seed's and its digest is the content manifest's");
  // lock verify compares the lockfile's layer with the registry's manifest: a lock whose modulefile digest was edited, then re-signed, fails; control: as resolved.
  const resigned = join(ex.root, "hello-edited.lock");
  writeFileSync(resigned, text.replace(built.modulefile.sha256.slice(7), "e".repeat(64)));
  assert.equal((await runCli(["lock", "sign", resigned, "--key", join(ex.root, "lock.key")])).code, 0);
  const tampered = await runCli([
    "lock",
    "verify",
    resigned,
    "--pub",
    join(ex.root, "lock.pub"),
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--json",
  ]);
  assert.equal(tampered.code, 1);
  assert.equal(JSON.parse(tampered.stdout).error.code, "DIGEST_MISMATCH");
  assert.equal(JSON.parse(tampered.stdout).error.path, "/layers/0/content_manifest");
});

test("the login script puts the layers' Lmod tree on MODULEPATH and loads the profile's defaults; a settings mapping loads nothing", {
  skip: needs(lmodMissing),
}, () => {
  const tree = tempDir("cairn-mod-login-");
  mkdirSync(join(tree, "hello"));
  writeFileSync(join(tree, "hello", "1.0.lua"), generateModulefile({ ...SPEC, prefix: "opt/hello/1.0", env: [["HELLO_GREETING", "hi"]] }, new Set()));
  const login = (script: string): Map<string, string> => {
    const file = join(tree, "..", `${tree.split("/").pop()}-login.sh`);
    writeFileSync(file, script);
    const out = execFileSync("bash", ["--noprofile", "--norc", "-c", `source ${LMOD_INIT} && source "$1" && env -0`, "login", file], {
      env: { PATH: "/usr/bin:/bin", HOME: tempDir("cairn-mod-home-") },
    });
    return new Map(
      out
        .toString("utf8")
        .split("\0")
        .filter((kv) => kv.includes("="))
        .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    );
  };
  const loaded = login(lmodLoginScript(["hello/1.0"], tree));
  assert.equal(loaded.get("HELLO_GREETING"), "hi");
  assert.ok(loaded.get("MODULEPATH")?.split(":").includes(tree));
  const settings = login(lmodLoginScript([], tree));
  assert.equal(settings.get("HELLO_GREETING"), undefined, "control: no defaults preload nothing");
  assert.ok(settings.get("MODULEPATH")?.split(":").includes(tree));
  assertCode(() => lmodLoginScript(["hello/1.0; rm -rf /"], tree), "LOCK_INVALID", "/defaults");
  assert.equal(LMOD_LOGIN_SCRIPT, "/etc/profile.d/z-cairn-lmod.sh");
});
