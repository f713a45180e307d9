import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sha256, type ProgressEvent, type Sha256Digest } from "../../src/core/index.ts";
import { inspectPack, Store } from "../../src/store/index.ts";
import { assembleWorkload, openVerifiedWorkload } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP, programBytes } from "./fixtures/static-program.ts";
import { writeOciLayout, type LaunchConfig } from "./fixtures/oci-writer.ts";
import { dir, file, opaque, symlink, whiteout } from "./fixtures/tar-writer.ts";
import { assemble, helloImage, objectPath, ociWorkspace, rawDigest, readLockJson, substituteOci } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };

test("the static program in a minimal OCI layout assembles and verifies", opts, async () => {
  const ws = ociWorkspace();
  const r = await assemble(ws);
  assert.equal(r.kind, "oci");
  const roles = (readLockJson(ws).raw as Array<{ role: string }>).map((x) => x.role);
  assert.deepEqual(roles, ["spec", "manifest", "config", "layer"]);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(w.identities.workload, r.identities.workload);
  assert.deepEqual(w.launch.argv, ["/app/hello", "world"]);
  assert.equal(w.launch.workdir, "/app");
  const hello = w.tree.get("/app/hello");
  assert.ok(hello?.type === "file");
  assert.deepEqual([hello.mode, hello.uid, hello.gid, hello.mtime], [0o755, 1000, 1000, 1700000000]);
  assert.ok(Buffer.from(await w.content.get(hello.sha256)).equals(programBytes("static")));
  await assertCodeAsync(() => w.content.get(sha256("not in this workload")), "STORE_MISSING");
});

test("conformance layout: modes, owners, mtimes, symlinks, cross-layer replacement, whiteouts, opaque dirs", opts, async () => {
  const t = 1600000000;
  const ws = ociWorkspace(
    helloImage({
      layers: [
        helloImage().layers[0]!,
        {
          entries: [
            dir("data/", { mode: 0o750, uid: 7, gid: 8, mtime: t }),
            file("data/keep", "k", { mode: 0o600, uid: 7, gid: 8, mtime: t }),
            file("data/gone", "g", { mtime: t }),
            dir("opq/", { mtime: t }),
            file("opq/old", "o", { mtime: t }),
            file("etc/replace-me", "file", { mtime: t }),
          ],
        },
        {
          entries: [
            whiteout("data/gone", { mtime: t }),
            opaque("opq", { mtime: t }),
            file("opq/new", "n", { mtime: t }),
            symlink("etc/replace-me", "motd", { mtime: t }),
            symlink("link", "/app/hello", { mtime: t }),
          ],
          gzip: false,
        },
      ],
    }),
  );
  await assemble(ws);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  const get = (p: string) => w.tree.get(p);
  assert.deepEqual([get("/data")?.mode, get("/data")?.uid, get("/data")?.gid, get("/data")?.mtime], [0o750, 7, 8, t]);
  assert.equal(get("/data/keep")?.mode, 0o600);
  assert.equal(get("/data/gone"), undefined);
  assert.equal(get("/opq/old"), undefined);
  assert.equal(get("/opq/new")?.type, "file");
  const rep = get("/etc/replace-me");
  assert.ok(rep?.type === "symlink" && rep.target === "motd");
  const link = get("/link");
  assert.ok(link?.type === "symlink" && link.target === "/app/hello");
  for (const p of w.tree.keys()) assert.ok(!p.includes(".wh."), `whiteout marker ${p} leaked into the tree`);
});

test("a dynamically linked program with its interpreter and libraries assembles as OCI (the binary gate does not apply)", opts, async () => {
  const dyn = programBytes("dynamic");
  const ws = ociWorkspace(
    helloImage({
      layers: [
        {
          entries: [
            dir("app/"),
            file("app/hello", dyn, { mode: 0o755 }),
            dir("lib64/"),
            file("lib64/ld-linux-x86-64.so.2", readFileSync("/lib64/ld-linux-x86-64.so.2"), { mode: 0o755 }),
            dir("lib/"),
            dir("lib/x86_64-linux-gnu/"),
            file("lib/x86_64-linux-gnu/libc.so.6", readFileSync("/lib/x86_64-linux-gnu/libc.so.6"), { mode: 0o755 }),
          ],
        },
      ],
    }),
  );
  await assemble(ws);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(w.tree.get("/lib64/ld-linux-x86-64.so.2")?.type, "file");
});

test("OCI launch: no User runs as 65534:65534; refused: root, a named user, a relative Entrypoint", opts, async () => {
  const cfg = helloImage().config!;
  const ws = ociWorkspace(helloImage({ config: { ...cfg, User: undefined } }));
  await assemble(ws);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.deepEqual([w.launch.uid, w.launch.gid], [65534, 65534]);
  await assertCodeAsync(() => assemble(ociWorkspace(helloImage({ config: { ...cfg, User: "0:0" } }))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(helloImage({ config: { ...cfg, User: "app" } }))), "LAUNCH_INVALID");
  await assertCodeAsync(() => assemble(ociWorkspace(helloImage({ config: { ...cfg, Entrypoint: ["hello"] } }))), "LAUNCH_INVALID");
});

