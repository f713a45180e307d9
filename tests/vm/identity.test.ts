import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { scopeFieldNames, type Sha256Digest } from "../../src/core/index.ts";
import {
  ROOT_DISK_DEVICE,
  checkAssertions,
  decodeProtocol,
  defaultVmIdentity,
  firstVmDifference,
  parseModuleEntries,
  parseRunManifest,
  parseVmIdentity,
  qemuArgs,
  OUTCOME_SCOPE,
  RUN_MANIFEST_SCOPE,
  VM_IDENTITY_SCOPE,
  vmDigest,
  type QemuPaths,
} from "../../src/vm/index.ts";
import { networkIdentity } from "../../src/vm/netid.ts";
import { QEMU_BINARY } from "../../src/vm/qemu.ts";
import { assertCode } from "../helpers/errors.ts";
import { assertCatchesExtraField, assertScopeExhaustive } from "../helpers/identity-scope.ts";
import { oneRun } from "./fixtures/records.ts";

const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;
const id = defaultVmIdentity({
  qemu: "7.2.22 (Debian test)",
  kernel: d("a"),
  modules: [
    { name: "virtio_ring", digest: d("d") },
    { name: "virtio", digest: d("e") },
  ],
  agent: d("b"),
  initramfs: d("c"),
  treeManifest: d("f"),
  memoryMib: 256,
});
/** The same identity for a run with `run.inputs` and `run.network`: every optional field present (absent, every other identity keeps its value). */
const withInputs = defaultVmIdentity({
  qemu: "7.2.22 (Debian test)",
  kernel: d("a"),
  modules: [{ name: "vmxnet3", digest: d("9") }],
  agent: d("b"),
  initramfs: d("c"),
  treeManifest: d("f"),
  memoryMib: 256,
  runInputs: d("9"),
  network: networkIdentity({ http: { port: 80, unsafeRoot: "./site" }, echo: { port: 7 } }, d("7")),
});
const paths: QemuPaths = {
  kernelPath: "/k/vmlinuz",
  initrdPath: "/r/init,rd",
  rrfile: "/r/replay.log",
  consoleLog: "/r/console.log",
  protocolLog: "/r/protocol.bin",
  diskPath: "/r/root,erofs",
  responders: {
    connect: new Map([
      [80, ["socat", "-", "UNIX-CONNECT:/n/80.sock"]],
      [7, ["socat", "-", "UNIX-CONNECT:/n/7.sock"]],
    ]),
  },
};

