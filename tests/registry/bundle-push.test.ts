/**
 * Closures travel by digest through a registry (issue 34, item 3): the
 * bundled example (examples/workload/hello.yaml) is recorded twice, pushed
 * with `cairn bundle push` to Debian's docker-registry behind a counting
 * proxy, and replayed with `cairn replay oci://…@sha256:…` from a fresh
 * CAIRN_HOME: the replay matches; fetching the same reference again asks
 * the registry for no blob; the second run (same kernel, same workload)
 * fetches its own run files only. What is pushed is exactly what `cairn
 * bundle` writes (the index blob is the bundle file's index, byte for byte),
 * private members only when asked. Then a hostile registry (a proxy serving
 * manifests written here, or rewriting blobs): each case is refused typed,
 * and the fresh home holds no run directory and no object of it; each beside
 * the honest reference, which imports (the control).
 */
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { sha256, type Sha256Digest } from "../../src/core/index.ts";
import { RegistryClient } from "../../src/oci/index.ts";
import { importRegistryBundle, localRun, openBundle, writeRunBundle, bundleKit } from "../../src/vm/index.ts";
import { runCli, runCliOnTerminal } from "../helpers/cli.ts";
import { checkDocument } from "../helpers/json-schemas.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { needs } from "../helpers/prerequisites.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";
import { TEST_KIT_DIR, testKit, VM_SKIP } from "../vm/fixtures/kit.ts";
import { buildProgram, GCC_SKIP } from "../workload/fixtures/static-program.ts";
import { HostileProxy, type Exchange } from "./fixtures/hostile-proxy.ts";
import { SilentTcpServer } from "./fixtures/hostile-server.ts";
import { missingRegistryTools, TestRegistry } from "./fixtures/registry-server.ts";

const skip = VM_SKIP || GCC_SKIP || needs(missingRegistryTools());
const ARTIFACT = "application/vnd.cairn.bundle.v1+json";
const MEMBER = "org.cairn.bundle.member";

interface Layer {
  mediaType: string;
  digest: string;
  size: number;
  annotations: Record<string, string>;
}
interface Manifest {
  schemaVersion: number;
  mediaType: string;
  artifactType: string;
  config: { mediaType: string; digest: string; size: number };
  layers: Layer[];
}

