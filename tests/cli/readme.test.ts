// Runs every command example of the README's "Commands" section, exactly as
// written, in one shell (so `$d` carries over), and checks each exit code: 0,
// or 1 where the line's comment says "exit 1". A README example that stops
// working fails this test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR } from "../vm/fixtures/kit.ts";

/** The README's shell commands under "## Commands", continuation lines joined. */
export function readmeCommands(readme: string): string[] {
  const start = readme.indexOf("\n## Commands");
  const end = readme.indexOf("\n## ", start + 5);
  assert.ok(start > 0 && end > start, "README has a Commands section");
  const section = readme.slice(start, end);
  const commands: string[] = [];
  for (const block of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    let pending = "";
    for (const line of block[1]!.split("\n")) {
      if (line.trim() === "") continue;
      if (line.endsWith("\\")) {
        pending += `${line.slice(0, -1)} `;
        continue;
      }
      commands.push(pending + line);
      pending = "";
    }
  }
  return commands;
}

function expectedExit(command: string): number {
  const comment = command.includes(" # ") ? command.slice(command.indexOf(" # ")) : "";
  return /exit 1\b/.test(comment) && !/exit 1 on/.test(comment) ? 1 : 0;
}

// A hang guard, not a measure: the Slurm campaign example (8 network records, then 8 replays through the
// throwaway cluster, one at a time: each asks for 2 CPUs) alone took 4.3 min at a load average of 5-9, and
// a version of it 8.5 min at 13, on the shared 2-core machine.
test("every README command example runs as written with the exit code it states", { timeout: 1_800_000 }, () => {
  const commands = readmeCommands(readFileSync(join(PROJECT_ROOT, "README.md"), "utf8"));
  assert.ok(commands.length >= 20, `found ${commands.length} commands`);
  assert.ok(
    commands.some((c) => c.startsWith("npx cairn replay")),
    "the runs example is included",
  );
  const script = ["set -uo pipefail"];
  commands.forEach((c, i) => {
    const want = expectedExit(c);
    script.push(
      `${c}\nrc=$?; if [ "$rc" -ne ${want} ]; then echo "README command ${i + 1} exited $rc, expected ${want}: ${c.replace(/["`$\\]/g, "\\$&")}" >&2; exit 1; fi`,
    );
  });
  const home = mkdtempSync(join(tmpdir(), "cairn-readme-"));
  const r = spawnSync("bash", ["-c", script.join("\n")], {
    cwd: PROJECT_ROOT,
    encoding: "utf8",
    env: { ...process.env, CAIRN_HOME: home, CAIRN_KIT: TEST_KIT_DIR },
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(r.status, 0, `${r.stderr.slice(-4000)}`);
});

test("control: a failing command in the README script is caught", () => {
  const r = spawnSync("bash", ["-c", `set -uo pipefail\nfalse\nrc=$?; if [ "$rc" -ne 0 ]; then exit 1; fi`]);
  assert.equal(r.status, 1);
  assert.equal(expectedExit("npx cairn lock diff a b  # exit 1: they differ"), 1);
  assert.equal(expectedExit("npx cairn manifest verify x --pub y        # exit 1 on any mismatch"), 0);
});
