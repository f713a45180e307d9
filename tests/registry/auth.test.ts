// Registry authentication against the real registry (issue 11, item 1 and
// "Bad input"): Basic (htpasswd) and the Bearer token flow, credentials from
// REGISTRY_AUTH_FILE or ~/.docker/config.json, a redirect to another host
// without credentials, a token realm on another host over http refused, and
// a sentinel password that never appears in errors, --json output or logs.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Credential } from "../../src/oci/registry/credentials.ts";
import { RegistryTransport } from "../../src/oci/registry/registry-transport.ts";
import { Store } from "../../src/store/index.ts";
import { pullToLayout } from "../../src/workload/index.ts";
import { runCli } from "../helpers/cli.ts";
import { needs } from "../helpers/prerequisites.ts";
import { HostileProxy } from "./fixtures/hostile-proxy.ts";
import { countingFetch, tempDir, writeImage } from "./fixtures/images.ts";
import { TestRegistry, missingRegistryTools, skopeoPush } from "./fixtures/registry-server.ts";
import { TOKEN_ISSUER, TOKEN_SERVICE, TokenServer } from "./fixtures/token-server.ts";

const skip = needs(missingRegistryTools());
const USER = "cairn-user";
const SENTINEL = "S3ntinel-pa55word-7f3a9c";
const basic = (u: string, p: string) => Buffer.from(`${u}:${p}`).toString("base64");

function authFile(path: string, host: string, user: string, password: string): string {
  writeFileSync(path, JSON.stringify({ auths: { [host]: { auth: basic(user, password) } } }));
  return path;
}

function assertNoSentinel(...texts: string[]): void {
  for (const t of texts) {
    assert.ok(!t.includes(SENTINEL), "the password never appears");
    assert.ok(!t.includes(basic(USER, SENTINEL)), "nor its base64 form");
  }
}

