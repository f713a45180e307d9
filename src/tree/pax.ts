/**
 * Pax extended headers: strict record parsing and the single list of keys
 * cairn accepts. Everything not listed is refused with the code that names
 * what it would have smuggled in (sparse maps, xattrs/ACLs, extra
 * timestamps, or just something unknown).
 */
import { CairnError } from "../core/index.ts";

function refuse(code: "TAR_PAX" | "TAR_XATTR" | "TAR_SPARSE" | "TAR_TIMESTAMP", message: string, where: string, hint?: string): CairnError {
  return new CairnError(code, message, { path: where, hint });
}

/**
 * The single list of pax keys cairn accepts, each with what happens to it.
 * Everything else is refused (see paxKeyRefusal). A key is either recorded
 * into the member (and so into the tree) or deliberately dropped.
 */
export const PAX_KEYS: Readonly<Record<string, { readonly use: "recorded" | "dropped"; readonly why: string }>> = Object.freeze({
  path: { use: "recorded", why: "the member name (long or non-ASCII names)" },
  linkpath: { use: "recorded", why: "the symlink or hard-link target" },
  size: { use: "recorded", why: "the data size (files over 8 GiB)" },
  uid: { use: "recorded", why: "the numeric owner" },
  gid: { use: "recorded", why: "the numeric group" },
  mtime: { use: "recorded", why: "the whole-second modification time" },
  uname: { use: "dropped", why: "owner names depend on the host's user database; cairn records numeric owners only" },
  gname: { use: "dropped", why: "group names depend on the host's group database; cairn records numeric groups only" },
});

export const KNOWN_PAX: ReadonlySet<string> = new Set(Object.keys(PAX_KEYS));

/** Parses pax records strictly: "<len> <key>=<value>\n", exact lengths, unique keys. */
export function parsePax(body: Uint8Array, where: string): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  let pos = 0;
  while (pos < body.length) {
    const sp = body.indexOf(0x20, pos);
    const lenText = sp === -1 ? "" : Buffer.from(body.subarray(pos, sp)).toString("latin1");
    if (!/^[1-9][0-9]{0,8}$/.test(lenText)) throw refuse("TAR_PAX", "malformed pax record length", where);
    const end = pos + Number(lenText);
    if (end > body.length || body[end - 1] !== 0x0a) throw refuse("TAR_PAX", "malformed pax record", where);
    const rec = body.subarray(sp + 1, end - 1);
    const eq = rec.indexOf(0x3d);
    if (eq <= 0) throw refuse("TAR_PAX", "pax record without key", where);
    const key = Buffer.from(rec.subarray(0, eq)).toString("latin1");
    if (out.has(key)) throw refuse("TAR_PAX", `pax key ${JSON.stringify(key)} repeated`, where);
    out.set(key, rec.subarray(eq + 1));
    pos = end;
  }
  return out;
}

const XATTR_PREFIXES = ["SCHILY.xattr.", "LIBARCHIVE.xattr.", "RHT.security."] as const;

/**
 * The extended attribute a pax key carries (`SCHILY.xattr.security.capability`
 * → `security.capability`; Red Hat's `RHT.security.selinux` → `security.selinux`),
 * or undefined for any other key. POSIX ACLs stored as xattrs
 * (`system.posix_acl_*`) are not returned: an ACL grants access beyond the
 * mode bits, and dropping one can widen what a group may do, so ACLs are
 * refused under every policy (paxKeyRefusal, TAR_XATTR).
 */
export function xattrName(key: string): string | undefined {
  for (const p of XATTR_PREFIXES) {
    if (!key.startsWith(p)) continue;
    const name = p === "RHT.security." ? `security.${key.slice(p.length)}` : key.slice(p.length);
    if (name.length === 0 || name.startsWith("system.posix_acl_")) return undefined;
    return name;
  }
  return undefined;
}

/** Which refusal an unsupported pax key earns; the rule for what cairn accepts is KNOWN_PAX. */
export function paxKeyRefusal(key: string, where: string): CairnError {
  if (key.startsWith("GNU.sparse."))
    return refuse("TAR_SPARSE", "sparse member (pax GNU.sparse)", where, "sparse files are refused; rebuild the layer without --sparse");
  if (/^(SCHILY\.xattr\.|LIBARCHIVE\.xattr\.|SCHILY\.acl\.|RHT\.security\.|SCHILY\.fflags$)/.test(key)) {
    const acl = xattrName(key) === undefined;
    return refuse(
      "TAR_XATTR",
      `${acl ? "ACL, file flags or empty xattr name" : "extended attribute"} (pax ${JSON.stringify(key)})`,
      where,
      acl
        ? "ACLs and file flags are not part of a cairn tree and no policy drops them (an ACL can grant more than the mode bits); rebuild the layer without them"
        : 'xattrs are not part of a cairn tree; name the policy "xattrs: drop" to drop them (file capabilities included) knowingly',
    );
  }
  if (key === "atime" || key === "ctime") return refuse("TAR_TIMESTAMP", `extended timestamp (pax ${key})`, where, "cairn keeps whole-second mtimes only");
  return refuse("TAR_PAX", `unknown pax key ${JSON.stringify(key)}`, where, `cairn accepts the pax keys ${[...KNOWN_PAX].join(", ")}`);
}

export function paxInt(v: Uint8Array, key: string, where: string): number {
  const s = Buffer.from(v).toString("latin1");
  if (key === "mtime") {
    const m = /^(-?)([0-9]{1,15})(?:\.([0-9]+))?$/.exec(s);
    if (m === null) throw refuse("TAR_TIMESTAMP", "pax mtime is malformed", where);
    if (m[1] === "-") throw refuse("TAR_TIMESTAMP", "pax mtime is negative", where);
    if (m[3] !== undefined && /[1-9]/.test(m[3]))
      throw refuse("TAR_TIMESTAMP", "sub-second mtime", where, "cairn keeps whole-second mtimes; rebuild the layer with whole-second timestamps");
    return Number(m[2]);
  }
  if (!/^[0-9]{1,15}$/.test(s)) throw refuse("TAR_PAX", `pax ${key} is not a decimal integer`, where);
  return Number(s);
}
