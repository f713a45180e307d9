/**
 * Layer-application policy: what cairn does with the kinds of content that
 * ordinary distribution images carry but the strict profile refuses
 * (hard links, setuid/setgid bits, device nodes and FIFOs, extended
 * attributes) and with an index descriptor that names no platform.
 *
 * The strict profile is the default and refuses all of them. A user who
 * wants an ordinary image in must name each relaxation in the workload spec;
 * the resolved policy (with its version) is part of the workload identity, so
 * a tree assembled under `hardlinks: copy` or `devices: skip` can never be
 * mistaken for one that was assembled strictly.
 *
 * The model of a policy (policyModel) names `hardlinks` and `setid` always
 * and each later relaxation only when it is taken: a policy that takes none
 * of them has the model (and so every identity) it had before they existed.
 *
 * This is the single definition of the policy model and its version.
 */
import { Checker, type JsonModel } from "../core/index.ts";

/** The version tag of the policy semantics below; bump it when any rule of layer application changes meaning. */
export const POLICY_VERSION = "cairn.policy/1" as const;

export type HardlinkPolicy = "refuse" | "copy";
export type SetidPolicy = "refuse" | "strip";
export type DevicePolicy = "refuse" | "skip";
export type XattrPolicy = "refuse" | "drop";
export type PlatformPolicy = "refuse" | "config";

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
  /**
   * `refuse` (default): a character or block device or a FIFO member is
   * refused. `skip`: it is left out of the tree (whatever a lower layer had at
   * its path is removed, as the node would have replaced it) and listed.
   */
  readonly devices?: DevicePolicy;
  /**
   * `refuse` (default): a member with extended attributes is refused.
   * `drop`: its attributes (file capabilities such as `security.capability`
   * included) are dropped and listed. ACLs stay refused either way.
   */
  readonly xattrs?: XattrPolicy;
  /**
   * `refuse` (default): the selected index descriptor must declare its
   * platform. `config`: a descriptor without `platform` (umoci, skopeo) is
   * accepted, the image config's own os/architecture deciding (linux/amd64,
   * no variant). A descriptor that declares a platform is checked as ever.
   */
  readonly platform?: PlatformPolicy;
}

/** The strict profile: every relaxation off. */
export const STRICT_POLICY: LayerPolicy = Object.freeze({ version: POLICY_VERSION, hardlinks: "refuse", setid: "refuse" });

/** Every policy key with its values, the default first; the single list (parser, model, docs and tests read it). */
export const POLICY_CHOICES = Object.freeze({
  hardlinks: ["refuse", "copy"],
  setid: ["refuse", "strip"],
  devices: ["refuse", "skip"],
  xattrs: ["refuse", "drop"],
  platform: ["refuse", "config"],
} as const);

export type PolicyKey = keyof typeof POLICY_CHOICES;
export const POLICY_KEYS = Object.freeze(Object.keys(POLICY_CHOICES) as PolicyKey[]);

/** The keys the model names even at their default (the original two; see the module comment). */
const ALWAYS_NAMED: readonly PolicyKey[] = ["hardlinks", "setid"];

/** The value of `key` in `policy`, its default when unset. */
export function policyValue(policy: LayerPolicy, key: PolicyKey): string {
  return policy[key] ?? POLICY_CHOICES[key][0];
}

/** `"devices: skip"`: how a relaxation is written in a spec, for hints and issue lists. */
export function policyName(key: PolicyKey): string {
  return `${key}: ${POLICY_CHOICES[key][1]}`;
}

/**
 * Parses the spec's optional `policy` object (`{ hardlinks?, setid?,
 * devices?, xattrs?, platform? }`); `undefined` yields the strict profile.
 * Unknown keys and values are refused with the JSON pointer under `path`
 * (default `/policy`).
 */
export function parsePolicy(unsafeValue: JsonModel | undefined, path = "/policy"): LayerPolicy {
  if (unsafeValue === undefined) return STRICT_POLICY;
  const c = new Checker("WORKLOAD_SPEC_INVALID");
  const obj = c.object(unsafeValue, path, POLICY_KEYS);
  const out: Record<string, string> = { hardlinks: "refuse", setid: "refuse" };
  if (obj !== undefined) {
    for (const key of POLICY_KEYS) {
      if (obj[key] === undefined) continue;
      const choices: readonly string[] = POLICY_CHOICES[key];
      const v = c.string(obj[key], `${path}/${key}`);
      const found = choices.find((h) => h === v);
      if (v !== undefined && found === undefined) c.add(`${path}/${key}`, `must be one of ${choices.join(", ")}`, "MODEL_VALUE");
      if (found !== undefined && (ALWAYS_NAMED.includes(key) || found !== choices[0])) out[key] = found;
    }
  }
  c.done("policy", `policy takes ${POLICY_KEYS.map((k) => `"${k}": ${POLICY_CHOICES[k].map((v) => `"${v}"`).join(" | ")}`).join(", ")}`);
  return Object.freeze({ version: POLICY_VERSION, ...out }) as LayerPolicy;
}

/** The plain model of a policy for identities and locks (JCS-ready): the version, the two original keys, and each relaxation taken. */
export function policyModel(policy: LayerPolicy): Record<string, string> {
  const out: Record<string, string> = { version: policy.version };
  for (const key of POLICY_KEYS) {
    const v = policyValue(policy, key);
    if (ALWAYS_NAMED.includes(key) || v !== POLICY_CHOICES[key][0]) out[key] = v;
  }
  return out;
}

/** True when the policy is the strict profile (no relaxation named). */
export function isStrictPolicy(policy: LayerPolicy): boolean {
  return POLICY_KEYS.every((k) => policyValue(policy, k) === POLICY_CHOICES[k][0]);
}

/** True when two policies mean the same (compared through their models). */
export function samePolicy(a: LayerPolicy, b: LayerPolicy): boolean {
  const ma = policyModel(a);
  const mb = policyModel(b);
  return Object.keys(ma).length === Object.keys(mb).length && Object.keys(ma).every((k) => ma[k] === mb[k]);
}
