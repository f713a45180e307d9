/**
 * Run inputs on the host side (no VM): `run.inputs` parses strictly; a host
 * input is read with the bounded, no-follow rules (a symlink, FIFO, device,
 * missing path, too many entries or too many bytes is refused with its code,
 * naming the path), each refusal beside a control that reads; the tree has
 * no host traces (owner 0:0, mtime 0, modes 0644/0755) so its digest is the
 * same after the host files' times and modes change; an input never
 * replaces or goes below a workload entry; the listing round-trips and an
 * edited one is refused; and `cairn run` refuses a bad input before a kit is
 * set up or a run directory made.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { canonicalBytes, parseJsonBytes, sha256 } from "../../src/core/index.ts";
import type { CanonicalTree, FsEntry } from "../../src/tree/index.ts";
import { encodeListing, mergeRunInputs, parseScenario, readRunInputs, recordRun, RUN_INPUT_LIMITS } from "../../src/vm/index.ts";
import { parseListing } from "../../src/vm/input-listing.ts";
import { assertCode, assertCodeAsync } from "../helpers/errors.ts";

function host(): string {
  const root = mkdtempSync(join(tmpdir(), "cairn-inputs-host-"));
  writeFileSync(join(root, "data.txt"), "data\n");
  mkdirSync(join(root, "tree", "sub"), { recursive: true });
  writeFileSync(join(root, "tree", "a.txt"), "a\n");
  writeFileSync(join(root, "tree", "sub", "run.sh"), "#!/bin/sh\n", { mode: 0o700 });
  return root;
}

const IN = [
  { from: "data.txt", to: "/in/data.txt" },
  { from: "tree", to: "/in/tree" },
];

describe("run.inputs: the run section", () => {
  const run = (inputs: unknown) => ({ steps: [{ action: "start" }], inputs });

  it("control: absolute, normalized, distinct `to` paths parse", () => {
    assert.deepEqual(parseScenario(run(IN) as never).inputs, IN);
    assert.equal(parseScenario({ steps: [{ action: "start" }] }).inputs, undefined);
  });

  it("refuses a bad `to`, an overlap, a place the runtime overlay owns, an unknown key and too many entries", () => {
    for (const to of ["in/x", "/in/../etc", "/in/", "/", "/tmp/x", "/dev", "/proc/x", "/sys"])
      assertCode(() => parseScenario(run([{ from: "a", to }]) as never), "RUN_INVALID", "/run/inputs/0/to");
    assertCode(() => parseScenario(run([IN[1], { from: "b", to: "/in/tree/x" }]) as never), "RUN_INVALID", "/run/inputs/1/to");
    assertCode(() => parseScenario(run([IN[0], IN[0]]) as never), "RUN_INVALID", "/run/inputs/1/to");
    assertCode(() => parseScenario(run([{ from: "a", to: "/x", mode: 1 }]) as never), "MODEL_UNKNOWN_FIELD", "/run/inputs/0/mode");
    assertCode(() => parseScenario(run([{ from: "", to: "/x" }]) as never), "MODEL_VALUE", "/run/inputs/0/from");
    const many = Array.from({ length: 65 }, (_, i) => ({ from: "a", to: `/in/${i}` }));
    assertCode(() => parseScenario(run(many) as never), "LIMIT_EXCEEDED", "/run/inputs");
  });
});

describe("run.inputs: reading the host", () => {
  it("control: a file and a directory become one tree without host traces; the digest ignores times and modes beyond +x", () => {
    const root = host();
    const t = readRunInputs(IN, root);
    const e = (p: string) => t.tree.get(p)!;
    assert.deepEqual([...t.tree.keys()], ["/", "/in", "/in/data.txt", "/in/tree", "/in/tree/a.txt", "/in/tree/sub", "/in/tree/sub/run.sh"]);
    assert.equal(e("/in/data.txt").mode, 0o644);
    assert.equal(e("/in/tree/sub/run.sh").mode, 0o755);
    assert.equal(e("/in").mode, 0o755);
    for (const x of t.tree.values()) assert.deepEqual([x.uid, x.gid, x.mtime], [0, 0, 0]);
    utimesSync(join(root, "data.txt"), 12345, 12345);
    chmodSync(join(root, "tree", "a.txt"), 0o600);
    chmodSync(join(root, "tree", "sub", "run.sh"), 0o711);
    assert.equal(readRunInputs(IN, root).digest, t.digest);
    writeFileSync(join(root, "tree", "a.txt"), "b\n");
    assert.notEqual(readRunInputs(IN, root).digest, t.digest, "and follows the bytes");
  });

  it("refuses a symlink given as the input with an absolute target (it names a host path) and one inside a directory", () => {
    const root = host();
    symlinkSync(join(root, "data.txt"), join(root, "link"));
    assertCode(() => readRunInputs([{ from: "link", to: "/in/x" }], root), "PATH_UNSAFE", "/run/inputs/0/from");
    symlinkSync("../data.txt", join(root, "tree", "inner"));
    assertCode(() => readRunInputs([{ from: "tree", to: "/in/t" }], root), "SOURCE_NOT_REGULAR", join(root, "tree", "inner"));
  });

  it("refuses a FIFO (without waiting on it) and a device, as the input and inside a directory", () => {
    const root = host();
    execFileSync("mkfifo", [join(root, "fifo")]);
    assertCode(() => readRunInputs([{ from: "fifo", to: "/in/x" }], root), "SOURCE_NOT_REGULAR", join(root, "fifo"));
    assertCode(() => readRunInputs([{ from: "/dev/null", to: "/in/x" }], { base: root, root: "/" }), "SOURCE_NOT_REGULAR", "/dev/null");
    execFileSync("mkfifo", [join(root, "tree", "fifo")]);
    assertCode(() => readRunInputs([{ from: "tree", to: "/in/t" }], root), "SOURCE_NOT_REGULAR", join(root, "tree", "fifo"));
  });

  it("refuses a missing path, naming it", () => {
    const root = host();
    assertCode(() => readRunInputs([{ from: "nothing", to: "/in/x" }], root), "RUN_INVALID", join(root, "nothing"));
  });

  it("refuses too many bytes (a file, or a directory's total) and too many entries; controls below the limits read", () => {
    const root = host();
    const max = RUN_INPUT_LIMITS["run.inputs-bytes"];
    writeFileSync(join(root, "big"), "");
    truncateSync(join(root, "big"), max + 1); // sparse: the limit is checked on the size, before a byte is read
    const e = assertCode(() => readRunInputs([{ from: "big", to: "/in/big" }], root), "LIMIT_EXCEEDED", join(root, "big"));
    assert.match(e.message, /run\.inputs-bytes/);
    truncateSync(join(root, "big"), 4096);
    assert.equal(readRunInputs([{ from: "big", to: "/in/big" }], root).tree.get("/in/big")?.type, "file");
    mkdirSync(join(root, "halves"));
    for (const n of ["1", "2"]) {
      writeFileSync(join(root, "halves", n), "");
      truncateSync(join(root, "halves", n), max / 2 + 1);
    }
    assertCode(() => readRunInputs([{ from: "halves", to: "/in/h" }], root), "LIMIT_EXCEEDED");
    const many = join(root, "many");
    mkdirSync(many);
    for (let i = 0; i < RUN_INPUT_LIMITS["run.inputs-entries"]; i++) writeFileSync(join(many, String(i)), "");
    assertCode(() => readRunInputs([{ from: "many", to: "/in/m" }], root), "LIMIT_EXCEEDED");
    const fewer = join(root, "fewer");
    mkdirSync(fewer);
    for (let i = 0; i < 100; i++) writeFileSync(join(fewer, String(i)), "");
    assert.equal(readRunInputs([{ from: "fewer", to: "/in/m" }], root).tree.size, 103);
  });
});

describe("run.inputs: into the workload's tree, and the listing", () => {
  const dir = (path: string, mode = 0o755): FsEntry => ({ type: "dir", path, mode, uid: 0, gid: 0, mtime: 7 });
  const file = (path: string): FsEntry => ({ type: "file", path, mode: 0o755, uid: 0, gid: 0, mtime: 7, size: 1, sha256: sha256("x") });
  const workload: CanonicalTree = new Map([dir("/"), dir("/bin"), file("/bin/app"), dir("/in", 0o700)].map((e) => [e.path, e]));

  it("control: an input goes below a workload directory or a new one; the workload's entries win", () => {
    const t = readRunInputs(IN, host());
    const merged = mergeRunInputs(workload, t);
    assert.equal(merged.get("/in")?.mode, 0o700, "the workload's /in is kept");
    assert.equal(merged.get("/in/tree/a.txt")?.type, "file");
    assert.equal(merged.get("/bin/app")?.mtime, 7);
  });

  it("refuses an input over a workload entry, or below a workload file", () => {
    const root = host();
    assertCode(() => mergeRunInputs(workload, readRunInputs([{ from: "data.txt", to: "/bin/app" }], root)), "RUN_INVALID", "/run/inputs/0/to");
    assertCode(() => mergeRunInputs(workload, readRunInputs([{ from: "data.txt", to: "/bin" }], root)), "RUN_INVALID", "/run/inputs/0/to");
    assertCode(() => mergeRunInputs(workload, readRunInputs([{ from: "data.txt", to: "/bin/app/x" }], root)), "RUN_INVALID", "/run/inputs/0/to");
  });

  it("the listing round-trips to the same tree; an edited one is refused", () => {
    const t = readRunInputs(IN, host());
    const bytes = encodeListing(t);
    const back = parseListing(bytes, (d) => t.files.get(d)!, "test");
    assert.equal(back.digest, t.digest);
    assert.deepEqual(back.tos, t.tos);
    const model = parseJsonBytes(bytes) as { entries: Array<{ mode: number }> };
    model.entries[0]!.mode = 0o777;
    assertCode(() => parseListing(canonicalBytes(model), (d) => t.files.get(d)!, "test"), "RUN_INVALID", "/entries/0/mode");
  });
});

describe("cairn run with a bad input", () => {
  it("is refused before a kit is set up or a run directory made (control: a good input reaches the kit)", async () => {
    const root = host();
    symlinkSync(join(root, "data.txt"), join(root, "link"));
    const spec = (from: string) => {
      const p = join(root, `spec-${from}.json`);
      writeFileSync(
        p,
        JSON.stringify({
          schema: "cairn.workload/1",
          source: { binary: { path: "nothing-here", user: "1000:1000" } },
          run: { steps: [{ action: "start" }], inputs: [{ from, to: "/in/x" }] },
        }),
      );
      return p;
    };
    const runsDir = join(root, "runs");
    const kit = async () => {
      throw new Error("the kit was asked for");
    };
    await assertCodeAsync(() => recordRun({ input: spec("link"), storeDir: join(root, "store"), runsDir, kit, cairnVersion: "test" }), "PATH_UNSAFE");
    assert.ok(!existsSync(runsDir));
    await assert.rejects(
      () => recordRun({ input: spec("data.txt"), storeDir: join(root, "store"), runsDir, kit, cairnVersion: "test" }),
      /the kit was asked for/,
    );
  });
});
