// A captured layer resolves and locks like any other (issue 32, item 6): a
// profile naming the layer captured from a conda environment resolves on the
// example base, the lockfile is frozen and carries the capture fields inline,
// `cairn lock verify --contents` passes (the blob reads back through the
// strict tar gate and holds exactly its manifest's files), and Strata's own
// parser reads the registry's layer document and the lockfile (skipped with
// the reason when the peer cannot be built).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseLockfileText } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { condaEnv } from "./capture-fixtures.ts";
import { exampleRegistry, resolveWithCli } from "./fixtures.ts";
import { peerRead, strataPeer } from "./peer/peer.ts";

const peer = strataPeer();
let captured: { doc: string; lock: string; prefix: string; strataId: string } | undefined;
const peerSkip = "missing" in peer ? (peer.prerequisite ? needs(peer.missing) : `Strata mirror not found at ${peer.src} (${peer.missing}) — skipped`) : false;

test("a captured conda layer resolves, locks frozen with its capture fields, and lock verify --contents passes", async () => {
  const ex = exampleRegistry();
  const env = condaEnv();
  const cap = await runCli([
    "layer",
    "capture",
    env.dir,
    "--source",
    "conda",
    "--name",
    "pyenv",
    "--version",
    "1.0",
    "--provides",
    "pyenv@1.0",
    "--arch",
    "x86_64",
    "--abi",
    "gnu",
    "--registry",
    ex.registry,
    "--key",
    join(ex.root, "registry.key"),
    "--json",
  ]);
  assert.equal(cap.code, 0, cap.stderr);
  const id = (JSON.parse(cap.stdout) as { id: string }).id;
  const profile = join(ex.root, "captured.yaml");
  writeFileSync(profile, "name: captured\nversion: '1.0'\nbase:\n  os: debian12\n  arch: x86_64\nsoftware:\n  - pyenv@1.0\n");
  const lockPath = join(ex.root, "captured.lock.yaml");
  const r = await resolveWithCli(ex, profile, lockPath);
  assert.equal(r.code, 0, r.stderr);
  const lock = parseLockfileText(readFileSync(lockPath, "utf8"), lockPath);
  const layer = lock.layers.find((l) => l.id === id);
  assert.ok(layer, `the lockfile names ${id}`);
  const wire = readFileSync(lockPath, "utf8");
  assert.match(wire, /capture_source: conda/);
  assert.match(wire, new RegExp(`original_prefix: ${env.prefix.replace(/[/.]/g, "\\$&")}`));
  assert.match(wire, /normalized: true/);
  const v = await runCli([
    "lock",
    "verify",
    lockPath,
    "--pub",
    join(ex.root, "lock.pub"),
    "--registry",
    ex.registry,
    "--trust",
    `keyfile://${ex.root}/registry.pub`,
    "--contents",
    "--json",
  ]);
  assert.equal(v.code, 0, v.stderr || v.stdout);
  const report = JSON.parse(v.stdout) as { verified: boolean; contents_checked: number };
  assert.equal(report.verified, true);
  assert.equal(report.contents_checked, lock.layers.length);
  // Control: the same verify fails once the captured blob's bytes change.
  const blob = join(ex.registry, "blobs", "sha256", layer.sha256!.replace(/^sha256:/, ""));
  const bytes = readFileSync(blob);
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
  writeFileSync(blob, bytes);
  const bad = await runCli(["lock", "verify", lockPath, "--pub", join(ex.root, "lock.pub"), "--registry", ex.registry, "--contents"]);
  assert.equal(bad.code, 1);

  const lockId = await runCli(["lock", "id", lockPath]);
  assert.equal(lockId.code, 0, lockId.stderr);
  captured = { doc: join(ex.registry, "layers", `${id}.json`), lock: lockPath, prefix: env.prefix, strataId: lockId.stdout.split(/\s+/)[0]! };
});

test("Strata's parser reads the captured layer's document (capture_source, original_prefix, normalized decoded) and its lockfile, frozen", {
  skip: peerSkip,
}, () => {
  assert.ok(captured !== undefined, "the capture above ran");
  assert.ok("bin" in peer);
  const l = peerRead(peer.bin, "layer", captured.doc);
  assert.equal(l.parse_error, null);
  assert.equal(l.strict_error, null, "the layer document uses only fields Strata names");
  // What Strata decoded, written back by Strata's own yaml.Marshal.
  assert.match(l.remarshal ?? "", /capture_source: conda/);
  assert.ok((l.remarshal ?? "").includes(`original_prefix: ${captured.prefix}`), l.remarshal);
  assert.match(l.remarshal ?? "", /normalized: true/);
  const k = peerRead(peer.bin, "lockfile", captured.lock);
  assert.equal(k.parse_error, null);
  assert.equal(k.frozen, true);
  assert.notEqual(k.environment_id ?? "", "");
  assert.equal(k.environment_id, captured.strataId, "`cairn lock id` prints Strata's EnvironmentID first");
});
