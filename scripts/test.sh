#!/usr/bin/env bash
# The README's test command: set up a fresh machine, then run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-host.sh
npm test
