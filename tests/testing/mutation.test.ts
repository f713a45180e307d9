// The mutation-testing set-up (bench/mutation/): what each Stryker run is
// given, where its sandbox goes, and which mutants its ignorer sets aside.
// The runs themselves are a bench (minutes per module), not part of this
// test; their report is bench/mutation/README.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { strykerConfig } from "../../bench/mutation/config.ts";
import { MUTATION_SETS, MUTATION_WORK_DIR, STRYKER_TEMP_DIR } from "../../bench/mutation/sets.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

interface Ignorer {
  shouldIgnore(path: unknown): string | undefined;
}
const { strykerPlugins } = (await import(join(PROJECT_ROOT, "bench", "mutation", "ignore-messages.mjs"))) as {
  strykerPlugins: { kind: string; name: string; value: Ignorer }[];
};

const LISTED = [
  "src/core/jcs.ts",
  "src/core/digest.ts",
  "src/core/identity.ts",
  "src/core/dsse.ts",
  "src/core/json.ts",
  "src/core/yaml.ts",
  "src/tree/tar-gate.ts",
  "src/tree/tar-fields.ts", // the gate's header field decoding, split out of tar-gate.ts
  "src/tree/fs-digest.ts",
  "src/vm/protocol.ts",
  "src/vm/checker.ts",
  "src/store/publish.ts",
  "src/strata/env-id.ts",
  "src/strata/lockfile.ts",
  "src/oci/layout-reader.ts",
  "src/manifest/core.ts",
  // issue 31, case 19: the modules of the checks the tests let go
  "src/workload/elf.ts",
  "src/strata/contents.ts",
  "src/strata/lockfile-envelope.ts",
  "src/strata/freeze/index-source.ts",
  "src/vm/network-spec.ts",
  "src/vm/responder.ts",
  "src/vm/responder-host.ts",
  "src/oci/registry/registry-transport.ts",
  "src/vm/bundle-import.ts",
  "src/vm/run-receipt.ts",
];

test("every module of issue 17 is in a set, and every set names files that exist", () => {
  const mutated = Object.values(MUTATION_SETS).flatMap((s) => s.mutate);
  assert.deepEqual([...mutated].sort(), [...LISTED].sort());
  for (const [name, set] of Object.entries(MUTATION_SETS)) {
    assert.ok(set.tests.length > 0, name);
    for (const f of [...set.mutate, ...set.tests]) assert.ok(existsSync(join(PROJECT_ROOT, f)), `${name}: ${f}`);
  }
});

