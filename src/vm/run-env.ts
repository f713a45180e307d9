/**
 * The variables a run of an environment lockfile sets over the lockfile's
 * `env` (`cairn run LOCK --env KEY=VAL`, a spec's `source.lockfile.env`).
 * They change what runs, so they are part of the run's identities, never a
 * side channel: lockfile-run.ts writes them into the exported workload
 * spec's `source.oci.launch.env`, so they enter the launch identity
 * (`cairn.launch/1`, run.json `/workload/launch`, which replay re-verifies
 * from the store and the receipt binds) and replay runs the recorded
 * values; the names alone are listed in the run's environment.json
 * (`run_env`), the values only in the private workload lock.
 *
 * Checked here, before anything runs: a KEY is a POSIX name (letters,
 * digits and `_`, not starting with a digit: a shell or a program reading
 * `A-B` or `1X` would not see it as set), given once; a value holds no NUL
 * (execve would cut it there, so the guest would see another value than the
 * one recorded) and no lone surrogate (it has no UTF-8 form); `run.env_count` and `run.env_entry_bytes` bound them, and
 * together they must fit the launch's `launch.total_bytes` (which the
 * assembled launch checks again with the command and the image's env): a
 * run that cannot launch is refused before the lockfile is exported.
 * Messages name the KEY, never its value.
 */
import { CairnError, checkLimit, hasLoneSurrogate, RUN_ENV_LIMITS } from "../core/index.ts";
import { LAUNCH_LIMITS } from "../workload/index.ts";

const POSIX_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function invalid(path: string, message: string, hint: string): never {
  throw new CairnError("LAUNCH_INVALID", message, { path, hint });
}

/** Checks name → value pairs (in the order given) by the rules above; `path` names where they came from (`--env`, `/source/lockfile/env`). */
export function checkRunEnv(unsafe: Iterable<readonly [string, string]>, path: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, value] of unsafe) {
    checkLimit("run.env_count", out.size + 1, RUN_ENV_LIMITS["run.env_count"], path);
    if (!POSIX_NAME.test(name))
      invalid(
        path,
        `${JSON.stringify(name.slice(0, 100))} is not a POSIX variable name`,
        "a name is letters, digits and _, not starting with a digit (KEY=VALUE)",
      );
    // a model key cairn's JSON reader refuses everywhere (prototype pollution): refused here, not after the export
    if (name === "__proto__") invalid(path, "variable __proto__ is refused", "cairn's documents refuse the key __proto__; choose another name");
    if (out.has(name)) invalid(path, `variable ${name} is set twice`, "give each variable once");
    checkLimit("run.env_entry_bytes", Buffer.byteLength(`${name}=${value}`, "utf8"), RUN_ENV_LIMITS["run.env_entry_bytes"], path, "bytes");
    if (value.includes("\0")) invalid(path, `the value of ${name} holds a NUL byte (value not shown)`, "a variable's value cannot hold NUL");
    // a lone surrogate has no UTF-8 form: the guest would be given U+FFFD, another value than the one recorded
    if (hasLoneSurrogate(value)) invalid(path, `the value of ${name} is not valid Unicode (a lone surrogate; value not shown)`, "give the value as UTF-8 text");
    out.set(name, value);
  }
  // each variable costs its bytes and a NUL, as execve counts it (launch.ts)
  const total = [...out].reduce((n, [k, v]) => n + Buffer.byteLength(`${k}=${v}`, "utf8") + 1, 0);
  checkLimit("launch.total_bytes", total, LAUNCH_LIMITS["launch.total_bytes"], path, "bytes");
  return out;
}

/** `KEY=VAL` strings (the value may hold `=`; it may be empty), checked as checkRunEnv checks them. */
export function parseEnvAssignments(unsafe: readonly string[], path: string): Map<string, string> {
  return checkRunEnv(
    unsafe.map((kv) => {
      const eq = kv.indexOf("=");
      if (eq < 0) invalid(path, `${JSON.stringify(kv.slice(0, 100))} is not KEY=VALUE`, "write --env KEY=VALUE (VALUE may be empty)");
      return [kv.slice(0, eq), kv.slice(eq + 1)] as const;
    }),
    path,
  );
}
