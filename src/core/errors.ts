/**
 * The one error base of cairn. Every refusal carries a stable `code` from the
 * closed union below, the JSON pointer or file path of the offending field,
 * and a hint. Messages never include secret values (environment values, file
 * contents): callers name the field, not what was in it.
 *
 * Tests assert codes, never messages.
 */

/** Every error code cairn can raise, grouped by the exit code it maps to. */
export const ERROR_CODES = {
  // exit 1: the input was refused or a verification failed
  JSON_SYNTAX: 1,
  JSON_DUPLICATE_KEY: 1,
  JSON_PROTO_KEY: 1,
  JSON_NUMBER: 1,
  JSON_STRING: 1,
  JSON_UTF8: 1,
  YAML_SYNTAX: 1,
  YAML_UNSUPPORTED: 1,
  MODEL_TYPE: 1,
  MODEL_UNKNOWN_FIELD: 1,
  MODEL_MISSING_FIELD: 1,
  MODEL_NULL_ENTRY: 1,
  MODEL_VALUE: 1,
  DIGEST_INVALID: 1,
  DIGEST_MISMATCH: 1,
  SIZE_MISMATCH: 1,
  KEY_INVALID: 1,
  SIGNATURE_INVALID: 1,
  SIGNATURE_MISSING: 1,
  DSSE_INVALID: 1,
  PATH_UNSAFE: 1,
  LIMIT_EXCEEDED: 1,
  MANIFEST_REFUSED: 1,
  MANIFEST_COLLISION: 1,
  MANIFEST_MISMATCH: 1,
  TEMPLATE_INVALID: 1,
  TEMPLATE_OPTION_UNKNOWN: 1,
  TEMPLATE_OPTION_VALUE: 1,
  FEATURE_DEPENDENCY: 1,
  DEVCONTAINER_LOCK_FROZEN: 1,
  RESUME_MISMATCH: 1,
  RESUME_UNPINNED: 1,
  PROFILE_INVALID: 1,
  LAYER_INVALID: 1,
  CAPTURE_REFUSED: 1,
  REGISTRY_INVALID: 1,
  REGISTRY_NOT_FOUND: 1,
  REGISTRY_REFERENCED: 1,
  REFERENCE_INVALID: 1,
  REMOTE_REFUSED: 1,
  REMOTE_AUTH: 1,
  REMOTE_UNREACHABLE: 1,
  REMOTE_INSECURE: 1,
  REMOTE_TIMEOUT: 1,
  REMOTE_CA_INVALID: 1,
  TRUST_REFUSED: 1,
  RESOLVE_FAILED: 1,
  RESOLVE_CONFLICT: 1,
  LOCK_INVALID: 1,
  LOCK_STALE: 1,
  LOCK_UNFROZEN: 1,
  LOCK_FORMAT_OLD: 1,
  LOCK_DIRTY: 1,
  BASE_PROBE_FAILED: 1,
  BASE_MISMATCH: 1,
  EXPORT_REFUSED: 1,
  WORKLOAD_SPEC_INVALID: 1,
  ELF_DYNAMIC: 1,
  ELF_STATIC_PIE: 1,
  ELF_WRONG_ARCH: 1,
  ELF_MALFORMED: 1,
  SOURCE_NOT_REGULAR: 1,
  SOURCE_OVERSIZED: 1,
  SOURCE_CHANGED: 1,
  OCI_INVALID: 1,
  OCI_SELECTION: 1,
  OCI_PLATFORM: 1,
  OCI_MEDIA_TYPE: 1,
  OCI_MISSING_BLOB: 1,
  OCI_DIFFID_MISMATCH: 1,
  OCI_SCHEMA: 1,
  TAR_INVALID: 1,
  TAR_UNSAFE_PATH: 1,
  TAR_THROUGH_SYMLINK: 1,
  TAR_DUPLICATE: 1,
  TAR_WHITEOUT: 1,
  TAR_HARDLINK: 1,
  TAR_UNSUPPORTED_TYPE: 1,
  TAR_SETID: 1,
  TAR_SPARSE: 1,
  TAR_XATTR: 1,
  TAR_PAX: 1,
  TAR_TRAILING: 1,
  TAR_NAME_UTF8: 1,
  TAR_TIMESTAMP: 1,
  LAUNCH_INVALID: 1,
  STORE_CORRUPT: 1,
  STORE_MISSING: 1,
  STORE_CONFLICT: 1,
  STORE_BUSY: 1,
  WORKLOAD_LOCK_INVALID: 1,
  WORKLOAD_MISMATCH: 1,
  VM_MISMATCH: 1,
  RUN_INVALID: 1,
  RUN_LAUNCH_FAILED: 1,
  RUN_INFRASTRUCTURE: 1,
  RUN_TIMEOUT: 1,
  RUN_PROGRAM_FAILED: 1,
  REPLAY_MISMATCH: 1,
  RECORD_FAILED: 1,
  RECEIPT_INVALID: 1,
  RECEIPT_MISMATCH: 1,
  BUNDLE_INVALID: 1,
  ASSERTION_FAILED: 1,
  IO_ERROR: 1,
  CAMPAIGN_INVALID: 1,
  CAMPAIGN_MISMATCH: 1,
  CAMPAIGN_BUSY: 1,
  EXECUTOR_UNAVAILABLE: 1,
  ROOT_FOREIGN: 1,
  ROOT_UNSAFE: 1,
  SLURM_REFUSED: 1,
  SLURM_UNREACHABLE: 1,
  INTERNAL: 1,
  // exit 2: usage error
  USAGE: 2,
  // exit 3: a prerequisite is missing
  PREREQUISITE_MISSING: 3,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface CairnErrorOptions {
  /** JSON pointer (`/features/0/id`) or file path of the offending field. */
  path?: string;
  /** What the user can do about it. */
  hint?: string;
  cause?: unknown;
  /** Further issues when one refusal lists several offending fields (at most MAX_ISSUES are kept). */
  issues?: readonly Issue[];
  /** How many issues there were in all, when more than `issues` holds. */
  issueCount?: number;
}

/** A refusal keeps at most this many issues (and counts the rest): a hostile input must not make the error itself unbounded. */
export const MAX_ISSUES = 100;
/** A refusal's message lists at most this many issue lines. */
export const MAX_ISSUE_LINES = 20;

/** One problem found while checking an input; refusals collect all of them. */
export interface Issue {
  code: ErrorCode;
  path: string;
  message: string;
}

export class CairnError extends Error {
  readonly code: ErrorCode;
  readonly path: string | undefined;
  readonly hint: string | undefined;
  readonly issues: readonly Issue[];
  /** How many issues the refusal found (issues holds the first MAX_ISSUES). */
  readonly issueCount: number;

  constructor(code: ErrorCode, message: string, options: CairnErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CairnError";
    this.code = code;
    this.path = options.path;
    this.hint = options.hint;
    const issues = options.issues ?? [];
    this.issues = issues.length > MAX_ISSUES ? issues.slice(0, MAX_ISSUES) : issues;
    this.issueCount = Math.max(options.issueCount ?? 0, issues.length);
  }

  /** The process exit code this error maps to (1 refused, 2 usage, 3 prerequisite). */
  get exitCode(): 1 | 2 | 3 {
    return ERROR_CODES[this.code];
  }

  toJSON(): { code: ErrorCode; message: string; path: string | null; hint: string | null; issues?: Issue[]; issues_omitted?: number } {
    const out: { code: ErrorCode; message: string; path: string | null; hint: string | null; issues?: Issue[]; issues_omitted?: number } = {
      code: this.code,
      message: this.message,
      path: this.path ?? null,
      hint: this.hint ?? null,
    };
    if (this.issues.length > 0) out.issues = [...this.issues];
    if (this.issueCount > this.issues.length) out.issues_omitted = this.issueCount - this.issues.length;
    return out;
  }
}

export function isCairnError(value: unknown): value is CairnError {
  return value instanceof CairnError;
}

/**
 * Turns a non-empty list of issues into one error that names every offending
 * field, so a user fixes all of them in one pass.
 */
export function refuseAll(code: ErrorCode, what: string, issues: readonly Issue[], hint?: string, count = issues.length): CairnError {
  const total = Math.max(count, issues.length);
  const shown = issues.slice(0, MAX_ISSUE_LINES).map((i) => `  ${i.path || "/"}: ${i.message}`);
  if (total > shown.length) shown.push(`  … and ${total - shown.length} more`);
  const first = issues[0];
  return new CairnError(code, `${what}: ${total} problem(s)\n${shown.join("\n")}`, {
    path: first?.path,
    hint,
    issues,
    issueCount: total,
  });
}

/** Wraps a Node I/O error without echoing file contents. */
export function ioError(path: string, cause: unknown, action = "read"): CairnError {
  const errno = (cause as { code?: string } | null)?.code;
  return new CairnError("IO_ERROR", `cannot ${action} ${path}${errno ? ` (${errno})` : ""}`, { path, cause });
}
