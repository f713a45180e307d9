/**
 * Hostile inputs (issue 16, items 2, 4 and 5):
 *  - special files (a FIFO, /dev/zero, a 300 MB sparse file) given as a key
 *    (--pub, --sign), a trust file (keyfile://) or the input of `cairn run`
 *    are refused by the one bounded reader with a code, never waited on or
 *    read until memory runs out; each runs in a child process with a timeout
 *    so a regression hangs a child, not the suite;
 *  - errors never echo values: a sentinel secret in every field shape the
 *    YAML and JSON parsers complain about (unquoted values beginning with
 *    `!`, `|`, `>`, unterminated strings, bare words) appears in no output,
 *    `--json` included, for each input kind;
 *  - refusal issue lists are capped, and an unexpected exception is a coded
 *    INTERNAL error (exit 1, a JSON document under --json, no stack trace).
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { Checker, CairnError, generateSigningKey, readVerifyingKey, writeKeyPair } from "../../src/core/index.ts";
import { reportError } from "../../src/cli/output.ts";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

const SECRET = "hunter2S3NTINEL";
const CAIRN = join(PROJECT_ROOT, "bin", "cairn.js");
/** A valid profile, so that `resolve` gets as far as reading its --trust keys. */
const PROFILE = join(PROJECT_ROOT, "examples", "strata", "profile.yaml");

function workdir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cairn-inputs-"));
  execFileSync("mkfifo", [join(dir, "fifo")]);
  execFileSync("truncate", ["-s", "300M", join(dir, "huge.pub")]);
  writeFileSync(join(dir, "m.json"), "{}\n");
  writeFileSync(join(dir, "l.yaml"), "format: x\n");
  writeKeyPair(join(dir, "good"), generateSigningKey());
  return dir;
}

