/**
 * The network part of the VM identity (`/vm/network`, present only with
 * `run.network`): the NIC, the user-mode network it sits on, the guest's
 * static addresses, how packets are recorded, and every byte of the host
 * responders' configuration (kind, address, port, the served directory's
 * `cairn.fs/1` digest, the responder's version and limits). A run without
 * `run.network` has no such key, so its identity is what it was.
 *
 * This is also the one place the network's QEMU arguments are built from:
 * `restrict=on` (the guest reaches nothing but the guestfwd addresses),
 * `ipv6=off`, no hostfwd, no DNS forwarding (restricted slirp drops it), and
 * one guestfwd per responder to a host command that connects to cairn's own
 * responder (responder-host.ts). `filter-replay` on the netdev makes a
 * replay deliver the recorded packets, so a replay needs no responder.
 */
import { CairnError, type Checker, childPath, parseSha256, type JsonModel, type Sha256Digest } from "../core/index.ts";
import { GUEST_ADDRESS, GUEST_GATEWAY, GUEST_PREFIX, RESPONDER_ADDRESS, type NetworkSpec } from "./network-spec.ts";

export const RESPONDER_VERSION = "cairn.responder/1";

/** The responder's fixed limits (in the identity: they decide what it answers). */
export const RESPONDER_LIMITS = {
  /** An HTTP request's head (request line and headers). */
  "responder.request-head-bytes": 8192,
  /** Bytes echoed per connection; the connection is closed after. */
  "responder.echo-bytes": 1024 * 1024,
  /**
   * Guest connections one responder holds at once, so host processes at once (issue 31: a guest
   * started 400 `socat`s): each is one `socat`; a connection over the bound is refused by the
   * connector's gate, closed before any byte, and counted in the run's `network.json`.
   */
  "responder.connections": 16,
} as const;

/** The served directory's bounds (checked when cairn reads it, before launch). */
export const HTTP_ROOT_LIMITS = { maxEntries: 4096, maxFileBytes: 64 * 1024 * 1024, maxTotalBytes: 64 * 1024 * 1024 } as const;

export interface ResponderIdentity {
  readonly kind: "http" | "echo";
  readonly address: string;
  readonly port: number;
  /** http: the `cairn.fs/1` digest of the served directory as read; echo: null. */
  readonly root: Sha256Digest | null;
}

export interface VmNetwork {
  /** The guest NIC (`-device`), MAC included. */
  readonly nic: string;
  /** The user-mode network (`-netdev user,…`) without its guestfwd entries. */
  readonly backend: string;
  /** How packets are recorded and replayed. */
  readonly replay: string;
  /** eth0's static address and default gateway, as the agent reads them from /cairn/network. */
  readonly guest: string;
  readonly responder: string;
  /** `connections` is absent in runs recorded before the bound existed (issue 31); a replay needs no responder, so they still replay. */
  readonly responder_limits: { readonly "request-head-bytes": number; readonly "echo-bytes": number; readonly connections?: number };
  readonly responders: readonly ResponderIdentity[];
}

export const NIC = "vmxnet3,mac=52:54:00:12:34:56";
export const NET_BACKEND = `user,restrict=on,ipv6=off,net=10.0.2.0/24,host=${GUEST_GATEWAY}`;
export const NET_REPLAY = "filter-replay";

/** The /cairn/network line the agent reads (agent/eth.c). */
export function guestNetworkLine(n: VmNetwork): string {
  return `${n.guest}\n`;
}

/** The network identity of a spec; `httpRoot` is the served directory's digest (read at record, recorded for replay). */
export function networkIdentity(spec: NetworkSpec, httpRoot: Sha256Digest | undefined): VmNetwork {
  const responders: ResponderIdentity[] = [];
  if (spec.http !== undefined) {
    if (httpRoot === undefined) throw new CairnError("INTERNAL", "an http responder needs its directory's digest", { path: "/run/network/http/root" });
    responders.push({ kind: "http", address: RESPONDER_ADDRESS, port: spec.http.port, root: httpRoot });
  }
  if (spec.echo !== undefined) responders.push({ kind: "echo", address: RESPONDER_ADDRESS, port: spec.echo.port, root: null });
  return {
    nic: NIC,
    backend: NET_BACKEND,
    replay: NET_REPLAY,
    guest: `${GUEST_ADDRESS}/${GUEST_PREFIX} ${GUEST_GATEWAY}`,
    responder: RESPONDER_VERSION,
    responder_limits: {
      "request-head-bytes": RESPONDER_LIMITS["responder.request-head-bytes"],
      "echo-bytes": RESPONDER_LIMITS["responder.echo-bytes"],
      connections: RESPONDER_LIMITS["responder.connections"],
    },
    responders,
  };
}

const NETWORK_KEYS = ["nic", "backend", "replay", "guest", "responder", "responder_limits", "responders"];

