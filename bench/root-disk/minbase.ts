/**
 * A real Debian 12 root, packed by umoci as umoci writes it, run by the CLI
 * as a new user would (issue 9, "done when"):
 *
 *   mmdebstrap --variant=minbase --include=python3-minimal --skip=output/dev bookworm R.tar; tar -xpf R.tar -C ROOTFS   (as root)
 *   umoci init --layout L; umoci new --image L:minbase; umoci unpack --image L:minbase B
 *   cp -a ROOTFS/. B/rootfs/; umoci repack --image L:minbase B
 *   cairn workload check spec.json       # every problem, with the policy that admits it
 *   cairn run spec.json                  # policies from the check, launch from the spec
 *   cairn replay RUN; cairn replay RUN
 *
 * The layout is used as umoci wrote it: its index.json descriptor has no
 * `platform` (`platform: config`), its config no Entrypoint, Cmd or User
 * (the spec's `source.oci.launch` gives the command; the user defaults to
 * 65534:65534). The workload is
 *
 *   python3 -c 'import hashlib; print(hashlib.sha256(b"x").hexdigest())'
 *
 *   node --import tsx bench/root-disk/minbase.ts [--dev] [--kit=DIR]
 *
 * needs root (mmdebstrap and umoci insert keep the root-owned tree), the
 * Debian archive, and minutes; not part of the test suite
 * (tests/vm/debian-root.test.ts is the suite's mirror-free Debian root).
 * Without `--dev` the root is mmdebstrap's tarball with `--skip=output/dev`,
 * unpacked: an empty /dev. With `--dev` it is mmdebstrap's directory output,
 * whose /dev holds eight device nodes (left out by `devices: skip`) and
 * the standard symlinks /dev/fd, /dev/stdin, /dev/stdout and /dev/stderr,
 * which the agent keeps as they are. (`umoci insert` is not used:
 * umoci 0.4.7 writes its root member as the absolute name "/" and ends the
 * layer without the end-of-archive marker, both refused: TAR_UNSAFE_PATH,
 * TAR_INVALID.)
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const withDev = process.argv.includes("--dev");
const kit = process.argv.find((a) => a.startsWith("--kit="))?.slice("--kit=".length);
const EXPECTED = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"; // sha256("x"), as sha256sum prints it
const cairn = join(import.meta.dirname, "..", "..", "bin", "cairn.js");
const work = join(import.meta.dirname, "..", ".work");
const rootfs = join(work, withDev ? "minbase-rootfs-dev" : "minbase-rootfs");

function sh(cmd: string, args: string[], opts: { allowFail?: boolean; env?: NodeJS.ProcessEnv } = {}): { status: number; out: string; s: number } {
  const t = performance.now();
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20, env: opts.env ?? process.env });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0 && !opts.allowFail) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return { status: r.status ?? -1, out: `${r.stdout}${r.stderr}`, s };
}

if (!existsSync(rootfs)) {
  mkdirSync(work, { recursive: true });
  // a directory output keeps mmdebstrap's /dev (device nodes and the fd/stdin/stdout/stderr links); its
  // tarball output can leave /dev empty (--skip=output/dev), and is unpacked as root with owners kept
  const r = withDev
    ? sh("mmdebstrap", ["--mode=root", "--variant=minbase", "--include=python3-minimal", "bookworm", `${rootfs}.tmp`])
    : sh("mmdebstrap", ["--mode=root", "--variant=minbase", "--include=python3-minimal", "--skip=output/dev", "bookworm", `${rootfs}.tar`]);
  if (!withDev) {
    mkdirSync(`${rootfs}.tmp`);
    sh("tar", ["-xpf", `${rootfs}.tar`, "--numeric-owner", "-C", `${rootfs}.tmp`]);
    rmSync(`${rootfs}.tar`);
  }
  sh("mv", [`${rootfs}.tmp`, rootfs]);
  console.log(`mmdebstrap: ${r.s.toFixed(1)} s`);
}
const root = mkdtempSync(join(tmpdir(), "cairn-minbase-"));
const layout = join(root, "layout");
const bundle = join(root, "bundle");
const umoci = [
  sh("umoci", ["init", "--layout", layout]),
  sh("umoci", ["new", "--image", `${layout}:minbase`]),
  sh("umoci", ["unpack", "--image", `${layout}:minbase`, bundle]),
  sh("cp", ["-a", `${rootfs}/.`, join(bundle, "rootfs")]),
  sh("umoci", ["repack", "--image", `${layout}:minbase`, bundle]),
];
const index = JSON.parse(readFileSync(join(layout, "index.json"), "utf8")) as { manifests: { digest: string; platform?: unknown }[] };
const manifest = index.manifests[0]!.digest;
console.log(
  `umoci init+new+unpack, cp, umoci repack: ${umoci.reduce((n, r) => n + r.s, 0).toFixed(1)} s; descriptor platform: ${JSON.stringify(index.manifests[0]!.platform ?? null)}`,
);

const env = { ...process.env, CAIRN_HOME: join(root, "home"), ...(kit ? { CAIRN_KIT: kit } : {}) };
const spec = (policy: object) => ({
  schema: "cairn.workload/1",
  source: {
    oci: { layout: "./layout", manifest, launch: { args: ["/usr/bin/python3", "-c", 'import hashlib; print(hashlib.sha256(b"x").hexdigest())'] } },
  },
  policy,
  run: {
    root: "disk",
    steps: [{ action: "start" }, { action: "close-stdin" }],
    expect: [{ "exit-code": 0, "stdout-lines": [EXPECTED] }],
    limits: { "image-bytes": 512 * 1024 * 1024 },
  },
});
writeFileSync(join(root, "strict.json"), JSON.stringify(spec({})));
const check = sh("node", [cairn, "workload", "check", join(root, "strict.json"), "--json"], { allowFail: true, env });
const found = JSON.parse(check.out.slice(0, check.out.lastIndexOf("}") + 1)) as {
  problem_count: number;
  admissible: boolean;
  suggested_policy: Record<string, string>;
  problems: { code: string; path: string; policy: string | null }[];
};
const byPolicy = new Map<string, number>();
for (const p of found.problems) byPolicy.set(p.policy ?? p.code, (byPolicy.get(p.policy ?? p.code) ?? 0) + 1);
console.log(
  `check (strict): ${found.problem_count} problems in ${check.s.toFixed(1)} s, ${[...byPolicy].map(([k, n]) => `${n}× ${k}`).join(", ")}; admissible: ${found.admissible}; suggested ${JSON.stringify(found.suggested_policy)}`,
);
writeFileSync(join(root, "spec.json"), JSON.stringify(spec(found.suggested_policy)));
const run = sh("node", [cairn, "run", join(root, "spec.json"), "--json"], { allowFail: true, env });
const rec = JSON.parse(run.out.slice(0, run.out.lastIndexOf("}") + 1)) as Record<string, unknown> & {
  run_dir?: string;
  status?: string;
  error?: { code: string; path: string };
};
console.log(`cairn run: ${run.s.toFixed(1)} s, exit ${run.status}: ${JSON.stringify(rec.error ?? { status: rec.status, run: rec.run_dir })}`);
if (run.status === 0 && typeof rec.run_dir === "string") {
  console.log(run.out.slice(0, 4000));
  for (let i = 1; i <= 2; i++) {
    const r = sh("node", [cairn, "replay", rec.run_dir, "--json"], { allowFail: true, env });
    console.log(`replay ${i}: ${r.s.toFixed(1)} s, exit ${r.status}: ${r.out.slice(0, 600)}`);
  }
}
if (!process.argv.includes("--keep")) rmSync(root, { recursive: true, force: true });
