/**
 * Every --json document validates against its JSON Schema (issue 36, item 4):
 * each command that takes --json is run once on real inputs made here (the
 * example registry and rootfs, an OCI workload, devcontainer files, run
 * directories written as `cairn run` writes them), and its stdout is checked
 * against docs/schemas/<tag>.schema.json with ajv (draft 2020-12). The
 * commands that need a VM, a kit or a registry server are checked by the tests
 * that already make those (ELSEWHERE names them); the last test fails when a
 * command with --json is checked nowhere, or a schema file has no command.
 */
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { checkDocument, ERROR_TAG, jsonCommands, schemaFileOf, schemaFiles, tagOf } from "../helpers/json-schemas.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { PINNED_IMAGE } from "../manifest/helpers.ts";
import { exampleRegistry, resolveArgs, resolveWithCli } from "../strata/fixtures.ts";
import { writePipIndex } from "../strata/freeze-fixtures.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { writeRun } from "../vm/fixtures/run-dirs.ts";
import { ociWorkspace } from "../workload/fixtures/workspace.ts";
import { writeRunOrigin } from "../../src/vm/run-origin.ts";

/**
 * The commands whose --json output a VM, the guest kit or a registry server
 * makes: checked with the same helper in the test named (those tests run in
 * the full suite; this file makes neither a VM run nor a server).
 */
export const ELSEWHERE: Readonly<Record<string, string>> = {
  "cairn.cli.run/1": "tests/vm/bundle.test.ts", // a signed lockfile run; its failure document in tests/vm/cli.test.ts
  "cairn.cli.replay/1": "tests/vm/cli.test.ts", // a replay of a failed record (error and verdict)
  "cairn.cli.branch/1": "tests/vm/branch-cli.test.ts", // a branch of a probe run with checkpoints
  "cairn.cli.bundle/1": "tests/vm/bundle.test.ts",
  "cairn.cli.bundle-push/1": "tests/registry/bundle-push.test.ts",
  "cairn.cli.campaign-run/1": "tests/fleet/campaign-vm.test.ts",
  "cairn.cli.campaign-verify/1": "tests/fleet/campaign-vm.test.ts",
  "cairn.cli.campaign-report/1": "tests/fleet/campaign-resume.test.ts", // and tests/fleet/campaign-vm.test.ts
  "cairn.cli.campaign-status/1": "tests/fleet/campaign-resume.test.ts",
  "cairn.cli.campaign-task/1": "tests/fleet/campaign-bundle.test.ts", // a verify task, already published and run again
  "cairn.cli.explore/1": "tests/vm/explore.test.ts", // ten branches of the network example, and a refusal among them
};

/**
 * Commands whose --json output no test validates yet, each with why: the
 * schema is written from the code and docs/json-output.md says it is unchecked.
 */
export const UNCHECKED: Readonly<Record<string, string>> = {};

const seen = new Set<string>();
const dumpDir = process.env.CAIRN_JSON_SAMPLES;

/** Runs `argv` (which ends in --json), expects `code`, and validates stdout against the tag of `path`. */
async function valid(path: readonly string[], argv: readonly string[], env: NodeJS.ProcessEnv = process.env, code = 0): Promise<Record<string, unknown>> {
  const r = await runCli([...argv], env);
  const tag = tagOf(path);
  if (dumpDir !== undefined) {
    // writing the samples a schema is drafted from: no check
    writeFileSync(join(dumpDir, `${tag.replace("/", ".")}${seen.has(tag) ? ".2" : ""}.json`), `${r.code}\n${r.stdout}${r.stderr}`);
    seen.add(tag);
    return r.code === 0 || r.code === 1 ? (JSON.parse(r.stdout) as Record<string, unknown>) : {};
  }
  assert.equal(r.code, code, `${argv.join(" ")}: ${r.stdout}${r.stderr}`);
  const { doc, problems } = checkDocument(r.stdout, tag);
  assert.deepEqual(problems, [], `${tag}: ${r.stdout.slice(0, 4000)}`);
  seen.add(tag);
  return doc;
}

