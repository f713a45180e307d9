// The manifest commands end to end, in-process: exit codes, --json shapes,
// atomic output written only on success, unpinned labels everywhere.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync, spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { HEX, PINNED_IMAGE, TAGGED_IMAGE } from "./helpers.ts";
import { HANG_GUARD_MS } from "../helpers/in-child.ts";

const dir = mkdtempSync(join(tmpdir(), "cairn-manifest-cli-"));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

const PINNED = file(
  "pinned.json",
  `// pinned\n{ "image": "${PINNED_IMAGE}", "features": { "ghcr.io/a/f@sha256:${HEX("4")}": { "v": "1" } }, "containerEnv": { "TOKEN": "hunter2-secret" }, "name": "x" }`,
);
const UNPINNED = file("unpinned.json", `{ "image": "${TAGGED_IMAGE}", "features": { "ghcr.io/a/f:1": {} } }`);
const REFUSED = file(
  "refused.json",
  `{ "image": "${PINNED_IMAGE}", "build": {}, "runArgs": ["--privileged"], "containerEnv": { "A": "\${localEnv:SECRET_VALUE}" } }`,
);

let keyPrefix = "";
test("setup: a key pair", async () => {
  keyPrefix = join(dir, "k");
  assert.equal((await runCli(["keygen", "--out", keyPrefix])).code, 0);
});

