/**
 * Upstream images as they are (issue 9, item 3): the launch rules of the
 * workload RFD (image Env order kept; a missing or symlinked WorkingDir, and
 * Volumes, StopSignal and ArgsEscaped: true refused, naming the field), the
 * `platform: config` policy for a descriptor without platform, the policies
 * named in the workload lock, and `cairn workload check`, which lists every
 * problem in one pass without writing to the store. Each refusal has its control.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { checkWorkload, openVerifiedWorkload } from "../../src/workload/index.ts";
import { assertCodeAsync } from "../helpers/errors.ts";
import { GCC_SKIP } from "./fixtures/static-program.ts";
import { dir, file, symlink } from "./fixtures/tar-writer.ts";
import { assemble, helloImage, ociWorkspace } from "./fixtures/workspace.ts";

const opts = { skip: GCC_SKIP };
type Cfg = { config: Record<string, unknown> };

test("an image's Env order is kept as the image gives it (a binary spec's env stays sorted)", opts, async () => {
  const unsorted = helloImage({ config: { ...helloImage().config!, Env: ["ZED=1", "ALPHA=2", "MID=3"] } });
  const ws = ociWorkspace(unsorted);
  await assemble(ws);
  assert.deepEqual((await openVerifiedWorkload(ws.lockPath, ws.storeDir)).launch.env, ["ZED=1", "ALPHA=2", "MID=3"]);
  // control: the same variables in another order are another launch
  const sorted = ociWorkspace(helloImage({ config: { ...helloImage().config!, Env: ["ALPHA=2", "MID=3", "ZED=1"] } }));
  assert.notEqual((await assemble(sorted)).identities.launch, (await assemble(ws)).identities.launch);
});

test("a WorkingDir that is missing or reached through a symlink is refused at assembly, naming the field", opts, async () => {
  const withLink = (wd: string) =>
    helloImage({
      layers: [{ entries: [...(helloImage().layers[0] as { entries: never[] }).entries, symlink("srv", "/app"), symlink("data", "app")] }],
      config: { ...helloImage().config!, WorkingDir: wd },
    });
  await assertCodeAsync(() => assemble(ociWorkspace(withLink("/nowhere"))), "LAUNCH_INVALID", "/config/config/WorkingDir");
  await assertCodeAsync(() => assemble(ociWorkspace(withLink("/srv"))), "LAUNCH_INVALID", "/config/config/WorkingDir");
  const spec = (ws: ReturnType<typeof ociWorkspace>, workdir: string) =>
    writeFileSync(
      ws.specPath,
      JSON.stringify({ schema: "cairn.workload/1", source: { oci: { layout: "./image", manifest: ws.image.manifestDigest, launch: { workdir } } } }),
    );
  const viaSpec = ociWorkspace(withLink("/app"));
  spec(viaSpec, "/data");
  await assertCodeAsync(() => assemble(viaSpec), "LAUNCH_INVALID", "/source/oci/launch/workdir");
  // control: the directory itself, from the image or the spec
  await assemble(ociWorkspace(withLink("/app")));
  spec(viaSpec, "/etc");
  await assemble(viaSpec);
});

test("Volumes, StopSignal and ArgsEscaped: true in the image config are refused, naming the field", opts, async () => {
  const edited = (edit: (c: Cfg) => void) => helloImage({ editConfig: (c) => edit(c as unknown as Cfg) });
  await assertCodeAsync(() => assemble(ociWorkspace(edited((c) => void (c.config.Volumes = { "/data": {} })))), "LAUNCH_INVALID", "/config/config/Volumes");
  await assertCodeAsync(() => assemble(ociWorkspace(edited((c) => void (c.config.StopSignal = "SIGTERM")))), "LAUNCH_INVALID", "/config/config/StopSignal");
  await assertCodeAsync(() => assemble(ociWorkspace(edited((c) => void (c.config.ArgsEscaped = true)))), "LAUNCH_INVALID", "/config/config/ArgsEscaped");
  // control: the fields present but saying nothing are accepted
  await assemble(
    ociWorkspace(
      edited((c) => {
        c.config.Volumes = {};
        c.config.StopSignal = "";
        c.config.ArgsEscaped = false;
      }),
    ),
  );
});

test("platform: config accepts a descriptor without platform (as umoci writes it) when the config says linux/amd64", opts, async () => {
  const bare = helloImage({ platform: null });
  await assertCodeAsync(() => assemble(ociWorkspace(bare)), "OCI_PLATFORM", "/manifests/0/platform");
  const ws = ociWorkspace(bare, { policy: { platform: "config" } });
  const r = await assemble(ws);
  const lock = JSON.parse(readFileSync(ws.lockPath, "utf8")) as { policy: Record<string, string> };
  assert.equal(lock.policy.platform, "config", "the policy is named in the lock");
  assert.notEqual(r.identities.workload, (await assemble(ociWorkspace(helloImage()))).identities.workload, "and in the workload identity");
  assert.equal(r.identities.fs, (await assemble(ociWorkspace(helloImage()))).identities.fs);
  await openVerifiedWorkload(ws.lockPath, ws.storeDir);
  // the config still decides: another architecture, or a variant, is refused under the policy too
  for (const edit of [(c: Record<string, unknown>) => void (c.architecture = "arm64"), (c: Record<string, unknown>) => void (c.variant = "v8")]) {
    await assertCodeAsync(() => assemble(ociWorkspace(helloImage({ platform: null, editConfig: edit }), { policy: { platform: "config" } })), "OCI_PLATFORM");
  }
  // and a descriptor that declares another platform is refused as ever
  await assertCodeAsync(
    () => assemble(ociWorkspace(helloImage({ platform: { os: "linux", architecture: "arm64" } }), { policy: { platform: "config" } })),
    "OCI_PLATFORM",
  );
});

test("cairn workload check lists every problem in one pass with the policy that admits each, and writes no store", opts, async () => {
  const hello = helloImage();
  const image = helloImage({
    platform: null,
    layers: [
      ...hello.layers,
      {
        entries: [
          dir("dev/"),
          { name: "dev/null", type: "char", devmajor: 1, devminor: 3 },
          { name: "run/fifo", type: "fifo" },
          file("bin/ping", "x", { mode: 0o4755, pax: { "SCHILY.xattr.security.capability": "c" } }),
        ],
      },
    ],
    editConfig: (c) => void ((c as unknown as Cfg).config.StopSignal = "SIGTERM"),
    config: { ...hello.config!, WorkingDir: "/nowhere" },
  });
  const ws = ociWorkspace(image);
  const r = await checkWorkload({ specPath: ws.specPath });
  assert.deepEqual(
    r.problems.map((p) => [p.code, p.path, p.policy]),
    [
      ["OCI_PLATFORM", "/manifests/0/platform", "platform: config"],
      ["LAUNCH_INVALID", "/config/config/StopSignal", null],
      ["TAR_UNSUPPORTED_TYPE", "/layers/1:dev/null", "devices: skip"],
      ["TAR_UNSUPPORTED_TYPE", "/layers/1:run/fifo", "devices: skip"],
      ["TAR_XATTR", "/layers/1:bin/ping", "xattrs: drop"],
      ["TAR_SETID", "/layers/1:bin/ping", "setid: strip"],
      ["LAUNCH_INVALID", "/config/config/WorkingDir", null],
    ],
  );
  assert.equal(r.problemCount, 7);
  assert.equal(r.admissible, false);
  assert.deepEqual(r.suggested, { platform: "config", devices: "skip", setid: "strip", xattrs: "drop" });
  assert.equal(existsSync(ws.storeDir), false, "check writes no store");
  // control: with the suggested policy and a good image config, nothing is left, and assembly agrees
  const fixed = helloImage({ ...image, editConfig: undefined, config: hello.config });
  const ok = ociWorkspace(fixed, { policy: r.suggested });
  const c = await checkWorkload({ specPath: ok.specPath });
  assert.deepEqual([c.problemCount, c.admissible], [0, true]);
  assert.deepEqual(
    c.skipped.map((s) => s.path),
    ["/dev/null", "/run/fifo"],
  );
  assert.deepEqual(c.droppedXattrs, [{ layer: 1, path: "/bin/ping", names: ["security.capability"] }]);
  const a = await assemble(ok);
  assert.deepEqual(
    a.listing.skipped.map((s) => s.path),
    ["/dev/null", "/run/fifo"],
  );
});

test("check caps its list at 100 problems and counts the rest", opts, async () => {
  const many = Array.from({ length: 150 }, (_, i) => ({ name: `d${i}`, type: "fifo" as const }));
  const ws = ociWorkspace(helloImage({ layers: [...helloImage().layers, { entries: many }] }));
  const r = await checkWorkload({ specPath: ws.specPath });
  assert.deepEqual([r.problems.length, r.problemCount, r.admissible], [100, 150, true]);
  // control: a clean image has none
  assert.equal((await checkWorkload({ specPath: ociWorkspace().specPath })).problemCount, 0);
  assert.equal(existsSync(join(ws.dir, "store")), false);
});

test("check reads local layouts only: a spec naming a registry ref is refused as USAGE (control: a layout spec is checked)", opts, async () => {
  const ws = ociWorkspace(helloImage());
  const ref = join(ws.dir, "ref.json");
  writeFileSync(ref, JSON.stringify({ schema: "cairn.workload/1", source: { oci: { ref: `127.0.0.1:5000/app@${ws.image.manifestDigest}` } } }));
  await assertCodeAsync(() => checkWorkload({ specPath: ref }), "USAGE", "/source/oci/ref");
  assert.equal((await checkWorkload({ specPath: ws.specPath })).problemCount, 0);
});