describe("basic auth (htpasswd)", { skip }, () => {
  let reg: TestRegistry;
  let work: string;
  let img: ReturnType<typeof writeImage>;
  before(async () => {
    work = tempDir("auth");
    reg = await TestRegistry.create(join(work, "registry"), { users: { [USER]: SENTINEL } });
    img = writeImage(join(work, "src"), "v1");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/a/app:v1`, ["--dest-creds", `${USER}:${SENTINEL}`]);
  });
  after(async () => {
    await reg?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("REGISTRY_AUTH_FILE credentials pull; nothing printed holds the password", async () => {
    const env = { HOME: work, CAIRN_HOME: join(work, "home"), REGISTRY_AUTH_FILE: authFile(join(work, "auth.json"), reg.host, USER, SENTINEL) };
    const r = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out1"), "--plain-http", "--json"], env);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(JSON.parse(r.stdout).manifest.digest, img.manifestDigest);
    assertNoSentinel(r.stdout, r.stderr);
    const human = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out1h"), "--plain-http"], env);
    assert.equal(human.code, 0);
    assertNoSentinel(human.stdout, human.stderr);
  });

  test("~/.docker/config.json credentials pull", async () => {
    mkdirSync(join(work, "dhome", ".docker"), { recursive: true });
    authFile(join(work, "dhome", ".docker", "config.json"), reg.host, USER, SENTINEL);
    const r = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out2"), "--plain-http", "--json"], {
      HOME: join(work, "dhome"),
      CAIRN_HOME: join(work, "home"),
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  test("no credentials, or a wrong password, is REMOTE_AUTH; the wrong password is not printed", async () => {
    const none = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out3"), "--plain-http", "--json"], {
      HOME: join(work, "nohome"),
      CAIRN_HOME: join(work, "home"),
    });
    assert.equal(none.code, 1);
    assert.equal(JSON.parse(none.stdout).error.code, "REMOTE_AUTH");
    const wrongFile = join(work, "wrong.json");
    writeFileSync(wrongFile, JSON.stringify({ auths: { [reg.host]: { auth: basic(USER, `${SENTINEL}x`) } } }));
    const wrong = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out4"), "--plain-http", "--json"], {
      HOME: work,
      CAIRN_HOME: join(work, "home"),
      REGISTRY_AUTH_FILE: wrongFile,
    });
    assert.equal(wrong.code, 1);
    assert.equal(JSON.parse(wrong.stdout).error.code, "REMOTE_AUTH");
    assertNoSentinel(wrong.stdout, wrong.stderr);
    const human = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out4h"), "--plain-http"], {
      HOME: work,
      CAIRN_HOME: join(work, "home"),
      REGISTRY_AUTH_FILE: wrongFile,
    });
    assert.equal(human.code, 1);
    assertNoSentinel(human.stdout, human.stderr);
  });

  test("a malformed credential file is refused without quoting it", async () => {
    const bad = join(work, "bad.json");
    writeFileSync(bad, `{"auths": {"${reg.host}": {"auth": "${SENTINEL}"}}, ${SENTINEL}}`);
    const r = await runCli(["pull", `${reg.host}/a/app:v1`, "--oci", join(work, "out5"), "--plain-http", "--json"], {
      HOME: work,
      CAIRN_HOME: join(work, "home"),
      REGISTRY_AUTH_FILE: bad,
    });
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).error.code, "REMOTE_AUTH");
    assertNoSentinel(r.stdout, r.stderr);
  });

  test("a redirect to another host gets no credentials; the registry's own host gets them", async () => {
    // B: the redirect target (another origin, like blob storage); it holds its own access to the registry
    const target = await new HostileProxy(reg.port, { upstreamHeaders: () => ({ authorization: `Basic ${basic(USER, SENTINEL)}` }) }).start();
    const front = await new HostileProxy(reg.port, {
      intercept: (x, res) => {
        if (!(x.method === "GET" && x.path.includes("/blobs/"))) return false;
        res.writeHead(307, { location: `http://localhost:${target.port}${x.path}` });
        res.end();
        return true;
      },
    }).start();
    try {
      const store = new Store(join(work, "store-redirect"));
      const credentials = () => undefined;
      void credentials;
      const r = await pullToLayout(`${front.host}/a/app:v1`, join(work, "out6"), store, {
        plainHttp: true,
        env: { HOME: work, REGISTRY_AUTH_FILE: authFile(join(work, "front.json"), front.host, USER, SENTINEL) },
        cwd: work,
      });
      store.close();
      assert.equal(r.image.manifest.digest, img.manifestDigest);
      assert.ok(target.seen.length >= 3, "control: blobs went through the redirect target");
      assert.ok(
        target.seen.every((x) => x.headers.authorization === undefined),
        "no Authorization at the other host",
      );
      assert.ok(
        front.seen.some((x) => x.headers.authorization !== undefined),
        "control: the registry's own host got the credentials",
      );
    } finally {
      await front.stop();
      await target.stop();
    }
  });
});

