// A registry is hostile (issue 11, "Bad input"): bytes that do not match the
// digest or size are refused while streaming and never stored, a manifest
// over the named limit is refused before it is read, a tag that moves mid-pull
// does not mix two images, and a redirect to another host gets no
// credentials. Each refusal has a control that passes through the same proxy
// untouched.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { HostileProxy } from "./fixtures/hostile-proxy.ts";
import { assertStoreSound, countingFetch, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

describe("hostile registry answers", { skip }, () => {
  let reg: TestRegistry;
  let proxy: HostileProxy;
  let work: string;
  let img: ReturnType<typeof writeImage>;
  before(async () => {
    work = tempDir("hostile");
    reg = await TestRegistry.create(join(work, "registry"));
    proxy = await new HostileProxy(reg.port).start();
    img = writeImage(join(work, "src"), "v1");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/h/app:v1`);
  });
  after(async () => {
    await proxy?.stop();
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  let n = 0;
  const attempt = async (extra: Record<string, unknown> = {}, ref = `${proxy.host}/h/app:v1`) => {
    const store = join(work, `store-${++n}`);
    const layout = join(work, `out-${n}`);
    const s = new Store(store);
    try {
      return { store, layout, result: await pullToLayout(ref, layout, s, { plainHttp: true, env: { HOME: work }, cwd: work, ...extra }) };
    } finally {
      s.close();
    }
  };
  const refused = async (code: string, extra: Record<string, unknown> = {}) => {
    const store = join(work, `store-${n + 1}`);
    const layout = join(work, `out-${n + 1}`);
    await assert.rejects(attempt(extra), { code });
    assert.ok(!existsSync(layout), "no layout appears");
    assert.deepEqual(
      readdirSync(work).filter((x) => x.startsWith(".")),
      [],
      "no temporary sibling is left",
    );
    return assertStoreSound(store);
  };
  const layer0 = () => img.layers[0]!.digest;

  test("control: through the untouched proxy the pull succeeds", async () => {
    proxy.hooks = {};
    const r = await attempt();
    assert.equal(r.result.image.manifest.digest, img.manifestDigest);
    assert.ok(assertStoreSound(r.store).includes(layer0()));
  });

  test("a layer whose bytes do not match its digest is refused and never stored", async () => {
    proxy.hooks = {
      rewrite: (x, a) => {
        if (x.path.endsWith(layer0().replace(":", ":")) && x.method === "GET") a.body[a.body.length - 1]! ^= 1;
        return a;
      },
    };
    const stored = await refused("DIGEST_MISMATCH");
    assert.ok(!stored.includes(layer0()));
  });

  test("a blob longer than its descriptor is refused before reading (declared) and at the first extra byte (undeclared)", async () => {
    proxy.hooks = {
      rewrite: (x, a) => {
        if (x.path.endsWith(layer0()) && x.method === "GET") {
          a.body = Buffer.concat([a.body, Buffer.from("extra")]);
          a.headers["content-length"] = String(a.body.length);
        }
        return a;
      },
    };
    assert.ok(!(await refused("SIZE_MISMATCH")).includes(layer0()));
    // no length, and junk without end: the client stops at the descriptor's size
    let sent = 0;
    proxy.hooks = {
      intercept: (x, res) => {
        if (!(x.path.endsWith(layer0()) && x.method === "GET")) return false;
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const junk = Buffer.alloc(64 * 1024, 0x61);
        const pump = (): void => {
          while (sent < 1024 * 1024 * 1024) {
            sent += junk.length;
            if (!res.write(junk)) return void res.once("drain", pump);
          }
          res.end();
        };
        pump();
        return true;
      },
    };
    assert.ok(!(await refused("SIZE_MISMATCH")).includes(layer0()));
    assert.ok(sent < 1024 * 1024 * 1024, `the transfer was stopped early (${sent} bytes offered of 1 GiB)`);
  });

  test("a short blob is refused", async () => {
    proxy.hooks = {
      rewrite: (x, a) => {
        if (x.path.endsWith(layer0()) && x.method === "GET") {
          a.body = a.body.subarray(0, a.body.length - 1);
          a.headers["content-length"] = String(a.body.length);
        }
        return a;
      },
    };
    await refused("SIZE_MISMATCH");
  });

  test("a manifest over the named limit is refused before its body is read", async () => {
    proxy.hooks = {};
    const counted = countingFetch();
    await refused("LIMIT_EXCEEDED", { manifestBytes: 64, fetch: counted.fetch });
    assert.deepEqual(
      counted.requests.map((q) => q.method),
      ["HEAD"],
      "only the tag was resolved; no GET of the manifest",
    );
    // a tagless digest pull knows no size: the declared Content-Length is refused without reading
    const byDigest = countingFetch();
    await assert.rejects(attempt({ manifestBytes: 64, fetch: byDigest.fetch }, `${proxy.host}/h/app@${img.manifestDigest}`), { code: "LIMIT_EXCEEDED" });
    const r = await attempt({ manifestBytes: 4096 });
    assert.equal(r.result.image.manifest.digest, img.manifestDigest, "control: a limit above the manifest's size");
  });

  test("a manifest whose bytes do not match the resolved digest is refused", async () => {
    proxy.hooks = {
      rewrite: (x, a) => {
        // same length, other bytes: only the digest can tell
        if (x.path.includes("/manifests/") && x.method === "GET") a.body = Buffer.from(a.body.toString("utf8").replace('"mediaType"', '"mediaTypf"'));
        return a;
      },
    };
    await refused("DIGEST_MISMATCH");
  });

  test("a tag that moves between resolve and fetch does not mix two images", async () => {
    const other = writeImage(join(work, "src-other"), "v2");
    let moved = false;
    proxy.hooks = {
      rewrite: async (x, a) => {
        // the registry answers the resolve; then the tag moves before cairn fetches anything
        if (x.method === "HEAD" && x.path.endsWith("/manifests/v1") && !moved) {
          moved = true;
          await skopeoPush(`${other.dir}:v2`, `${reg.host}/h/app:v1`);
        }
        return a;
      },
    };
    const r = await attempt();
    assert.ok(moved, "control: the tag moved mid-pull");
    assert.equal(r.result.image.manifest.digest, img.manifestDigest, "the image resolved first, whole");
    assert.deepEqual(
      r.result.image.layers.map((l) => l.digest),
      img.layers.map((l) => l.digest),
    );
    proxy.hooks = {};
    const after = await attempt();
    assert.equal(after.result.image.manifest.digest, other.manifestDigest, "control: a new pull sees the moved tag");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/h/app:v1`); // restore for the other tests
  });

  test("a redirect to a URL that is not http(s) is refused", async () => {
    proxy.hooks = {
      intercept: (x, res) => {
        if (!(x.path.endsWith(layer0()) && x.method === "GET")) return false;
        res.writeHead(307, { location: "file:///etc/passwd" });
        res.end();
        return true;
      },
    };
    await refused("REMOTE_REFUSED");
  });
});
