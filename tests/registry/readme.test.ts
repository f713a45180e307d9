// The README's "Registries" examples need a registry, so the Commands test
// does not run them; this test does, against the real registry on
// 127.0.0.1 holding tools/app:1.0, with the exit code each comment states.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

function registryExamples(): { args: string[]; exit: number }[] {
  const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
  const start = readme.indexOf("\n## Registries");
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end);
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return block
    .split("\n")
    .filter((l) => l.startsWith("npx cairn "))
    .map((l) => {
      const exit = Number(/# exit (\d)/.exec(l)?.[1]);
      return { args: l.replace(/#.*$/, "").trim().split(/\s+/).slice(2), exit };
    });
}

let reg: TestRegistry;
let work: string;
before(async () => {
  if (skip) return;
  work = tempDir("readme-reg");
  reg = await TestRegistry.create(join(work, "registry"));
  const img = writeImage(join(work, "src"), "1.0");
  await skopeoPush(`${img.dir}:1.0`, `${reg.host}/tools/app:1.0`);
  // the layer-registry examples: a directory to publish, a profile asking for it, and a key nobody signed with
  mkdirSync(join(work, "tool", "bin"), { recursive: true });
  writeFileSync(join(work, "tool", "bin", "tool"), "#!/bin/sh\necho tool\n", { mode: 0o755 });
  writeFileSync(join(work, "tool.yaml"), "name: t\nbase: {os: debian12}\nsoftware: [tool]\n");
  assert.equal((await runCli(["keygen", "--out", join(work, "me")], { HOME: work })).code, 0);
});
after(async () => {
  await reg?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the README's registry examples run with the exit codes they state", { skip }, async () => {
  const examples = registryExamples();
  assert.ok(examples.length >= 2, "control: the section's examples were found");
  for (const e of examples) {
    assert.ok(Number.isInteger(e.exit), `each example states its exit code: ${e.args.join(" ")}`);
    const args = e.args.map((a) => a.replaceAll("$REG", reg.host).replaceAll("$d", work));
    const r = await runCli(args, { HOME: work, CAIRN_HOME: join(work, "home") });
    assert.equal(r.code, e.exit, `${args.join(" ")}\n${r.stdout}${r.stderr}`);
  }
});