describe("VM identity cairn.vm/1", () => {
  // The host side of a QEMU launch: the paths of qemuArgs, runQemu's timeout, the binary found on PATH.
  const channel = {
    inputSocket: "/s/input.sock",
    checkpoints: { drive: "/r/check,points.qcow2", qmp: "/s/qmp.sock" },
    snapshot: { loadvm: "one", rrsnapshot: "start" },
  };
  const host = { ...paths, ...channel, timeoutMs: 60_000, qemuBinary: QEMU_BINARY };

  it("classifies every field: the model's keys are exactly the covered list", () => {
    assert.deepEqual(Object.keys(withInputs).sort(), scopeFieldNames(VM_IDENTITY_SCOPE, "covers").sort());
    assert.deepEqual(
      Object.keys(id).sort(),
      scopeFieldNames(VM_IDENTITY_SCOPE, "covers")
        .filter((k) => k !== "run_inputs" && k !== "network")
        .sort(),
      "without run.inputs and run.network the fields are absent",
    );
    assertScopeExhaustive(VM_IDENTITY_SCOPE, id, withInputs, host);
    assert.deepEqual(parseVmIdentity(JSON.parse(JSON.stringify(withInputs)), "/vm"), withInputs);
    assert.deepEqual(parseVmIdentity(JSON.parse(JSON.stringify(id)), "/vm"), id);
  });

  it("control: one more field in the identity model fails the scope check", () => {
    assertCatchesExtraField(VM_IDENTITY_SCOPE, id, host);
  });

  it("classifies every host path the command line uses as excluded, with a reason", () => {
    for (const k of Object.keys(paths)) assert.ok(`/${k}` in VM_IDENTITY_SCOPE.excludes, `${k} must be excluded in VM_IDENTITY_SCOPE`);
  });

  it("builds the measured command line; record and replay differ only in rr mode", () => {
    const rec = qemuArgs(id, paths, "record");
    const rep = qemuArgs(id, paths, "replay");
    const diff = rec.map((a, i) => [a, rep[i]]).filter(([a, b]) => a !== b);
    assert.deepEqual(diff, [["shift=3,sleep=off,rr=record,rrfile=/r/replay.log", "shift=3,sleep=off,rr=replay,rrfile=/r/replay.log"]]);
    const line = rec.join(" ");
    for (const part of [
      "-nodefaults",
      "-no-user-config",
      "-machine q35,accel=tcg",
      "-cpu max",
      "-m 256",
      "-no-reboot",
      "-rtc base=2020-01-01T00:00:00,clock=vm",
      "-device isa-debug-exit,iobase=0xf4,iosize=0x04",
      "-append console=ttyS0 panic=-1 quiet",
    ]) {
      assert.ok(line.includes(part), part);
    }
    assert.ok(rec.includes("file,id=s0,path=/r/console.log") && rec.includes("file,id=proto,path=/r/protocol.bin"));
    assert.ok(
      line.includes("-device virtio-serial-pci,id=vs,ioeventfd=off") && line.includes("-device virtserialport,bus=vs.0,chardev=proto,name=cairn.protocol"),
    );
    assert.equal(rec[rec.indexOf("-initrd") + 1], "/r/init,rd", "paths go as separate argv entries");
  });

  it("a run with checkpoints: the input channel is a socket-backed second serial port in record and replay; a branch loads its checkpoint and starts from its snapshot", () => {
    const held = { ...id, serial: ["console", "input"], icount_sleep: true };
    assert.throws(() => qemuArgs(held, paths, "record"), /names an input channel but no socket was given/);
    const rec = qemuArgs(held, { ...paths, inputSocket: channel.inputSocket }, "record");
    const rep = qemuArgs(held, { ...paths, inputSocket: channel.inputSocket }, "replay");
    assert.deepEqual(
      rec.map((a, i) => [a, rep[i]]).filter(([a, b]) => a !== b),
      [["shift=3,sleep=on,rr=record,rrfile=/r/replay.log", "shift=3,sleep=on,rr=replay,rrfile=/r/replay.log"]],
    );
    const line = rec.join(" ");
    assert.ok(line.includes("-chardev socket,id=s1,path=/s/input.sock,server=on,wait=off -serial chardev:s1"), line);
    assert.ok(!line.includes("-drive if=none") && !line.includes("-qmp"), "no checkpoint drive without one");
    // a branch's record: the parent's checkpoint is loaded, its start saved; its replay starts there, without -loadvm
    const branchRec = qemuArgs(held, { ...paths, ...channel }, "record").join(" ");
    assert.ok(branchRec.includes("rr=record,rrfile=/r/replay.log,rrsnapshot=start") && branchRec.endsWith("-loadvm one"), branchRec);
    assert.ok(branchRec.includes("-drive if=none,id=cairn-snap,file=/r/check,,points.qcow2,format=qcow2 -qmp unix:/s/qmp.sock,server=on,wait=off"));
    const branchRep = qemuArgs(
      held,
      { ...paths, inputSocket: channel.inputSocket, checkpoints: { drive: "/r/check,points.qcow2" }, snapshot: { rrsnapshot: "start" } },
      "replay",
    ).join(" ");
    assert.ok(
      branchRep.includes("rr=replay,rrfile=/r/replay.log,rrsnapshot=start") && !branchRep.includes("-loadvm") && !branchRep.includes("-qmp"),
      branchRep,
    );
  });

  it("attaches a root disk read-only through blkreplay, with icount sleep=on; record and replay differ only in rr mode", () => {
    const withDisk = defaultVmIdentity({
      qemu: id.qemu,
      kernel: id.kernel,
      modules: [],
      agent: id.agent,
      initramfs: id.initramfs,
      treeManifest: id.tree_manifest,
      memoryMib: 256,
      disk: { image: d("9"), size: 8192 },
    });
    assert.deepEqual(withDisk.root_disk, { filesystem: "erofs", image: d("9"), size: 8192, device: ROOT_DISK_DEVICE });
    assert.equal(withDisk.icount_sleep, true);
    const rec = qemuArgs(withDisk, paths, "record");
    const rep = qemuArgs(withDisk, paths, "replay");
    assert.deepEqual(
      rec.map((a, i) => [a, rep[i]]).filter(([a, b]) => a !== b),
      [["shift=3,sleep=on,rr=record,rrfile=/r/replay.log", "shift=3,sleep=on,rr=replay,rrfile=/r/replay.log"]],
    );
    const line = rec.join(" ");
    assert.ok(line.includes("-drive file=/r/root,,erofs,if=none,id=rootimg,format=raw,readonly=on"), "the image node, read-only, its comma escaped");
    assert.ok(line.includes("-drive driver=blkreplay,if=none,image=rootimg,id=rootrr,readonly=on"));
    assert.ok(line.includes("-device virtio-blk-pci,drive=rootrr,ioeventfd=off"));
    // control: no disk, no drive
    assert.ok(!qemuArgs(id, paths, "record").includes("-drive"));
    assertCode(
      () => qemuArgs({ ...withDisk, root_disk: { ...withDisk.root_disk!, device: "ide-hd" } }, paths, "record"),
      "VM_MISMATCH",
      "/vm/root_disk/device",
    );
    const { diskPath: _, ...noDisk } = paths;
    assertCode(() => qemuArgs(withDisk, noDisk, "record"), "RUN_INFRASTRUCTURE", "/vm/root_disk");
    const model = JSON.parse(JSON.stringify(withDisk));
    assert.deepEqual(parseVmIdentity(model, "/vm"), withDisk);
    assertCode(() => parseVmIdentity({ ...model, root_disk: { ...model.root_disk, extra: 1 } }, "/vm"), "MODEL_UNKNOWN_FIELD", "/vm/root_disk/extra");
    assertCode(() => parseVmIdentity({ ...model, root_disk: { ...model.root_disk, image: "md5:1" } }, "/vm"), "DIGEST_INVALID", "/vm/root_disk/image");
    assertCode(() => parseVmIdentity({ ...model, root_disk: { ...model.root_disk, filesystem: "ext4" } }, "/vm"), "RUN_INVALID", "/vm/root_disk/filesystem");
  });

  it("a run with icount sleep=on (a root disk, a network, checkpoints) boots its kernel with no_timer_check noapictimer pmtmr=0; a run in an initramfs keeps its line", () => {
    const withDisk = defaultVmIdentity({
      qemu: id.qemu,
      kernel: id.kernel,
      modules: [],
      agent: id.agent,
      initramfs: id.initramfs,
      treeManifest: id.tree_manifest,
      memoryMib: 256,
      disk: { image: d("9"), size: 8192 },
    });
    const sleepOn = "console=ttyS0 panic=-1 quiet no_timer_check noapictimer pmtmr=0";
    const withCheckpoints = defaultVmIdentity({
      qemu: id.qemu,
      kernel: id.kernel,
      modules: [],
      agent: id.agent,
      initramfs: id.initramfs,
      treeManifest: id.tree_manifest,
      memoryMib: 256,
      inputChannel: true,
    });
    for (const [what, vm] of [
      ["root disk", withDisk],
      ["network", withInputs],
      ["checkpoints' input channel", withCheckpoints],
    ] as const) {
      assert.equal(vm.icount_sleep, true, what);
      assert.equal(vm.cmdline, sleepOn, what);
      const args = qemuArgs(vm, { ...paths, inputSocket: "/s/input.sock" }, "replay");
      assert.equal(args[args.indexOf("-append") + 1], sleepOn, what);
    }
    // control: sleep=off (the initramfs root) keeps the line its golden identity was computed with
    assert.equal(id.icount_sleep, false);
    assert.equal(id.cmdline, "console=ttyS0 panic=-1 quiet");
    // a replay of a sleep=on run recorded before keeps its earlier line; a line cairn never used for the mode is not taken
    const recorded = (cmdline: string, disk: boolean) =>
      defaultVmIdentity({
        qemu: id.qemu,
        kernel: id.kernel,
        modules: [],
        agent: id.agent,
        initramfs: id.initramfs,
        treeManifest: id.tree_manifest,
        memoryMib: 256,
        ...(disk ? { disk: { image: d("9"), size: 8192 } } : {}),
        cmdline,
      }).cmdline;
    assert.equal(recorded("console=ttyS0 panic=-1 quiet", true), "console=ttyS0 panic=-1 quiet");
    assert.equal(recorded(sleepOn, true), sleepOn);
    assert.equal(recorded(`${sleepOn} x`, true), sleepOn);
    assert.equal(recorded(sleepOn, false), "console=ttyS0 panic=-1 quiet");
  });

  it("changes its digest with any covered field and names the first difference", () => {
    const base = vmDigest(id);
    assert.equal(vmDigest({ ...id }), base);
    for (const k of scopeFieldNames(VM_IDENTITY_SCOPE, "covers") as (keyof typeof id)[]) {
      if (k === "schema") continue;
      const v = id[k];
      const changed = {
        ...id,
        [k]:
          typeof v === "number"
            ? v + 1
            : typeof v === "boolean"
              ? !v
              : Array.isArray(v)
                ? [...v, "x"]
                : k === "kernel" || k === "agent" || k === "initramfs"
                  ? d("f")
                  : `${String(v)}x`,
      };
      assert.notEqual(vmDigest(changed), base, k);
      assert.equal(firstVmDifference(id, changed), k);
    }
    assert.equal(firstVmDifference(id, { ...id }), undefined);
  });

  it("parses a recorded identity strictly (control: the round trip is exact)", () => {
    const model = JSON.parse(JSON.stringify(id));
    assert.deepEqual(parseVmIdentity(model, "/vm"), id);
    assertCode(() => parseVmIdentity({ ...model, extra: 1 }, "/vm"), "MODEL_UNKNOWN_FIELD", "/vm/extra");
    assertCode(() => parseVmIdentity({ ...model, kernel: "md5:1" }, "/vm"), "DIGEST_INVALID", "/vm/kernel");
    assert.deepEqual(parseModuleEntries(id.kernel_modules, "/vm/kernel_modules"), [
      { name: "virtio_ring", digest: d("d") },
      { name: "virtio", digest: d("e") },
    ]);
    assertCode(() => parseModuleEntries(["../x=sha256:00"], "/vm/kernel_modules"), "RUN_INVALID", "/vm/kernel_modules/0");
  });
});

