/**
 * Test helpers for `cairn freeze`: the index writers of
 * examples/strata/package-indexes.ts (wheels made by the `zip` program, so
 * cairn's zip reader is tested against a writer it did not write), an
 * independent sha256 oracle, and a lockfile with package sets on a probed base.
 */
import { execFileSync } from "node:child_process";
export { sha256Hex, writeCondaChannel, writeCranRepo, writePipIndex, writeSdist, writeWheel } from "../../examples/strata/package-indexes.ts";
import { Catalog, parseProfileText, probedBase, resolveProfile, type Lockfile } from "../../src/strata/index.ts";
import { NOW } from "./fixtures.ts";

/** sha256 of a file as the `sha256sum` program computes it: an oracle independent of cairn. */
export function sha256sum(path: string): string {
  return `sha256:${execFileSync("sha256sum", [path], { encoding: "utf8" }).split(" ")[0]}`;
}

/** A lockfile with these package sets on a probed Debian 12 base (glibc 2.36, x86_64), resolved without layers. */
export function lockWith(packagesYaml: string, capabilities: readonly { name: string; version: string }[] = []): Lockfile {
  const profile = parseProfileText(`name: frozen\nbase: {os: debian12}\nsoftware: []\npackages:\n${packagesYaml}`);
  const base = probedBase(
    { name: "debian12", os_id: "debian", version_id: "12", arch: "x86_64", abi: "gnu", capabilities: [{ name: "glibc", version: "2.36" }, ...capabilities] },
    "rootfs:test",
    NOW,
  );
  return resolveProfile({ profile, catalog: new Catalog().seal(), probedBase: base, allowUnsignedOffline: false, now: NOW, cairnVersion: "test" });
}
