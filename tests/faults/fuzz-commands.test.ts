/**
 * Every command survives random input (issue 16, item 2): for each leaf
 * command of the program (enumerated from commander, so a new command is
 * fuzzed without editing this file), fast-check builds FUZZ_RUNS argument
 * lists from the command's own arguments and flags, with values drawn from
 * valid documents made here (keys, a spec, a profile, a devcontainer.json, a
 * registry, a signed environment lockfile), those documents with random byte
 * flips and truncations, random bytes, random JSON, FIFOs, directories,
 * missing paths and odd strings. Each run must end with exit 0, 1, 2 or 3,
 * never throw out of `main`, never print a stack trace, never be an
 * `INTERNAL` error, and under `--json` a failure must be one JSON document
 * with a code. The seed is fixed, and the run is bounded by count, not time.
 *
 * Side effects stay inside a temporary directory: the working directory,
 * HOME, CAIRN_HOME and XDG directories point into it, random names never
 * hold "/", and every kit (flag or CAIRN_KIT) is a foreign directory, so
 * `setup` and `run` are refused before they would build or install a kit.
 * Controls: a planted INTERNAL and a planted stack trace are caught by the
 * same check, and the valid documents are accepted by their commands.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import type { Command, Option } from "commander";
import fc from "fast-check";
import { buildExampleRegistry } from "../../examples/strata/build-registry.ts";
import { writeKeyPair } from "../../src/core/index.ts";
import { publicKeyPem } from "../../src/core/keys.ts";
import { buildProgram } from "../../src/cli/program.ts";
import { runCli, type CliResult } from "../helpers/cli.ts";
import { PROJECT_ROOT } from "../helpers/vectors.ts";

/** Inputs per command; CAIRN_FUZZ_RUNS overrides (e.g. more for a long local campaign). */
/** Per command; 600 keeps the suite within its time (CI), CAIRN_FUZZ_RUNS=5000 for a deeper run. */
const FUZZ_RUNS = Number(process.env.CAIRN_FUZZ_RUNS ?? 600);
const SEED = 16_1000;

interface Leaf {
  readonly path: readonly string[];
  readonly args: readonly { required: boolean; variadic: boolean }[];
  readonly options: readonly { flag: string; takesValue: boolean; mandatory: boolean }[];
}

/** Every leaf command with its positional arguments and long flags, from the program itself. */
async function leaves(): Promise<Leaf[]> {
  const program = await buildProgram({ io: { out() {}, err() {}, tty: false }, env: {}, cwd: "/", json: false });
  const out: Leaf[] = [];
  const walk = (c: Command, path: string[]): void => {
    if (c.commands.length === 0 && path.length > 0)
      out.push({
        path,
        args: c.registeredArguments.map((a) => ({ required: a.required, variadic: a.variadic })),
        options: (c.options as readonly Option[]).map((o) => ({ flag: o.long!, takesValue: o.required || o.optional, mandatory: o.mandatory })),
      });
    for (const s of c.commands) walk(s, [...path, s.name()]);
  };
  walk(program, []);
  return out;
}

/** Read once, before the suite is declared (the program loads its command files asynchronously). */
const LEAVES = await leaves();

/** What a run must never show: an internal error, a stack frame, a non-JSON failure under --json. */
export function violation(argv: readonly string[], r: CliResult): string | undefined {
  if (![0, 1, 2, 3].includes(r.code)) return `exit code ${r.code}`;
  const text = r.stdout + r.stderr;
  if (/INTERNAL/.test(text)) return "an INTERNAL error";
  if (/^\s+at .+:\d+:\d+\)?$/m.test(text)) return "a stack trace";
  if (argv.includes("--json") && r.code !== 0) {
    let doc: unknown;
    try {
      doc = JSON.parse(r.stdout);
    } catch {
      return "a failure under --json that is not one JSON document";
    }
    const code = (doc as { error?: { code?: unknown } })?.error?.code;
    if (typeof code !== "string") return "a JSON failure without an error code";
    // the error document, or a run's, replay's or campaign's own document with its error (docs/json-output.md)
    const tag = (doc as { schema?: unknown }).schema;
    if (typeof tag !== "string" || !/^cairn\.cli\.[a-z-]+\/[0-9]+$/.test(tag)) return "a JSON failure without a schema tag";
  }
  return undefined;
}

