/**
 * The smaller items of issue 16 (item 7), each a reproduction that failed
 * before its fix, each with a control.
 */
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CairnError, generateSigningKey, parseYamlText } from "../../src/core/index.ts";
import { LocalRegistry, parseProfileText, resolveProfile, writeLockfile } from "../../src/strata/index.ts";
import { writeFailureBundleAfter } from "../../src/vm/bundle.ts";
import { runCli } from "../helpers/cli.ts";
import { assertCode } from "../helpers/errors.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { catalogOf, exampleRegistry, NOW, probedExampleBase } from "../strata/fixtures.ts";
import { GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { file } from "../workload/fixtures/tar-writer.ts";
import { assemble, helloImage, ociWorkspace } from "../workload/fixtures/workspace.ts";

const tmp = (p: string) => mkdtempSync(join(tmpdir(), p));

describe("smaller items of issue 16", () => {
  it("keygen leaves no PREFIX.key behind when PREFIX.pub exists; control: a fresh prefix gets both", async () => {
    const d = tmp("cairn-keygen-");
    writeFileSync(join(d, "k.pub"), "someone else's key\n");
    const r = await runCli(["keygen", "--out", join(d, "k"), "--json"]);
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, "IO_ERROR");
    assert.ok(!existsSync(join(d, "k.key")), "no private key left without its public half");
    const ok = await runCli(["keygen", "--out", join(d, "fresh")]);
    assert.equal(ok.code, 0);
    assert.ok(existsSync(join(d, "fresh.key")) && existsSync(join(d, "fresh.pub")));
  });

  it("a registry blob replaced by another layer's larger blob is SIZE_MISMATCH, not LIMIT_EXCEEDED; control: the intact blob reads", () => {
    const ex = exampleRegistry();
    const reg = LocalRegistry.open(ex.registry);
    const layers = reg.listLayers().map((l) => l.value);
    const small = layers.reduce((a, b) => (b.size < a.size ? b : a));
    const large = layers.reduce((a, b) => (b.size > a.size ? b : a));
    assert.ok(large.size > small.size);
    assert.equal(reg.readBlob(small.sha256, small.size).length, small.size);
    copyFileSync(reg.blobPath(large.sha256), reg.blobPath(small.sha256));
    assertCode(() => reg.readBlob(small.sha256, small.size), "SIZE_MISMATCH");
  });

  it("resolve --sign refuses when a chosen layer's blob is missing or corrupt, writing nothing; control: with intact blobs it signs", async () => {
    const ex = exampleRegistry();
    const profile = join(PROJECT_ROOT, "examples", "strata", "profile.yaml");
    const args = (out: string) => [
      "resolve",
      profile,
      "--registry",
      ex.registry,
      "--trust",
      `keyfile://${join(ex.root, "registry.pub")}`,
      "--base",
      `rootfs:${ex.rootfs}`,
      "--sign",
      join(ex.root, "lock.key"),
      "--out",
      out,
      "--json",
    ];
    const good = await runCli(args(join(ex.root, "good.lock")));
    assert.equal(good.code, 0, good.stdout);
    const chosen = (JSON.parse(good.stdout) as { layers: { id: string }[] }).layers.map((l) => l.id);
    const reg = LocalRegistry.open(ex.registry);
    const layer = reg.readLayer(chosen[0]!).value;
    const blob = reg.blobPath(layer.sha256);
    const bytes = readFileSync(blob);
    writeFileSync(blob, Buffer.concat([bytes.subarray(0, bytes.length - 1), Buffer.from([bytes[bytes.length - 1]! ^ 1])]));
    const corrupt = await runCli(args(join(ex.root, "corrupt.lock")));
    assert.equal(JSON.parse(corrupt.stdout).error.code, "DIGEST_MISMATCH");
    assert.ok(!existsSync(join(ex.root, "corrupt.lock")));
    rmSync(blob);
    const missing = await runCli(args(join(ex.root, "missing.lock")));
    assert.equal(JSON.parse(missing.stdout).error.code, "STORE_MISSING");
    assert.ok(!existsSync(join(ex.root, "missing.lock")));
  });

  it("environment lockfiles and their signatures are written owner-only (0600); control: they read back", async () => {
    const ex = exampleRegistry();
    const profile = parseProfileText("name: t\nbase: {os: debian12}\nsoftware: [python]\nenv: {SECRET_TOKEN: hunter2}\n");
    const lock = resolveProfile({
      profile,
      catalog: catalogOf(ex),
      probedBase: await probedExampleBase(ex),
      allowUnsignedOffline: false,
      now: NOW,
      cairnVersion: "t",
    });
    const out = join(tmp("cairn-lockmode-"), "env.lock");
    const w = writeLockfile(out, lock, generateSigningKey());
    assert.equal(statSync(out).mode & 0o777, 0o600);
    assert.equal(statSync(`${out}.dsse.json`).mode & 0o777, 0o600);
    assert.ok(w.signature !== undefined && w.bytes.length > 0);
  });

  it("manifest ingest --out writes owner-only (0600)", async () => {
    const d = tmp("cairn-ingest-");
    writeFileSync(join(d, "devcontainer.json"), '{"image": "debian:12", "containerEnv": {"TOKEN": "x"}}');
    const r = await runCli(["manifest", "ingest", join(d, "devcontainer.json"), "--out", join(d, "env.manifest.json")]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(statSync(join(d, "env.manifest.json")).mode & 0o777, 0o600);
  });

  it("YAML flow nesting spread over lines counts toward yaml_depth (LIMIT_EXCEEDED, not a stack overflow); control: 10 levels parse", () => {
    const nested = (n: number) => `${"[\n".repeat(n)}${"]\n".repeat(n)}`;
    const e = assertCode(() => parseYamlText(nested(20_000)), "LIMIT_EXCEEDED");
    assert.ok(e instanceof CairnError);
    assert.ok(Array.isArray(parseYamlText(nested(10))));
  });

  it("a failure bundle that cannot be written (a full disk, a vanished directory) never replaces the run's own error; control: it is written", () => {
    const input = { runId: "r", phase: "record" as const, status: "infrastructure-failure", identities: {} };
    assert.equal(writeFailureBundleAfter(join(tmp("cairn-bundle-"), "gone", "deeper"), input), undefined);
    const d = tmp("cairn-bundle-");
    const f = writeFailureBundleAfter(d, input);
    assert.ok(f !== undefined && existsSync(f));
  });

  it("a tar member name with a newline is printed quoted by `workload show --tree`, forging no line; control: plain names print plain", {
    skip: GCC_SKIP,
  }, async () => {
    const forged = "-rwxr-xr-x 0:0          1 1700000000 /etc/forged";
    const hello = helloImage();
    const ws = ociWorkspace(helloImage({ layers: [...hello.layers, { entries: [file(`app/x\n${forged}`, "x", { mtime: 1700000000 })] }] }));
    await assemble(ws);
    const r = await runCli(["workload", "show", ws.lockPath, "--tree", "--store", ws.storeDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.split("\n").some((l) => l.startsWith(forged)), r.stdout);
    assert.ok(r.stdout.includes(JSON.stringify(`/app/x\n${forged}`)));
    assert.ok(r.stdout.split("\n").some((l) => l.endsWith(" /app/hello")));
  });
});