test("every test file written to kill survivors is run by a set (a kill no run includes would not count)", () => {
  const sets = new Set(Object.values(MUTATION_SETS).flatMap((s) => s.tests));
  const killers = readdirSync(join(PROJECT_ROOT, "tests"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => `tests/${f}`)
    .filter((f) =>
      /kill StrykerJS survivors/.test(
        readFileSync(join(PROJECT_ROOT, f), "utf8")
          .slice(0, 600)
          .replace(/\s*\n\/\/\s*/g, " "),
      ),
    );
  assert.ok(killers.length >= 10, `found ${killers.length}`);
  for (const f of killers) assert.ok(sets.has(f), `${f} is in no mutation set`);
});

test("each run: TAP runner under tsx, TypeScript checker, one runner, the set's files only, the ignorer loaded", () => {
  for (const [name, set] of Object.entries(MUTATION_SETS)) {
    const c = strykerConfig(name, set) as Record<string, unknown> & { tap: { testFiles: string[]; nodeArgs: string[] } };
    assert.equal(c.testRunner, "tap");
    assert.deepEqual(c.tap.nodeArgs, ["--import", "tsx"]);
    assert.deepEqual(c.tap.testFiles, set.tests);
    assert.deepEqual(c.mutate, set.mutate);
    assert.deepEqual(c.checkers, ["typescript"]);
    assert.equal(c.concurrency, 1);
    assert.deepEqual(c.ignorers, ["error-messages"]);
    assert.equal(c.tempDirName, STRYKER_TEMP_DIR);
  }
});

test("the sandbox and the reports are outside src/ and tests/, and ignored by git and Biome", () => {
  for (const dir of [STRYKER_TEMP_DIR, MUTATION_WORK_DIR]) {
    assert.ok(!/^(src|tests)(\/|$)/.test(dir), dir);
  }
  const gitignore = readFileSync(join(PROJECT_ROOT, ".gitignore"), "utf8").split("\n");
  assert.ok(gitignore.includes(`${STRYKER_TEMP_DIR}/`));
  assert.ok(gitignore.includes("bench/.work/") && MUTATION_WORK_DIR.startsWith("bench/.work/"));
  const biome = JSON.parse(readFileSync(join(PROJECT_ROOT, "biome.json"), "utf8")) as { files: { includes: string[] } };
  assert.ok(biome.files.includes.includes(`!${STRYKER_TEMP_DIR}`));
  assert.ok(biome.files.includes.includes("!bench/.work"));
  // Not part of the default test command.
  assert.doesNotMatch(readFileSync(join(PROJECT_ROOT, "scripts", "run-tests.sh"), "utf8"), /stryker|mutation/i);
});

// Hand-built babel NodePaths: only the fields the ignorer reads.
interface FakePath {
  node: Record<string, unknown>;
  parentPath?: FakePath;
  listKey?: string;
  key?: number | string;
  hub: { file: { opts: { filename: string } } };
}
const hubOf = (file: string) => ({ file: { opts: { filename: `/work/x/${file}` } } });
const id = (name: string) => ({ type: "Identifier", name });

function call(file: string, kind: "NewExpression" | "CallExpression", callee: Record<string, unknown>, argc: number): FakePath[] {
  const args = Array.from({ length: argc }, () => ({ type: "StringLiteral" }));
  const parent: FakePath = { node: { type: kind, callee, arguments: args }, hub: hubOf(file) };
  return args.map((node, i) => ({ node, parentPath: parent, listKey: "arguments", key: i, hub: hubOf(file) }));
}

test("the ignorer sets aside message text only: never a code, a path or the decision to throw", () => {
  const ignorer = strykerPlugins.find((p) => p.kind === "Ignore" && p.name === "error-messages")!.value;
  const ignored = (p: FakePath) => ignorer.shouldIgnore(p) !== undefined;
  // new CairnError(code, message, { path, hint })
  const cairn = call("src/core/x.ts", "NewExpression", id("CairnError"), 3);
  assert.deepEqual(cairn.map(ignored), [false, true, false]);
  const options = cairn[2]!;
  const prop = (name: string): FakePath => ({ node: { type: "ObjectProperty", key: id(name) }, parentPath: options, hub: hubOf("src/core/x.ts") });
  assert.equal(ignored(prop("hint")), true);
  assert.equal(ignored(prop("path")), false);
  assert.equal(ignored(prop("cause")), false);
  assert.deepEqual(call("src/core/x.ts", "NewExpression", id("TypeError"), 1).map(ignored), [true]);
  assert.deepEqual(call("src/core/x.ts", "NewExpression", id("Map"), 1).map(ignored), [false]);
  // Checker issues: c.add(path, message, code) and c.done(what, hint)
  const member = (object: string, property: string) => ({ type: "MemberExpression", object: id(object), property: id(property) });
  assert.deepEqual(call("src/strata/l.ts", "CallExpression", member("c", "add"), 3).map(ignored), [false, true, false]);
  assert.deepEqual(call("src/strata/l.ts", "CallExpression", member("seen", "add"), 1).map(ignored), [false]);
  assert.deepEqual(call("src/strata/l.ts", "CallExpression", member("rules", "done"), 2).map(ignored), [true, true]);
  // A module's own refusal helper, in that module only.
  assert.deepEqual(call("src/core/yaml.ts", "CallExpression", id("refuse"), 4).map(ignored), [false, false, true, false]);
  assert.deepEqual(call("src/tree/tar-gate.ts", "CallExpression", id("refuse"), 4).map(ignored), [false, true, false, true]);
  assert.deepEqual(call("src/core/jcs.ts", "CallExpression", id("refuse"), 4).map(ignored), [false, false, false, false]);
  // Message-only helper functions, by module.
  const fn = (file: string, name: string): FakePath => ({ node: { type: "FunctionDeclaration", id: id(name) }, hub: hubOf(file) });
  assert.equal(ignored(fn("src/core/json.ts", "lineCol")), true);
  assert.equal(ignored(fn("src/core/json.ts", "pointerAt")), false);
  assert.equal(ignored(fn("src/core/jcs.ts", "lineCol")), false);
});