export function parseVmNetwork(c: Checker, unsafe: JsonModel | undefined, path: string): VmNetwork | undefined {
  if (unsafe === undefined) return undefined;
  const o = c.object(unsafe, path, NETWORK_KEYS);
  if (!o) return undefined;
  const s = (k: string) => c.string(c.required(o, k, path), childPath(path, k)) ?? "";
  const lp = childPath(path, "responder_limits");
  const l = c.object(c.required(o, "responder_limits", path), lp, ["request-head-bytes", "echo-bytes", "connections"]);
  const li = (k: string) => (l ? (c.integer(c.required(l, k, lp), childPath(lp, k), { min: 0 }) ?? 0) : 0);
  const rp = childPath(path, "responders");
  const responders = (c.array(c.required(o, "responders", path), rp) ?? []).map((r, i): ResponderIdentity => {
    const p = childPath(rp, i);
    const ro = c.object(r, p, ["kind", "address", "port", "root"]);
    const kind = ro ? c.string(c.required(ro, "kind", p), childPath(p, "kind"), { pattern: /^(http|echo)$/ }) : undefined;
    let root: Sha256Digest | null = null;
    if (ro && ro.root !== null) {
      try {
        root = parseSha256(c.required(ro, "root", p), childPath(p, "root"));
      } catch {
        c.add(childPath(p, "root"), "expected a sha256 digest or null", "DIGEST_INVALID");
      }
    }
    return {
      kind: kind === "echo" ? "echo" : "http",
      address: ro ? (c.string(c.required(ro, "address", p), childPath(p, "address")) ?? "") : "",
      port: ro ? (c.integer(c.required(ro, "port", p), childPath(p, "port"), { min: 1, max: 65535 }) ?? 0) : 0,
      root,
    };
  });
  return {
    nic: s("nic"),
    backend: s("backend"),
    replay: s("replay"),
    guest: s("guest"),
    responder: s("responder"),
    responder_limits: {
      "request-head-bytes": li("request-head-bytes"),
      "echo-bytes": li("echo-bytes"),
      ...(l?.connections !== undefined ? { connections: c.integer(l.connections, childPath(lp, "connections"), { min: 1 }) ?? 0 } : {}),
    },
    responders,
  };
}

/** The JSON pointer (below /vm/network) of the first difference, or undefined. */
export function firstNetworkDifference(recorded: VmNetwork | undefined, current: VmNetwork | undefined): string | undefined {
  if (recorded === undefined || current === undefined) return recorded === current ? undefined : "";
  const walk = (a: unknown, b: unknown, at: string): string | undefined => {
    if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
      const keys = Array.isArray(a) ? Array.from({ length: Math.max(a.length, (b as unknown[]).length) }, (_, i) => String(i)) : Object.keys(a);
      for (const k of keys) {
        const d = walk((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}/${k}`);
        if (d !== undefined) return d;
      }
      return undefined;
    }
    return JSON.stringify(a) === JSON.stringify(b) ? undefined : at;
  };
  return walk(recorded, current, "");
}

/** Where each responder's host end is (QemuPaths, excluded from the identity): a command QEMU runs per guest connection. */
export interface NetworkPaths {
  /** By responder port: the argv QEMU's guestfwd runs for one connection (stdin/stdout are the connection). */
  readonly connect: ReadonlyMap<number, readonly string[]>;
}

/**
 * slirp splits the guestfwd command like a shell line (g_shell_parse_argv),
 * so a word may hold no blank or quote; QEMU's option parser splits on ",",
 * so a literal comma is written ",,".
 */
function commandWord(word: string): string {
  if (!/^[A-Za-z0-9_./:=+,-]+$/.test(word))
    throw new CairnError("RUN_INFRASTRUCTURE", `a responder connector argument holds characters QEMU's guestfwd cannot carry: ${JSON.stringify(word)}`, {
      path: "/vm/network",
    });
  return word.replaceAll(",", ",,");
}

export function networkArgs(n: VmNetwork, paths: NetworkPaths, mode: "record" | "replay" | "none"): string[] {
  if (n.nic !== NIC || n.backend !== NET_BACKEND || n.replay !== NET_REPLAY)
    throw new CairnError("VM_MISMATCH", "unsupported network device, backend or replay filter", { path: "/vm/network" });
  const forwards = n.responders.map((r) => {
    const argv = paths.connect.get(r.port);
    if (argv === undefined) throw new CairnError("INTERNAL", `no host end for the responder on port ${r.port}`, { path: "/vm/network/responders" });
    return `guestfwd=tcp:${r.address}:${r.port}-cmd:${argv.map(commandWord).join(" ")}`;
  });
  const args = ["-netdev", [`${n.backend},id=net0`, ...forwards].join(","), "-device", `${n.nic},netdev=net0`];
  if (mode !== "none") args.push("-object", `${n.replay},id=netrr,netdev=net0`);
  return args;
}
