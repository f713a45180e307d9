/**
 * A NIC in the guest (issue 14 items 2-4): examples/network/http.yaml (its
 * client built with gcc -static at test time) fetches from cairn's built-in
 * responder, loses the network after the first answer (network-down) and
 * gets it back (network-up) while it retries; the record replays twice
 * byte-identically with no responder running and the served directory gone.
 * What the guest cannot reach is probed from inside (tests/vm/fixtures/
 * net-reach.c) next to a control that it can reach the responder; a
 * recorded network configuration that differs is refused before launch
 * naming the field; a responder that dies or hangs during a record ends it
 * as an infrastructure failure.
 */
import assert from "node:assert/strict";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { recordRun, replayRun, vmDigest, type RunManifest } from "../../src/vm/index.ts";
import { runCli } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { buildProgramFrom, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "./fixtures/kit.ts";
import { childrenOf, processExit, qemuChildren, whenUnder } from "./fixtures/events.ts";
import { killResponder, SOCAT_SKIP } from "./fixtures/responder.ts";

const EXAMPLES = join(PROJECT_ROOT, "examples", "network");

function exampleDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cairn-net-example-"));
  copyFileSync(join(EXAMPLES, "http.yaml"), join(dir, "http.yaml"));
  cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
  copyFileSync(buildProgramFrom(join(EXAMPLES, "http-client.c"), "static"), join(dir, "http-client"));
  return dir;
}

type Editable = { -readonly [K in keyof RunManifest]: RunManifest[K] };

function editManifest(runDir: string, edit: (m: Editable) => void): void {
  const file = join(runDir, "run.json");
  const m = JSON.parse(readFileSync(file, "utf8")) as Editable;
  edit(m);
  writeFileSync(file, JSON.stringify(m, null, 2));
}

