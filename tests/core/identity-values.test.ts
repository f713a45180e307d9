/**
 * Golden identity values. Every identity and integrity digest cairn computes,
 * from fixed inputs, compared with literal values written down by the code
 * that existed before the identity vocabulary moved into core (issue 8). A
 * refactor of how identities are hashed must leave every value here
 * unchanged; a deliberate change of a value is a new tag version and a line
 * in docs/identities.md.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Sha256Digest } from "../../src/core/index.ts";
import { ingestDevcontainer, snapshotRefOf } from "../../src/manifest/index.ts";
import { baseDigest, declaredBase, environmentId, parseLockfileText, parseProfileText, profileDigest, strataEnvironmentId } from "../../src/strata/index.ts";
import { encodeWorkloadLock, launchFromOci, launchIdentity, makeLaunch, sourceIdentity, workloadIdentity } from "../../src/workload/index.ts";
import { fsIdentity, parsePolicy, STRICT_POLICY, type CanonicalTree, type FsEntry } from "../../src/tree/index.ts";
import { encodeDerived } from "../../src/workload/derived-entry.ts";
import { defaultVmIdentity, encodeTreeManifest, outcomeDigest, vmDigest } from "../../src/vm/index.ts";
import { agentSourceDigest } from "../../src/vm/kit.ts";
import { sha256 } from "../../src/core/index.ts";

const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;

/** A lockfile in the seed's format (seed 002), every content field set. */
const LOCKFILE = `profile: full
profile_sha256: 1f3b119a66c2c7a19d7efca54913c283e4b58e2bcb724e95c48d38a566223011
resolved_at: 2026-03-01T12:00:00.000Z
strata_version: cairn t
base:
  declared_os: debian12
  ami_id: ""
  ami_sha256: 267c897b5f135c2e6bf13862884fe1ec8d68d4d175efc3c736dd10ad3f77bf71
  capabilities: {ami_id: "", os: debian12, arch: x86_64, abi: gnu, probed_at: 2026-03-01T12:00:00.000Z, system_compiler: "", provides: [{name: "os:debian", version: "12"}, {name: glibc, version: "2.36"}, {name: gcc, version: "12"}]}
layers:
  - {id: samtools-1.20-gnu-x86_64, name: samtools, version: "1.20", sha256: 9ed2e8a0f2251433b6ec3fbfd0cec396f045c01032dace9d887579034d051144, size: 226, mount_order: 1, satisfied_by: "formation:bio-seq@2026.03", from_formation: bio-seq@2026.03}
  - {id: bwa-0.7.18-gnu-x86_64, name: bwa, version: 0.7.18, sha256: 5ee5f0726062fd1225740d394a4a6a508738b9393debae1a598dc1531ac44185, size: 224, mount_order: 2, satisfied_by: "formation:bio-seq@2026.03", from_formation: bio-seq@2026.03}
  - {id: python-3.12.4-gnu-x86_64, name: python, version: 3.12.4, sha256: a54914a3d455ac64c75554b30f3e5f8d86ae40b9a9dd3c075b20dea8550a7105, size: 175, mount_order: 3, satisfied_by: python}
  - {id: numpy-2.0.1-none-noarch, name: numpy, version: 2.0.1, sha256: 6b314edbe9936933904a350fce6f0929fdd50b514df30a9e353831da6b6a567a, size: 188, mount_order: 4, satisfied_by: numpy}
env: {A: "1"}
on_ready: [echo]
defaults: [python@3.12]
packages:
  - {manager: pip, packages: [{name: x, version: "1", sha256: ${"e".repeat(64)}}]}
mutable_layer: {name: scratch, version: "1", size_gb: 20, volume_type: gp3}
requires_host: [{key: gpu, value: "true"}]
`;

function tree(): CanonicalTree {
  const entries: FsEntry[] = [
    { path: "/", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 0 },
    { path: "/bin", type: "dir", mode: 0o755, uid: 0, gid: 0, mtime: 1 },
    { path: "/bin/app", type: "file", mode: 0o755, uid: 1000, gid: 1000, mtime: 2, size: 5, sha256: d("a") },
    { path: "/bin/ä", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 3, target: "app" },
    { path: "/tmp", type: "dir", mode: 0o1777, uid: 0, gid: 0, mtime: 4 },
  ];
  return new Map(entries.map((e) => [e.path, e]));
}

