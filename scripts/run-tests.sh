#!/usr/bin/env bash
# Runs every test file under tests/ with the Node test runner, after a type
# check. Fails when the type check fails, when any test fails, or when no test
# ran at all (Node 20 passes an empty run, so we count ourselves).
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
trap 'rm -f "$log"' EXIT
set +e
node --import tsx --test --test-reporter=spec --test-concurrency="${CAIRN_TEST_CONCURRENCY:-2}" "${files[@]}" 2>&1 | tee "$log"
status="${PIPESTATUS[0]}"
set -e

passed="$(grep -E '^ℹ pass [0-9]+' "$log" | tail -1 | awk '{print $3}')"
failed="$(grep -E '^ℹ fail [0-9]+' "$log" | tail -1 | awk '{print $3}')"
if [ -z "${passed:-}" ] || [ "$passed" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
echo "${passed} passed, ${failed:-0} failed"
exit "$status"
