/**
 * `devices: skip` and `xattrs: drop` (issue 9, item 3): refused by the strict
 * profile, named by the member path; under the policy the member is left out
 * (a device or FIFO) or kept without its attributes (xattrs, file
 * capabilities included), and listed. ACLs and other member types stay
 * refused under every policy. Check mode (`collect`) lists every problem of
 * the layers in one pass, each with the policy that admits it.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LayerIssue } from "../../src/tree/index.ts";
import { parsePolicy } from "../../src/tree/layer-policy.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { dir, file, writeTar } from "../workload/fixtures/tar-writer.ts";
import { runLayers } from "./fixtures/layer-runner.ts";

const devLayer = [
  dir("dev"),
  { name: "dev/null", type: "char" as const, devmajor: 1, devminor: 3 },
  { name: "dev/sda", type: "block" as const, devmajor: 8, devminor: 0 },
  { name: "run/initctl", type: "fifo" as const },
  file("etc/hostname", "h\n"),
];
const capLayer = [dir("usr"), dir("usr/bin"), file("usr/bin/ping", "ELF", { mode: 0o755, pax: { "SCHILY.xattr.security.capability": "\x01\x00\x00\x02" } })];

describe("devices: skip", () => {
  it("strict: a device node and a FIFO are refused at /layers/<i>:<member path>", async () => {
    await assertCodeAsync(() => runLayers([devLayer]), "TAR_UNSUPPORTED_TYPE", "/layers/0:dev/null");
    await assertCodeAsync(() => runLayers([[{ name: "run/initctl", type: "fifo" }]]), "TAR_UNSUPPORTED_TYPE", "/layers/0:run/initctl");
    // control: the layer without them applies under the strict profile
    const r = await runLayers([[dir("dev"), file("etc/hostname", "h\n")]]);
    assert.ok(r.tree.has("/etc/hostname"));
  });
  it("skip: devices and FIFOs are left out and listed with their numbers; everything else is applied", async () => {
    const r = await runLayers([devLayer], { policy: parsePolicy({ devices: "skip" }) });
    for (const p of ["/dev/null", "/dev/sda", "/run/initctl"]) assert.equal(r.tree.has(p), false, p);
    assert.ok(r.tree.get("/dev")?.type === "dir" && r.tree.get("/run")?.type === "dir" && r.tree.has("/etc/hostname"));
    assert.deepEqual(r.skipped, [
      { layer: 0, path: "/dev/null", type: "chardev", device: { major: 1, minor: 3 } },
      { layer: 0, path: "/dev/sda", type: "blockdev", device: { major: 8, minor: 0 } },
      { layer: 0, path: "/run/initctl", type: "fifo" },
    ]);
    assert.equal(r.stats.devicesSkipped, 3);
  });
  it("skip: a device over a lower layer's file removes it, as the node would have replaced it", async () => {
    const r = await runLayers([[dir("dev"), file("dev/null", "not a device")], [{ name: "dev/null", type: "char", devmajor: 1, devminor: 3 }]], {
      policy: parsePolicy({ devices: "skip" }),
    });
    assert.equal(r.tree.has("/dev/null"), false);
    // control: without the device layer the file stays
    const c = await runLayers([[dir("dev"), file("dev/null", "not a device")]], { policy: parsePolicy({ devices: "skip" }) });
    assert.equal(c.tree.get("/dev/null")?.type, "file");
  });
  it("skip does not admit other types (a contiguous file) or a device beneath a symlink", async () => {
    const skip = parsePolicy({ devices: "skip" });
    await assertCodeAsync(() => runLayers([[{ name: "c", type: "contiguous" }]], { policy: skip }), "TAR_UNSUPPORTED_TYPE", "/layers/0:c");
    await assertCodeAsync(
      () => runLayers([[{ name: "l", type: "symlink", linkname: "/etc" }], [{ name: "l/null", type: "char", devmajor: 1, devminor: 3 }]], { policy: skip }),
      "TAR_THROUGH_SYMLINK",
    );
  });
});

describe("xattrs: drop", () => {
  it("strict: a file capability (security.capability) is refused at the member path", async () => {
    await assertCodeAsync(() => runLayers([capLayer]), "TAR_XATTR", "/layers/0:usr/bin/ping");
    await assertCodeAsync(() => runLayers([[file("f", "x", { pax: { "LIBARCHIVE.xattr.user.note": "eA==" } })]]), "TAR_XATTR", "/layers/0:f");
  });
  it("drop: the file is kept with its bytes and mode, its attributes listed", async () => {
    const r = await runLayers([capLayer], { policy: parsePolicy({ xattrs: "drop" }) });
    const ping = r.tree.get("/usr/bin/ping");
    assert.ok(ping?.type === "file" && ping.size === 3 && ping.mode === 0o755);
    assert.deepEqual(r.droppedXattrs, [{ layer: 0, path: "/usr/bin/ping", names: ["security.capability"] }]);
    // control: the same file without the xattr gives the same tree
    const plain = await runLayers([[dir("usr"), dir("usr/bin"), file("usr/bin/ping", "ELF", { mode: 0o755 })]]);
    assert.deepEqual([...r.tree.values()], [...plain.tree.values()]);
    assert.deepEqual(plain.droppedXattrs, []);
  });
  it("a whiteout marker with an xattr is refused like any member (control: the plain marker applies)", async () => {
    const lower = [file("a", "x")];
    await assertCodeAsync(() => runLayers([lower, [file(".wh.a", "", { pax: { "SCHILY.xattr.user.x": "1" } })]]), "TAR_XATTR", "/layers/1:.wh.a");
    const r = await runLayers([lower, [file(".wh.a", "")]]);
    assert.equal(r.tree.has("/a"), false);
  });
  it("drop does not drop ACLs, in either encoding", async () => {
    const drop = parsePolicy({ xattrs: "drop" });
    await assertCodeAsync(() => runLayers([[file("f", "x", { pax: { "SCHILY.acl.access": "user::rw-" } })]], { policy: drop }), "TAR_XATTR", "/layers/0:f");
    await assertCodeAsync(
      () => runLayers([[file("f", "x", { pax: { "SCHILY.xattr.system.posix_acl_access": "a" } })]], { policy: drop }),
      "TAR_XATTR",
      "/layers/0:f",
    );
  });
});

describe("check mode (collect)", () => {
  it("lists every problem of every layer in one pass, each with the policy that admits it, and goes on", async () => {
    const issues: LayerIssue[] = [];
    const bad = writeTar([file("x", "y")]);
    const r = await runLayers(
      [
        devLayer,
        [...capLayer, file("usr/bin/su", "x", { mode: 0o4755 }), file("usr/bin/tm", "x", { pax: { atime: "1" } })],
        bad,
        [{ name: "c", type: "contiguous" }],
      ],
      { collect: (i) => issues.push(i), diffIds: { 2: `sha256:${"0".repeat(64)}` } },
    );
    assert.deepEqual(
      issues.map((i) => [i.error.code, i.error.path, i.layer, i.policy, i.fatal]),
      [
        ["TAR_UNSUPPORTED_TYPE", "/layers/0:dev/null", 0, "devices", false],
        ["TAR_UNSUPPORTED_TYPE", "/layers/0:dev/sda", 0, "devices", false],
        ["TAR_UNSUPPORTED_TYPE", "/layers/0:run/initctl", 0, "devices", false],
        ["TAR_XATTR", "/layers/1:usr/bin/ping", 1, "xattrs", false],
        ["TAR_SETID", "/layers/1:usr/bin/su", 1, "setid", false],
        ["TAR_TIMESTAMP", "/layers/1:usr/bin/tm", 1, undefined, false],
        ["OCI_DIFFID_MISMATCH", "/layers/2", 2, undefined, true],
        ["TAR_UNSUPPORTED_TYPE", "/layers/3:c", 3, undefined, true],
      ],
    );
    // the members are treated as their policies would treat them: devices out, su stripped, ping kept; layer 2 left out
    assert.equal(r.tree.has("/dev/null"), false);
    assert.equal(r.tree.get("/usr/bin/su")?.mode, 0o755);
    assert.ok(r.tree.has("/usr/bin/ping") && !r.tree.has("/x"));
    // control: without collect the first problem is thrown
    await assertCodeAsync(() => runLayers([devLayer]), "TAR_UNSUPPORTED_TYPE", "/layers/0:dev/null");
  });
});
