/**
 * Prerequisites that scripts/setup-host.sh installs (gcc with a static libc,
 * QEMU and the guest kit, umoci, python3, Lmod). Outside CI a test whose
 * prerequisite is missing skips with a reason starting "prerequisite
 * missing:" (and scripts/run-tests.sh then fails the whole run, naming it);
 * with CI=true (set by the CI service, never by .ci/run) a missing
 * prerequisite is an error at load, so the test file fails instead of
 * skipping. docs/testing.md describes this.
 */

/** True when the CI service runs the suite (it sets CI=true). */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI === "true" || env.CI === "1";
}

/** The prefix of every skip reason for a missing prerequisite (scripts/run-tests.sh matches it). */
export const PREREQUISITE_SKIP_PREFIX = "prerequisite missing:";

/**
 * The `skip` option for node:test: false when `missing` is undefined; else,
 * outside CI, the reason; in CI, throws so the run fails.
 */
export function needs(missing: string | undefined, env: NodeJS.ProcessEnv = process.env): false | string {
  if (missing === undefined) return false;
  const reason = `${PREREQUISITE_SKIP_PREFIX} ${missing}`;
  if (inCi(env)) throw new Error(`${reason} (CI=true: a prerequisite scripts/setup-host.sh installs is never a reason to skip)`);
  return reason;
}

/**
 * The `skip` option for a test that needs root (mknod of a device, owners
 * preserved on extraction): a loud skip naming what needs it when not root,
 * a failure in CI (issue 31, case 19: such coverage dropped silently before).
 * The suite runs as root in CI; a non-root run skips these by name.
 */
export function needsRoot(what: string, uid: number | undefined = process.getuid?.(), env: NodeJS.ProcessEnv = process.env): false | string {
  return needs(uid === 0 ? undefined : `root (${what}); this run is not root`, env);
}
