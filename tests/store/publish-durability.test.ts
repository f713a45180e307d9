// What publication fsyncs (src/store/publish.ts), observed from outside with
// strace rather than taken from the code: a child process publishes one file
// under `strace -f -y`, and the log shows whether the file was fsynced before
// it got its name (rename or link) and its directory after. Durable (the
// default) means both, for all three ways of publishing; `durable: false`
// means neither (control: the same trace sees the naming). Written to kill
// StrykerJS survivors (bench/mutation/README.md): a lost fsync is otherwise
// only visible after a power cut.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { publishBytes, publishStaged } from "../../src/store/index.ts";
import { needs } from "../helpers/prerequisites.ts";

const CHILD = fileURLToPath(new URL("./fixtures/publish-child.ts", import.meta.url));
const KINDS = ["bytes", "once", "staged"] as const;
const DATA = "published bytes\n";

function straceMissing(): string | undefined {
  try {
    execFileSync("strace", ["-V"], { stdio: "pipe" });
    return undefined;
  } catch {
    return "strace is not installed (scripts/setup-host.sh installs it)";
  }
}

type Event = { readonly sync: string } | { readonly from: string; readonly to: string };

/** The fsyncs (by the path strace -y resolves the descriptor to) and the namings (rename or link), in order. */
export function events(log: string): Event[] {
  const out: Event[] = [];
  for (const line of log.split("\n")) {
    const s = /\bf(?:data)?sync\(\d+<([^>]+)>\)\s*=\s*0/.exec(line);
    if (s) out.push({ sync: s[1]! });
    const n = /\b(?:rename|renameat2?|link|linkat)\((?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]+)", (?:AT_FDCWD(?:<[^>]*>)?, )?"([^"]+)"[^)]*\)\s*=\s*0/.exec(line);
    if (n) out.push({ from: n[1]!, to: n[2]! });
  }
  return out;
}

function traced(kind: string, durability: "default" | "off"): { dir: string; events: Event[] } {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "cairn-durable-")));
  const logPath = join(dir, "..", `${dir.split("/").pop()}.strace`);
  const r = spawnSync(
    "strace",
    [
      "-f",
      "-y",
      "-qq",
      "-o",
      logPath,
      "-e",
      "trace=fsync,fdatasync,rename,renameat,renameat2,link,linkat",
      process.execPath,
      "--import",
      "tsx",
      CHILD,
      kind,
      durability,
      dir,
    ],
    { encoding: "utf8", timeout: 100_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(join(dir, "obj"), "utf8"), DATA, "the child published the file");
  return { dir, events: events(readFileSync(logPath, "utf8")) };
}

const skip = needs(straceMissing());

test("the log parser: fsyncs by path and namings by rename, renameat2 and linkat, in order (control on a planted log)", () => {
  const planted = [
    "12 fsync(21</d/.obj.1.tmp>) = 0",
    '12 renameat2(AT_FDCWD</w>, "/d/.obj.1.tmp", AT_FDCWD</w>, "/d/obj", 0) = 0',
    '12 linkat(AT_FDCWD</w>, "/d/a", AT_FDCWD</w>, "/d/b", 0) = 0',
    '12 rename("/d/c", "/d/e") = -1 ENOENT (No such file or directory)',
    "12 fsync(22</d>) = 0",
  ].join("\n");
  assert.deepEqual(events(planted), [{ sync: "/d/.obj.1.tmp" }, { from: "/d/.obj.1.tmp", to: "/d/obj" }, { from: "/d/a", to: "/d/b" }, { sync: "/d" }]);
});

for (const kind of KINDS) {
  test(`durable ${kind} publication: the file is fsynced before it is named, the directory after; with durable: false neither (control: the naming is seen)`, {
    skip,
    timeout: 240_000,
  }, () => {
    const on = traced(kind, "default");
    const at = on.events.findIndex((e) => "to" in e && e.to === join(on.dir, "obj"));
    assert.ok(at >= 0, `the naming of obj is in the trace: ${JSON.stringify(on.events)}`);
    const from = (on.events[at] as { from: string }).from;
    assert.ok(
      on.events.slice(0, at).some((e) => "sync" in e && e.sync === from),
      `${from} fsynced before it is named: ${JSON.stringify(on.events)}`,
    );
    assert.ok(
      on.events.slice(at + 1).some((e) => "sync" in e && e.sync === on.dir),
      `the directory fsynced after: ${JSON.stringify(on.events)}`,
    );

    const off = traced(kind, "off");
    assert.ok(
      off.events.some((e) => "to" in e && e.to === join(off.dir, "obj")),
      "control: the naming is in the trace",
    );
    const inDir = off.events.filter((e) => "sync" in e && (e.sync === off.dir || e.sync.startsWith(`${off.dir}/`)));
    assert.deepEqual(inDir, [], "nothing under the directory is fsynced");
  });
}

test("in process, the same publications (durable and not) give the file its bytes (the traced calls' control)", () => {
  for (const durable of [undefined, false]) {
    const dir = mkdtempSync(join(tmpdir(), "cairn-durable-"));
    const options = durable === undefined ? {} : { durable };
    assert.equal(publishBytes(join(dir, "a"), Buffer.from(DATA), options), "published");
    assert.equal(publishBytes(join(dir, "b"), Buffer.from(DATA), { ...options, writeOnce: { code: "REGISTRY_INVALID", what: "x", hint: "h" } }), "published");
    writeFileSync(join(dir, "staged"), DATA);
    assert.equal(publishStaged(join(dir, "staged"), join(dir, "c"), DATA.length, options), "published");
    for (const f of ["a", "b", "c"]) assert.equal(readFileSync(join(dir, f), "utf8"), DATA);
  }
});
