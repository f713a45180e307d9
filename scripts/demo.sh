#!/usr/bin/env bash
# The README's main command: on a fresh machine, set everything up and run
# cairn's main job on the bundled examples, end to end:
#   1. environment manifests: sign a devcontainer.json, verify it offline
#   2. layered environments: build a signed toy registry, resolve a profile into
#      a signed lockfile, verify it offline, print its EnvironmentID
#   3. workloads: a static program as a binary workload and as an OCI image,
#      assembled into the content store and verified
#   4. runs: record the workload under QEMU record/replay, replay it twice
# Everything it writes goes under $CAIRN_DEMO_DIR (default: a new temp dir).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

bash scripts/setup-host.sh

demo="${CAIRN_DEMO_DIR:-$(mktemp -d -t cairn-demo.XXXXXX)}"
mkdir -p "$demo"
export CAIRN_HOME="$demo/home"
cairn() { node "$root/bin/cairn.js" "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "guest kit (QEMU, Debian cloud kernel, reproducible guest agent)"
cairn setup

step "1. environment manifest: devcontainer.json -> signed, content-addressed identity"
cairn keygen --out "$demo/me"
cairn manifest ingest examples/devcontainer/pinned/devcontainer.json --sign "$demo/me.key" --out "$demo/env.manifest.json"
cairn manifest verify "$demo/env.manifest.json" --pub "$demo/me.pub"
cairn manifest ingest examples/devcontainer/unpinned/devcontainer.json
set +e
cairn manifest diff examples/devcontainer/unpinned/devcontainer.json examples/devcontainer/pinned/devcontainer.json
[ $? -le 1 ] || exit 1
set -e

step "2. layered environment: profile -> signed lockfile -> offline verification"
node --import tsx examples/strata/build-registry.ts "$demo/strata"
cairn search py --registry "$demo/strata/registry"
cairn profile validate examples/strata/profile.yaml
cairn resolve examples/strata/profile.yaml \
  --registry "$demo/strata/registry" --trust "keyfile://$demo/strata/registry.pub" \
  --base "rootfs:$demo/strata/rootfs" --sign "$demo/strata/lock.key" --out "$demo/strata/env.lock"
cairn lock verify "$demo/strata/env.lock" --pub "$demo/strata/lock.pub" \
  --registry "$demo/strata/registry" --base "rootfs:$demo/strata/rootfs" --max-age 30d
cairn lock id "$demo/strata/env.lock"

step "3. workloads: a static executable and an OCI image layout -> canonical, locked workloads"
mkdir -p "$demo/workload"
cp examples/workload/hello.c examples/workload/hello.yaml "$demo/workload/"
gcc -static -no-pie -O2 -o "$demo/workload/hello" "$demo/workload/hello.c"
cairn workload assemble "$demo/workload/hello.yaml" --lock-out "$demo/workload/hello.lock.json"
cairn workload verify "$demo/workload/hello.lock.json"
node --import tsx examples/workload/make-image.ts "$demo/workload"
cairn workload assemble "$demo/workload/hello-oci.yaml" --lock-out "$demo/workload/hello-oci.lock.json"
cairn workload verify "$demo/workload/hello-oci.lock.json"          # under the assembly's verify memo: hashed, not re-derived
cairn workload verify "$demo/workload/hello-oci.lock.json" --full   # re-derived from the raw closure

step "4. deterministic run: record under QEMU, then replay twice"
cairn run "$demo/workload/hello.yaml" --runs "$demo/runs" --json > "$demo/run.json"
run_dir="$(node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(r.run_dir ?? r.run?.run_dir ?? "")' "$demo/run.json")"
cat "$demo/run.json"
cairn replay "$run_dir"
cairn replay "$run_dir"

step "done"
echo "everything is under $demo"
echo "replay again later with: CAIRN_HOME=$CAIRN_HOME node bin/cairn.js replay $run_dir"
