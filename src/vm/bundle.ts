/**
 * The shareable failure bundle (`failure-bundle.json`): what someone else
 * needs to understand a failed run without receiving anything private —
 * bounded protocol metadata (counts), identities and digests, normalized
 * events (lifecycle, offsets, byte counts, stream digests, typed stage and
 * reason labels), assertion results (counts, indices, digests) and the
 * typed error. Never: source objects, the lock, environment values, output
 * bytes, the console log or the replay log. The kernel's own failure
 * reports (kernel-log.ts: a reason and the kernel's line) are shared: they
 * say why a run is an infrastructure failure and carry no workload bytes. `includePrivateStreams` is the
 * explicit local opt-in that adds the exact streams; the file is then
 * owner-only and named `failure-bundle.private.json`.
 */
import { join } from "node:path";
import { type CairnError, writeFileAtomic } from "../core/index.ts";
import type { AssertionResult } from "./checker.ts";
import type { KernelFailure } from "./kernel-log.ts";
import type { NormalizedEvent } from "./protocol.ts";

export const BUNDLE_SCHEMA = "cairn.failure/1";
const EVENTS_MAX = 1000;

export interface BundleInput {
  readonly runId: string;
  readonly phase: "record" | "replay";
  readonly status: string;
  readonly error?: CairnError;
  readonly identities: Readonly<Record<string, string>>;
  readonly protocol?: { readonly records: number; readonly frames: number; readonly bytes: number };
  readonly events?: readonly NormalizedEvent[];
  readonly assertions?: readonly AssertionResult[];
  readonly kernel?: readonly KernelFailure[];
  readonly streams?: ReadonlyMap<number, { readonly stdout: Buffer; readonly stderr: Buffer }>;
}

/** A label safe to share: the error message is dropped when it could carry a value, only code and path kept. */
function sanitizedError(e: CairnError): { code: string; path: string | null } {
  return { code: e.code, path: e.path ?? null };
}

/**
 * For a run that already failed: writes the bundle if it can and never
 * throws, so the failure reported is the root cause (a full disk that failed
 * the run fails this write too, and must not replace it). Returns the file,
 * or undefined when it could not be written.
 */
export function writeFailureBundleAfter(dir: string, b: BundleInput): string | undefined {
  try {
    return writeFailureBundle(dir, b, false);
  } catch {
    return undefined;
  }
}

export function writeFailureBundle(dir: string, b: BundleInput, includePrivateStreams: boolean): string {
  const events = b.events ?? [];
  const bundle: Record<string, unknown> = {
    schema: BUNDLE_SCHEMA,
    run_id: b.runId,
    phase: b.phase,
    status: b.status,
    error: b.error ? sanitizedError(b.error) : null,
    identities: b.identities,
    protocol: b.protocol ?? null,
    events: events.slice(0, EVENTS_MAX),
    events_truncated: events.length > EVENTS_MAX ? events.length - EVENTS_MAX : 0,
    assertions: b.assertions ?? [],
    kernel: b.kernel ?? [],
  };
  if (includePrivateStreams && b.streams) {
    bundle.private_streams = [...b.streams].map(([inv, s]) => ({
      invocation: inv,
      stdout_base64: s.stdout.toString("base64"),
      stderr_base64: s.stderr.toString("base64"),
    }));
    const file = join(dir, "failure-bundle.private.json");
    writeFileAtomic(file, `${JSON.stringify(bundle, null, 2)}\n`, { mode: 0o600 });
    return file;
  }
  const file = join(dir, "failure-bundle.json");
  writeFileAtomic(file, `${JSON.stringify(bundle, null, 2)}\n`, { mode: 0o644 });
  return file;
}
