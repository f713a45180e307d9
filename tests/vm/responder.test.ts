/**
 * The built-in host responder of run.network (issue 14), without a VM: the
 * directory is read once with its bounds and refusals, the responder
 * process serves exactly those bytes over its sockets, never a path with
 * `..`, bounds what it reads, and a responder that dies or stops answering
 * aborts the run naming why. Each refusal has a control on good input.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { CairnError } from "../../src/core/index.ts";
import { networkIdentity, RESPONDER_LIMITS } from "../../src/vm/netid.ts";
import { lookup } from "../../src/vm/responder.ts";
import { readHttpRoot, startResponder, type RunningResponder } from "../../src/vm/responder-host.ts";
import { runHostScope } from "../../src/vm/run-inputs.ts";
import { assertCode } from "../helpers/errors.ts";
import { HANG_GUARD_MS } from "../helpers/in-child.ts";
import { killResponder, SOCAT_SKIP } from "./fixtures/responder.ts";

/** A scope that allows every host path (as `--inputs-root /`): these tests name their directories absolutely. */
const ANY = runHostScope({ base: "/", root: "/" });

function site(): string {
  const dir = mkdtempSync(join(tmpdir(), "cairn-site-"));
  writeFileSync(join(dir, "hello.txt"), "hello\n");
  writeFileSync(join(dir, "index.html"), "<p>index</p>\n");
  mkdirSync(join(dir, "sub"));
  writeFileSync(join(dir, "sub", "a b.txt"), "spaced\n");
  return dir;
}

/** One exchange over a Unix socket: sends `req` (then half-closes), returns all it answers. */
function exchange(socket: string, req: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = connect(socket, () => s.end(req));
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("end", () => resolve(Buffer.concat(chunks)));
    s.on("error", reject);
  });
}

/** The Unix socket the responder listens on for a port (the last word of the connector QEMU runs). */
function socketOf(r: RunningResponder, port: number): string {
  return r.sockets.get(port)!;
}

describe("reading the served directory", () => {
  it("gives the same cairn.fs/1 digest for the same files, another for other bytes, and keeps every file", () => {
    const a = readHttpRoot(site(), ANY);
    const b = readHttpRoot(site(), ANY);
    assert.equal(a.digest, b.digest);
    assert.deepEqual([...a.files!.keys()].sort(), ["/hello.txt", "/index.html", "/sub/a b.txt"]);
    const c = site();
    writeFileSync(join(c, "hello.txt"), "hellO\n");
    assert.notEqual(readHttpRoot(c, ANY).digest, a.digest);
  });

  it("resolves a relative root against the spec's directory", () => {
    const dir = site();
    assert.equal(readHttpRoot("./", runHostScope({ base: dir })).digest, readHttpRoot(dir, ANY).digest);
  });

  it("stays inside the spec's directory: an absolute root, `..` out, a symlink out are PATH_UNSAFE (control: inside reads; --inputs-root allows)", () => {
    const top = mkdtempSync(join(tmpdir(), "cairn-site-top-"));
    const spec = join(top, "spec");
    mkdirSync(spec);
    const outside = site();
    symlinkSync(outside, join(spec, "linked"));
    mkdirSync(join(spec, "www"));
    writeFileSync(join(spec, "www", "a.txt"), "a\n");
    const scope = runHostScope({ base: spec });
    for (const root of [outside, "/etc", "..", "../..", "linked", "www/../.."])
      assertCode(() => readHttpRoot(root, scope), "PATH_UNSAFE", "/run/network/http/root");
    assert.deepEqual([...readHttpRoot("www", scope).files!.keys()], ["/a.txt"]);
    assert.equal(readHttpRoot(outside, runHostScope({ base: spec, root: outside })).digest, readHttpRoot(outside, ANY).digest);
  });

  it("refuses any symlink (inside or out), a missing directory, and too many entries (control: the plain directory reads)", () => {
    const inside = site();
    readHttpRoot(inside, ANY);
    symlinkSync("hello.txt", join(inside, "link"));
    assertCode(() => readHttpRoot(inside, ANY), "PATH_UNSAFE", "/run/network/http/root");
    const out = site();
    symlinkSync("/etc/passwd", join(out, "passwd"));
    assertCode(() => readHttpRoot(out, ANY), "PATH_UNSAFE");
    assertCode(() => readHttpRoot(join(out, "absent"), ANY), "IO_ERROR");
    const many = mkdtempSync(join(tmpdir(), "cairn-site-many-"));
    for (let i = 0; i < 4097; i++) writeFileSync(join(many, `f${i}`), "");
    assertCode(() => readHttpRoot(many, ANY), "LIMIT_EXCEEDED");
  });
});