describe("a NIC in the guest", { skip: VM_SKIP || GCC_SKIP || SOCAT_SKIP }, () => {
  it("the http example records an outage and a recovery, then replays twice byte-identically with no responder and no served directory", async () => {
    const kit = await testKit();
    const dir = exampleDir();
    const env = { ...process.env, CAIRN_HOME: join(dir, "home"), CAIRN_KIT: TEST_KIT_DIR };
    const r = await runCli(["run", join(dir, "http.yaml"), "--json"], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const run = JSON.parse(r.stdout) as { run_dir: string; outcome: string; status: string };
    assert.equal(run.status, "passed");
    const out = readFileSync(join(run.run_dir, "streams", "1.stdout"), "utf8").split("\n");
    assert.equal(out[0], "fetch 1: 200 hello over the network");
    assert.equal(out[1], "fetch 2 attempt 1: Network is unreachable", "the first retry meets the network down");
    assert.deepEqual(out.slice(-3), ["fetch 2: 200 hello over the network", "echo: ping", ""]);
    const m = JSON.parse(readFileSync(join(run.run_dir, "run.json"), "utf8")) as RunManifest;
    assert.equal(m.vm.icount_shift, "auto");
    assert.deepEqual(
      m.vm.network?.responders.map((x) => [x.kind, x.address, x.port]),
      [
        ["http", "10.0.2.100", 80],
        ["echo", "10.0.2.100", 7],
      ],
    );
    assert.ok(m.vm.kernel_modules.at(-1)?.startsWith("vmxnet3="));
    rmSync(join(dir, "site"), { recursive: true }); // a replay needs neither the directory nor a responder
    const protocol = readFileSync(join(run.run_dir, "protocol.bin"));
    for (let i = 1; i <= 2; i++) {
      const p = await runCli(["replay", run.run_dir, "--json"], env);
      assert.equal(p.code, 0, p.stdout + p.stderr);
      assert.equal((JSON.parse(p.stdout) as { outcome: string }).outcome, run.outcome);
      assert.ok(readFileSync(join(run.run_dir, "replays", String(i), "protocol.bin")).equals(protocol), `replay ${i} protocol stream`);
    }

    // a recorded network configuration that differs is refused before launch, naming the field
    const store = join(dir, "home", "store");
    const refusedAt = async (edit: (m: Editable) => void, path: string): Promise<void> => {
      const copy = mkdtempSync(join(tmpdir(), "cairn-net-edit-"));
      cpSync(run.run_dir, join(copy, "run"), { recursive: true });
      editManifest(join(copy, "run"), (mm) => {
        edit(mm);
        mm.vm_digest = vmDigest(mm.vm);
      });
      await assert.rejects(
        replayRun({ runDir: join(copy, "run"), storeDir: store, kit }),
        (e: unknown) => e instanceof CairnError && e.code === "VM_MISMATCH" && e.path === path,
      );
      assert.equal(existsSync(join(copy, "run", "replays", "3")), false, "nothing was launched");
    };
    type Net = NonNullable<RunManifest["vm"]["network"]>;
    const withNet = (f: (n: Net) => Net) => (mm: Editable) => void (mm.vm = { ...mm.vm, network: f(mm.vm.network!) });
    await refusedAt(
      withNet((n) => ({ ...n, responders: [{ ...n.responders[0]!, port: 8080 }, n.responders[1]!] })),
      "/vm/network/responders/0/port",
    );
    await refusedAt(
      withNet((n) => ({ ...n, nic: "e1000" })),
      "/vm/network/nic",
    );
    await refusedAt(
      withNet((n) => ({ ...n, backend: n.backend.replace("restrict=on", "restrict=off") })),
      "/vm/network/backend",
    );
    await refusedAt(
      withNet((n) => ({ ...n, responders: n.responders.slice(0, 1) })),
      "/vm/network/responders/1",
    );
    await refusedAt((mm) => {
      const { network: _, ...rest } = mm.vm;
      mm.vm = rest;
    }, "/vm/network");
  });

  it("the guest reaches the declared responders and nothing else: not the gateway's other ports, the host's addresses, the outside, DNS, or `..` over HTTP", async () => {
    const kit = await testKit();
    const dir = mkdtempSync(join(tmpdir(), "cairn-net-reach-"));
    writeFileSync(join(dir, "secret.txt"), "outside the served directory\n");
    cpSync(join(EXAMPLES, "site"), join(dir, "site"), { recursive: true });
    copyFileSync(buildProgramFrom(join(import.meta.dirname, "fixtures", "net-reach.c"), "static"), join(dir, "net-reach"));
    // a real listener on every host address: were the guest not restricted, 10.0.2.2:port would reach it
    let connections = 0;
    const listener = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((res) => listener.listen(0, "0.0.0.0", res));
    const port = (listener.address() as { port: number }).port;
    const hostAddress =
      Object.values(networkInterfaces())
        .flat()
        .find((a) => a !== undefined && a.family === "IPv4" && !a.internal)?.address ?? "127.0.0.1";
    try {
      // control: the listener answers on the host
      await new Promise<void>((res, rej) => {
        const s = connect(port, hostAddress, () => {
          s.end();
          res();
        });
        s.once("error", rej);
      });
      const spec = {
        schema: "cairn.workload/1",
        source: { binary: { path: "net-reach", args: [hostAddress, String(port)], user: "1000:1000" } },
        run: {
          network: { http: { port: 80, root: "./site" }, echo: { port: 7 } },
          steps: [{ action: "start" }, { action: "close-stdin" }],
          expect: [
            {
              "exit-code": 0,
              "stdout-lines": [
                "http control: 200 hello over the network",
                "http dotdot: 400 (empty)",
                "http encoded dotdot: 400 (empty)",
                "echo port: reached",
                "responder address, undeclared port: blocked",
                "gateway, host listener port: blocked",
                "gateway, port 22: blocked",
                "host address, listener port: blocked",
                "public address: blocked",
                "dns at 10.0.2.3: no answer",
                "dns at the gateway: no answer",
              ],
            },
          ],
        },
      };
      writeFileSync(join(dir, "spec.json"), JSON.stringify(spec));
      const before = connections;
      const rec = await recordRun({ input: join(dir, "spec.json"), storeDir: join(dir, "store"), runsDir: join(dir, "runs"), kit, cairnVersion: "test" });
      assert.deepEqual(
        rec.evaluation.assertions.map((a) => a.ok),
        [true, true],
        readFileSync(join(rec.runDir, "streams", "1.stdout"), "utf8"),
      );
      assert.equal(rec.evaluation.status, "passed");
      assert.equal(connections, before, "the host listener saw no connection from the guest");
    } finally {
      listener.close();
    }
  });

  const interrupted = (signal: "SIGINT" | "SIGKILL") => async () => {
    await testKit();
    const dir = exampleDir();
    writeFileSync(join(dir, "http.yaml"), readFileSync(join(dir, "http.yaml"), "utf8").replace(/ {2}steps:[\s\S]*$/, "  steps:\n    - action: start\n"));
    const cairn = spawn(process.execPath, [join(PROJECT_ROOT, "bin", "cairn.js"), "run", join(dir, "http.yaml"), "--timeout", "180", "--kit", TEST_KIT_DIR], {
      cwd: dir,
      env: { ...process.env, CAIRN_HOME: join(dir, "home") },
      stdio: "ignore",
    });
    const exited = new Promise<void>((r) => cairn.on("exit", () => r()));
    const children = (name: string) => childrenOf(cairn.pid!, (argv) => argv.some((a) => a.includes(name)));
    // The event: QEMU (started after the responder) creates its files in the run directory under `dir`.
    const [responder, qemu] = await whenUnder(
      dir,
      () => {
        const found = [children("responder-main"), qemuChildren(cairn.pid!)] as const;
        return found[0].length > 0 && found[1].length > 0 ? found : undefined;
      },
      "the responder and QEMU starting under cairn",
    );
    assert.ok(responder.length > 0 && qemu.length > 0, "precondition: the responder and QEMU run under cairn");
    // the responder's private directory: its configuration is the last argument
    const config = readFileSync(`/proc/${responder[0]}/cmdline`, "utf8").split("\0").filter(Boolean).at(-1)!;
    const privateDir = dirname(config);
    assert.ok(existsSync(privateDir), "precondition: the private directory exists");
    cairn.kill(signal);
    await exited;
    // The event: each process's exit (its pidfd); the guard only bounds the wait.
    const pids = [...responder, ...qemu];
    const gone = await Promise.all(pids.map((pid) => processExit(pid, 120_000)));
    assert.deepEqual(
      pids.filter((_, i) => !gone[i]),
      [],
      "nothing of the run is left",
    );
    // SIGINT is handled: the directory goes too; after SIGKILL nothing of cairn runs to remove it (docs/host-safety.md)
    if (signal === "SIGINT") assert.equal(existsSync(privateDir), false, "the responder's private directory is removed");
    rmSync(privateDir, { recursive: true, force: true });
  };
  it("SIGINT of cairn run during a network record leaves no responder and no QEMU behind", { timeout: 900_000 /* a hang guard only */ }, interrupted("SIGINT"));
  it(
    "SIGKILL of cairn run during a network record leaves no responder and no QEMU behind",
    { timeout: 900_000 /* a hang guard only */ },
    interrupted("SIGKILL"),
  );

  const failing = (signal: "SIGKILL" | "SIGSTOP") => async () => {
    const kit = await testKit();
    const dir = exampleDir();
    // the client fetches once, then waits on stdin for ever: only the responder's failure can end this record early
    const spec = readFileSync(join(dir, "http.yaml"), "utf8").replace(/ {2}steps:[\s\S]*$/, "  steps:\n    - action: start\n  limits: {time-ms: 600000}\n");
    writeFileSync(join(dir, "http.yaml"), spec);
    const recording = recordRun({ input: join(dir, "http.yaml"), storeDir: join(dir, "store"), runsDir: join(dir, "runs"), kit, cairnVersion: "test" });
    // The event: QEMU, started after the responder, creates its files in the run directory: the record is on.
    await whenUnder(dir, () => (qemuChildren(process.pid).length > 0 ? true : undefined), "QEMU starting");
    killResponder(signal);
    await assert.rejects(recording, (e: unknown) => e instanceof CairnError && e.code === "RUN_INFRASTRUCTURE" && e.path === "/vm/network/responders");
  };
  it("a responder that dies during the record ends it as an infrastructure failure, not a hang", failing("SIGKILL"));
  it("a responder that hangs during the record ends it as an infrastructure failure, not a hang", failing("SIGSTOP"));
});
