/**
 * Layer-application policy: what cairn does with the two kinds of tar content
 * that ordinary distribution images carry but the strict profile refuses.
 *
 * The strict profile is the default and refuses both. A user who wants an
 * ordinary image in must name each relaxation in the workload spec; the
 * resolved policy (with its version) is part of the workload identity, so a
 * tree assembled under `hardlinks: copy` can never be mistaken for one that
 * was assembled strictly.
 *
 * This is the single definition of the policy model and its version.
 */
import { Checker, type JsonModel } from "../core/index.ts";

/** The version tag of the policy semantics below; bump it when any rule of layer application changes meaning. */
export const POLICY_VERSION = "cairn.policy/1" as const;

export type HardlinkPolicy = "refuse" | "copy";
export type SetidPolicy = "refuse" | "strip";

export interface LayerPolicy {
  readonly version: typeof POLICY_VERSION;
  /**
   * `refuse` (default): any hard-link member is refused. `copy`: a hard link
   * whose target is a regular file already in the tree becomes an independent
   * copy with the target's content and attributes (as the shared inode would have).
   */
  readonly hardlinks: HardlinkPolicy;
  /** `refuse` (default): a member with setuid or setgid is refused. `strip`: both bits are cleared. */
  readonly setid: SetidPolicy;
}

/** The strict profile: every relaxation off. */
export const STRICT_POLICY: LayerPolicy = Object.freeze({ version: POLICY_VERSION, hardlinks: "refuse", setid: "refuse" });

const HARDLINKS: readonly HardlinkPolicy[] = ["refuse", "copy"];
const SETID: readonly SetidPolicy[] = ["refuse", "strip"];

/**
 * Parses the spec's optional `policy` object (`{ hardlinks?, setid? }`);
 * `undefined` yields the strict profile. Unknown keys and values are refused
 * with the JSON pointer under `path` (default `/policy`).
 */
export function parsePolicy(unsafeValue: JsonModel | undefined, path = "/policy"): LayerPolicy {
  if (unsafeValue === undefined) return STRICT_POLICY;
  const c = new Checker("WORKLOAD_SPEC_INVALID");
  const obj = c.object(unsafeValue, path, ["hardlinks", "setid"]);
  let hardlinks: HardlinkPolicy = "refuse";
  let setid: SetidPolicy = "refuse";
  if (obj !== undefined) {
    if (obj.hardlinks !== undefined) {
      const v = c.string(obj.hardlinks, `${path}/hardlinks`);
      const found = HARDLINKS.find((h) => h === v);
      if (v !== undefined && found === undefined) c.add(`${path}/hardlinks`, `must be one of ${HARDLINKS.join(", ")}`, "MODEL_VALUE");
      if (found !== undefined) hardlinks = found;
    }
    if (obj.setid !== undefined) {
      const v = c.string(obj.setid, `${path}/setid`);
      const found = SETID.find((s) => s === v);
      if (v !== undefined && found === undefined) c.add(`${path}/setid`, `must be one of ${SETID.join(", ")}`, "MODEL_VALUE");
      if (found !== undefined) setid = found;
    }
  }
  c.done("policy", 'policy takes "hardlinks": "refuse" | "copy" and "setid": "refuse" | "strip"');
  return Object.freeze({ version: POLICY_VERSION, hardlinks, setid });
}

/** The plain model of a policy for identities and locks (JCS-ready). */
export function policyModel(policy: LayerPolicy): { version: string; hardlinks: string; setid: string } {
  return { version: policy.version, hardlinks: policy.hardlinks, setid: policy.setid };
}

/** True when the policy is the strict profile (no relaxation named). */
export function isStrictPolicy(policy: LayerPolicy): boolean {
  return policy.hardlinks === "refuse" && policy.setid === "refuse";
}
