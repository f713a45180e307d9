/**
 * Durable-run linkage (issue 10, item 4): a run made with `--environment
 * MANIFEST` records the environment manifest's snapshot reference; replay
 * refuses, naming the field, when none is offered or the offered one differs,
 * and replays when the same (pinned) environment is offered (the control). The
 * receipt names the recorded addresses.
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";

const PINNED = join(PROJECT_ROOT, "examples/devcontainer/pinned/devcontainer.json");
const UNPINNED = join(PROJECT_ROOT, "examples/devcontainer/unpinned/devcontainer.json");

describe("environment manifest linkage", { skip: VM_SKIP || GCC_SKIP }, () => {
  it("replay requires the recorded environment and names the field that differs", async () => {
    await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-envlink-"));
    cpSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(dir, "hello.yaml"));
    cpSync(buildProgram("static"), join(dir, "hello"));
    const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const r = await runCli(["run", join(dir, "hello.yaml"), "--environment", PINNED, "--sign", join(dir, "k.key"), "--json"], env);
    assert.equal(r.code, 1, "the key does not exist yet: refused before the run");
    assert.equal((await runCli(["keygen", "--out", join(dir, "k")], env)).code, 0);
    const ok = await runCli(["run", join(dir, "hello.yaml"), "--environment", PINNED, "--sign", join(dir, "k.key"), "--json"], env);
    assert.equal(ok.code, 0, ok.stderr);
    const runDir = (JSON.parse(ok.stdout) as { run_dir: string }).run_dir;
    const ingest = (JSON.parse((await runCli(["manifest", "ingest", PINNED, "--json"], env)).stdout) as { manifest: { address: string } }).manifest;
    const statement = JSON.parse(
      Buffer.from((JSON.parse(readFileSync(join(runDir, "receipt.dsse.json"), "utf8")) as { payload: string }).payload, "base64").toString("utf8"),
    );
    assert.equal(statement.predicate.environment_manifest.address, ingest.address);

    const replay = async (extra: string[]): Promise<{ code: number; error?: { code: string; path: string } }> => {
      const p = await runCli(["replay", runDir, ...extra, "--json"], env);
      return { code: p.code, ...(p.code !== 0 ? { error: (JSON.parse(p.stdout) as { error: { code: string; path: string } }).error } : {}) };
    };
    const none = await replay([]);
    assert.deepEqual([none.code, none.error?.code, none.error?.path], [1, "RESUME_MISMATCH", "/environment_manifest/manifest_address"]);
    const other = await replay(["--environment", UNPINNED, "--allow-unpinned"]);
    assert.equal(other.error?.code, "RESUME_MISMATCH");
    assert.match(other.error?.path ?? "", /^\/core\//);
    // control: the same pinned environment replays
    assert.deepEqual(await replay(["--environment", PINNED]), { code: 0 });
  });
});