interface World {
  readonly dir: string;
  readonly foreignKit: string;
  readonly seeds: readonly { name: string; bytes: Buffer }[];
  readonly paths: readonly string[];
  /** Valid values for flags by name (a key for --sign, a registry for --registry, ...), so inputs reach past the flags. */
  readonly good: Readonly<Record<string, readonly string[]>>;
  readonly env: NodeJS.ProcessEnv;
  fresh(): string;
}

let world: World;

/** A file with random bytes, a mutated seed document, random JSON or a random string; returns its path. */
const contentArb = (): fc.Arbitrary<(w: World) => string> =>
  fc.oneof(
    fc
      .record({ seed: fc.nat(), flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }), cut: fc.option(fc.nat()) })
      .map(({ seed, flips, cut }) => (w: World) => {
        const s = w.seeds[seed % w.seeds.length]!.bytes;
        const b = Buffer.from(s);
        for (const [at, v] of flips) if (b.length > 0) b[at % b.length] = v;
        return writeFresh(w, cut === null ? b : b.subarray(0, cut % (b.length + 1)));
      }),
    fc.uint8Array({ maxLength: 512 }).map((b) => (w: World) => writeFresh(w, Buffer.from(b))),
    fc.json({ maxDepth: 4 }).map((j) => (w: World) => writeFresh(w, Buffer.from(j))),
    fc.string({ maxLength: 200, unit: "binary" }).map((s) => (w: World) => writeFresh(w, Buffer.from(s))),
  );

function writeFresh(w: World, bytes: Buffer): string {
  const p = w.fresh();
  writeFileSync(p, bytes);
  return p;
}

/** A value for an argument or a flag. */
const valueArb = (): fc.Arbitrary<(w: World) => string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.nat().map((i) => (w: World) => w.paths[i % w.paths.length]!) },
    { weight: 4, arbitrary: contentArb() },
    { weight: 1, arbitrary: fc.constant((w: World) => join(w.dir, "missing", "nowhere")) },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom(
          "",
          "-",
          "0",
          "-1",
          "1e309",
          "99999999999999999999",
          "NaN",
          "host",
          "sha256:",
          `sha256:${"0".repeat(64)}`,
          "a@b",
          "x-1.0-none-noarch",
          "1h",
          "-5m",
        )
        .map((s) => () => s),
    },
    { weight: 2, arbitrary: fc.string({ maxLength: 24 }).map((s) => () => s.replaceAll("/", "_")) },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom("keyfile://", "rootfs:", "oci:", "file://", "https://", "oci-layout:"), fc.nat()).map(
        ([scheme, i]) =>
          (w: World) =>
            `${scheme}${w.paths[i % w.paths.length]}`,
      ),
    },
  );

/** `arb` one time in ten, else null. */
const rarely = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });

/**
 * An argument list for `leaf`: mostly its positionals in the right number and
 * its mandatory flags, so most inputs get past argument parsing into the
 * command; at times one positional fewer or more, a mandatory flag left out,
 * or a stray token.
 */
