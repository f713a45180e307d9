#!/usr/bin/env bash
# Installs what cairn's tests and examples need on a fresh Debian 12 machine:
# Node dependencies (npm ci) and Debian packages. Idempotent; needs root (or
# sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the project uses: gcc for static fixtures and the guest agent,
# qemu for runs (qemu-utils: qemu-img for the qcow2 of run.checkpoints, issue 35), umoci as the OCI peer in tests and benches, python3 for the
# second cairn.fs/1 implementation (tests/tree/fs-digest-python.test.ts), strace
# to observe fsyncs from outside (tests/workload/durability.test.ts), erofs-utils
# as the independent reader of cairn's EROFS root disks (tests/vm/erofs.test.ts),
# mmdebstrap to build a Debian root for bench/root-disk (issue 9), python3-pip to run
# the pip installer a lock export writes (tests/strata/export-packages.test.ts), socat
# as the connector QEMU's guestfwd runs per guest connection of a network run (issue 14),
# golang-go and golang-gopkg-yaml.v3-dev to build Strata's own parser as the peer
# (scripts/strata-peer.sh, tests/strata/strata-peer.test.ts; issue 32), slurmctld, slurmd,
# slurm-client and munge for the throwaway Slurm cluster of the Slurm executor's tests
# (scripts/slurm-cluster.sh, tests/fleet/slurm-cluster.ts; issue 34), chromium, the headless
# browser the tests open the HTML pages in (tests/helpers/browser.ts; issue 36), zsh and fish to run the
# completion scripts in their own shells and groff-base and man-db to render the man pages
# (tests/cli/completion.test.ts, tests/cli/man-pages.test.ts; issue 36).
PACKAGES=(gcc libc6-dev qemu-system-x86 qemu-utils umoci python3 python3-pip strace erofs-utils mmdebstrap lmod zip docker-registry skopeo apache2-utils time socat golang-go golang-gopkg-yaml.v3-dev slurmctld slurmd slurm-client munge chromium zsh fish groff-base man-db)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund >&2
fi
