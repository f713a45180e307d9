/**
 * The overlayfs attributes of the entries of an upper directory, read without
 * following symlinks. Node has no getxattr, so one fixed Python program
 * (Debian's python3, never anything from the input) reads them for every
 * path at once: paths go in as NUL-separated bytes on stdin, so no name is
 * ever re-encoded, and only `trusted.overlay.*` and `user.overlay.*` come back.
 *
 * `trusted.*` attributes are visible only to a process with CAP_SYS_ADMIN:
 * an upper directory of a rootful overlay must be read as root, or its opaque
 * directories would be missed. The caller says so in its docs and output.
 * It lives in strata, not beside the directory reader: the tree area never
 * runs a process (claim O17), so the reader takes it as an argument.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { CairnError } from "../core/index.ts";

const PYTHON = "/usr/bin/python3";
const PROGRAM = `
import os, sys
data = sys.stdin.buffer.read()
out = sys.stdout
for i, p in enumerate(data.split(b"\\0")):
    if not p:
        continue
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError:
        names = []
    for n in names:
        if n.startswith("trusted.overlay.") or n.startswith("user.overlay."):
            v = os.getxattr(p, n, follow_symlinks=False)
            out.write("%d\\t%s\\t%s\\n" % (i, n, v.hex()))
`;

/** For each path (by index in `paths`), its overlay attributes: name → value bytes. */
export function overlayXattrs(paths: readonly string[]): Map<number, Map<string, Buffer>> {
  if (!existsSync(PYTHON)) {
    throw new CairnError("PREREQUISITE_MISSING", `${PYTHON} is needed to read overlayfs attributes (Node has no getxattr)`, {
      hint: "apt-get install python3",
    });
  }
  const input = Buffer.concat(paths.map((p) => Buffer.concat([Buffer.from(p, "utf8"), Buffer.from([0])])));
  const text = execFileSync(PYTHON, ["-I", "-S", "-c", PROGRAM], { input, maxBuffer: 256 * 1024 * 1024, encoding: "utf8" });
  const out = new Map<number, Map<string, Buffer>>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const [i, name, hex] = line.split("\t");
    const index = Number(i);
    const attrs = out.get(index) ?? new Map<string, Buffer>();
    attrs.set(name!, Buffer.from(hex ?? "", "hex"));
    out.set(index, attrs);
  }
  return out;
}