// The OCI tamper matrix: with the lock fixed, each change must fail verify.
async function tampered(edit: (ws: ReturnType<typeof ociWorkspace>) => void, code: Parameters<typeof assertCodeAsync>[1]) {
  const ws = ociWorkspace();
  await assemble(ws);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir); // control
  edit(ws);
  return assertCodeAsync(() => openVerifiedWorkload(ws.lockPath, ws.storeDir), code);
}

function flipLastByte(path: string): void {
  const b = readFileSync(path);
  b.writeUInt8(b.readUInt8(b.length - 1) ^ 1, b.length - 1);
  writeFileSync(path, b);
}

for (const role of ["spec", "manifest", "config"] as const) {
  test(`tamper: stored ${role} bytes`, opts, async () => {
    await tampered((ws) => flipLastByte(objectPath(ws, rawDigest(ws, role))), "STORE_CORRUPT");
  });
}

test("tamper: stored layer bytes (same size) fail the blob digest check", opts, async () => {
  await tampered((ws) => flipLastByte(objectPath(ws, rawDigest(ws, "layer"))), "DIGEST_MISMATCH");
});

test("tamper: missing layer or config fails even though the derived entry exists", opts, async () => {
  await tampered((ws) => rmSync(objectPath(ws, rawDigest(ws, "layer"))), "STORE_MISSING");
  await tampered((ws) => rmSync(objectPath(ws, rawDigest(ws, "config"))), "STORE_MISSING");
});

test("tamper: normalized tree (derived entry edited)", opts, async () => {
  await tampered((ws) => {
    const p = objectPath(ws, (readLockJson(ws).derived as { digest: string }).digest, "derived");
    writeFileSync(p, readFileSync(p, "utf8").replace('"uid":1000', '"uid":0'));
  }, "STORE_CORRUPT");
});

test("tamper: a DiffID that does not match its layer, in a self-consistent graph", opts, async () => {
  await tampered(
    (ws) => substituteOci(ws, helloImage({ editConfig: (c) => void ((c.rootfs as { diff_ids: string[] }).diff_ids[0] = `sha256:${"1".repeat(64)}`) })),
    "OCI_DIFFID_MISMATCH",
  );
});

test("tamper: manifest and layer changed together, self-consistently", opts, async () => {
  const base = helloImage();
  const e = await tampered(
    (ws) => substituteOci(ws, { ...base, layers: [{ entries: [...(base.layers[0]!.entries ?? []), file("etc/extra", "x")] }] }),
    "WORKLOAD_MISMATCH",
  );
  assert.equal(e.path, "/identities/source");
});

const cfg = helloImage().config!;
const launchVariants: Array<[string, LaunchConfig]> = [
  ["args", { ...cfg, Cmd: ["evil"] }],
  ["env", { ...cfg, Env: ["GREETING=other-secret"] }],
  ["workdir", { ...cfg, WorkingDir: "/etc" }],
  ["credentials", { ...cfg, User: "1001:1001" }],
];
for (const [field, config] of launchVariants) {
  test(`tamper: ${field} in the image config, self-consistently substituted`, opts, async () => {
    const e = await tampered((ws) => substituteOci(ws, helloImage({ config })), "WORKLOAD_MISMATCH");
    assert.ok(!e.message.includes("secret"), "a refusal never prints an env value");
  });
  test(`tamper: ${field} in the image config, stored config overwritten in place (lock fixed)`, opts, async () => {
    await tampered((ws) => {
      const variant = writeOciLayout(mkdtempSync(join(tmpdir(), "cairn-variant-")), helloImage({ config }));
      writeFileSync(objectPath(ws, rawDigest(ws, "config")), readFileSync(join(variant.dir, "blobs", "sha256", variant.configDigest.slice(7))));
    }, "STORE_CORRUPT");
  });
}

/** The one content pack of a workspace's store, and the offset of the content `digest` in it. */
function packOf(ws: ReturnType<typeof ociWorkspace>, digest: Sha256Digest): { path: string; at: number } {
  const dir = join(ws.storeDir, "packs", "sha256");
  const names = readdirSync(dir);
  assert.equal(names.length, 1);
  const index = inspectPack(new Store(ws.storeDir, { write: false }), `sha256:${names[0]!}`, Number.MAX_SAFE_INTEGER);
  const entry = index.entries.get(digest);
  assert.ok(entry !== undefined);
  return { path: join(dir, names[0]!), at: entry.offset };
}

