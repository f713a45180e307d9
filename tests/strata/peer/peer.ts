/**
 * Strata's own parser as a peer (issue 32): builds it with
 * scripts/strata-peer.sh (Strata's `spec` package at a pinned commit of a
 * local mirror of its public repository, plus tests/strata/peer/main.go) and
 * runs it on a file. When the mirror or Go is absent the build says so and
 * the callers skip with that reason.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { PROJECT_ROOT } from "../../helpers/vectors.ts";

const SCRIPT = join(PROJECT_ROOT, "scripts/strata-peer.sh");

/** The kinds of file the peer reads: `layer` and `formation` as Strata's registry reads them (yaml.Unmarshal into the spec type). */
export type PeerKind = "lockfile" | "profile" | "layer" | "formation";

/** What Strata's parser made of one file (see tests/strata/peer/main.go for each field). */
export interface PeerVerdict {
  readonly kind: PeerKind;
  readonly parse_error: string | null;
  readonly decode_error: string | null;
  readonly strict_error: string | null;
  readonly has_validate: boolean;
  readonly validate_error?: string;
  readonly frozen?: boolean;
  readonly environment_id?: string;
  readonly remarshal?: string;
  readonly software?: string[];
}

/**
 * The built peer, or why there is none: `prerequisite` when Go or yaml.v3 is
 * missing (scripts/setup-host.sh installs them), else the mirror or its
 * commit is absent.
 */
export type Peer =
  | { readonly bin: string; readonly commit: string; readonly src: string }
  | { readonly missing: string; readonly prerequisite: boolean; readonly src: string };

let built: Peer | undefined;

/** Builds (or reuses from its /tmp cache) the peer; `{ missing }` names what is absent. A failed build throws. */
export function strataPeer(env: NodeJS.ProcessEnv = process.env): Peer {
  if (built !== undefined) return built;
  built = buildPeer(env);
  return built;
}

function buildPeer(env: NodeJS.ProcessEnv): Peer {
  const info = spawnSync("bash", [SCRIPT, "--where"], { encoding: "utf8", env });
  const [src = "", commit = ""] = info.stdout.trim().split("\n");
  const r = spawnSync("bash", [SCRIPT], { encoding: "utf8", env, maxBuffer: 16 << 20 });
  const reason = r.stderr.trim().replace(/^strata-peer: (prerequisite missing: )?/, "");
  if (r.status === 3 || r.status === 4) return { missing: reason, prerequisite: r.status === 3, src };
  if (r.status !== 0) throw new Error(`scripts/strata-peer.sh failed (exit ${r.status}):\n${r.stderr}`);
  return { bin: r.stdout.trim(), commit, src };
}

/** Runs the peer on `path` as a file of `kind`. */
export function peerRead(bin: string, kind: PeerKind, path: string): PeerVerdict {
  const r = spawnSync(bin, [kind, path], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`strata-peer ${kind} ${path}: exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as PeerVerdict;
}
