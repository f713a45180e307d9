/**
 * What a campaign task's name covers, defined here and only here
 * (docs/fleet.md "What a task name covers", docs/identities.md).
 *
 *   task = sha256("cairn.task/1" 0x00 || JCS(model))
 *
 * record: {mode, workload: the workload identities the matrix point's spec
 *          assembles to, run: the point's run section (the scenario: steps,
 *          conditions, data, expectations, limits), host_inputs: the
 *          cairn.fs/1 digests of what the run section reads from the host
 *          (run.inputs, the served directory), repeat}
 * replay, verify: {mode, record: the sha256 of the run's run.json (which
 *          names the workload, the VM identity, the replay log and the
 *          outcome), workload, vm, repeat}
 * branch:  {mode, record: the sha256 of the parent's run.json, checkpoint:
 *          the name of the checkpoint branched from, tail: the sha256 of the
 *          tail's bytes (as the branch keeps them, branch.json), http_root:
 *          the cairn.fs/1 digest of the directory served again, repeat}
 *
 * Two points of a matrix that give the same model are one task (the plan
 * says which collapsed into which), so the same task never runs twice. A
 * record task's VM identity is decided only when its guest image is built
 * (it covers the kit's kernel and agent and the QEMU version of the host
 * that runs it): it is in the task's result and the run's receipt, and it
 * is part of the name of every replay task of that run.
 *
 *   plan = sha256("cairn.campaign-plan/1" 0x00 || JCS({mode, resources,
 *          retries, tasks: [task names in plan order]}))
 */
import { declareIdentity, defineScope, identityDigest, type JsonModel, type Sha256Digest } from "../core/index.ts";

export const TASK_IDENTITY = declareIdentity({
  name: "campaign task",
  tag: "cairn.task/1",
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/fleet/task-identity.ts",
});

export const CAMPAIGN_PLAN_IDENTITY = declareIdentity({
  name: "campaign plan",
  tag: "cairn.campaign-plan/1",
  algorithm: "sha256",
  framing: "tag-nul-jcs",
  role: "identity",
  definedIn: "src/fleet/task-identity.ts",
});

export const TASK_IDENTITY_SCOPE = defineScope({
  identity: "cairn.task/1",
  covers: {
    "/mode": "record, replay, verify or branch: the same run recorded and replayed are two tasks",
    "/workload": "the workload identities (workload, source, fs, launch) the task runs",
    "/run": "record: the matrix point's whole run section (steps, conditions, stdin data, expectations, limits, network)",
    "/host_inputs": "record: the cairn.fs/1 digests of run.inputs and of the served directory, read from the host when the plan is made",
    "/record": "replay, verify: the sha256 of the run's run.json, which names its VM identity, replay log and outcome; branch: the parent's",
    "/checkpoint": "branch: the name of the parent's checkpoint the branch starts from",
    "/tail": "branch: the sha256 of the tail's bytes (branch.json: the variation's steps and expectations)",
    "/http_root": "branch: the cairn.fs/1 digest of the directory the parent's http responder served, served again (null without one)",
    "/vm": "replay, verify: the run's VM identity digest",
    "/repeat": "the repeat index (0-based): `repeat: N` asks for N tasks that differ only here",
  },
  excludes: {
    "/spec_path": "where the spec file lives: moving it does not change what runs",
    "/point": "the matrix values as written: what they change is covered through /run; two points with the same effect are one task",
    "/vm_record": "a record task's VM identity: decided when its guest image is built on the host that runs it; in the result and the receipt",
  },
});

export type TaskIdentityModel =
  | {
      readonly mode: "record";
      readonly workload: { readonly workload: Sha256Digest; readonly source: Sha256Digest; readonly fs: Sha256Digest; readonly launch: Sha256Digest };
      readonly run: JsonModel;
      readonly host_inputs: { readonly run_inputs: Sha256Digest | null; readonly http_root: Sha256Digest | null };
      readonly repeat: number;
    }
  | {
      readonly mode: "replay" | "verify";
      readonly record: Sha256Digest;
      readonly workload: Sha256Digest;
      readonly vm: Sha256Digest;
      readonly repeat: number;
    }
  | {
      readonly mode: "branch";
      readonly record: Sha256Digest;
      readonly checkpoint: string;
      readonly tail: Sha256Digest;
      readonly http_root: Sha256Digest | null;
      readonly repeat: number;
    };

/** A task's name: the hex of its identity (64 lowercase hex, a directory name under DIR/tasks). */
export function taskName(model: TaskIdentityModel): string {
  return identityDigest(TASK_IDENTITY, model).slice("sha256:".length);
}

export function planDigest(model: {
  mode: string;
  resources: { cpus: number; "memory-mib": number; "time-minutes": number };
  retries: number;
  tasks: readonly string[];
}): Sha256Digest {
  return identityDigest(CAMPAIGN_PLAN_IDENTITY, model);
}

/** A task name as it may appear on a command line or a directory entry. */
export const TASK_NAME_RE = /^[0-9a-f]{64}$/;
