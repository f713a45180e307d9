import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { WORKLOAD_SCOPE } from "../../src/workload/identity.ts";
import { LOCK_FIELDS } from "../../src/workload/workload-lock.ts";
import { SPEC_FIELDS } from "../../src/workload/spec.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { assemble, binarySpec, binaryWorkspace } from "./fixtures/workspace.ts";

test("every spec field and every lock field is placed as covered or not covered (and nothing else is listed)", () => {
  const fields = new Set<string>();
  for (const k of SPEC_FIELDS.top) if (k !== "source") fields.add(`spec:/${k}`);
  for (const k of SPEC_FIELDS.binary) fields.add(`spec:/source/binary/${k}`);
  for (const k of SPEC_FIELDS.oci) fields.add(`spec:/source/oci/${k}`);
  for (const k of LOCK_FIELDS) fields.add(`lock:/${k}`);
  const missing = [...fields].filter((f) => !(f in WORKLOAD_SCOPE));
  assert.deepEqual(missing, [], "add these fields to WORKLOAD_SCOPE in src/workload/identity.ts");
  const stale = Object.keys(WORKLOAD_SCOPE).filter((f) => !fields.has(f));
  assert.deepEqual(stale, [], "WORKLOAD_SCOPE lists fields the models no longer have");
  for (const [f, row] of Object.entries(WORKLOAD_SCOPE)) assert.ok(row.why.length > 10, `${f} needs a reason`);
});

test("the lock written by assemble has exactly LOCK_FIELDS", { skip: GCC_SKIP }, async () => {
  const ws = binaryWorkspace();
  await assemble(ws);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(ws.lockPath, "utf8")) as object).sort(), [...LOCK_FIELDS].sort());
});

test("not-covered fields leave the workload identity unchanged; covered ones change it", { skip: GCC_SKIP }, async () => {
  const base = await assemble(binaryWorkspace());
  const withRunAndLimits = JSON.parse(binarySpec()) as Record<string, unknown>;
  withRunAndLimits.run = { steps: [] };
  withRunAndLimits.limits = { fileSize: 10 * 1024 * 1024 };
  const nc = binaryWorkspace(JSON.stringify(withRunAndLimits));
  const moved = binaryWorkspace(binarySpec({ path: "./moved" }));
  writeFileSync(join(moved.dir, "moved"), readFileSync(join(moved.dir, "hello")));
  for (const ws of [nc, moved]) assert.equal((await assemble(ws)).identities.workload, base.identities.workload);
  for (const over of [{ args: ["x"] }, { env: { A: "1" } }, { workdir: "/srv" }, { user: "2000:2000" }]) {
    assert.notEqual((await assemble(binaryWorkspace(binarySpec(over)))).identities.workload, base.identities.workload, JSON.stringify(over));
  }
});

test("identities do not depend on umask, time zone or locale (assembled in child processes)", { skip: GCC_SKIP, timeout: 60_000 }, async () => {
  const child = fileURLToPath(new URL("./fixtures/assemble-child.ts", import.meta.url));
  const outputs = new Set<string>();
  for (const [umask, tz, lang] of [["022", "UTC", "C"], ["077", "Pacific/Kiritimati", "tr_TR.UTF-8"], ["002", "America/St_Johns", "de_DE.UTF-8"]]) {
    const ws = binaryWorkspace();
    const out = execFileSync("sh", ["-c", `umask ${umask}; exec "$0" --import tsx "$@"`, process.execPath, child, ws.specPath, ws.storeDir, ws.lockPath], {
      env: { ...process.env, TZ: tz, LANG: lang, LC_ALL: lang },
    });
    outputs.add(out.toString().trim());
  }
  assert.equal(outputs.size, 1, [...outputs].join("\n"));
});
