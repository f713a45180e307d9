/**
 * `lock explain LOCK` (src/strata/lockfile-explain.ts and its command): the
 * layers in mount order with sizes and why each is there, read from a
 * lockfile written by hand in Strata's format; and `lock diff`'s human lines,
 * uv-like, from the same hand-written lockfiles.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { explainLock, parseLockfileText } from "../../src/strata/index.ts";
import { runCli } from "../helpers/cli.ts";
import { tempDir } from "./fixtures.ts";
import { BEFORE, type HandLock, handLockText } from "./hand-locks.ts";

const dir = tempDir("cairn-lock-explain-");
const write = (name: string, h: HandLock): string => {
  const p = join(dir, name);
  writeFileSync(p, handLockText(h));
  return p;
};

test("explain: layers in mount order (whatever order the file lists them), sizes, and why: the profile ref, the formation, the requirements provided", () => {
  const reversed: HandLock = { ...BEFORE, layers: [...BEFORE.layers].reverse() };
  const e = explainLock(parseLockfileText(handLockText(reversed), "hand.lock"));
  assert.deepEqual(
    e.layers.map((l) => [l.mount_order, l.name, l.size]),
    [
      [1, "samtools", 2048],
      [2, "bwa", 1024],
      [3, "python", 4096],
      [4, "tool-a", 100],
    ],
  );
  assert.equal(e.total_size, 2048 + 1024 + 4096 + 100);
  const [samtools, bwa, python] = e.layers;
  assert.deepEqual(samtools!.why, ["a member of formation:bio-seq@2026.03, which the profile asks for", "provides samtools>=1.0 for bwa-0.7.18-gnu-x86_64"]);
  assert.deepEqual(samtools!.required_by, [{ layer: "bwa-0.7.18-gnu-x86_64", requirement: "samtools>=1.0" }]);
  assert.deepEqual(bwa!.requires, [{ requirement: "samtools>=1.0", providers: ["samtools-1.20-gnu-x86_64"] }]);
  assert.deepEqual(python!.why, ["the profile asks for python@3.11"]);
  assert.deepEqual(python!.requires, [{ requirement: "glibc>=2.31", providers: ["base"] }]);
  assert.deepEqual(e.formations, [{ name: "bio-seq", version: "2026.03", members: ["samtools-1.20-gnu-x86_64", "bwa-0.7.18-gnu-x86_64"] }]);
  assert.deepEqual(
    e.package_sets.map((s) => [s.set, s.state, s.packages.map((p) => `${p.name}==${p.version}`)]),
    [["pip", "pinned", ["numpy==1.26.0", "six==1.16.0", "pytz==2024.1"]]],
  );
  assert.match(e.environment_id ?? "", /^sha256:[0-9a-f]{64}$/);
});

test("explain never invents a reason: a layer with no satisfied_by, no formation and no dependant says so (control: the same layer with a ref)", () => {
  const bare: HandLock = { ...BEFORE, layers: BEFORE.layers.map((l) => (l.name === "tool-a" ? { ...l, satisfiedBy: "" } : l)) };
  const e = explainLock(parseLockfileText(handLockText(bare), "hand.lock"));
  assert.deepEqual(e.layers.find((l) => l.name === "tool-a")!.why, [
    "the lockfile lists it without a reason (no satisfied_by, no formation, no layer needs it)",
  ]);
  const control = explainLock(parseLockfileText(handLockText(BEFORE), "hand.lock"));
  assert.deepEqual(control.layers.find((l) => l.name === "tool-a")!.why, ["the profile asks for tool-a"]);
});

test("lock explain LOCK prints the layers bottom to top with sizes and reasons; --json carries the same under `lockfile`", async () => {
  const p = write("explain.lock", BEFORE);
  const r = await runCli(["lock", "explain", p]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^layers, bottom \(mount 1\) to top: 4, 7\.1 KiB in all$/m);
  assert.match(r.stdout, /^ {2}1\. samtools 1\.20 {2}2\.0 KiB {2}sha256:b{64}$/m);
  assert.match(r.stdout, /^ {7}why: provides samtools>=1\.0 for bwa-0\.7\.18-gnu-x86_64$/m);
  assert.match(r.stdout, /^ {2}4\. tool-a 1\.0 {2}100 B/m);
  assert.ok(r.stdout.indexOf("1. samtools") < r.stdout.indexOf("3. python"), "mount order");
  const j = await runCli(["lock", "explain", p, "--json"]);
  const doc = JSON.parse(j.stdout) as { lockfile: { layers: { name: string; why: string[] }[] }; frozen: boolean };
  assert.deepEqual(
    doc.lockfile.layers.map((l) => l.name),
    ["samtools", "bwa", "python", "tool-a"],
  );
  assert.equal(doc.frozen, true);
});

test("lock diff prints uv-like lines: + name==ver, - name==ver, ~ name old → new, per layer and per package", async () => {
  const a = write("a.lock", BEFORE);
  const b = write("b.lock", {
    ...BEFORE,
    layers: [...BEFORE.layers.slice(0, 2), { ...BEFORE.layers[2]!, version: "3.12.4", digest: "9a", size: 5000, satisfiedBy: "python@3.12" }],
    sets: [
      {
        manager: "pip",
        packages: [{ name: "numpy", version: "1.26.4", digest: "4d" }, { name: "pandas", version: "2.2.2", digest: "5e" }, BEFORE.sets![0]!.packages[2]!],
      },
    ],
  });
  const r = await runCli(["lock", "diff", a, b]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stdout, /^layers\n {2}~ python 3\.11\.9 → 3\.12\.4 \(upgrade\) {2}sha256:d{12}… 4\.0 KiB, mount 3 → sha256:(9a){6}… 4\.9 KiB, mount 3$/m);
  assert.match(r.stdout, /^ {2}- tool-a 1\.0 {2}sha256:e{12}… 100 B, mount 4$/m);
  // no upgrade/downgrade label on a package: pip, conda and CRAN order versions by their own rules (a .dev1 is below its release in pip), not by cairn's layer version rule
  assert.match(r.stdout, /^packages pip\n {2}~ numpy 1\.26\.0 → 1\.26\.4\n {2}\+ pandas==2\.2\.2\n {2}- six==1\.16\.0$/m);
  assert.doesNotMatch(r.stdout, /pytz/, "an unchanged package is not listed");
  const same = await runCli(["lock", "diff", a, a]);
  assert.equal(same.code, 0);
  assert.doesNotMatch(same.stdout, /^(layers|packages)/m, "control: no section for nothing");
});

test("second pass: a control character or line break from a lockfile (a package name, a satisfied_by) is printed escaped by lock diff and lock explain, so it cannot rewrite the terminal or forge a line", async () => {
  const evil: HandLock = {
    ...BEFORE,
    layers: BEFORE.layers.map((l) => (l.name === "tool-a" ? { ...l, digest: "ab", satisfiedBy: "tool-a\\n  9. forged 1.0  ok\\e[31m" } : l)),
    sets: [{ manager: "pip", packages: [{ name: '"six\\e[2J\\nforged"', version: "1.16.0", digest: "2b" }] }],
  };
  const a = write("plain-a.lock", BEFORE);
  const b = write("evil-b.lock", evil);
  for (const args of [
    ["lock", "explain", b],
    ["lock", "diff", a, b],
  ]) {
    const r = await runCli(args);
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    assert.doesNotMatch(r.stdout, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/, `${args[1]}: no control character reaches the terminal`);
    assert.doesNotMatch(r.stdout, /^forged|^ {2}9\. forged/m, `${args[1]}: no forged line`);
    assert.match(r.stdout, /six\\u001b\[2J\\u000aforged/, `${args[1]}: the name is shown, escaped`);
  }
  // control: a plain lockfile's lines are printed as they are
  const plain = await runCli(["lock", "explain", a]);
  assert.match(plain.stdout, /^ {7}why: the profile asks for tool-a$/m);
});