describe("run manifest cairn.run/1", () => {
  const manifest = {
    schema: "cairn.run/1",
    run_id: "20260101T000000Z-0011aabb",
    status: "passed",
    workload: { source_kind: "binary", workload: d("1"), source: d("2"), fs: d("3"), launch: d("4"), derived: d("5") },
    guest_image: { initramfs: d("c"), size: 512, inputs: d("6") },
    vm: id,
    vm_digest: vmDigest(id),
    replay_log: { sha256: d("7"), size: 100 },
    outcome: d("8"),
    recorded: { at: "2026-01-01T00:00:00.000Z", cairn_version: "0.1.0" },
  };
  const withInputsManifest = { ...manifest, vm: withInputs, vm_digest: vmDigest(withInputs), run_inputs: { tree: d("9"), listing: d("a"), size: 300 } };

  const withCheckpointsManifest = {
    ...manifest,
    checkpoints: { file: { sha256: d("b"), size: 1000 }, taken: [{ name: "one", after: { step: 1 }, icount: 12345 }] },
  };
  /** A branch (branch.ts): its parent, checkpoint and files. */
  const branchManifest = {
    ...manifest,
    branch: {
      parent: { run_id: "20261206T000000Z-00000000", outcome: d("1") },
      checkpoint: { name: "one", icount: 12345, file: { sha256: d("b"), size: 1000 } },
      start: { sha256: d("2"), size: 2000 },
      prefix: { sha256: d("3"), size: 140 },
      scenario: { sha256: d("4"), size: 90 },
    },
  };

  it("classifies every field it records", () => {
    assertScopeExhaustive(RUN_MANIFEST_SCOPE, manifest, withInputsManifest, withCheckpointsManifest, branchManifest);
    assert.deepEqual(parseRunManifest(Buffer.from(JSON.stringify(branchManifest)), "run.json"), branchManifest);
    assert.deepEqual(parseRunManifest(Buffer.from(JSON.stringify(withCheckpointsManifest)), "run.json"), withCheckpointsManifest);
    assert.deepEqual(parseRunManifest(Buffer.from(JSON.stringify(withInputsManifest)), "run.json"), withInputsManifest);
    assertCatchesExtraField(RUN_MANIFEST_SCOPE, manifest);
    assert.deepEqual(parseRunManifest(Buffer.from(JSON.stringify(manifest)), "run.json"), manifest);
  });

  it("refuses unknown fields, bad digests and an unsafe run id, each with its code and path (control: the manifest as written)", () => {
    parseRunManifest(Buffer.from(JSON.stringify(manifest)), "run.json");
    assertCode(() => parseRunManifest(Buffer.from(JSON.stringify({ ...manifest, secret: "x" })), "run.json"), "MODEL_UNKNOWN_FIELD", "/secret");
    assertCode(() => parseRunManifest(Buffer.from(JSON.stringify({ ...manifest, outcome: "x" })), "run.json"), "DIGEST_INVALID", "/outcome");
    assertCode(() => parseRunManifest(Buffer.from(JSON.stringify({ ...manifest, run_id: "../x" })), "run.json"), "MODEL_VALUE", "/run_id");
  });
});

describe("outcome digest cairn.outcome/1", () => {
  it("its scope places every field of the hashed model and of the decoded protocol it comes from", () => {
    const decoded = decodeProtocol(oneRun(Buffer.from("out\n"), Buffer.from("err\n"), 5));
    const hashed = { events: decoded.events, assertions: checkAssertions([], decoded) };
    assertScopeExhaustive(OUTCOME_SCOPE, hashed, decoded);
    assertCatchesExtraField(OUTCOME_SCOPE, hashed, decoded);
  });
});
