import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";

test("--help succeeds and lists commands", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /keygen/);
});

test("usage errors exit 2; with --json they print a typed error on stdout", async () => {
  assert.equal((await runCli(["no-such-command"])).code, 2);
  const r = await runCli(["keygen", "--json"]);
  assert.equal(r.code, 2);
  const body = JSON.parse(r.stdout) as { error: { code: string; message: string; path: unknown; hint: unknown } };
  assert.equal(body.error.code, "USAGE");
  assert.ok("path" in body.error && "hint" in body.error);
});

test("keygen writes a 0600 private key and refuses to overwrite it (control: first write succeeds)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-cli-"));
  const first = await runCli(["keygen", "--out", join(dir, "k"), "--json"]);
  assert.equal(first.code, 0, first.stderr);
  const out = JSON.parse(first.stdout) as { key_id: string };
  assert.match(out.key_id, /^sha256:[0-9a-f]{64}$/);
  assert.equal(statSync(join(dir, "k.key")).mode & 0o777, 0o600);
  const second = await runCli(["keygen", "--out", join(dir, "k"), "--json"]);
  assert.equal(second.code, 1);
  assert.equal((JSON.parse(second.stdout) as { error: { code: string } }).error.code, "IO_ERROR");
});