describe("replay bundles through a registry", { skip }, () => {
  let work: string;
  let registry: TestRegistry;
  let proxy: HostileProxy;
  let env: NodeJS.ProcessEnv;
  const runs: string[] = [];

  const ok = async (args: string[], e: NodeJS.ProcessEnv = env): Promise<string> => {
    const r = await runCli(args, e);
    assert.equal(r.code, 0, `${args.join(" ")}\n${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  const blobGets = (from: number): Exchange[] => proxy.seen.slice(from).filter((x) => x.method === "GET" && x.path.includes("/blobs/"));
  const client = (): RegistryClient => new RegistryClient({ host: registry.host, plainHttp: true });
  const fetchManifest = async (ref: string): Promise<Manifest> => {
    const d = ref.split("@")[1] as Sha256Digest;
    return JSON.parse((await client().fetchManifest("runs/hello", d)).bytes.toString("utf8")) as Manifest;
  };
  const freshHome = (name: string) => {
    const h = join(work, name);
    return { home: h, storeDir: join(h, "store"), kitDir: join(h, "kit"), runsDir: join(h, "runs") };
  };
  const remote = { plainHttp: true, env: {}, cwd: "/" };
  /** Nothing of a refused import: no run directory, no store object, no kit object. */
  const assertNothing = (h: ReturnType<typeof freshHome>): void => {
    const list = (d: string) => (existsSync(d) ? readdirSync(d, { recursive: true }).map(String) : []);
    assert.deepEqual(
      list(h.runsDir).filter((n) => !n.startsWith("cairn-runs.json")),
      [],
      "no run directory",
    );
    assert.deepEqual(
      list(join(h.storeDir, "objects", "sha256")).filter((n) => /^[0-9a-f]{64}$/.test(n)),
      [],
      "no store object",
    );
    assert.deepEqual(
      list(h.kitDir).filter((n) => /[0-9a-f]{64}$/.test(n)),
      [],
      "no kit object",
    );
  };

  before(async () => {
    await testKit();
    work = mkdtempSync(join(tmpdir(), "cairn-bundle-push-"));
    copyFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml"), join(work, "hello.yaml"));
    copyFileSync(buildProgram("static"), join(work, "hello"));
    env = { ...process.env, CAIRN_HOME: join(work, "home"), CAIRN_KIT: TEST_KIT_DIR };
    for (let i = 0; i < 2; i++) runs.push((JSON.parse(await ok(["run", join(work, "hello.yaml"), "--json"])) as { run_dir: string }).run_dir);
    registry = await TestRegistry.create(join(work, "registry"));
    proxy = await new HostileProxy(registry.port).start();
  });
  after(async () => {
    await proxy?.stop();
    await registry?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("push prints the digest; a fresh home replays it, matching; again, no blob is fetched; a second run fetches only its own run files", async () => {
    const pushedText = await ok(["bundle", "push", runs[0]!, `oci://${proxy.host}/runs/hello:first`, "--plain-http", "--json"]);
    assert.deepEqual(checkDocument(pushedText, "cairn.cli.bundle-push/1").problems, [], pushedText);
    const pushed = JSON.parse(pushedText) as {
      reference: string;
      digest: string;
      run_id: string;
      members: number;
      member_bytes: number;
      uploaded: number;
    };
    // the CLI document is spelled as docs/runs.md says (snake_case), whatever the library's result object calls its fields
    assert.ok(pushed.run_id.length > 0 && pushed.member_bytes > 0 && !("runId" in pushed) && !("memberBytes" in pushed), pushedText);
    assert.match(pushed.reference, new RegExp(`^oci://${proxy.host}/runs/hello@sha256:[0-9a-f]{64}$`));
    // what is pushed is what `cairn bundle` writes: its index, byte for byte, is the config; its members are the layers
    const file = join(work, "first.cairn");
    writeRunBundle({ runDir: runs[0]!, storeDir: join(work, "home", "store"), kit: bundleKit(TEST_KIT_DIR, runs[0]!), out: file });
    const b = await openBundle(file);
    const m = await fetchManifest(pushed.reference);
    assert.equal(m.artifactType, ARTIFACT);
    assert.equal(m.config.digest, sha256(b.index));
    assert.deepEqual(
      m.layers.map((l) => l.annotations[MEMBER]),
      [...b.members.keys()].filter((p) => p !== "cairn-bundle.json").sort(),
    );
    for (const l of m.layers) assert.equal(l.digest, sha256(b.members.get(l.annotations[MEMBER]!)!), l.annotations[MEMBER]);
    assert.ok(!m.layers.some((l) => l.annotations[MEMBER]!.startsWith("private/")), "nothing private without --include-private");
    b.dispose();
    // the bundle file pushes as the same manifest (same digest): one artifact per run, whichever way it is pushed
    const again = JSON.parse(await ok(["bundle", "push", file, `oci://${proxy.host}/runs/hello`, "--plain-http", "--json"])) as {
      digest: string;
      uploaded: number;
    };
    assert.equal(again.digest, pushed.digest);
    assert.equal(again.uploaded, 0, "every blob was in the registry already");

    // a fresh home elsewhere replays it from the registry
    const h = freshHome("node-a");
    const nodeEnv = { ...process.env, CAIRN_HOME: h.home, CAIRN_KIT: h.kitDir };
    let from = proxy.seen.length;
    const replay = JSON.parse(await ok(["replay", pushed.reference, "--plain-http", "--json"], nodeEnv)) as { matched?: boolean; status: string };
    assert.equal(replay.status, "passed", JSON.stringify(replay));
    const unique = new Set(m.layers.map((l) => l.digest)).size;
    assert.equal(blobGets(from).length, unique + 1, "every member once, and the index");

    // the same reference again on this node: the manifest, and no blob
    from = proxy.seen.length;
    const local = await localRun(pushed.reference, { ...h, remote: { ...remote, cwd: work } });
    assert.equal(local.via, "registry");
    assert.deepEqual(blobGets(from), [], "a second fetch of the same reference asks for no blob");
    assert.equal(local.counts?.fetched, 0);
    // where the run came from, for `runs list`: the registry and the reference
    assert.deepEqual(JSON.parse(readFileSync(join(local.runDir, "origin.json"), "utf8")), {
      schema: "cairn.run-origin/1",
      via: "registry",
      input: pushed.reference,
      command: null,
    });

    // another run of the same workload on the same kernel: only its run files are fetched
    const second = JSON.parse(await ok(["bundle", "push", runs[1]!, `oci://${proxy.host}/runs/hello:second`, "--plain-http", "--json"])) as {
      reference: string;
    };
    const m2 = await fetchManifest(second.reference);
    from = proxy.seen.length;
    const r2 = await localRun(second.reference, { ...h, remote });
    const got = new Set(blobGets(from).map((x) => x.path.split("/blobs/")[1]));
    const fetchedPaths = m2.layers.filter((l) => got.has(l.digest)).map((l) => l.annotations[MEMBER]!);
    assert.ok(fetchedPaths.length > 0 && fetchedPaths.every((p) => p.startsWith("run/")), `fetched: ${fetchedPaths.join(", ")}`);
    assert.ok(got.has(m2.config.digest), "its index");
    assert.equal(got.size, fetchedPaths.length + 1, "nothing else: no store object, kernel, module or agent");
    assert.ok(existsSync(join(r2.runDir, "run.json")));
  });

  it("private members only when asked; the flags are refused with a bundle file (it is pushed as it was written)", async () => {
    const withPrivate = JSON.parse(
      await ok(["bundle", "push", runs[0]!, `oci://${proxy.host}/runs/hello:private`, "--plain-http", "--include-private", "--json"]),
    ) as { reference: string; private: boolean };
    assert.equal(withPrivate.private, true);
    const m = await fetchManifest(withPrivate.reference);
    assert.ok(m.layers.some((l) => l.annotations[MEMBER] === "private/protocol.bin"));
    // on a terminal (issue 36, item 3): phase push in bytes of the members and index, from 0 to the whole
    const drawn = await runCliOnTerminal(["bundle", "push", runs[0]!, `oci://${proxy.host}/runs/hello:public`, "--plain-http", "--json"], env);
    assert.equal(drawn.code, 0, drawn.stderr);
    assert.ok(drawn.frames.length >= 2, JSON.stringify(drawn.frames));
    assert.ok(drawn.frames.every((f) => f.startsWith("push [")));
    assert.match(drawn.frames[0]!, / 0% 0 B\//);
    assert.match(drawn.frames.at(-1)!, / 100% /);
    const without = JSON.parse(drawn.stdout) as {
      reference: string;
      private: boolean;
    };
    assert.equal(without.private, false);
    assert.ok(!(await fetchManifest(without.reference)).layers.some((l) => l.annotations[MEMBER]!.startsWith("private/")));
    const file = join(work, "public.cairn");
    writeRunBundle({ runDir: runs[0]!, storeDir: join(work, "home", "store"), kit: bundleKit(TEST_KIT_DIR, runs[0]!), out: file });
    const r = await runCli(["bundle", "push", file, `oci://${proxy.host}/runs/hello`, "--plain-http", "--include-private", "--json"], env);
    assert.equal(r.code, 2, r.stdout);
    assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, "USAGE");
    // the one entry for a run however it travelled: a run directory as it is, a bundle file imported
    const h = freshHome("local-run");
    assert.deepEqual(await localRun(runs[0]!, h), { runDir: runs[0]!, via: "run-dir", inputs: undefined });
    const imported = await localRun(file, h);
    assert.equal(imported.via, "bundle");
    assert.ok(readFileSync(join(imported.runDir, "run.json")).equals(readFileSync(join(runs[0]!, "run.json"))));
    await assertCodeAsync(() => localRun(`oci://${proxy.host}/runs/hello@${sha256(Buffer.from("x"))}`, h), "USAGE");
  });

  it("imports of one bundle into one home at the same time (two processes, as a campaign's tasks on one node) all end with the run", async () => {
    const { spawn } = await import("node:child_process");
    const file = join(work, "race.cairn");
    writeRunBundle({ runDir: runs[0]!, storeDir: join(work, "home", "store"), kit: bundleKit(TEST_KIT_DIR, runs[0]!), out: file });
    const code = `const vm = await import(${JSON.stringify(join(PROJECT_ROOT, "src/vm/index.ts"))}); const h = process.argv[1];
try { const r = await vm.importBundle(${JSON.stringify(file)}, { storeDir: h + "/store", kitDir: h + "/kit", runsDir: h + "/runs" }); process.stdout.write("ok " + r.runDir); }
catch (e) { process.stdout.write("error " + (e.code ?? "none") + " " + e.message); }`;
    const importIn = (home: string): Promise<string> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, home], {
          cwd: PROJECT_ROOT,
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        child.stdout.on("data", (d: Buffer) => void (out += d.toString()));
        child.on("exit", () => resolve(out));
      });
    for (let round = 0; round < 6; round++) {
      const home = join(work, `race-${round}`);
      const outs = await Promise.all([importIn(home), importIn(home), importIn(home)]);
      for (const o of outs) assert.match(o, /^ok /, `round ${round}: ${o}`);
      assert.equal(new Set(outs).size, 1, "one run directory");
    }
  });

  it("a hostile registry is refused typed and leaves nothing in the store or the runs directory; the honest reference imports (control)", async () => {
    const pushed = JSON.parse(await ok(["bundle", "push", runs[0]!, `oci://${proxy.host}/runs/hello:hostile`, "--plain-http", "--json"])) as {
      reference: string;
    };
    const honest = await fetchManifest(pushed.reference);
    // a manifest written here, served by the proxy under its own digest (the client verifies the digest, so it must be)
    const served = new Map<string, Buffer>();
    const serve = (doc: Manifest): string => {
      const bytes = Buffer.from(JSON.stringify(doc));
      const d = sha256(bytes);
      served.set(`/v2/runs/hello/manifests/${d}`, bytes);
      return `oci://${proxy.host}/runs/hello@${d}`;
    };
    let flip: string | undefined;
    proxy.hooks = {
      intercept: (x: Exchange, res: ServerResponse) => {
        const bytes = served.get(x.path);
        if (bytes === undefined) return false;
        res.writeHead(200, {
          "content-type": "application/vnd.oci.image.manifest.v1+json",
          "content-length": String(bytes.length),
          "docker-content-digest": sha256(bytes),
        });
        res.end(x.method === "HEAD" ? undefined : bytes);
        return true;
      },
      rewrite: (x, a) => {
        if (flip !== undefined && x.method === "GET" && x.path.endsWith(`/blobs/${flip}`) && a.body.length > 0) {
          const body = Buffer.from(a.body);
          body[body.length >> 1]! ^= 0xff;
          return { ...a, body };
        }
        return a;
      },
    };
    const clone = (): Manifest => JSON.parse(JSON.stringify(honest)) as Manifest;
    const last = honest.layers.length;
    const cases: Array<{ name: string; ref: () => string; code: Parameters<typeof assertCodeAsync>[1]; path?: string; noBlob: boolean }> = [
      {
        name: "a member the index does not list",
        ref: () => {
          const d = clone();
          const extra = d.layers.find((l) => l.annotations[MEMBER] === "run/events.json")!;
          d.layers.push({ ...extra, annotations: { [MEMBER]: "run/cost.json" } });
          return serve(d);
        },
        code: "BUNDLE_INVALID",
        path: `/layers/${last}`,
        noBlob: false, // the index is fetched to see it; no member is
      },
      {
        name: "sizes over bundle.max_bytes",
        ref: () => {
          const d = clone();
          d.layers[0]!.size = 5 * 1024 * 1024 * 1024;
          return serve(d);
        },
        code: "LIMIT_EXCEEDED",
        noBlob: true,
      },
      {
        name: "one member over the tar reader's fileSize (the sum within bundle.max_bytes)",
        ref: () => {
          const d = clone();
          d.layers[0]!.size = 3 * 1024 * 1024 * 1024;
          return serve(d);
        },
        code: "LIMIT_EXCEEDED",
        noBlob: true,
      },
      {
        name: "an index over bundle.max_index_bytes",
        ref: () => {
          const d = clone();
          d.config.size = 65 * 1024 * 1024;
          return serve(d);
        },
        code: "LIMIT_EXCEEDED",
        noBlob: true,
      },
      {
        name: "a member path with ..",
        ref: () => {
          const d = clone();
          d.layers[0]!.annotations[MEMBER] = "run/../../../../tmp/x";
          return serve(d);
        },
        code: "BUNDLE_INVALID",
        path: "/layers/0/annotations",
        noBlob: true,
      },
      {
        name: "a member named twice",
        ref: () => {
          const d = clone();
          d.layers.push({ ...d.layers[0]! });
          return serve(d);
        },
        code: "BUNDLE_INVALID",
        path: `/layers/${last}`,
        noBlob: true,
      },
      {
        name: "another artifact",
        ref: () => serve({ ...clone(), artifactType: "application/vnd.cairn.layer.v1+json" }),
        code: "BUNDLE_INVALID",
        path: "/artifactType",
        noBlob: true,
      },
      {
        name: "a blob whose bytes do not match",
        ref: () => {
          flip = honest.layers.find((l) => l.annotations[MEMBER] === "run/replay.log")!.digest;
          return pushed.reference;
        },
        code: "DIGEST_MISMATCH",
        noBlob: false,
      },
      {
        name: "a tag instead of a digest",
        ref: () => `oci://${proxy.host}/runs/hello:hostile`,
        code: "REFERENCE_INVALID",
        noBlob: true,
      },
    ];
    for (const [i, c] of cases.entries()) {
      const h = freshHome(`hostile-${i}`);
      flip = undefined;
      const ref = c.ref();
      const from = proxy.seen.length;
      const e = await assertCodeAsync(() => importRegistryBundle(ref, { ...h, remote }), c.code, c.path);
      if (c.code === "LIMIT_EXCEEDED") assert.match(e.message, /bundle\.max_bytes|fileSize|bundle\.max_index_bytes/, c.name);
      if (c.noBlob) assert.deepEqual(blobGets(from), [], `${c.name}: refused before any blob`);
      assertNothing(h);
    }
    // a registry that accepts the connection and never answers: the client's bound, typed
    const silent = await new SilentTcpServer().start();
    try {
      const h = freshHome("silent");
      const ref = pushed.reference.replace(proxy.host, silent.host);
      const e = await assertCodeAsync(
        () => importRegistryBundle(ref, { ...h, remote: { ...remote, limits: { connectMs: 500, headersMs: 500 } } }),
        "REMOTE_TIMEOUT",
      );
      assert.match(e.message, /remote\.(connect|headers)-ms/);
      assertNothing(h);
    } finally {
      await silent.stop();
    }
    // control: the honest reference imports into a fresh home
    flip = undefined;
    const h = freshHome("honest");
    const r = await importRegistryBundle(pushed.reference, { ...h, remote });
    assert.ok(existsSync(join(r.runDir, "run.json")));
    assert.equal(readFileSync(join(r.runDir, "run.json")).equals(readFileSync(join(runs[0]!, "run.json"))), true);
  });
});