test("ingest --sign --out --json writes the manifest atomically and prints the same document", async () => {
  const out = join(dir, "pinned.manifest.json");
  const r = await runCli(["manifest", "ingest", PINNED, "--sign", `${keyPrefix}.key`, "--out", out, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const printed = JSON.parse(r.stdout).manifest;
  assert.deepEqual(JSON.parse(readFileSync(out, "utf8")), printed);
  for (const k of ["address", "pinned", "image_pinned", "core", "signature", "not_covered"]) assert.ok(k in printed, k);
  assert.equal(printed.pinned, true);
  assert.ok(!readdirSync(dir).some((n) => n.endsWith(".tmp")));
  const v = await runCli(["manifest", "verify", out, "--pub", `${keyPrefix}.pub`, "--json"]);
  assert.equal(v.code, 0, v.stdout);
  assert.equal(JSON.parse(v.stdout).verified, true);
  assert.equal(JSON.parse(v.stdout).address, printed.address);
  const human = await runCli(["manifest", "verify", out, "--pub", `${keyPrefix}.pub`]);
  assert.equal(human.code, 0);
  assert.match(human.stdout, /verified/);
});

test("verify fails with exit 1 on any mismatch: edited core, other key, unsigned", async () => {
  const out = join(dir, "m.json");
  assert.equal((await runCli(["manifest", "ingest", PINNED, "--sign", `${keyPrefix}.key`, "--out", out])).code, 0);
  const doc = JSON.parse(readFileSync(out, "utf8"));
  doc.core.containerEnv.TOKEN = "changed";
  const edited = file("edited.json", JSON.stringify(doc));
  const r = await runCli(["manifest", "verify", edited, "--pub", `${keyPrefix}.pub`, "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "MANIFEST_MISMATCH");
  assert.equal(JSON.parse(r.stdout).error.path, "/address");
  assert.equal((await runCli(["keygen", "--out", join(dir, "other")])).code, 0);
  const other = await runCli(["manifest", "verify", out, "--pub", join(dir, "other.pub"), "--json"]);
  assert.equal(other.code, 1);
  assert.equal(JSON.parse(other.stdout).error.code, "SIGNATURE_INVALID");
  const unsignedOut = join(dir, "unsigned.json");
  assert.equal((await runCli(["manifest", "ingest", PINNED, "--out", unsignedOut])).code, 0);
  const unsigned = await runCli(["manifest", "verify", unsignedOut, "--pub", `${keyPrefix}.pub`, "--json"]);
  assert.equal(unsigned.code, 1);
  assert.equal(JSON.parse(unsigned.stdout).error.code, "SIGNATURE_MISSING");
  // Usage: --pub is required unless integrity-only checking is asked for by name.
  assert.equal((await runCli(["manifest", "verify", out])).code, 2);
  const integrity = await runCli(["manifest", "verify", unsignedOut, "--allow-unsigned", "--json"]);
  assert.equal(integrity.code, 0, integrity.stdout);
  assert.match(JSON.parse(integrity.stdout).signature, /NOT CHECKED/);
  assert.equal((await runCli(["manifest", "verify", edited, "--allow-unsigned"])).code, 1); // still checks the address
});

test("a refused input exits 1, lists every field, writes nothing and never prints env values", async () => {
  const out = join(dir, "never.json");
  const r = await runCli(["manifest", "ingest", REFUSED, "--out", out, "--json"]);
  assert.equal(r.code, 1);
  const e = JSON.parse(r.stdout).error;
  assert.equal(e.code, "MANIFEST_REFUSED");
  assert.deepEqual(e.issues.map((i: { path: string }) => i.path).sort(), ["/build", "/containerEnv/A", "/runArgs"]);
  assert.equal(existsSync(out), false);
  const human = await runCli(["manifest", "ingest", REFUSED]);
  assert.equal(human.code, 1);
  assert.match(human.stderr, /MANIFEST_REFUSED/);
  // The pinned file's secret value is never shown by ingest or diff.
  const shown = await runCli(["manifest", "ingest", PINNED]);
  assert.ok(!shown.stdout.includes("hunter2-secret"));
  // Control: a bad signing key also fails before anything is written.
  const bad = await runCli(["manifest", "ingest", PINNED, "--sign", file("bad.key", "not a key"), "--out", out]);
  assert.equal(bad.code, 1);
  assert.equal(existsSync(out), false);
});

test("unpinned manifests are labelled in human and JSON output", async () => {
  const human = await runCli(["manifest", "ingest", UNPINNED]);
  assert.equal(human.code, 0);
  assert.match(human.stdout, /UNPINNED/);
  const json = JSON.parse((await runCli(["manifest", "ingest", UNPINNED, "--json"])).stdout).manifest;
  assert.equal(json.pinned, false);
  assert.deepEqual(json.unpinned, ["/image", "/features/0/id"]);
  const pinned = await runCli(["manifest", "ingest", PINNED]);
  assert.doesNotMatch(pinned.stdout, /UNPINNED/); // control
});

test("diff: exit 0 when equal, 1 with field-level differences; manifests and devcontainer files mix", async () => {
  const reordered = file(
    "reordered.json",
    `{ "name": "other", "containerEnv": { "TOKEN": "hunter2-secret" }, "features": { "GHCR.io/a/f@sha256:${HEX("4")}": { "v": "1" } }, "image": "${PINNED_IMAGE}" }`,
  );
  const same = await runCli(["manifest", "diff", PINNED, reordered]);
  assert.equal(same.code, 0, same.stdout + same.stderr);
  assert.match(same.stdout, /equal/);
  const out = join(dir, "for-diff.json");
  assert.equal((await runCli(["manifest", "ingest", PINNED, "--out", out])).code, 0);
  assert.equal((await runCli(["manifest", "diff", out, reordered])).code, 0);
  const changed = file("changed.json", `{ "image": "${TAGGED_IMAGE}", "containerEnv": { "TOKEN": "other-secret" } }`);
  const d = await runCli(["manifest", "diff", out, changed, "--json"]);
  assert.equal(d.code, 1);
  const j = JSON.parse(d.stdout);
  assert.equal(j.equal, false);
  assert.equal(j.a.kind, "manifest");
  assert.equal(j.b.kind, "devcontainer");
  assert.equal(j.b.pinned, false);
  assert.deepEqual(j.differences.map((x: { path: string }) => x.path).sort(), ["/containerEnv/TOKEN", `/features/ghcr.io~1a~1f@sha256:${HEX("4")}`, "/image"]);
  assert.ok(!d.stdout.includes("secret"));
  const h = await runCli(["manifest", "diff", out, changed]);
  assert.equal(h.code, 1);
  assert.match(h.stdout, /UNPINNED/);
  assert.ok(!h.stdout.includes("secret"));
  // A refused input makes diff fail (exit 2, trouble, with the refusal), not report a difference.
  const refused = await runCli(["manifest", "diff", PINNED, REFUSED, "--json"]);
  assert.equal(refused.code, 2);
  assert.equal(JSON.parse(refused.stdout).error.code, "MANIFEST_REFUSED");
});

test("bundled examples ingest: one pinned, one unpinned", async () => {
  const p = await runCli(["manifest", "ingest", join(PROJECT_ROOT, "examples/devcontainer/pinned/devcontainer.json"), "--json"]);
  assert.equal(p.code, 0, p.stdout);
  assert.equal(JSON.parse(p.stdout).manifest.pinned, true);
  const u = await runCli(["manifest", "ingest", join(PROJECT_ROOT, "examples/devcontainer/unpinned/devcontainer.json"), "--json"]);
  assert.equal(u.code, 0, u.stdout);
  assert.equal(JSON.parse(u.stdout).manifest.pinned, false);
});

test("input limits: oversized and deeply nested files are refused naming the limit", async () => {
  const big = file("big.json", `{"image":"${PINNED_IMAGE}","name":"${"x".repeat(1024 * 1024)}"}`);
  const r = JSON.parse((await runCli(["manifest", "ingest", big, "--json"])).stdout);
  assert.equal(r.error.code, "LIMIT_EXCEEDED");
  assert.match(r.error.message, /max_input_bytes/);
  const deep = file("deep.json", `{"image":"${PINNED_IMAGE}","customizations":${"[".repeat(20000)}${"]".repeat(20000)}}`);
  const d = JSON.parse((await runCli(["manifest", "ingest", deep, "--json"])).stdout);
  assert.equal(d.error.code, "LIMIT_EXCEEDED");
  assert.match(d.error.message, /max_depth/);
  const missing = await runCli(["manifest", "ingest", join(dir, "nope.json"), "--json"]);
  assert.equal(JSON.parse(missing.stdout).error.code, "IO_ERROR");
});

test("manifest ingest refuses a FIFO as not a regular file instead of blocking forever", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-manifest-fifo-"));
  const fifo = join(dir, "devcontainer.json");
  const plain = join(dir, "plain.json");
  execFileSync("mkfifo", [fifo]);
  writeFileSync(plain, JSON.stringify({ image: PINNED_IMAGE }));
  // A child with a timeout: opening a FIFO blocks the thread, so an in-process test could only hang, never fail.
  const ingest = (p: string): string => {
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, "bin/cairn.js"), "manifest", "ingest", p, "--json"], {
      timeout: HANG_GUARD_MS,
      encoding: "utf8",
    });
    if (r.error !== undefined || r.signal !== null) return "hung";
    const out = JSON.parse(r.stdout) as { error?: { code: string }; manifest?: { address?: string } };
    return out.error?.code ?? (out.manifest?.address !== undefined ? "ok" : "?");
  };
  assert.equal(ingest(plain), "ok", "control: a regular file is ingested");
  assert.equal(ingest(fifo), "IO_ERROR");
});