function overwrite(path: string, at: number, text: string): void {
  const b = readFileSync(path);
  b.write(text, at);
  writeFileSync(path, b);
}

test("a corrupt or missing content pack is rebuilt from the verified layer by verify", opts, async () => {
  const ws = ociWorkspace();
  await assemble(ws);
  const motd = sha256("hello\n");
  // control: an intact pack is checked, not rewritten, and verify says nothing was repaired
  assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).repaired, []);
  const { path, at } = packOf(ws, motd);
  overwrite(path, at, "HELLO\n");
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(Buffer.from(await w.content.get(motd)).toString(), "hello\n");
  assert.equal(w.repaired.length, 1, "the rebuild is reported");
  rmSync(path);
  const again = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(Buffer.from(await again.content.get(motd)).toString(), "hello\n");
  assert.match(again.repaired[0] ?? "", /^content pack sha256:/);
});

test("a content pack tampered after verify is refused on read, never handed out", opts, async () => {
  const ws = ociWorkspace();
  await assemble(ws);
  const motd = sha256("hello\n");
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.equal(Buffer.from(await w.content.get(motd)).toString(), "hello\n"); // control
  const { path, at } = packOf(ws, motd);
  overwrite(path, at, "HELLO\n");
  await assertCodeAsync(() => w.content.get(motd), "STORE_CORRUPT");
  rmSync(path);
  await assertCodeAsync(() => w.content.get(motd), "STORE_MISSING");
});

test("assemble reports a log line and progress events when asked (the CLI asks on a TTY only)", opts, async () => {
  const ws = ociWorkspace();
  const lines: string[] = [];
  const events: ProgressEvent[] = [];
  await assembleWorkload({
    specPath: ws.specPath,
    storeDir: ws.storeDir,
    lockOut: ws.lockPath,
    cairnVersion: "test",
    log: (l) => lines.push(l),
    progress: (e) => events.push(e),
  });
  assert.match(lines[0] ?? "", /applying 1 layer/);
  const layerBytes = ws.image.layers.reduce((n, l) => n + l.size, 0);
  assert.ok(events.length >= 1, "at least one event");
  for (const e of events) assert.deepEqual({ phase: e.phase, unit: e.unit, total: e.total }, { phase: "apply layers", unit: "bytes", total: layerBytes });
  assert.equal(events.at(-1)!.done, layerBytes, "the last event says every compressed byte was read");
});

test("the spec's launch over an OCI image's: args replace Cmd, env by name, workdir and user replace; part of the launch identity", opts, async () => {
  const plain = ociWorkspace();
  const base = await assemble(plain);
  const spec = {
    source: {
      oci: {
        layout: "./image",
        manifest: plain.image.manifestDigest,
        launch: { args: ["other", "arg"], env: { GREETING: "hi", EXTRA: "1" }, workdir: "/etc", user: "2000:3000" },
      },
    },
  };
  const ws = ociWorkspace(helloImage(), spec);
  const r = await assemble(ws);
  const w = await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  assert.deepEqual(w.launch.argv, ["/app/hello", "other", "arg"], "the Entrypoint stays, args replace Cmd");
  // the image's Env order kept (GREETING replaced in place), the spec's additions after it
  assert.deepEqual(w.launch.env, ["GREETING=hi", "EXTRA=1"]);
  assert.equal(w.launch.workdir, "/etc");
  assert.deepEqual([w.launch.uid, w.launch.gid], [2000, 3000]);
  assert.notEqual(r.identities.launch, base.identities.launch);
  assert.equal(r.identities.fs, base.identities.fs, "the tree is the image's");
  // control: an empty launch object is the image's launch
  const same = ociWorkspace(helloImage(), { source: { oci: { layout: "./image", manifest: plain.image.manifestDigest, launch: {} } } });
  assert.equal((await assemble(same)).identities.launch, base.identities.launch);
  // the same rules as the image's: no Entrypoint and a relative program, root, a workdir that is a file
  const noEntry = helloImage({ config: { ...helloImage().config!, Entrypoint: undefined } });
  const refusals: Array<[object, ReturnType<typeof helloImage>]> = [
    [{ args: ["hello"] }, noEntry],
    [{ user: "0:0" }, helloImage()],
    [{ workdir: "/etc/motd" }, helloImage()],
  ];
  for (const [launch, image] of refusals) {
    const bad = ociWorkspace(image);
    writeFileSync(
      bad.specPath,
      JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: bad.image.manifestDigest, launch } } }),
    );
    await assertCodeAsync(() => assemble(bad), "LAUNCH_INVALID");
  }
  const unknown = ociWorkspace();
  writeFileSync(
    unknown.specPath,
    JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: unknown.image.manifestDigest, launch: { cmd: ["x"] } } } }),
  );
  await assertCodeAsync(() => assemble(unknown), "MODEL_UNKNOWN_FIELD");
});