describe("bearer token flow", { skip }, () => {
  let reg: TestRegistry;
  let tokens: TokenServer;
  let work: string;
  let img: ReturnType<typeof writeImage>;
  before(async () => {
    work = tempDir("token");
    tokens = await new TokenServer(work, USER, SENTINEL).start();
    reg = await TestRegistry.create(join(work, "registry"), {
      token: { realm: tokens.realm, service: TOKEN_SERVICE, issuer: TOKEN_ISSUER, rootCertBundle: tokens.certPath },
    });
    img = writeImage(join(work, "src"), "v1");
    await skopeoPush(`${img.dir}:v1`, `${reg.host}/t/app:v1`, ["--dest-creds", `${USER}:${SENTINEL}`]);
  });
  after(async () => {
    await reg?.stop();
    await tokens?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  test("the challenge is answered with a token from the realm; the registry gets only the token", async () => {
    const counted = countingFetch();
    const before = tokens.requests.length;
    const store = new Store(join(work, "store1"));
    const r = await pullToLayout(`${reg.host}/t/app:v1`, join(work, "out1"), store, {
      plainHttp: true,
      env: { HOME: work, REGISTRY_AUTH_FILE: authFile(join(work, "auth.json"), reg.host, USER, SENTINEL) },
      cwd: work,
      fetch: counted.fetch,
    });
    store.close();
    assert.equal(r.image.manifest.digest, img.manifestDigest);
    assert.equal(tokens.requests.slice(before)[0]?.scope, "repository:t/app:pull");
    assert.ok(
      counted.requests.some((q) => q.status === 401),
      "control: the registry challenged",
    );
  });

  test("wrong credentials at the token service are REMOTE_AUTH", async () => {
    const store = new Store(join(work, "store2"));
    await assert.rejects(
      pullToLayout(`${reg.host}/t/app:v1`, join(work, "out2"), store, {
        plainHttp: true,
        env: { HOME: work, REGISTRY_AUTH_FILE: authFile(join(work, "wrong.json"), reg.host, USER, "nope") },
        cwd: work,
      }),
      (e: { code?: string; message?: string }) => e.code === "REMOTE_AUTH" && !String(e.message).includes("nope"),
    );
    store.close();
  });

  test("a realm on another host over plain http is refused before any credential is sent", async () => {
    const proxy = await new HostileProxy(reg.port, {
      rewrite: (_x, a) => {
        if (a.status === 401) a.headers["www-authenticate"] = `Bearer realm="http://tokens.example.invalid/token",service="${TOKEN_SERVICE}"`;
        return a;
      },
    }).start();
    const counted = countingFetch();
    const store = new Store(join(work, "store3"));
    try {
      await assert.rejects(
        pullToLayout(`${proxy.host}/t/app:v1`, join(work, "out3"), store, {
          plainHttp: true,
          env: { HOME: work, REGISTRY_AUTH_FILE: authFile(join(work, "p.json"), proxy.host, USER, SENTINEL) },
          cwd: work,
          fetch: counted.fetch,
        }),
        { code: "REMOTE_AUTH" },
      );
      assert.ok(
        counted.requests.every((q) => !q.path.includes("/token")),
        "the foreign realm was never contacted",
      );
      // control: the same challenge naming the loopback realm is followed
      proxy.hooks = {
        rewrite: (_x, a) => {
          if (a.status === 401) a.headers["www-authenticate"] = `Bearer realm="${tokens.realm}",service="${TOKEN_SERVICE}"`;
          return a;
        },
      };
      const ok = await pullToLayout(`${proxy.host}/t/app:v1`, join(work, "out3b"), store, {
        plainHttp: true,
        env: { HOME: work, REGISTRY_AUTH_FILE: authFile(join(work, "p.json"), proxy.host, USER, SENTINEL) },
        cwd: work,
      });
      assert.equal(ok.image.manifest.digest, img.manifestDigest);
    } finally {
      store.close();
      await proxy.stop();
    }
  });
});

// issue 31, case 19b: credentials go to the registry's own origin only, which is
// scheme, host and port, not the host name alone. The real-registry test above
// redirects to another host name, so a check of the name alone passed it; here
// a redirect keeps the name and changes only the port, or only the scheme. The
// transport's fetch is a recorder (no TLS server is needed to see what would be
// sent to https://127.0.0.1:5000).
describe("credentials stay on the registry's origin (scheme, host and port)", () => {
  const credential = new Credential(USER, SENTINEL);
  const origin = "http://127.0.0.1:5000";
  const through = async (target: string, challenge: "basic" | "bearer") => {
    const sent: { url: string; authorization: string | undefined }[] = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      const url = String(input);
      const authorization = new Headers(init?.headers).get("authorization") ?? undefined;
      sent.push({ url, authorization });
      if (url.startsWith("http://127.0.0.1:5000/token")) return Response.json({ token: "T0KEN" });
      if (url.startsWith(`${origin}/v2/a/app/blobs/`)) {
        if (authorization === undefined) {
          const www = challenge === "basic" ? 'Basic realm="r"' : `Bearer realm="${origin}/token",service="s"`;
          return new Response(null, { status: 401, headers: { "www-authenticate": www } });
        }
        return new Response(null, { status: 307, headers: { location: target } });
      }
      return new Response("blob", { status: 200 });
    };
    const t = new RegistryTransport({ host: "127.0.0.1:5000", plainHttp: true, credentials: () => credential, fetch: fakeFetch });
    const res = await t.send("GET", `a/app/blobs/sha256:${"0".repeat(64)}`, { scope: "repository:a/app:pull" });
    await res.body?.cancel();
    return sent;
  };
  for (const challenge of ["basic", "bearer"] as const) {
    test(`${challenge}: a redirect to the same host on another port, or to https on the same host and port, gets no Authorization; the same origin does (control)`, async () => {
      for (const target of [
        "http://127.0.0.1:5001/blob",
        "https://127.0.0.1:5000/blob",
        "https://127.0.0.1/blob",
        "http://localhost:5000/blob",
        "http://127.0.0.2:5000/blob",
      ]) {
        const sent = await through(target, challenge);
        const atTarget = sent.filter((s) => s.url === target);
        assert.equal(atTarget.length, 1, target);
        assert.equal(atTarget[0]!.authorization, undefined, `no credentials to ${target}`);
        assert.ok(
          sent.some((s) => s.url.startsWith(`${origin}/v2/`) && s.authorization !== undefined),
          "control: the registry itself got them",
        );
      }
      const same = await through(`${origin}/v2/a/app/other`, challenge);
      assert.ok(
        same.find((s) => s.url.endsWith("/other"))?.authorization !== undefined,
        "control: the registry's own origin gets the credentials after a redirect",
      );
    });
  }
});

// issue 31, second pass: a registry elsewhere cannot make cairn send requests to
// this host (a local service, a cloud metadata endpoint) through a redirect.
describe("a remote registry's redirect to a loopback or link-local address is refused", () => {
  const targets = [
    "http://127.0.0.1:8080/admin",
    "https://localhost/x",
    "http://a.localhost/x",
    "http://[::1]:9000/x",
    "http://[::ffff:127.0.0.1]/x",
    "http://0x7f.1/x",
    "http://0.0.0.0:80/x",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/x",
  ];
  const through = async (registry: string, target: string, plainHttp: boolean) => {
    const sent: string[] = [];
    const fakeFetch: typeof fetch = async (input) => {
      const url = String(input);
      sent.push(url);
      if (url.includes("/v2/a/app/blobs/")) return new Response(null, { status: 307, headers: { location: target } });
      return new Response("blob", { status: 200 });
    };
    const t = new RegistryTransport({ host: registry, plainHttp, allowInsecureRemote: plainHttp, fetch: fakeFetch });
    const res = await t.send("GET", `a/app/blobs/sha256:${"0".repeat(64)}`, { scope: "repository:a/app:pull" });
    await res.body?.cancel();
    return sent;
  };
  test("from https and insecure-http registries elsewhere: REMOTE_REFUSED before anything is sent; blob storage elsewhere, and a loopback registry's own redirects, are followed (controls)", async () => {
    for (const [registry, plain] of [
      ["registry.example", false],
      ["10.1.2.3:5000", true],
    ] as const) {
      for (const target of targets) {
        let sent: string[] = [];
        await assert.rejects(
          (async () => {
            sent = await through(registry, target, plain);
          })(),
          { code: "REMOTE_REFUSED" },
          `${registry} -> ${target}`,
        );
        assert.ok(!sent.includes(new URL(target).href), `nothing sent to ${target}`);
      }
      const ok = await through(registry, "https://blobs.example.net/x", plain);
      assert.equal(ok.at(-1), "https://blobs.example.net/x", "control: blob storage elsewhere is followed");
    }
    const local = await through("127.0.0.1:5000", "http://localhost:5001/x", true);
    assert.equal(local.at(-1), "http://localhost:5001/x", "control: a loopback registry may redirect to loopback");
  });
});
