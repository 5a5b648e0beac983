#!/bin/bash
# Stop the local Slurm that tools/slurm-local-up.sh started: cancel its jobs, then stop slurmd,
# slurmctld and (if up started it) munged, each by its pid file under $SLURM_LOCAL_DIR/run, in that
# order. Nothing else is signalled. Idempotent: with nothing running it does nothing.
#   SLURM_LOCAL_DIR   the directory given to slurm-local-up.sh (default /tmp/slurm-local)
D=${SLURM_LOCAL_DIR:-/tmp/slurm-local}
export SLURM_CONF=$D/etc/slurm.conf

pid_of() { # pid_of NAME: the live daemon of our pid file, or nothing
  local f=$D/run/$1.pid p
  [ -s "$f" ] || return 1
  p=$(cat "$f")
  [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] && echo "$p"
}

# jobs of this cluster first, so that no job step outlives its slurmd (10 s at most)
# shellcheck source=tools/slurm-local-lib.sh
. "$(dirname "$0")/slurm-local-lib.sh"
pid_of slurmctld >/dev/null && [ -s "$SLURM_CONF" ] && slurm_local_cancel_jobs

for name in slurmd slurmctld munged; do
  if p=$(pid_of "$name"); then
    kill "$p"
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      kill -9 "$p"
      echo "slurm-local-down: killed $name ($p) after 10 s"
    else
      echo "slurm-local-down: stopped $name ($p)"
    fi
  fi
  rm -f "$D/run/$name.pid"
done
