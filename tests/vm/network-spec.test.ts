/**
 * `run.network` as written in a spec, and what it turns into (issue 14):
 * the strict parse (every refusal with a control), the network steps, the
 * inputs bytes the agent reads, the VM identity (present only with
 * run.network; icount shift=auto), and the QEMU arguments: restrict=on,
 * ipv6=off, one guestfwd per declared responder and nothing else, and a
 * record and its replay that differ only in rr mode.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseYamlText, type Sha256Digest } from "../../src/core/index.ts";
import { defaultVmIdentity, encodeInputs, parseScenario, parseVmIdentity, qemuArgs, vmDigest } from "../../src/vm/index.ts";
import { firstNetworkDifference, networkIdentity } from "../../src/vm/netid.ts";
import { ACTION } from "../../src/vm/wire.ts";
import { assertCode } from "../helpers/errors.ts";

const run = (yaml: string) => parseScenario(parseYamlText(yaml, "spec.yaml"));
const good = `
network:
  http: {port: 80, root: ./site}
  echo: {port: 7}
steps:
  - action: network-down
  - action: start
  - action: network-up
    after: {output: stdout, contains: "x"}
`;
const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;

describe("run.network in a spec", () => {
  it("parses the responders and the network steps, which may come before the first start", () => {
    const s = run(good);
    assert.deepEqual(s.network, { http: { port: 80, unsafeRoot: "./site" }, echo: { port: 7 } });
    assert.deepEqual(
      s.steps.map((x) => x.action),
      ["network-down", "start", "network-up"],
    );
    const bytes = encodeInputs({ path: "/p", argv: ["/p"], env: [], workdir: "/", uid: 1000, gid: 1000 }, s);
    assert.ok(bytes.includes(Buffer.of(ACTION["network-down"], 0, 0)), "the step's action code is in the inputs");
  });

  it("refuses unknown keys, bad ports, one port twice, no responder, and network steps without run.network (control: the good spec)", () => {
    run(good);
    assertCode(() => run(good.replace("echo: {port: 7}", "echo: {port: 7, host: 1.2.3.4}")), "MODEL_UNKNOWN_FIELD", "/run/network/echo/host");
    assertCode(() => run(good.replace("network:", "network:\n  dns: {port: 53}")), "MODEL_UNKNOWN_FIELD", "/run/network/dns");
    assertCode(() => run(good.replace("port: 7}", "port: 70000}")), "MODEL_VALUE", "/run/network/echo/port");
    assertCode(() => run(good.replace("port: 7}", "port: 80}")), "RUN_INVALID", "/run/network/echo/port");
    assertCode(() => run(good.replace("http: {port: 80, root: ./site}", "http: {port: 80}")), "MODEL_MISSING_FIELD", "/run/network/http/root");
    assertCode(() => run("network: {}\nsteps: [{action: start}]"), "RUN_INVALID", "/run/network");
    assertCode(() => run("steps: [{action: start}, {action: network-down}]"), "RUN_INVALID", "/run/steps/1");
    assertCode(() => run("steps: [{action: start}, {action: network-sideways}]"), "MODEL_VALUE", "/run/steps/1/action");
  });

  it('refuses port 0 for either responder (the kernel\'s "any port", never one the guest can reach) and accepts 1 and 65535 (issue 31 case 19)', () => {
    assertCode(() => run(good.replace("port: 7}", "port: 0}")), "MODEL_VALUE", "/run/network/echo/port");
    assertCode(() => run(good.replace("port: 80,", "port: 0,")), "MODEL_VALUE", "/run/network/http/port");
    assertCode(() => run(good.replace("port: 7}", "port: -1}")), "MODEL_VALUE", "/run/network/echo/port");
    assert.equal(run(good.replace("port: 7}", "port: 1}")).network?.echo?.port, 1, "control: the lowest port");
    assert.equal(run(good.replace("port: 7}", "port: 65535}")).network?.echo?.port, 65535, "control: the highest port");
  });
});

describe("the network's identity and QEMU arguments", () => {
  const parts = { qemu: "7.2.22", kernel: d("a"), modules: [], agent: d("b"), initramfs: d("c"), treeManifest: d("e"), memoryMib: 256 };
  const net = networkIdentity({ http: { port: 80, unsafeRoot: "x" }, echo: { port: 7 } }, d("f"));
  const id = defaultVmIdentity({ ...parts, network: net });
  const paths = {
    kernelPath: "/k",
    initrdPath: "/i",
    rrfile: "/r",
    consoleLog: "/c",
    protocolLog: "/p",
    responders: {
      connect: new Map([
        [80, ["socat", "-", "UNIX-CONNECT:/n/80.sock"]],
        [7, ["socat", "-", "UNIX-CONNECT:/n/7.sock"]],
      ]),
    },
  };

  it("is absent without run.network (control: present with it, shift=auto, sleep on) and parses back as recorded", () => {
    assert.equal("network" in defaultVmIdentity(parts), false);
    assert.equal(defaultVmIdentity(parts).icount_shift, 3);
    assert.equal(id.icount_shift, "auto");
    assert.equal(id.icount_sleep, true);
    assert.deepEqual(parseVmIdentity(JSON.parse(JSON.stringify(id)), "/vm"), id);
    assert.notEqual(vmDigest(id), vmDigest(defaultVmIdentity({ ...parts, network: networkIdentity({ echo: { port: 7 } }, undefined) })));
  });

  it("names the first differing field below /vm/network (control: equal identities differ nowhere)", () => {
    assert.equal(firstNetworkDifference(net, net), undefined);
    assert.equal(firstNetworkDifference(undefined, undefined), undefined);
    assert.equal(firstNetworkDifference(net, networkIdentity({ http: { port: 81, unsafeRoot: "x" }, echo: { port: 7 } }, d("f"))), "/responders/0/port");
    assert.equal(firstNetworkDifference(net, networkIdentity({ http: { port: 80, unsafeRoot: "y" }, echo: { port: 7 } }, d("9"))), "/responders/0/root");
    assert.equal(firstNetworkDifference(net, undefined), "");
  });

  it("restricts the user-mode network to one guestfwd per responder; a record and its replay differ only in rr mode; a plain boot has no replay filter", () => {
    const rec = qemuArgs(id, paths, "record");
    const rep = qemuArgs(id, paths, "replay");
    assert.deepEqual(
      rec.map((a, i) => [a, rep[i]]).filter(([a, b]) => a !== b),
      [["shift=auto,sleep=on,rr=record,rrfile=/r", "shift=auto,sleep=on,rr=replay,rrfile=/r"]],
    );
    const netdev = rec[rec.indexOf("-netdev") + 1]!;
    assert.equal(
      netdev,
      "user,restrict=on,ipv6=off,net=10.0.2.0/24,host=10.0.2.2,id=net0,guestfwd=tcp:10.0.2.100:80-cmd:socat - UNIX-CONNECT:/n/80.sock,guestfwd=tcp:10.0.2.100:7-cmd:socat - UNIX-CONNECT:/n/7.sock",
    );
    assert.ok(!netdev.includes("hostfwd"));
    assert.equal(rec[rec.indexOf("-device", rec.indexOf("-netdev")) + 1], "vmxnet3,mac=52:54:00:12:34:56,netdev=net0");
    assert.ok(rec.includes("filter-replay,id=netrr,netdev=net0"));
    assert.ok(!qemuArgs(id, paths, "none").includes("filter-replay,id=netrr,netdev=net0"));
  });

  it("doubles a comma in a connector argument and refuses one slirp's shell-like split would break (control: a plain path)", () => {
    const comma = { ...paths, responders: { connect: new Map([...paths.responders.connect, [80, ["socat", "FD:0,shut-down", "UNIX-CONNECT:/n/80.sock"]]]) } };
    assert.match(qemuArgs(id, comma, "record").join(" "), /-cmd:socat FD:0,,shut-down UNIX-CONNECT:\/n\/80\.sock,guestfwd=/);
    const blank = { ...paths, responders: { connect: new Map([...paths.responders.connect, [80, ["socat", "-", "UNIX-CONNECT:/n x/80.sock"]]]) } };
    assertCode(() => qemuArgs(id, blank, "record"), "RUN_INFRASTRUCTURE", "/vm/network");
  });
});