function argvArb(leaf: Leaf): fc.Arbitrary<(w: World) => string[]> {
  const required = leaf.args.filter((a) => a.required).length;
  const exact = leaf.args.some((a) => a.variadic) ? fc.integer({ min: required, max: required + 2 }) : fc.integer({ min: required, max: leaf.args.length });
  const count = fc.oneof({ weight: 9, arbitrary: exact }, { weight: 1, arbitrary: fc.integer({ min: Math.max(0, required - 1), max: leaf.args.length + 1 }) });
  const mandatory = leaf.options.filter((o) => o.mandatory);
  const optional = leaf.options.filter((o) => !o.mandatory);
  return fc
    .record({
      n: count,
      positional: fc.array(valueArb(), { minLength: leaf.args.length + 2, maxLength: leaf.args.length + 2 }),
      dropMandatory: rarely(fc.nat()),
      options: fc.shuffledSubarray(optional, { maxLength: Math.min(5, optional.length) }),
      values: fc.array(valueArb(), { minLength: leaf.options.length, maxLength: leaf.options.length }),
      goodValues: fc.array(fc.option(fc.nat(), { freq: 2 }), { minLength: leaf.options.length, maxLength: leaf.options.length }),
      stray: rarely(fc.constantFrom("--nope", "--json", "--", "-x", "--help=1")),
    })
    .map(({ n, positional, dropMandatory, options, values, goodValues, stray }) => (w: World) => {
      const argv = [...leaf.path, ...positional.slice(0, n).map((v) => v(w))];
      const chosen = [...mandatory.filter((_, i) => dropMandatory === null || dropMandatory % mandatory.length !== i), ...options];
      chosen.forEach((o, i) => {
        if (o.flag === "--kit") argv.push("--kit", w.foreignKit);
        else if (o.flag === "--help") return;
        else if (o.takesValue) {
          const good = w.good[o.flag];
          const pick = goodValues[i];
          argv.push(o.flag, good !== undefined && pick !== null && pick !== undefined ? good[pick % good.length]! : values[i]!(w));
        } else argv.push(o.flag);
      });
      if (stray !== null) argv.push(stray);
      return argv;
    });
}