describe("request paths", () => {
  const files = new Map([
    ["/hello.txt", Buffer.from("hello\n")],
    ["/index.html", Buffer.from("index\n")],
  ]);
  it("serves the map's own names only; `..` and `.` are refused even percent-encoded (control: the plain name)", () => {
    assert.deepEqual(lookup("/hello.txt", files), Buffer.from("hello\n"));
    assert.deepEqual(lookup("/", files), Buffer.from("index\n"));
    assert.equal(lookup("/absent", files), 404);
    for (const bad of ["/../etc/passwd", "/%2e%2e/etc/passwd", "/a/../hello.txt", "/./hello.txt", "hello.txt", "/%zz", "/a%00b", "/..%5cx", "/a\\..\\b"]) {
      assert.equal(lookup(bad, files), 400, bad);
    }
  });
});

describe("the responder process", { skip: SOCAT_SKIP }, () => {
  const net = (root: ReturnType<typeof readHttpRoot>) => networkIdentity({ http: { port: 80, unsafeRoot: "x" }, echo: { port: 7 } }, root.digest);

  it("answers GET, HEAD, 404, 400 for `..`, 405 and 431 with fixed bytes; echoes up to its bound", async () => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    try {
      const http = socketOf(r, 80);
      const get = await exchange(http, "GET /hello.txt HTTP/1.0\r\n\r\n");
      assert.equal(get.toString(), "HTTP/1.0 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n");
      assert.equal((await exchange(http, "GET /hello.txt HTTP/1.0\r\n\r\n")).toString(), get.toString(), "the same request, the same bytes");
      assert.equal(
        (await exchange(http, "HEAD /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n")).toString(),
        "HTTP/1.0 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\n",
      );
      assert.match((await exchange(http, "GET /sub/a%20b.txt HTTP/1.0\r\n\r\n")).toString(), /200 OK[\s\S]*spaced\n$/);
      assert.match((await exchange(http, "GET /nothing HTTP/1.0\r\n\r\n")).toString(), /^HTTP\/1\.0 404 /);
      assert.match((await exchange(http, "GET /../../etc/passwd HTTP/1.0\r\n\r\n")).toString(), /^HTTP\/1\.0 400 /);
      assert.match((await exchange(http, "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.0\r\n\r\n")).toString(), /^HTTP\/1\.0 400 /);
      assert.match((await exchange(http, "POST /hello.txt HTTP/1.0\r\n\r\n")).toString(), /^HTTP\/1\.0 405 /);
      assert.match((await exchange(http, `GET /${"a".repeat(9000)} HTTP/1.0\r\n\r\n`)).toString(), /^HTTP\/1\.0 431 /);
      assert.match((await exchange(http, "nonsense\r\n\r\n")).toString(), /^HTTP\/1\.0 400 /);
      const echo = socketOf(r, 7);
      assert.equal((await exchange(echo, "ping\n")).toString(), "ping\n");
      const big = Buffer.alloc(1024 * 1024 + 5000, 0x61);
      assert.equal((await exchange(echo, big)).length, 1024 * 1024, "echo stops at responder.echo-bytes");
      assert.equal(r.failed.aborted, false);
    } finally {
      r.stop();
    }
  });

  it("the echo responder closes the connection itself at responder.echo-bytes, while the client keeps its side open (issue 31 case 19; control: below the bound it stays open)", {
    timeout: 60_000, // a guard against a responder that never closes (the failure this test catches), not a wait
  }, async (t) => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    try {
      const bound = 1024 * 1024;
      // the client never half-closes: only the responder's own close at its bound can end this connection
      const got = await new Promise<{ bytes: number; ended: boolean; openBelow: boolean }>((resolve, reject) => {
        let bytes = 0;
        let openBelow = false;
        const s = connect(socketOf(r, 7), () => s.write(Buffer.alloc(1000, 0x62)));
        s.on("data", (d: Buffer) => {
          bytes += d.length;
          if (bytes === 1000 && !openBelow) {
            // control: 1000 bytes echoed and the connection is still open (no end yet); now go past the bound
            openBelow = true;
            s.write(Buffer.alloc(bound, 0x61));
          }
        });
        s.on("end", () => {
          resolve({ bytes, ended: true, openBelow });
          s.destroy();
        });
        s.on("error", reject);
        t.signal.addEventListener("abort", () => {
          s.destroy();
          reject(new Error(`the responder never closed the connection (${bytes} bytes echoed)`));
        });
      });
      assert.equal(got.openBelow, true, "control: below the bound the echo answered and kept the connection open");
      assert.equal(got.bytes, bound, "exactly responder.echo-bytes came back");
      assert.equal(got.ended, true, "the responder ended the connection at its bound");
    } finally {
      r.stop();
    }
  });

  it("holds at most responder.connections guest connections per responder: the gate refuses the rest before any byte and counts them; socat processes never exceed the bound (issue 31, case 4; control: within the bound every connection echoes)", async () => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    const bound = RESPONDER_LIMITS["responder.connections"];
    // QEMU's guestfwd gives the connector one end of a loopback TCP connection as stdin, stdout and stderr: so does this test
    const server = createServer();
    await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
    const port = (server.address() as AddressInfo).port;
    const [cmd, ...args] = r.paths.connect.get(7)!;
    const children: ChildProcess[] = [];
    server.on("connection", (sock: Socket) => {
      children.push(spawn(cmd!, args, { stdio: [sock, sock, sock] }));
      sock.destroy(); // the child holds its own copy of the descriptor
    });
    const socatCount = () => spawnSync("pgrep", ["-c", "-f", `UNIX-CONNECT:${r.sockets.get(7)}`], { encoding: "utf8" }).stdout.trim();
    /** Opens `n` connections, each sending one byte; resolves with what each got back (held open). */
    const open = (n: number) =>
      Promise.all(
        Array.from(
          { length: n },
          () =>
            new Promise<{ got: string; ended: boolean; c: Socket }>((res, rej) => {
              const c = connect(port, "127.0.0.1", () => c.write("a"));
              let got = "";
              c.on("data", (d: Buffer) => {
                got += d.toString("latin1");
                res({ got, ended: false, c });
              });
              c.on("end", () => res({ got, ended: true, c }));
              // a refused connection closed with our byte unread is reset rather than ended: refused all the same
              c.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? res({ got, ended: true, c }) : rej(e)));
            }),
        ),
      );
    try {
      const over = 5;
      const first = await open(bound + over);
      const echoed = first.filter((x) => x.got === "a").length;
      const refused = first.filter((x) => x.ended && x.got === "").length;
      assert.equal(echoed, bound, "exactly responder.connections connections echo while all are held");
      assert.equal(refused, over, "the rest were closed before any byte");
      assert.equal(Number(socatCount()), bound, "socat processes for this responder: exactly the bound, never more");
      assert.equal(r.refused().get(7), over, "the refusals are counted");
      for (const x of first) x.c.destroy();
      // control: once the held connections end, their slots are free again and new connections echo
      await Promise.all(children.map((ch) => (ch.exitCode !== null || ch.signalCode !== null ? undefined : once(ch, "exit"))));
      const again = await open(bound);
      assert.equal(again.filter((x) => x.got === "a").length, bound, "control: within the bound every connection echoes");
      for (const x of again) x.c.destroy();
      assert.equal(r.refused().get(7), over, "control connections are not refused");
    } finally {
      server.close();
      r.stop();
    }
  });

  it("counts every refusal, however many (a refusal log past 8 MiB was read as none)", async () => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    try {
      assert.equal(r.refused().get(7), 0, "control: none refused yet");
      // the gate appends one "refused" line per refusal to <port>.refused beside the socket
      const log = join(dirname(r.sockets.get(7)!), "7.refused");
      writeFileSync(log, "refused\n".repeat(1_100_000));
      assert.equal(r.refused().get(7), 1_100_000);
    } finally {
      r.stop();
    }
  });

  it("serves the bytes it was given, not the directory as it is later (a file changed after the read is never served)", async () => {
    const dir = site();
    const root = readHttpRoot(dir, ANY);
    writeFileSync(join(dir, "hello.txt"), "changed after the read\n");
    const r = await startResponder(net(root), root);
    try {
      assert.match((await exchange(socketOf(r, 80), "GET /hello.txt HTTP/1.0\r\n\r\n")).toString(), /\r\n\r\nhello\n$/);
    } finally {
      r.stop();
    }
    assert.equal(readFileSync(join(dir, "hello.txt"), "utf8"), "changed after the read\n");
  });

  it("without socat on PATH a network record is refused as a missing prerequisite naming it (control: the tests above start it)", async () => {
    const root = readHttpRoot(site(), ANY);
    const path = process.env.PATH;
    process.env.PATH = mkdtempSync(join(tmpdir(), "cairn-empty-path-"));
    try {
      await assert.rejects(startResponder(net(root), root), (e: unknown) => e instanceof CairnError && e.code === "PREREQUISITE_MISSING" && e.path === "socat");
    } finally {
      process.env.PATH = path;
    }
  });

  it("a responder that dies aborts the run naming it (control: a live one does not)", async () => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    try {
      // control: it answers (an exchange, not a pause), and the run is not aborted
      assert.match((await exchange(socketOf(r, 80), "GET /hello.txt HTTP/1.0\r\n\r\n")).toString(), /^HTTP\/1\.0 200 /);
      assert.equal(r.failed.aborted, false, "control: alive and answering");
      killResponder("SIGKILL");
      await waitAborted(r);
      assert.match(r.reason()!, /exited \(SIGKILL\)/);
    } finally {
      r.stop();
    }
  });

  it("a responder that stops answering (SIGSTOP) aborts the run as hung", async () => {
    const root = readHttpRoot(site(), ANY);
    const r = await startResponder(net(root), root);
    try {
      killResponder("SIGSTOP");
      await waitAborted(r);
      assert.match(r.reason()!, /did not answer/);
    } finally {
      r.stop();
    }
  });
});

/**
 * Waits for the event itself, the responder's `failed` signal aborting; the
 * timer is only a hang guard (minutes), so a loaded machine cannot make a
 * slow abort look like none (issue 31, case 19: this was a 100 ms poll
 * against a 10 s or 30 s deadline).
 */
async function waitAborted(r: RunningResponder): Promise<void> {
  if (!r.failed.aborted) {
    let guard: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve, reject) => {
      r.failed.addEventListener("abort", () => resolve(), { once: true });
      guard = setTimeout(() => reject(new Error("hang guard: the run was never aborted")), HANG_GUARD_MS);
    }).finally(() => clearTimeout(guard));
  }
  assert.equal(r.failed.aborted, true, "the run is aborted");
}
