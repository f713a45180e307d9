#!/usr/bin/env bash
# The closing line of scripts/run-tests.sh, and its verdict:
#   test-summary.sh SPEC_LOG TAP_FILE NODE_STATUS
# Prints "N passed, N failed, N cancelled, N skipped" and exits non-zero when
# node failed, when no test passed, or when a test or suite skipped for any
# reason but the optional official vectors (../shared/vectors absent) or the
# optional Strata mirror (scripts/strata-peer.sh's source absent). A
# missing prerequisite that scripts/setup-host.sh installs is not a reason to
# skip (docs/testing.md); tests/cli/test-summary.test.ts checks this script.
set -euo pipefail
log="$1"
tap="$2"
status="$3"

count() { grep -E "^ℹ $1 [0-9]+" "$log" | tail -1 | awk '{print $3}'; }
passed="$(count pass || true)"
failed="$(count fail || true)"
cancelled="$(count cancelled || true)"
if [ -z "${passed:-}" ] || [ "$passed" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
# Skips, tests and suites alike, from the TAP stream ("ok N - name # SKIP reason").
skips="$(grep -E '^ *ok [0-9]+ - .* # SKIP' "$tap" || true)"
skipped=0
[ -n "$skips" ] && skipped="$(printf '%s\n' "$skips" | wc -l)"
unexpected="$(printf '%s\n' "$skips" | grep -v -E '# SKIP (official vectors|Strata mirror) not found at ' | grep -v '^$' || true)"
echo "${passed} passed, ${failed:-0} failed, ${cancelled:-0} cancelled, ${skipped} skipped"
if [ -n "$unexpected" ]; then
  echo "tests skipped for a reason other than the optional official vectors or Strata mirror (each must run):" >&2
  printf '%s\n' "$unexpected" | sed -E 's/^ *ok [0-9]+ - /  /' >&2
  [ "$status" -eq 0 ] && status=1
fi
exit "$status"
