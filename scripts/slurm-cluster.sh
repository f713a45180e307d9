#!/usr/bin/env bash
# A throwaway single-host Slurm cluster on 127.0.0.1, for trying
# `cairn campaign run --executor slurm` (issue 34) and for the tests
# (tests/fleet/slurm-cluster.ts writes its configuration with `config`).
# Everything lives under one directory: a munge key and socket, slurm.conf,
# state, spool and logs; nothing under /etc is read or written (the daemons
# and the client commands find the cluster through SLURM_CONF, munged through
# --socket and --key-file).
#
#   bash scripts/slurm-cluster.sh start [DIR]   start it; prints the line that points Slurm's commands at it
#   bash scripts/slurm-cluster.sh stop [DIR]    wait for its queue to drain, `scontrol shutdown`, stop munged, remove DIR
#   bash scripts/slurm-cluster.sh config DIR [CTLD_PORT SLURMD_PORT]   only write the files (the tests start the daemons)
#
# DIR defaults to /tmp/cairn-slurm-$(id -un). munged refuses a socket whose
# directory, or any directory above it, others cannot traverse, so DIR must
# sit under world-executable directories (/tmp is). Installs slurmctld,
# slurmd, slurm-client and munge from Debian when missing (needs root or sudo).
set -euo pipefail

cmd="${1:-}"
dir="${2:-/tmp/cairn-slurm-$(id -un)}"

install_missing() {
  local missing=()
  for p in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "installing Debian packages: ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

free_port() {
  node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# Writes DIR's files: the munge key (0600) in a 0711 directory beside the
# socket it will hold, slurm.conf sized to this host, empty state/spool/log.
write_config() {
  local d="$1" ctld_port="$2" slurmd_port="$3"
  local p="$d"
  while [ "$p" != "/" ]; do
    p="$(dirname "$p")"
    if [ "$(( $(stat -c '%a' "$p" | sed 's/^[0-7]*\([0-7]\)$/\1/') & 1 ))" -eq 0 ]; then
      echo "slurm-cluster: $p is not world-executable; munged refuses a socket below it (choose a DIR under /tmp)" >&2
      exit 1
    fi
  done
  mkdir -p "$d"
  chmod 0711 "$d"
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log"
  chmod 0711 "$d/munge"
  chmod 0700 "$d/state" "$d/spool" "$d/log"
  if [ ! -s "$d/munge/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$d/munge/munge.key")
  fi
  chmod 0600 "$d/munge/munge.key"
  local user cpus mem
  user="$(id -un)"
  cpus="$(nproc)"
  # slurmd refuses (drains) a node configured with more memory than it has: claim 90%.
  mem="$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)"
  cat >"$d/slurm.conf.tmp" <<EOF
# A throwaway single-host cluster written by cairn's scripts/slurm-cluster.sh.
ClusterName=cairn
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
# cred_expire is also how long a requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$d/munge/munge.socket,cred_expire=5
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# Schedule at once on submit and every second (a requeued job becomes eligible between events).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1
# A node an administrator set DOWN stays down; one that was only unreachable comes back.
ReturnToService=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cairn Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$d/slurm.conf.tmp" "$d/slurm.conf"
}

case "$cmd" in
  config)
    [ $# -ge 2 ] || { echo "usage: $0 config DIR [CTLD_PORT SLURMD_PORT]" >&2; exit 2; }
    write_config "$dir" "${3:-$(free_port)}" "${4:-$(free_port)}"
    echo "$dir/slurm.conf"
    ;;
  start)
    install_missing
    if [ -e "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
      echo "slurm-cluster: already running in $dir" >&2
    else
      write_config "$dir" "$(free_port)" "$(free_port)"
      export SLURM_CONF="$dir/slurm.conf"
      munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"
      setsid slurmctld -D >"$dir/log/slurmctld.out" 2>&1 </dev/null &
      setsid slurmd -D -N localhost >"$dir/log/slurmd.out" 2>&1 </dev/null &
      # Up when the node reports idle (measured: 1-2 s); give up after a minute.
      for _ in $(seq 1 300); do
        if [ "$(sinfo -h -n localhost -o '%T' 2>/dev/null)" = "idle" ]; then break; fi
        sleep 0.2
      done
      if [ "$(sinfo -h -n localhost -o '%T' 2>/dev/null)" != "idle" ]; then
        echo "slurm-cluster: the node did not come up; see $dir/log/" >&2
        exit 1
      fi
    fi
    echo "export SLURM_CONF=$dir/slurm.conf"
    ;;
  stop)
    export SLURM_CONF="$dir/slurm.conf"
    if [ -e "$SLURM_CONF" ]; then
      # Drain: let queued and running jobs end (at most 10 minutes), then shut down.
      for _ in $(seq 1 3000); do
        [ -z "$(squeue -h -o '%i' 2>/dev/null)" ] && break
        sleep 0.2
      done
      # The daemons' pids, read before the shutdown removes the pid files.
      pids=""
      for f in "$dir/slurmctld.pid" "$dir/slurmd.pid"; do
        [ -s "$f" ] && pids="$pids $(cat "$f")"
      done
      scontrol shutdown 2>/dev/null || true
      # slurmctld tells slurmd to stop too; wait (at most 10 s), then end what is left of them.
      for _ in $(seq 1 100); do
        alive=""
        for p in $pids; do
          # alive and not a zombie (state Z waits only for its parent to reap it)
          st="$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null || true)"
          [ -n "$st" ] && [ "$st" != "Z" ] && alive="$alive $p"
        done
        [ -z "$alive" ] && break
        sleep 0.1
      done
      for p in $alive; do kill "$p" 2>/dev/null || true; done
      munged -s --socket="$dir/munge/munge.socket" 2>/dev/null || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start [DIR] | stop [DIR] | config DIR [CTLD_PORT SLURMD_PORT]" >&2
    exit 2
    ;;
esac