const work = mkdtempSync(join(tmpdir(), "cairn-json-schemas-"));
after(() => rmSync(work, { recursive: true, force: true }));
const NOW = "2026-03-01T12:00:00.000Z";
const env = { ...process.env, CAIRN_NOW: NOW, CAIRN_HOME: join(work, "home") };
const ex = exampleRegistry();
const PROFILE = join(PROJECT_ROOT, "examples/strata/profile.yaml");
const LOCK_PUB = join(ex.root, "lock.pub");
const REG_KEY = join(ex.root, "registry.key");
const TRUST = `keyfile://${ex.root}/registry.pub`;

describe("every --json document validates against its schema", () => {
  it("keygen and the manifest commands", async () => {
    await valid(["keygen"], ["keygen", "--out", join(work, "k"), "--json"]);
    const dc = join(work, "devcontainer.json");
    writeFileSync(dc, JSON.stringify({ image: PINNED_IMAGE, containerEnv: { A: "1" } }));
    const dc2 = join(work, "other.json");
    writeFileSync(dc2, JSON.stringify({ image: PINNED_IMAGE, containerEnv: { A: "2" } }));
    const m = join(work, "env.manifest.json");
    await valid(["manifest", "ingest"], ["manifest", "ingest", dc, "--sign", join(work, "k.key"), "--out", m, "--json"]);
    await valid(["manifest", "verify"], ["manifest", "verify", m, "--pub", join(work, "k.pub"), "--json"]);
    await valid(["manifest", "diff"], ["manifest", "diff", dc, dc2, "--json"], env, 1);
    await valid(["manifest", "resume-check"], ["manifest", "resume-check", m, dc, "--json"]);
    await valid(["manifest", "show"], ["manifest", "show", dc, "--json"]);
    await valid(["manifest", "pin"], ["manifest", "pin", dc, "--json"]);
    const t = join(work, "template");
    mkdirSync(join(t, ".devcontainer"), { recursive: true });
    writeFileSync(
      join(t, "devcontainer-template.json"),
      JSON.stringify({ id: "base", version: "1.0.0", name: "Base", options: { variant: { type: "string", proposals: ["ubuntu"], default: "ubuntu" } } }),
    );
    writeFileSync(join(t, ".devcontainer", "devcontainer.json"), '{ "image": "mcr.microsoft.com/devcontainers/base:${templateOption:variant}" }');
    await valid(["manifest", "apply-template"], ["manifest", "apply-template", t, "--json"]);
  });

  it("the workload and store commands", async () => {
    const ws = ociWorkspace();
    await valid(["workload", "check"], ["workload", "check", ws.specPath, "--json"]);
    await valid(["workload", "assemble"], ["workload", "assemble", ws.specPath, "--store", ws.storeDir, "--json"]);
    await valid(["workload", "verify"], ["workload", "verify", ws.lockPath, "--store", ws.storeDir, "--json"]);
    await valid(["workload", "show"], ["workload", "show", ws.lockPath, "--tree", "--store", ws.storeDir, "--json"]);
    await valid(["store", "du"], ["store", "du", "--store", ws.storeDir, "--json"]);
    await valid(["store", "gc"], ["store", "gc", "--store", ws.storeDir, "--dry-run", "--json"]);
  });

  it("profiles, resolve, locks, update, freeze, search and the registry", async () => {
    await valid(["profile", "validate"], ["profile", "validate", PROFILE, "--json"]);
    const lock = join(work, "env.lock");
    await valid(["resolve"], [...resolveArgs(ex, PROFILE, lock), "--json"], env);
    await valid(["lock", "verify"], ["lock", "verify", lock, "--pub", LOCK_PUB, "--registry", ex.registry, "--trust", TRUST, "--json"], env);
    await valid(["lock", "id"], ["lock", "id", lock, "--pub", LOCK_PUB, "--json"]);
    await valid(["lock", "explain"], ["lock", "explain", lock, "--json"]);
    await valid(["lock", "provenance"], ["lock", "provenance", lock, "--pub", LOCK_PUB, "--json"]);
    const pb = join(work, "b.yaml");
    writeFileSync(pb, readFileSync(PROFILE, "utf8").replace("python@3.12", "python@3.11"));
    const lockB = join(work, "b.lock");
    assert.equal((await runCli(resolveArgs(ex, pb, lockB), env)).code, 0);
    await valid(["lock", "diff"], ["lock", "diff", lock, lockB, "--json"], env, 1);
    await valid(["update"], ["update", pb, "--lock", lock, "--registry", ex.registry, "--trust", TRUST, "--base", `rootfs:${ex.rootfs}`, "--json"], env, 1);
    const archive = join(work, "env.oci.tar");
    await valid(
      ["lock", "export"],
      [
        "lock",
        "export",
        lock,
        "--pub",
        LOCK_PUB,
        "--registry",
        ex.registry,
        "--base",
        `rootfs:${ex.rootfs}`,
        "--format",
        "oci-archive",
        "--out",
        archive,
        "--json",
      ],
      env,
    );
    await valid(["pull"], ["pull", `oci-archive:${archive}`, "--oci", join(work, "pulled"), "--store", join(work, "store"), "--json"]);
    await valid(["search"], ["search", "py", "--registry", ex.registry, "--json"]);
    const pypi = join(work, "pypi");
    writePipIndex(pypi, { pandas: { wheels: [{ version: "2.2.2" }] } });
    await valid(["freeze"], ["freeze", lock, "--index", pypi, "--out", join(work, "frozen.lock"), "--json"], env);
  });

  it("layers, formations and the registry's maintenance", async () => {
    const reg = join(work, "reg");
    const src = join(ex.root, "src", "numpy-2.0.1");
    const built = await valid(
      ["layer", "build"],
      [
        "layer",
        "build",
        src,
        "--name",
        "numpy",
        "--version",
        "2.0.1",
        "--provides",
        "numpy@2.0.1",
        "--registry",
        reg,
        "--init-registry",
        "--key",
        REG_KEY,
        "--json",
      ],
    );
    const other = join(work, "src-b");
    mkdirSync(join(other, "bin"), { recursive: true });
    writeFileSync(join(other, "bin", "b"), "b\n");
    const b = await runCli(["layer", "build", other, "--name", "bee", "--version", "1", "--registry", reg, "--key", REG_KEY, "--json"]);
    assert.equal(b.code, 0, b.stdout);
    const beeId = JSON.parse(b.stdout).id as string;
    await valid(
      ["layer", "fold"],
      ["layer", "fold", built.id as string, beeId, "--name", "both", "--version", "1", "--registry", reg, "--key", REG_KEY, "--trust", TRUST, "--json"],
    );
    await valid(
      ["formation", "build"],
      ["formation", "build", "--name", "np", "--version", "1.0", "--layer", built.id as string, "--registry", reg, "--key", REG_KEY, "--json"],
    );
    const cap = join(work, "capture");
    mkdirSync(join(cap, "bin"), { recursive: true });
    writeFileSync(join(cap, "bin", "tool"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
    await valid(
      ["layer", "capture"],
      ["layer", "capture", cap, "--source", "filesystem", "--name", "cap", "--version", "1", "--registry", reg, "--key", REG_KEY, "--json"],
    );
    await valid(["registry", "index"], ["registry", "index", "--registry", reg, "--json"]);
    await valid(["registry", "remove"], ["registry", "remove", "formation:np@1.0", "--registry", reg, "--json"]);
    // layer freeze: a dirty lock's upper directory, frozen, and (second shape) resolved again with it
    const dirtyProfile = join(work, "dirty.yaml");
    writeFileSync(dirtyProfile, 'name: dirty\nbase: {os: debian12, arch: x86_64}\nsoftware: [python]\nmutable_layer: {name: frozen, version: "1.0"}\n');
    const dirty = join(work, "dirty.lock");
    const r = await resolveWithCli(ex, dirtyProfile, dirty, { sign: false, env });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const upper = join(work, "upper");
    mkdirSync(join(upper, "opt", "app"), { recursive: true });
    writeFileSync(join(upper, "opt", "app", "new"), "new\n");
    const freezeArgs = ["layer", "freeze", upper, "--lock", dirty, "--registry", ex.registry, "--key", REG_KEY];
    await valid(["layer", "freeze"], [...freezeArgs, "--json"], env);
    await valid(
      ["layer", "freeze"],
      [...freezeArgs, "--version", "1.1", "--trust", TRUST, "--profile", dirtyProfile, "--out", join(work, "frozen.lock"), "--json"],
      env,
    );
  });

  it("runs, receipts", async () => {
    const root = join(work, "runs");
    const dir = join(root, "20261201T000000Z-0000aaaa");
    writeRun(dir, "20261201T000000Z-0000aaaa", false);
    writeRunOrigin(dir, { via: "run", input: "/work/specs/hello.yaml", command: ["/bin/probe", "say hi"] });
    writeFileSync(join(dir, "cost.json"), JSON.stringify({ wall_ms: 41_234, host_cpu_ms: null }));
    mkdirSync(join(root, "20261201T000001Z-0000bbbb"));
    await valid(["runs", "list"], ["runs", "list", "--runs", root, "--json"]);
    await valid(["runs", "show"], ["runs", "show", dir, "--json"]);
    await valid(["receipt", "sign"], ["receipt", "sign", dir, "--key", join(work, "k.key"), "--json"]);
    await valid(["receipt", "verify"], ["receipt", "verify", join(dir, "receipt.dsse.json"), "--pub", join(work, "k.pub"), "--run", dir, "--json"]);
  });

  it("setup, on a copy of the test kit (its kernel is not fetched again; the agent is built)", { skip: VM_SKIP }, async () => {
    await testKit();
    const kit = join(work, "kit");
    cpSync(TEST_KIT_DIR, kit, { recursive: true });
    await valid(["setup"], ["setup", "--kit", kit, "--json"]);
  });

  it("the error document", async () => {
    await valid(["error"], ["lock", "id", join(work, "absent.lock"), "--json"], env, 1);
  });

  it("every command with --json is checked here or in a named test, and every schema file belongs to one (control: a planted command is reported)", async () => {
    const tags = (await jsonCommands()).map(tagOf);
    const unchecked = (all: readonly string[]) => all.filter((t) => !seen.has(t) && ELSEWHERE[t] === undefined && UNCHECKED[t] === undefined);
    assert.deepEqual(unchecked(tags), [], "commands whose --json output no test validates");
    assert.deepEqual(unchecked([...tags, tagOf(["lock", "frobnicate"])]), ["cairn.cli.lock-frobnicate/1"], "control");
    const page = readFileSync(join(PROJECT_ROOT, "docs/json-output.md"), "utf8");
    for (const t of [...tags, ERROR_TAG])
      assert.ok(page.includes(`| \`${t}\` |`) && page.includes(`(schemas/${schemaFileOf(t)})`), `docs/json-output.md lists ${t}`);
    const files = new Set([...tags, ERROR_TAG].map(schemaFileOf));
    assert.deepEqual(
      schemaFiles().filter((f) => !files.has(f)),
      [],
      "schema files no command prints",
    );
    for (const [tag, file] of Object.entries(ELSEWHERE)) assert.match(readFileSync(join(PROJECT_ROOT, file), "utf8"), /checkDocument\(/, `${tag}: ${file}`);
  });
});