/** Runs the real executable in a child with a timeout; a hang fails the test instead of blocking it. */
function child(dir: string, args: string[]): { status: number | null; json: { error?: { code?: string } }; stderr: string } {
  const r = spawnSync(process.execPath, [CAIRN, ...args, "--json"], {
    cwd: dir,
    env: { ...process.env, CAIRN_HOME: join(dir, "home") },
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(r.signal, null, `cairn ${args.join(" ")} hung or was killed (${r.signal})`);
  return { status: r.status, json: JSON.parse(r.stdout || "{}"), stderr: r.stderr };
}

describe("special files as inputs are refused by the bounded reader (child processes with timeouts)", () => {
  const dir = workdir();
  const cases: ReadonlyArray<[string, string[], string]> = [
    ["FIFO as --pub", ["manifest", "verify", "m.json", "--pub", "fifo"], "KEY_INVALID"],
    ["/dev/zero as --pub", ["lock", "verify", "l.yaml", "--pub", "/dev/zero"], "KEY_INVALID"],
    ["300 MB key as --pub", ["lock", "verify", "l.yaml", "--pub", "huge.pub"], "LIMIT_EXCEEDED"],
    ["FIFO as --sign", ["manifest", "ingest", "m.json", "--sign", "fifo"], "KEY_INVALID"],
    ["FIFO as --trust keyfile://", ["resolve", PROFILE, "--out", "o.lock", "--trust", "keyfile://fifo"], "KEY_INVALID"],
    ["/dev/zero as --trust keyfile://", ["resolve", PROFILE, "--out", "o.lock", "--trust", "keyfile:///dev/zero"], "KEY_INVALID"],
    // replay takes a run directory or a bundle file; anything else is named before a kit is looked for (there is none in this home)
    ["FIFO as the input of a replay", ["replay", "fifo"], "RUN_INVALID"],
    ["/dev/zero as the input of a replay", ["replay", "/dev/zero"], "RUN_INVALID"],
    ["a missing replay input", ["replay", "nothing-here"], "RUN_INVALID"],
    // control: a regular file is read as a bundle (and refused as one), so the check above is about the kind of file
    ["control: a regular file as the input of a replay is read as a bundle", ["replay", "m.json"], "TAR_INVALID"],
  ];
  for (const [name, args, code] of cases) {
    it(`${name}: ${code}`, () => {
      const r = child(dir, args);
      assert.equal(r.status, 1);
      assert.equal(r.json.error?.code, code);
    });
  }

  it("FIFO as the input of a run (recordRun reads it before anything else): RUN_INVALID", () => {
    const script = join(dir, "run-fifo.mts");
    writeFileSync(
      script,
      `const { recordRun } = await import(${JSON.stringify(join(PROJECT_ROOT, "src", "vm", "index.ts"))});
try { await recordRun({ input: ${JSON.stringify(join(dir, "fifo"))}, storeDir: "s", runsDir: ${JSON.stringify(join(dir, "runs"))}, kit: {} as never, cairnVersion: "t" }); console.log("accepted"); }
catch (e) { console.log((e as { code?: string }).code); }`,
    );
    const r = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.signal, null, "hung on the FIFO");
    assert.equal(r.stdout.trim(), "RUN_INVALID");
  });

  it("control: a real key file is read", () => {
    assert.match(readVerifyingKey(join(dir, "good.pub")).keyId, /^sha256:/);
  });
});

/** Shapes that make a parser complain about the text it saw. */
const YAML_SHAPES = [`!${SECRET}`, `|${SECRET}`, `>${SECRET}`, `"${SECRET}`, `[${SECRET}`, `{${SECRET}`, `${SECRET}: ${SECRET}: x`, `!!${SECRET} x`];
// (a key is a field name, and a refusal's path names fields: only values are secret)
const JSON_SHAPES = [`${SECRET}`, `"${SECRET}`, `'${SECRET}'`, `!${SECRET}`, `{"k": ${SECRET}}`, `"x" ${SECRET}`];

describe("errors never echo values: a sentinel secret in each parser-error shape, every input kind, with and without --json", () => {
  const dir = workdir();
  const kinds: ReadonlyArray<{ kind: string; file: string; shapes: readonly string[]; wrap: (v: string) => string; args: (f: string) => string[] }> = [
    {
      kind: "workload spec (YAML)",
      file: "spec.yaml",
      shapes: YAML_SHAPES,
      wrap: (v) => `name: w\nenv:\n  API_TOKEN: ${v}\n`,
      args: (f) => ["workload", "assemble", f],
    },
    { kind: "environment lockfile (YAML)", file: "env.lock", shapes: YAML_SHAPES, wrap: (v) => `format: ${v}\n`, args: (f) => ["lock", "id", f] },
    {
      kind: "profile (YAML)",
      file: "profile.yaml",
      shapes: YAML_SHAPES,
      wrap: (v) => `name: p\nenv:\n  PASSWORD: ${v}\n`,
      args: (f) => ["profile", "validate", f],
    },
    {
      kind: "devcontainer.json (JSONC)",
      file: "devcontainer.json",
      shapes: JSON_SHAPES,
      wrap: (v) => `{"containerEnv": {"API_TOKEN": ${v}}}`,
      args: (f) => ["manifest", "ingest", f],
    },
    { kind: "workload lock (JSON)", file: "w.lock.json", shapes: JSON_SHAPES, wrap: (v) => `{"schema": ${v}}`, args: (f) => ["workload", "verify", f] },
    {
      kind: "environment manifest (JSON)",
      file: "manifest.json",
      shapes: JSON_SHAPES,
      wrap: (v) => `{"core": ${v}}`,
      args: (f) => ["manifest", "verify", f, "--allow-unsigned"],
    },
    {
      kind: "public key (PEM)",
      file: "k.pub",
      shapes: [SECRET, `-----BEGIN PUBLIC KEY-----\n${SECRET}\n-----END PUBLIC KEY-----`],
      wrap: (v) => `${v}\n`,
      args: (f) => ["manifest", "verify", "m.json", "--pub", f],
    },
    {
      kind: "trust file (keyfile://)",
      file: "t.pub",
      shapes: [SECRET],
      wrap: (v) => `${v}\n`,
      args: (f) => ["resolve", PROFILE, "--out", "o.lock", "--trust", `keyfile://${f}`],
    },
  ];
  for (const k of kinds) {
    it(k.kind, async () => {
      for (const [i, shape] of k.shapes.entries()) {
        const file = join(dir, `${i}-${k.file}`);
        writeFileSync(file, k.wrap(shape));
        for (const json of [false, true]) {
          const r = await runCli([...k.args(file), ...(json ? ["--json"] : [])], { ...process.env, CAIRN_HOME: join(dir, "home") });
          const all = r.stdout + r.stderr;
          assert.notEqual(r.code, 0, `${k.kind} ${JSON.stringify(shape)} was refused`);
          assert.ok(!all.includes(SECRET), `${k.kind}, shape ${JSON.stringify(shape)}${json ? ", --json" : ""}: the secret was echoed:\n${all}`);
          if (json) assert.equal(typeof JSON.parse(r.stdout).error.code, "string");
        }
      }
    });
  }

  it("control: the YAML library's own message quotes the secret (what cairn must not pass through), and the check sees it", () => {
    const doc = parseAllDocuments(`API_TOKEN: !${SECRET}\n`, { version: "1.2", strict: true, customTags: [], resolveKnownTags: false });
    const messages = (Array.isArray(doc) ? doc : []).flatMap((d) => [...d.errors, ...d.warnings].map((e) => e.message)).join("\n");
    assert.ok(messages.includes(SECRET));
  });
});

describe("refusals stay bounded; unexpected failures are coded", () => {
  it("a refusal with a million issues keeps the first 100, shows 20 and counts the rest, as docs/host-safety.md says; control: 100 issues are all kept", () => {
    // The oracle is the documented figures, read from the doc, never the constants the code uses (issue 31, case 19d).
    const doc = readFileSync(join(PROJECT_ROOT, "docs", "host-safety.md"), "utf8").replace(/\s+/g, " ");
    const [, kept, shown] = /a refusal keeps its first (\d+) issues, prints (\d+) and counts the rest/.exec(doc) ?? [];
    assert.deepEqual([Number(kept), Number(shown)], [100, 20], "the documented cap");
    const refuse = (n: number): CairnError => {
      const c = new Checker("MODEL_VALUE");
      for (let i = 0; i < n; i++) c.add(`/x/${i}`, "bad");
      assert.equal(c.issues.length, Math.min(n, 100), "the checker itself keeps no more than the cap");
      assert.equal(c.count, n);
      try {
        c.done("input");
      } catch (e) {
        assert.ok(e instanceof CairnError);
        return e;
      }
      assert.fail("no refusal");
    };
    const err = refuse(1_000_000);
    assert.deepEqual(
      err.issues.map((i) => i.path),
      Array.from({ length: 100 }, (_, i) => `/x/${i}`),
      "the first 100, in order",
    );
    assert.equal(err.issueCount, 1_000_000);
    const lines = err.message.split("\n");
    assert.equal(lines[0], "input: 1000000 problem(s)");
    assert.equal(lines.filter((l) => /^ {2}\/x\/\d+: bad$/.test(l)).length, 20, "20 issue lines");
    assert.equal(lines.at(-1), "  … and 999980 more");
    assert.equal(lines.length, 22);
    assert.equal(err.toJSON().issues_omitted, 999_900);
    assert.equal(err.toJSON().issues?.length, 100);
    // At the cap and one past it.
    const atCap = refuse(100);
    assert.equal(atCap.issues.length, 100);
    assert.equal(atCap.toJSON().issues_omitted, undefined, "control: 100 issues are all kept");
    const pastCap = refuse(101);
    assert.equal(pastCap.issues.length, 100);
    assert.equal(pastCap.toJSON().issues_omitted, 1);
    // A CairnError given more issues than the cap directly keeps the cap too.
    const direct = new CairnError("MODEL_VALUE", "m", {
      issues: Array.from({ length: 150 }, (_, i) => ({ code: "MODEL_VALUE" as const, path: `/y/${i}`, message: "bad" })),
    });
    assert.equal(direct.issues.length, 100);
    assert.equal(direct.toJSON().issues_omitted, 50);
  });

  it("an unexpected exception is INTERNAL, exit 1, one JSON document, no stack and no foreign message; control: a CairnError keeps its code", () => {
    let out = "";
    const io = { out: (t: string) => void (out += t), err: (t: string) => void (out += t), tty: false };
    const foreign = new RangeError(`Invalid string length near ${SECRET}`);
    assert.equal(reportError(io, foreign, true), 1);
    const doc = JSON.parse(out) as { error: { code: string; message: string } };
    assert.equal(doc.error.code, "INTERNAL");
    assert.ok(!out.includes(SECRET) && !out.includes("    at "), out);
    out = "";
    assert.equal(reportError(io, new CairnError("USAGE", "x"), true), 2);
    assert.equal((JSON.parse(out) as { error: { code: string } }).error.code, "USAGE");
  });

  it("an exception escaping every handler of the executable is INTERNAL with exit 1 (child process)", () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-guard-"));
    const script = join(dir, "escape.mts");
    writeFileSync(
      script,
      `const { guardProcess } = await import(${JSON.stringify(join(PROJECT_ROOT, "src", "cli", "main.ts"))});
guardProcess(["--json"]);
setTimeout(() => { throw new TypeError("boom ${SECRET}"); }, 1);`,
    );
    const r = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: PROJECT_ROOT, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 1);
    assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, "INTERNAL");
    assert.ok(!(r.stdout + r.stderr).includes(SECRET) && !r.stderr.includes("    at "));
  });
});
