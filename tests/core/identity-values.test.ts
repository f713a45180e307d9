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
import { baseDigest, declaredBase, environmentId, parseLockfile, parseProfileText, profileDigest } from "../../src/strata/index.ts";
import { encodeWorkloadLock, launchFromOci, launchIdentity, makeLaunch, sourceIdentity, workloadIdentity } from "../../src/workload/index.ts";
import { fsIdentity, parsePolicy, STRICT_POLICY, type CanonicalTree, type FsEntry } from "../../src/tree/index.ts";
import { encodeDerived } from "../../src/workload/derived-entry.ts";
import { defaultVmIdentity, encodeTreeManifest, outcomeDigest, vmDigest } from "../../src/vm/index.ts";
import { agentSourceDigest } from "../../src/vm/kit.ts";
import { sha256 } from "../../src/core/index.ts";

const d = (c: string) => `sha256:${c.repeat(64)}` as Sha256Digest;

const LOCKFILE = {
  format: "cairn.lock/1",
  profile: "full",
  profile_sha256: "sha256:1f3b119a66c2c7a19d7efca54913c283e4b58e2bcb724e95c48d38a566223011",
  resolved_at: "2026-03-01T12:00:00.000Z",
  cairn_version: "t",
  verification_policy: "signed",
  base: {
    name: "debian12",
    arch: "x86_64",
    abi: "gnu",
    os_id: "debian",
    version_id: "12",
    capabilities: ["os:debian@12", "glibc@2.36", "gcc@12"],
    source: "rootfs:example",
    digest: "sha256:267c897b5f135c2e6bf13862884fe1ec8d68d4d175efc3c736dd10ad3f77bf71",
    probed_at: "2026-03-01T12:00:00.000Z",
  },
  layers: [
    {
      id: "samtools-1.20-gnu-x86_64",
      name: "samtools",
      version: "1.20",
      sha256: "sha256:9ed2e8a0f2251433b6ec3fbfd0cec396f045c01032dace9d887579034d051144",
      size: 226,
      manifest_sha256: "sha256:160c0007f1221b216c60b4498a7efc924e3b64ded64ffaa4f6e32c3e168bbf47",
      mount_order: 0,
      from_formation: "bio-seq@2026.03",
      satisfied_by: { "glibc>=2.28": ["base"] },
      signature: {
        status: "signed",
        keyid: "sha256:0483b0137cca533f941ce698420bff6737dd295e7b0b43bb350129176069d94b",
        envelope_sha256: "sha256:896bc465e3a789dc7d0056b3ceba9ca7237b5a186dddad8d1d4686c2614091d9",
      },
      registry: "/srv/cairn/registry",
    },
    {
      id: "bwa-0.7.18-gnu-x86_64",
      name: "bwa",
      version: "0.7.18",
      sha256: "sha256:5ee5f0726062fd1225740d394a4a6a508738b9393debae1a598dc1531ac44185",
      size: 224,
      manifest_sha256: "sha256:34a8e896a0ca9faf324a5a3ffa58a32e7350a841b76e9dbd15987d7998e50302",
      mount_order: 1,
      from_formation: "bio-seq@2026.03",
      satisfied_by: { "samtools>=1.0": ["samtools-1.20-gnu-x86_64"] },
      signature: {
        status: "signed",
        keyid: "sha256:0483b0137cca533f941ce698420bff6737dd295e7b0b43bb350129176069d94b",
        envelope_sha256: "sha256:0b74de44e923eb3089296918c2860241813af4f489a9b6488c278ff2be530a4d",
      },
      registry: "/srv/cairn/registry",
    },
    {
      id: "python-3.12.4-gnu-x86_64",
      name: "python",
      version: "3.12.4",
      sha256: "sha256:a54914a3d455ac64c75554b30f3e5f8d86ae40b9a9dd3c075b20dea8550a7105",
      size: 175,
      manifest_sha256: "sha256:620c28f01e79dfeabe7fd2262d4a3635bc184cd7e6ca8a3a53b4ab3a620c237f",
      mount_order: 2,
      satisfied_by: { "glibc>=2.31": ["base"] },
      signature: {
        status: "signed",
        keyid: "sha256:0483b0137cca533f941ce698420bff6737dd295e7b0b43bb350129176069d94b",
        envelope_sha256: "sha256:a96222a3c6f4a1e84312e7acda50a872fab85308f3efb82828881b6c1d3dbed4",
      },
      registry: "/srv/cairn/registry",
    },
    {
      id: "numpy-2.0.1-none-noarch",
      name: "numpy",
      version: "2.0.1",
      sha256: "sha256:6b314edbe9936933904a350fce6f0929fdd50b514df30a9e353831da6b6a567a",
      size: 188,
      manifest_sha256: "sha256:d0ac6b99b72505018906bd8c059abacd162d273bb48aa0336a887f05274170e9",
      mount_order: 3,
      satisfied_by: { "python>=3.10,<3.13": ["python-3.12.4-gnu-x86_64"] },
      signature: {
        status: "signed",
        keyid: "sha256:0483b0137cca533f941ce698420bff6737dd295e7b0b43bb350129176069d94b",
        envelope_sha256: "sha256:bfcfe4b97153cbee0f7f3ddbd3b2bef37644278f58729e141ebbc193d3ca6667",
      },
      registry: "/srv/cairn/registry",
    },
  ],
  formations: [
    {
      name: "bio-seq",
      version: "2026.03",
      signature: {
        status: "signed",
        keyid: "sha256:0483b0137cca533f941ce698420bff6737dd295e7b0b43bb350129176069d94b",
        envelope_sha256: "sha256:d95c99caf67d4aa1b7d34041b0a02f00684c50e043d838b4cbb51b3d6ab57c72",
      },
    },
  ],
  env: { A: "1" },
  on_ready: ["echo"],
  defaults: ["python@3.12"],
  packages: [{ manager: "pip", packages: [{ name: "x", version: "1" }] }],
  mutable_layer: { name: "w", version: "1", size_gb: 20, volume_type: "gp3" },
  requires_host: [{ key: "gpu", value: "true" }],
  not_acted_upon: { instance: { type: "c7i.large" }, storage: [{ type: "ebs", mount: "/scratch" }] },
};

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

  const lock = parseLockfile(JSON.parse(JSON.stringify(LOCKFILE)));
  out.EnvironmentID = environmentId(lock);
  // requires_host is a set (issue 13): this lockfile lists it out of order. Before the fix its ID was
  // sha256:0a9d37e037df39f80880d5bbcecb2f1994f7223311a20eff723263bf2c14f6e0, which depended on that order;
  // now it is the ID of the sorted set {gpu, kvm}.
  out["EnvironmentID (requires_host out of order)"] = environmentId(
    parseLockfile(
      JSON.parse(
        JSON.stringify({
          ...LOCKFILE,
          requires_host: [
            { key: "kvm", value: "true" },
            { key: "gpu", value: "true" },
          ],
        }),
      ),
    ),
  );
  out["base digest (probed)"] = lock.base.digest!;
  out["base digest (declared)"] = declaredBase("debian12", "x86_64").digest!;
  out["base digest (oci image)"] = baseDigest({
    name: "debian12",
    arch: "x86_64",
    abi: "gnu",
    os_id: "debian",
    version_id: "12",
    capabilities: [{ name: "glibc", version: "2.36" }],
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
  // moved on purpose (issue 32): defaults, mutable_layer and requires_host take the seed's types ([]SoftwareRef,
  // MutableLayerSpec, [{key, value}]), so the hash input changed and the tag became cairn.environment/2; see CHANGELOG.md
  EnvironmentID: "sha256:ffff72628736f9f711e55ceb6bad34c7b51ce643ced4f450e0e37235f28d8356",
  "EnvironmentID (requires_host out of order)": "sha256:7acf7d21583ad77f43d62c24bd57f061a6983678210e5577607f1bdde001a619",
  "base digest (probed)": "sha256:267c897b5f135c2e6bf13862884fe1ec8d68d4d175efc3c736dd10ad3f77bf71",
  "base digest (declared)": "sha256:bc8604cb7228770c26260add45b35d755850800e2d22b1a435e9083056c0bb36",
  "base digest (oci image)": "sha256:a5c152d9a95297516b057bada9009dfab09b9f440bf518d2ed6e4973419a3edf",
  "profile digest": "sha256:50de433d99fe81eb4cc99b9ea8638f1bb6b3368b7d683743942cc3ce8132763f",
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
