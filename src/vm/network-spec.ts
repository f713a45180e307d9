/**
 * `run.network` of a workload spec, parsed strictly: the opt-in that gives
 * the guest one emulated NIC and the host responders it may reach, and
 * nothing else (issue 14). The guest's addresses are fixed, not
 * configurable, so two runs of one spec configure the same guest:
 *
 *   run:
 *     network:
 *       http: {port: 80, root: ./site}   # serves ./site (relative to the spec), read once, bounded
 *       echo: {port: 7}                  # echoes every byte back
 *
 * Both responders answer at RESPONDER_ADDRESS. The attack this stops is a
 * spec that widens the guest's reach: there is no key for another address,
 * a host port, DNS or a default route to the outside; unknown keys are
 * refused like everywhere else.
 */
import { type Checker, childPath, type JsonModel, type JsonObject } from "../core/index.ts";

/** The guest's address, prefix and gateway (QEMU user-mode network's defaults, written out). */
export const GUEST_ADDRESS = "10.0.2.15";
export const GUEST_PREFIX = 24;
export const GUEST_GATEWAY = "10.0.2.2";
/** Where the guest reaches the responders (a guestfwd address inside the user-mode network). */
export const RESPONDER_ADDRESS = "10.0.2.100";

export interface NetworkSpec {
  /** The HTTP responder: `root` is a host directory, relative to the spec, untrusted until read. */
  readonly http?: { readonly port: number; readonly unsafeRoot: string };
  readonly echo?: { readonly port: number };
}

export function parseNetworkSpec(c: Checker, unsafe: JsonModel | undefined, path: string): NetworkSpec | undefined {
  if (unsafe === undefined) return undefined;
  const o = c.object(unsafe, path, ["http", "echo"]);
  if (!o) return undefined;
  const port = (obj: JsonObject, p: string) => {
    const v = c.required(obj, "port", p);
    return v === undefined ? undefined : c.integer(v, childPath(p, "port"), { min: 1, max: 65535 });
  };
  let http: NetworkSpec["http"];
  if (o.http !== undefined) {
    const p = childPath(path, "http");
    const h = c.object(o.http, p, ["port", "root"]);
    const rootValue = h ? c.required(h, "root", p) : undefined;
    const root = rootValue === undefined ? undefined : c.string(rootValue, childPath(p, "root"), { nonEmpty: true });
    const n = h ? port(h, p) : undefined;
    if (root?.includes("\0")) c.add(childPath(p, "root"), "a path cannot hold a NUL byte", "RUN_INVALID");
    if (n !== undefined && root !== undefined) http = { port: n, unsafeRoot: root };
  }
  let echo: NetworkSpec["echo"];
  if (o.echo !== undefined) {
    const p = childPath(path, "echo");
    const e = c.object(o.echo, p, ["port"]);
    const n = e ? port(e, p) : undefined;
    if (n !== undefined) echo = { port: n };
  }
  if (o.http === undefined && o.echo === undefined) c.add(path, "run.network needs at least one responder (http or echo)", "RUN_INVALID");
  if (http !== undefined && echo !== undefined && http.port === echo.port)
    c.add(childPath(childPath(path, "echo"), "port"), `the echo responder's port ${echo.port} is the http responder's`, "RUN_INVALID");
  return { ...(http ? { http } : {}), ...(echo ? { echo } : {}) };
}
