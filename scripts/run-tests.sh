#!/usr/bin/env bash
# Runs every test file under tests/ with the Node test runner, after a type
# check. Fails when the type check fails, when any test fails or times out,
# when no test ran at all (Node 20 passes an empty run, so we count ourselves),
# or when a test skipped for any reason but the optional official vectors.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build the library that `import ... from "cairn"` resolves to (the tests
# import it by name), then type-check everything (sources, tests, benches),
# then check formatting and lint (Biome, with the checked-in biome.json).
npm run --silent build
npx tsc -p tsconfig.json --noEmit
npx biome check .

mapfile -t files < <(find tests -name '*.test.ts' -not -path '*/.generated/*' | LC_ALL=C sort)
if [ "${#files[@]}" -eq 0 ]; then
  echo "no test files found under tests/" >&2
  exit 1
fi

log="$(mktemp)"
tap="$(mktemp)"
# Every test's temporary files go under one directory of this run, removed at
# the end however the tests left them: processes the tests kill on purpose
# (SIGKILL mid-write) cannot clean up after themselves. The VM test kit is
# built once per machine, so it stays where it was (tests/vm/fixtures/kit.ts).
export CAIRN_TEST_KIT="${CAIRN_TEST_KIT:-${TMPDIR:-/tmp}/cairn-test-kit}"
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/cairn-test-run-XXXXXX")"
trap 'rm -f "$log" "$tap"; rm -rf "$run_tmp"' EXIT
export TMPDIR="$run_tmp"
# cairn's default data and cache directories (the verify memo key, a store no
# flag names) go under the run's directory too, never the account's home.
export XDG_DATA_HOME="$run_tmp/xdg-data" XDG_CACHE_HOME="$run_tmp/xdg-cache"
# A bound on every test file's process (Node 20 applies --test-timeout to each
# file run in its own process): a test that hangs fails the run instead of
# hanging it. Tests that may block (FIFOs, VMs) also bound themselves.
timeout_ms="${CAIRN_TEST_TIMEOUT_MS:-1800000}"
set +e
node --import tsx --test --test-timeout="$timeout_ms" \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  --test-concurrency="${CAIRN_TEST_CONCURRENCY:-2}" "${files[@]}" 2>&1 | tee "$log"
status="${PIPESTATUS[0]}"
set -e

bash scripts/test-summary.sh "$log" "$tap" "$status"
