// One grammar for image references (issue 11): oci's splitImageReference is
// read by both users, the registry side (parseImageRef: pull, workload specs,
// pin, oci:// layer registries) and the manifest side (parseReference:
// devcontainer.json images and features, the pinned label). The two agree on
// every string; each keeps its own view (registry defaults vs the name as
// written); the cases where the two former grammars disagreed are fixed here.
import { test } from "node:test";
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseReference } from "../../src/manifest/reference.ts";
import { isLoopbackHost, parseImageRef } from "../../src/oci/index.ts";
import { RegistryTransport } from "../../src/oci/registry/registry-transport.ts";
import { assertCode } from "../helpers/errors.ts";

const D = `sha256:${"ab".repeat(32)}`;

function pullAccepts(r: string): boolean {
  try {
    parseImageRef(r, "/ref");
    return true;
  } catch (e) {
    assert.equal((e as { code?: string }).code, "REFERENCE_INVALID");
    return false;
  }
}

const agree = (r: string): void => assert.equal(parseReference(r).ok, pullAccepts(r), `both grammars agree on ${JSON.stringify(r).slice(0, 80)}`);

test("the registry side adds Docker Hub, library/ and latest; the manifest side keeps the name as written", () => {
  assert.deepEqual({ ...parseImageRef("debian") }, { registry: "docker.io", repository: "library/debian", tag: "latest", digest: undefined });
  assert.deepEqual({ ...parseImageRef("docker.io/debian:12") }, { registry: "docker.io", repository: "library/debian", tag: "12", digest: undefined });
  assert.deepEqual({ ...parseImageRef(`127.0.0.1:5000/tools/app:1.0@${D}`) }, { registry: "127.0.0.1:5000", repository: "tools/app", tag: "1.0", digest: D });
  assert.deepEqual(
    { ...parseImageRef("ghcr.io/devcontainers/features/node:1") },
    {
      registry: "ghcr.io",
      repository: "devcontainers/features/node",
      tag: "1",
      digest: undefined,
    },
  );
  const m = parseReference(`debian:12@${D}`);
  assert.ok(m.ok);
  assert.deepEqual(m.ref, { name: "debian", tag: "12", digest: D, pinned: true });
  const t = parseReference("mcr.microsoft.com/devcontainers/base:ubuntu-24.04");
  assert.ok(t.ok);
  assert.deepEqual(t.ref, { name: "mcr.microsoft.com/devcontainers/base", tag: "ubuntu-24.04", digest: undefined, pinned: false });
});

test("both sides accept and refuse the same references", () => {
  const valid = [
    "ubuntu",
    "ubuntu:22.04",
    `ubuntu@${D}`,
    "localhost/a",
    "localhost:5000/a/b:tag",
    "a.b-c.io:443/x/y_z/w__v/u-t",
    "[::1]:5000/x", // was refused by the manifest side (fixed)
    "MyHost/x", // upper case makes it a host (distribution's rule); was refused by the registry side (fixed)
    `${"a".repeat(255)}`,
  ];
  const invalid = [
    "",
    "Ubuntu",
    "a b",
    "ubuntu:",
    "ubuntu@",
    `ubuntu@sha256:${"A".repeat(64)}`,
    `ubuntu@sha512:${"a".repeat(128)}`,
    "-x",
    "a//b",
    "a/../b",
    "foo_bar.io/x", // a host with "_": the manifest side took it as a path and pin then failed (fixed)
    "h.io:123456/x", // a six-digit port: the manifest side accepted it (fixed)
    `${"a".repeat(256)}`, // a name over 255: the registry side accepted it (fixed)
    `h.io/${"a".repeat(300)}:${"t".repeat(128)}@${D}`, // over 512 characters: the registry side accepted up to 1024 (fixed)
  ];
  for (const r of valid) {
    agree(r);
    assert.ok(parseReference(r).ok, `control: ${r} is valid`);
  }
  for (const r of invalid) {
    agree(r);
    assert.equal(parseReference(r).ok, false, `${r.slice(0, 60)} is refused`);
  }
  assertCode(() => parseImageRef("foo_bar.io/x", "/image"), "REFERENCE_INVALID", "/image");
});

test("property: on any string over the reference alphabet, the two sides agree", () => {
  const alphabet = fc.constantFrom(..."aZ09.-_:/@[]".split(""), "sha256:", "ab".repeat(32), "localhost");
  fc.assert(
    fc.property(fc.array(alphabet, { maxLength: 12 }), (parts) => agree(parts.join(""))),
    { numRuns: 2000 },
  );
});

// issue 31, case 19a: --plain-http goes only to a loopback registry. A host that
// only looks like one (an end anchor removed from the pattern let
// 127.0.0.1.nip.io through) is REMOTE_INSECURE; the loopback spellings pass.
test("plain http only to loopback registries: look-alike hosts are REMOTE_INSECURE, loopback hosts pass (control)", () => {
  const lookalikes = [
    "127.0.0.1.nip.io",
    "127.0.0.1.nip.io:5000",
    "127.0.0.1.evil.com:5000",
    "localhost.evil.com",
    "localhost.evil.com:5000",
    "evil127.0.0.1",
    "1127.0.0.1",
    "127.0.0.1x:5000",
    "[::1].evil",
    "[::2]:5000",
    "localhostx",
  ];
  for (const h of lookalikes) {
    assert.equal(isLoopbackHost(h), false, h);
    assertCode(() => new RegistryTransport({ host: h, plainHttp: true }), "REMOTE_INSECURE");
  }
  for (const h of ["127.0.0.1", "127.0.0.1:5000", "127.255.0.9:80", "localhost", "localhost:5000", "[::1]", "[::1]:5000"]) {
    assert.equal(isLoopbackHost(h), true, h);
    assert.equal(new RegistryTransport({ host: h, plainHttp: true }).base.protocol, "http:", h);
  }
  // the user said so on purpose: control that the refusal is the loopback rule, not the host's spelling
  assert.equal(new RegistryTransport({ host: "127.0.0.1.nip.io:5000", plainHttp: true, allowInsecureRemote: true }).base.protocol, "http:");
});
