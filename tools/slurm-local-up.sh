#!/bin/bash
# Start a one-node Slurm "cluster" on this machine (Debian 12, Slurm 22.05, PMIx), as root, for
# trying the job scripts in jobscripts/ and for tests/test_slurm.sh. Idempotent: daemons already
# running from the same directory are left alone. Stop it with tools/slurm-local-down.sh, which stops
# only what this script started (by the pid files under $SLURM_LOCAL_DIR/run).
#
#   tools/slurm-local-up.sh                 then: export SLURM_CONF=/tmp/slurm-local/etc/slurm.conf
#
# Environment:
#   SLURM_LOCAL_DIR   config, state, spool, logs, pid files (default /tmp/slurm-local)
#   SLURM_LOCAL_PORT  slurmctld port; slurmd listens on the next one (default 6817)
#   NCPUS             CPUs the node advertises, may exceed the real cores (default 8); a job
#                     asking for more never starts
#   AUTH              munge or none (default munge; munged is started if none answers)
#   CRED_EXPIRE       seconds a requeued job waits before it may start again, which is also the
#                     job step credential lifetime (default 120 as in Slurm; at least 5)
# Exit status: 0 when the node is idle and takes jobs, 1 otherwise (the logs are named).
set -euo pipefail
D=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
PORT=${SLURM_LOCAL_PORT:-6817}
NCPUS=${NCPUS:-8}
AUTH=${AUTH:-munge}
CRED_EXPIRE=${CRED_EXPIRE:-120}
NODE=$(hostname -s)
case $CRED_EXPIRE in ''|*[!0-9]*) CRED_EXPIRE=0 ;; esac
export SLURM_CONF=$D/etc/slurm.conf

die() { echo "slurm-local-up: $*" >&2; exit 1; }
[ "$CRED_EXPIRE" -ge 5 ] || die "CRED_EXPIRE must be a number of seconds, at least 5 (slurmd refuses less)"
# shellcheck source=tools/slurm-local-lib.sh
. "$(dirname "$0")/slurm-local-lib.sh"
slurm_local_check_tools die

# running NAME: the daemon of our pid file is alive (a pid reused by another program does not count)
running() {
  local f=$D/run/$1.pid
  [ -s "$f" ] && [ "$(cat "/proc/$(cat "$f")/comm" 2>/dev/null)" = "$1" ]
}

mkdir -p "$D"/{etc,state,spool,log,run}
if ! running slurmctld || ! running slurmd; then
  cat >"$SLURM_CONF" <<CONF
# written by tools/slurm-local-up.sh
ClusterName=surgelocal
$(slurm_local_conf_common "$AUTH" "$CRED_EXPIRE")
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$NCPUS Sockets=1 CoresPerSocket=$NCPUS ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONF
fi

if [ "$AUTH" = munge ]; then slurm_local_munge "$D/run/munged.pid" die; fi # then ours to stop

running slurmctld || slurmctld || die "slurmctld did not start: $D/log/slurmctld.log"
running slurmd || slurmd || die "slurmd did not start: $D/log/slurmd.log"

# the node reports idle within a few seconds; 30 s at most
state=$(slurm_local_wait_idle 1 30) ||
  die "node state '$state' after 30 s: see $D/log/slurmctld.log and $D/log/slurmd.log"
echo "slurm-local-up: node $NODE idle, $NCPUS CPUs, slurmctld on port $PORT"
echo "export SLURM_CONF=$SLURM_CONF"