test("manifest ingest refuses a devcontainer.json that is a symlink (O_NOFOLLOW); control: the file it points at", async () => {
  const d = mkdtempSync(join(tmpdir(), "cairn-manifest-link-"));
  const target = join(d, "real.json");
  writeFileSync(target, JSON.stringify({ image: PINNED_IMAGE }));
  symlinkSync(target, join(d, "devcontainer.json"));
  const ok = await runCli(["manifest", "ingest", target, "--json"]);
  assert.equal(ok.code, 0, "control: the regular file is ingested");
  const r = await runCli(["manifest", "ingest", join(d, "devcontainer.json"), "--json"]);
  assert.equal(r.code, 1);
  assert.equal(JSON.parse(r.stdout).error.code, "IO_ERROR");
});

test("manifest ingest refuses a file that yields more bytes than its size said (it grew while read); control: a regular file", async () => {
  // /proc/self/status reports size 0 but has bytes: exactly what a file growing between fstat and read looks like.
  const ok = await runCli(["manifest", "ingest", PINNED, "--json"]);
  assert.equal(ok.code, 0, "control");
  const r = await runCli(["manifest", "ingest", "/proc/self/status", "--json"]);
  assert.equal(JSON.parse(r.stdout).error.code, "IO_ERROR");
});

test("diff and resume-check: an unpinned pair is the same declaration, not a claim about bytes", async () => {
  const d = await runCli(["manifest", "diff", UNPINNED, UNPINNED]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /same declaration, unpinned: not a claim about bytes/);
  assert.doesNotMatch(d.stdout, /equal: same address/);
  const dj = JSON.parse((await runCli(["manifest", "diff", UNPINNED, UNPINNED, "--json"])).stdout);
  assert.equal(dj.verdict, "same declaration, unpinned: not a claim about bytes");
  // Control: a pinned pair is a claim about bytes.
  const p = await runCli(["manifest", "diff", PINNED, PINNED]);
  assert.equal(p.code, 0);
  assert.match(p.stdout, /equal: same address, pinned/);

  const refused = await runCli(["manifest", "resume-check", UNPINNED, UNPINNED, "--json"]);
  assert.equal(refused.code, 1);
  assert.equal(JSON.parse(refused.stdout).error.code, "RESUME_UNPINNED");
  const allowed = await runCli(["manifest", "resume-check", UNPINNED, UNPINNED, "--allow-unpinned", "--json"]);
  assert.equal(allowed.code, 0, allowed.stdout);
  assert.equal(JSON.parse(allowed.stdout).allow_unpinned, true);
  // Controls: a pinned pair resumes without the flag; a different environment is refused even with it.
  assert.equal((await runCli(["manifest", "resume-check", PINNED, PINNED])).code, 0);
  const diff = await runCli(["manifest", "resume-check", PINNED, UNPINNED, "--allow-unpinned", "--json"]);
  assert.equal(diff.code, 1);
  assert.equal(JSON.parse(diff.stdout).error.code, "RESUME_MISMATCH");
  assert.ok(!diff.stdout.includes("hunter2-secret"));
});

test("manifest check-resume is the same command as resume-check (issue 10's name)", async () => {
  assert.equal((await runCli(["manifest", "check-resume", PINNED, PINNED])).code, 0);
  const diff = await runCli(["manifest", "check-resume", PINNED, UNPINNED, "--allow-unpinned", "--json"]);
  assert.equal(diff.code, 1);
  assert.equal(JSON.parse(diff.stdout).error.code, "RESUME_MISMATCH");
});