/** Every value, computed from the fixed inputs above. */
export async function computeIdentityValues(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const unpinned = ingestDevcontainer({
    name: "x",
    image: "debian:12",
    features: { "ghcr.io/devcontainers/features/node:1": { version: "20" } },
    containerEnv: { B: "2", A: "1" },
    mounts: ["source=cache,target=/cache,type=volume"],
    remoteUser: "dev",
    containerUser: "root",
    remoteEnv: { X: null },
  }).manifest;
  out["manifest address (unpinned)"] = unpinned.address;
  out["manifest extension address (unpinned)"] = unpinned.extension_address;
  const pinned = ingestDevcontainer({ image: `debian@${d("1")}` }).manifest;
  out["manifest address (pinned)"] = pinned.address;
  out["manifest extension address (pinned)"] = pinned.extension_address;
  out["snapshot ref address"] = snapshotRefOf(pinned).manifest_address;

  const lock = parseLockfileText(LOCKFILE);
  out["content identity (cairn)"] = environmentId(lock);
  out["EnvironmentID (Strata)"] = strataEnvironmentId(lock.spec);
  // requires_host is a set (issue 13): the same lockfile listing it out of order has the same identity.
  const hosts = (list: string) => environmentId(parseLockfileText(LOCKFILE.replace('requires_host: [{key: gpu, value: "true"}]', `requires_host: [${list}]`)));
  out["content identity (requires_host out of order)"] = hosts('{key: kvm, value: "true"}, {key: gpu, value: "true"}');
  if (out["content identity (requires_host out of order)"] !== hosts('{key: gpu, value: "true"}, {key: kvm, value: "true"}'))
    throw new Error("requires_host order changed the identity");
  out["base digest (probed)"] = baseDigest(lock.base);
  out["base digest (declared)"] = declaredBase("debian12", "x86_64").digest!;
  out["base digest (oci image)"] = baseDigest({
    name: "debian12",
    arch: "x86_64",
    abi: "gnu",
    capabilities: [
      { name: "os:debian", version: "12" },
      { name: "glibc", version: "2.36" },
    ],
    image: d("2"),
  });
  out["profile digest"] = profileDigest(parseProfileText("name: p\nbase: {os: debian12}\nsoftware: [python]\nenv: {A: '1'}\n"));

  out.fs = fsIdentity(tree());
  const launch = makeLaunch({ argv: ["/bin/app", "--flag"], env: ["Z=1", "A=2"], workdir: "/tmp", user: "1000:1000" }, "/launch");
  out.launch = launchIdentity(launch);
  out["source (binary)"] = sourceIdentity({ kind: "binary", executable: d("3"), size: 42 });
  out["source (oci)"] = sourceIdentity({ kind: "oci", manifest: d("4") });
  const identities = {
    workload: workloadIdentity({
      kind: "binary",
      source: out["source (binary)"] as Sha256Digest,
      fs: out.fs as Sha256Digest,
      launch: out.launch as Sha256Digest,
      policy: STRICT_POLICY,
    }),
    source: out["source (binary)"] as Sha256Digest,
    fs: out.fs as Sha256Digest,
    launch: out.launch as Sha256Digest,
  };
  out.workload = identities.workload;
  out["workload (copy policy)"] = workloadIdentity({
    kind: "oci",
    source: out["source (oci)"] as Sha256Digest,
    fs: out.fs as Sha256Digest,
    launch: out.launch as Sha256Digest,
    policy: { ...STRICT_POLICY, hardlinks: "copy" },
  });
  // issue 9: an OCI image's Env keeps the image's order. It was sorted, which made this image's launch
  // the "launch" value above (sha256:4aee93dc…b466); moved on purpose, see CHANGELOG.md and docs/identities.md

  out["launch (oci, image env order)"] = launchIdentity(
    launchFromOci({ entrypoint: ["/bin/app"], cmd: ["--flag"], env: ["Z=1", "A=2"], workingDir: "/tmp", user: "1000:1000" }),
  );
  out["workload (every relaxation)"] = workloadIdentity({
    kind: "oci",
    source: out["source (oci)"] as Sha256Digest,
    fs: out.fs as Sha256Digest,
    launch: out.launch as Sha256Digest,
    policy: parsePolicy({ hardlinks: "copy", setid: "strip", devices: "skip", xattrs: "drop", platform: "config" }),
  });
  const raw = [
    { role: "spec" as const, digest: d("5"), size: 10 },
    { role: "executable" as const, digest: d("3"), size: 42 },
  ];
  out["derived entry"] = sha256(encodeDerived({ kind: "binary", identities, policy: STRICT_POLICY, launch, raw, tree: tree() }));
  const lockText = encodeWorkloadLock({
    kind: "binary",
    identities,
    policy: STRICT_POLICY,
    raw,
    derived: { digest: out["derived entry"] as Sha256Digest, size: 100 },
    created: "2026-01-01T00:00:00.000Z",
    cairnVersion: "0.1.0",
  });
  out["workload lock lock_digest"] = (JSON.parse(lockText) as { lock_digest: string }).lock_digest;

  const vm = defaultVmIdentity({
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
  out.vm = vmDigest(vm);
  out["vm (root disk, sleep=on)"] = vmDigest(
    defaultVmIdentity({
      qemu: "7.2.22 (Debian test)",
      kernel: d("a"),
      modules: [],
      agent: d("b"),
      initramfs: d("c"),
      treeManifest: d("f"),
      memoryMib: 256,
      disk: { image: d("9"), size: 8192 },
    }),
  );
  out["tree manifest"] = encodeTreeManifest(tree()).digest;
  out.outcome = outcomeDigest(
    [
      { invocation: 1, event: "start" },
      { invocation: 1, event: "exit", kind: "exited", code: 0, stdout: { bytes: 3, sha256: d("6") }, stderr: { bytes: 0, sha256: d("7") } },
      { invocation: 0, event: "final", status: "ok", invocations: 1 },
    ] as never,
    [{ invocation: 1, check: "exit-code", ok: true, expected: 0, actual: 0 }],
  );
  const agentDir = mkdtempSync(join(tmpdir(), "cairn-agent-src-"));
  try {
    writeFileSync(join(agentDir, "main.c"), "int main(void) { return 0; }\n");
    writeFileSync(join(agentDir, "proto.h"), "#define X 1\n");
    writeFileSync(join(agentDir, "notes.txt"), "ignored\n");
    out["agent source digest"] = agentSourceDigest(agentDir);
  } finally {
    rmSync(agentDir, { recursive: true, force: true });
  }
  return out;
}

const EXPECTED: Record<string, string> = {
  // Moved on purpose (issue 12): the core is the standard's sandbox.env-manifest/1 (five fields); see CHANGELOG.md.
  "manifest address (unpinned)": "blake3:8f73fcab630025b4b1085ef5e65a30a6aa047f2cec2f1f53f9c26b4ecd1ca2c1",
  "manifest extension address (unpinned)": "blake3:dc05ca6ffd0956a655d833ff2cd2abf9a2678b9a399292384872957b7b8367b1",
  "manifest address (pinned)": "blake3:d95c70d988c3cb1e505a3af97b8c614ddfbf9f245e40b04ba353271be8f866a3",
  "manifest extension address (pinned)": "blake3:5c437b931da33c387c7f08eadeb5524a673389a6f1ab3ffff2582be5a275c7e5",
  "snapshot ref address": "blake3:d95c70d988c3cb1e505a3af97b8c614ddfbf9f245e40b04ba353271be8f866a3",
  "content identity (cairn)": "sha256:25c088964636fa2687a75136ff3f3ee6929b4ebc2b8a395204ab481f9bd790b1",
  "EnvironmentID (Strata)": "b8855ede3ee36e9ae549431625d041eba60551967179b34a7995d18d065c5cd0",
  "content identity (requires_host out of order)": "sha256:01c8a628607628f7c0a379feaaca4fc815ae5e20ca84be468807047b99465ace",
  "base digest (probed)": "sha256:7e4e62808d44e440d7d490e598e72c513f3d983d262caa72c6f0860a805b21c4",
  "base digest (declared)": "sha256:6e13154e01ac58916171d110d2b635c1d0c0bd2cbe541ecad33788260cdbe911",
  "base digest (oci image)": "sha256:416469dc4d6cba141813b7027c2dc574a194acd38a03a76f81c701a49b946d35",
  "profile digest": "sha256:dc671b28705d14c3dfb83e6142be7af2725fd27a8f1a76bfd820f6aa2dfe2e47",
  fs: "sha256:01b3666d13c66f5f536cbf0e5c93f99b4fdb3015bbbc6b01d13c183c658547e3",
  launch: "sha256:4aee93dc80ecf61598b756e623ebd5875eac82300e103ef6dc132778b706b466",
  "source (binary)": "sha256:0e621bfe37c9fb403f136b9b53a9b632d248ee7c959dc710cb0e1d1b09f1d97a",
  "source (oci)": "sha256:7f3fc0d67e03196c7eb3a69e40aed9d38cacb51061d35a86ce12a23ab0f1bcbe",
  workload: "sha256:03b281b49d5f03e5db631f24f5ec1925c390c3f1ed4f7dee05f6c4c0b574b9dd",
  "workload (copy policy)": "sha256:58a10131bc614cc4493c4e6a652b1bc5fa14bd7649c7d8af84899c45f733be27",
  "derived entry": "sha256:b7870ae9c446f2c3f58351baca29c04b72aef7051ddb6d74b7019641fa58f5b2",
  "workload lock lock_digest": "sha256:2f34805159c0c42f617c76ddd6b274b10b37c3378f0fe74161c01b412e317a4d",
  // new (issue 9): an OCI launch keeps the image's Env order (sorted before: then it equalled "launch")
  "launch (oci, image env order)": "sha256:b68d0fedaede6a9ca2471afa6159a504c7f2ad4e1a5eb9c748e00a968ca78f61",
  // new (issue 9): devices, xattrs and platform named in the policy model when taken
  "workload (every relaxation)": "sha256:1014b474a8e7e699b6366020a9cd46d813bcc4eb809c8695239c31c919e823d6",
  // moved on purpose (issue 9): the VM identity gained tree_manifest, then root_disk (null without a root disk); see CHANGELOG.md
  vm: "sha256:2706bd2c2f5222b4902347a76c9e934f64bc0f32dd5087fff9b535dd58c62d3e",
  // moved on purpose (issue 35): a sleep=on run's kernel line adds no_timer_check noapictimer pmtmr=0 (was sha256:19fe897d…93d0cd); see docs/identities.md
  "vm (root disk, sleep=on)": "sha256:1f85640c50aa180a8e862a87331dfff121dd8b812f8b44a7aa5d5028959e191c",
  "tree manifest": "sha256:14cf992353c05d3b225278976e8c5d44f6c2f7df9922e0b828d1ca69e33d83c2",
  outcome: "sha256:6123b3563da0cc2e92136f509065bb40812e8976d471f01746cc0b499bb57dde",
  "agent source digest": "sha256:ceb6b7f2e837c69376e0e1ce040e09b1cf85e80409c0f60040e0c3b743c40d09",
};

test("every identity value is what it was before the identity vocabulary moved into core", async () => {
  const actual = await computeIdentityValues();
  if (process.env.CAIRN_PRINT_IDENTITY_VALUES === "1") console.log(JSON.stringify(actual, null, 2));
  assert.deepEqual(actual, EXPECTED);
});

test("an independent oracle agrees on the tag NUL JCS framing (node:crypto, hand-written JCS)", () => {
  const bytes = Buffer.concat([Buffer.from("cairn.source/1\0", "utf8"), Buffer.from(`{"kind":"oci","manifest":"${d("4")}"}`, "utf8")]);
  assert.equal(`sha256:${createHash("sha256").update(bytes).digest("hex")}`, EXPECTED["source (oci)"]);
  // control: a different tag gives a different value
  const other = Buffer.concat([Buffer.from("cairn.source/2\0", "utf8"), bytes.subarray(15)]);
  assert.notEqual(`sha256:${createHash("sha256").update(other).digest("hex")}`, EXPECTED["source (oci)"]);
});
