// A registry killed mid-pull or mid-push leaves nothing partial (issue 11,
// "Bad input"): the registry process is SIGKILLed at a random point of a
// transfer (the seed is printed), then the store must hold only objects that
// match their names, no layout or temporary sibling may exist, and a pull
// after a restart must succeed and verify. A push killed midway must leave
// no tag naming an incomplete image.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomInt } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { RegistryClient, pushLayoutImage, readOciSource } from "../../src/oci/index.ts";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { needs } from "../helpers/prerequisites.ts";
import { file } from "../workload/fixtures/tar-writer.ts";
import { HostileProxy } from "./fixtures/hostile-proxy.ts";
import { assertStoreSound, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPull, skopeoPush } from "./fixtures/registry-server.ts";

const skip = needs(missingRegistryTools());

describe("registry killed mid-transfer", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let img: ReturnType<typeof writeImage>;
  let total = 0;
  before(async () => {
    work = tempDir("kill");
    reg = await TestRegistry.create(join(work, "registry"));
    // incompressible layers, so a kill point can fall inside a blob
    img = writeImage(join(work, "src"), "big", {
      layers: [
        { entries: [file("a", randomBytes(3 * 1024 * 1024))], gzip: false },
        { entries: [file("b", randomBytes(1024 * 1024))], gzip: false },
      ],
    });
    total = img.layers.reduce((n, l) => n + l.size, 0);
    await skopeoPush(`${img.dir}:big`, `${reg.host}/k/app:big`);
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (let round = 1; round <= 3; round++) {
    test(`pull killed at a random byte (round ${round}), then pulled again into the same store`, async () => {
      const at = randomInt(1, total);
      let cumulative = 0; // blob bytes sent over all responses
      const proxy = await new HostileProxy(reg.port, {
        stream: (x) => {
          if (!(x.method === "GET" && x.path.includes("/blobs/"))) return undefined;
          let prev = 0;
          return (sent, res) => {
            cumulative += sent - prev;
            prev = sent;
            if (cumulative >= at && !res.destroyed) {
              res.destroy();
              void reg.kill();
            }
          };
        },
      }).start();
      const storeDir = join(work, `store-${round}`);
      const layout = join(work, `out-${round}`);
      const store = new Store(storeDir);
      try {
        await assert.rejects(
          pullToLayout(`${proxy.host}/k/app:big`, layout, store, { plainHttp: true, env: { HOME: work }, cwd: work }),
          { code: "REMOTE_UNREACHABLE" },
          `killed at byte ${at}`,
        );
      } finally {
        store.close();
        await proxy.stop();
      }
      assert.ok(!existsSync(layout), "no layout");
      assert.deepEqual(
        readdirSync(work).filter((n) => n.startsWith(".")),
        [],
        "no temporary sibling",
      );
      const kept = assertStoreSound(storeDir);
      assert.ok(!img.layers.every((l) => kept.includes(l.digest)), `the cut layer is not stored (kill at ${at})`);
      await reg.kill();
      await reg.start();
      const again = new Store(storeDir);
      const r = await pullToLayout(`${reg.host}/k/app:big`, layout, again, { plainHttp: true, env: { HOME: work }, cwd: work });
      again.close();
      const src = await readOciSource({ layoutDir: layout, manifestDigest: r.image.manifest.digest, stagingDir: join(work, `stage-${round}`) });
      assert.deepEqual(
        src.layers.map((l) => l.digest),
        img.layers.map((l) => l.digest),
      );
      assert.deepEqual(readdirSync(join(storeDir, "staging")), [], "the next writer cleaned the dead pull's staging");
    });
  }

  for (let round = 1; round <= 2; round++) {
    test(`push killed at a random request (round ${round}) leaves no tag naming an incomplete image`, async () => {
      const requests = 3 * 3 + 1; // HEAD, POST, PUT per blob (config + 2 layers), then the manifest PUT
      const killAt = randomInt(1, requests + 1);
      let count = 0;
      const proxy = await new HostileProxy(reg.port, {
        intercept: async (_x, res) => {
          if (++count < killAt) return false;
          await reg.kill();
          res.destroy();
          return true;
        },
      }).start();
      const tag = `push${round}`;
      try {
        await assert.rejects(
          pushLayoutImage(new RegistryClient({ host: proxy.host, plainHttp: true }), img.dir, img.manifestDigest, `k/pushed${round}`, tag),
          { code: "REMOTE_UNREACHABLE" },
          `killed at request ${killAt}`,
        );
      } finally {
        await proxy.stop();
      }
      await reg.start();
      const client = new RegistryClient({ host: reg.host, plainHttp: true });
      await assert.rejects(client.resolve(`k/pushed${round}`, tag), { code: "REMOTE_REFUSED" }, "the tag does not exist");
      await pushLayoutImage(client, img.dir, img.manifestDigest, `k/pushed${round}`, tag);
      await skopeoPull(`${reg.host}/k/pushed${round}:${tag}`, `${join(work, `peer-${round}`)}:${tag}`);
    });
  }
});