describe(`every command survives ${FUZZ_RUNS} random inputs (seed ${SEED})`, () => {
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-fuzz-"));
    const home = join(dir, "home");
    const cwd = join(dir, "c", "w", "d"); // ".." in a relative random name stays inside dir
    mkdirSync(home);
    mkdirSync(cwd, { recursive: true });
    const foreignKit = join(dir, "foreign-kit");
    mkdirSync(foreignKit);
    writeFileSync(join(foreignKit, "someone-elses.txt"), "not a kit\n");
    const foreign = join(dir, "foreign-dir");
    mkdirSync(foreign);
    writeFileSync(join(foreign, "file.txt"), "x\n");
    const empty = join(dir, "empty-dir");
    mkdirSync(empty);
    const fifo = join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    const ex = buildExampleRegistry(join(dir, "example"));
    const keys = writeKeyPair(join(dir, "lockkey"), ex.lockKey);
    const registryPub = join(dir, "registry.pub");
    writeFileSync(registryPub, publicKeyPem(ex.registryKey));
    const spec = join(dir, "hello.yaml");
    writeFileSync(spec, readFileSync(join(PROJECT_ROOT, "examples", "workload", "hello.yaml")));
    const profile = join(dir, "profile.yaml");
    writeFileSync(profile, readFileSync(join(PROJECT_ROOT, "examples", "strata", "profile.yaml")));
    const devcontainer = join(dir, "devcontainer.json");
    writeFileSync(devcontainer, readFileSync(join(PROJECT_ROOT, "examples", "devcontainer", "pinned", "devcontainer.json")));
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      CAIRN_HOME: join(home, "cairn"),
      CAIRN_KIT: foreignKit,
      XDG_CACHE_HOME: join(home, "cache"),
      XDG_DATA_HOME: join(home, "data"),
      XDG_CONFIG_HOME: join(home, "config"),
    };
    process.chdir(cwd);
    process.env.HOME = home;
    // control: the valid documents are valid (a signed environment lockfile is made here from them)
    const lock = join(dir, "env.lock");
    const resolved = await runCli(
      [
        "resolve",
        profile,
        "--registry",
        ex.registry,
        "--trust",
        `keyfile://${registryPub}`,
        "--base",
        `rootfs:${ex.rootfs}`,
        "--sign",
        keys.keyPath,
        "--out",
        lock,
      ],
      env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.equal((await runCli(["profile", "validate", profile], env)).code, 0);
    assert.equal((await runCli(["manifest", "ingest", devcontainer], env)).code, 0);
    assert.equal((await runCli(["lock", "verify", lock, "--pub", keys.pubPath, "--registry", ex.registry], env)).code, 0);
    const paths = [spec, profile, devcontainer, lock, keys.keyPath, keys.pubPath, registryPub, ex.registry, ex.rootfs, foreign, empty, fifo, foreignKit];
    const seeds = [spec, profile, devcontainer, lock, keys.keyPath, keys.pubPath].map((p) => ({ name: p, bytes: readFileSync(p) }));
    let n = 0;
    const fresh = join(dir, "fresh");
    mkdirSync(fresh);
    const good: Record<string, string[]> = {
      "--pub": [keys.pubPath, registryPub],
      "--sign": [keys.keyPath],
      "--key": [keys.keyPath],
      "--trust": [`keyfile://${registryPub}`, `keyfile://${keys.pubPath}`],
      "--registry": [ex.registry],
      "--base": [`rootfs:${ex.rootfs}`, "host"],
      "--store": [join(home, "cairn", "store"), empty],
      "--runs": [join(home, "cairn", "runs")],
      "--name": ["fuzz"],
      "--version": ["1.0"],
      "--arch": ["x86_64", "noarch"],
      "--abi": ["none", "glibc"],
      "--max-age": ["0", "720h"],
      "--keep-lock": [lock],
      "--layer": ["x-1.0-none-noarch"],
      "--wait": ["0"],
      "--timeout": ["1"],
    };
    world = { dir, foreignKit, seeds, paths, good, env, fresh: () => join(fresh, `f${n++}`) };
  });

  it("control: the check catches an INTERNAL error, a stack trace and a non-JSON failure", () => {
    assert.match(violation([], { code: 1, stdout: "", stderr: "cairn: error [INTERNAL]: internal error (TypeError)\n" }) ?? "", /INTERNAL/);
    assert.match(violation([], { code: 1, stdout: "", stderr: "TypeError: x\n    at f (/a/b.ts:1:2)\n" }) ?? "", /stack/);
    assert.match(violation(["--json"], { code: 1, stdout: "oops", stderr: "" }) ?? "", /JSON/);
    assert.match(violation([], { code: 134, stdout: "", stderr: "" }) ?? "", /exit code/);
    assert.match(violation(["--json"], { code: 1, stdout: '{"error":{"code":"USAGE"}}', stderr: "" }) ?? "", /schema tag/);
    assert.equal(violation(["--json"], { code: 1, stdout: '{"schema":"cairn.cli.error/1","error":{"code":"USAGE"}}', stderr: "" }), undefined);
  });

  for (const leaf of LEAVES) {
    it(`cairn ${leaf.path.join(" ")}`, async (t) => {
      const seen = new Map<string, number>(); // outcome -> count, reported so a reader sees how deep the inputs reached
      await fc.assert(
        fc.asyncProperty(argvArb(leaf), async (make) => {
          const argv = make(world);
          const r = await runCli(argv, world.env);
          const bad = violation(argv, r);
          const outcome =
            r.code === 0
              ? "ok"
              : (/\[([A-Z_]+)\]|"code": "([A-Z_]+)"/
                  .exec(r.stdout + r.stderr)
                  ?.slice(1)
                  .find(Boolean) ?? `exit ${r.code}`);
          seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
          assert.equal(bad, undefined, `${bad} for cairn ${JSON.stringify(argv)}:\n${(r.stdout + r.stderr).slice(0, 2000)}`);
        }),
        { seed: SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
      );
      t.diagnostic(
        [...seen]
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k} ${n}`)
          .join(", "),
      );
    });
  }
});
