# Shared by the local Slurm scripts (bash, sourced): tools/slurm-local-up.sh (one node on this
# machine) and tools/cluster-local-up.sh (one node per emulated node namespace). Each writes its own
# slurm.conf from slurm_local_conf_common plus its host and node lines, and starts its own daemons.

# slurm_local_check_tools DIE: root and the Slurm programs are there, else DIE "reason"
slurm_local_check_tools() {
  [ "$(id -u)" = 0 ] || "$1" "run as root (slurmd starts jobs as their users)"
  local p
  for p in slurmctld slurmd sinfo squeue scancel; do
    command -v $p >/dev/null || "$1" "Slurm is not installed, no $p (tools/install-deps.sh installs it)"
  done
}

# slurm_local_conf_common AUTH CRED_EXPIRE: the slurm.conf lines every local cluster shares
# (auth/munge or auth/none, root daemons, PMIx as the default MPI, the fast scheduler settings).
# CRED_EXPIRE: seconds a requeued job waits before it may start again (at least 5).
slurm_local_conf_common() {
  cat <<CONF
# job ids start at a number of this instance, so two local clusters on one machine do not reuse the
# same ids (a multiplexed job's default channel, slurm-JOBID, names a segment in /dev/shm)
FirstJobId=$(( ($$ % 90000 + 10000) * 10 ))
AuthType=auth/$1
CredType=cred/$1
AuthInfo=cred_expire=$2
SlurmUser=root
SlurmdUser=root
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
SwitchType=switch/none
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
CONF
}

# slurm_local_munge PIDFILE DIE: with AUTH=munge, start munged when none answers and copy its pid to
# PIDFILE (then it is ours to stop); a munged that already answers is left alone
slurm_local_munge() {
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
  if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || "$2" "munged does not answer (see /var/log/munge/munged.log)"
  cp /run/munge/munged.pid "$1"
}

# slurm_local_wait_idle COUNT SECONDS: until sinfo (of $SLURM_CONF) lists COUNT nodes, all idle;
# status 1 after SECONDS. Prints the states last seen.
slurm_local_wait_idle() {
  local states= i
  for i in $(seq $(($2 * 5))); do
    states=$(sinfo -h -N -o %T 2>/dev/null | sort | uniq -c | awk '{ printf "%s%d %s", s, $1, $2; s = ", " }')
    [ "$states" = "$1 idle" ] && { echo "$states"; return 0; }
    sleep 0.2
  done
  echo "${states:-no answer}"
  return 1
}

# slurm_local_cancel_jobs: cancel every job of the cluster of $SLURM_CONF and wait until the queue
# is empty (10 s at most), so that no job step outlives its slurmd
slurm_local_cancel_jobs() {
  local jobs
  jobs=$(squeue -h -o %A 2>/dev/null)
  [ -n "$jobs" ] || return 0
  # shellcheck disable=SC2086  # one job id per word
  scancel $jobs 2>/dev/null
  for _ in $(seq 100); do [ -z "$(squeue -h -o %A 2>/dev/null)" ] && break; sleep 0.1; done
}
