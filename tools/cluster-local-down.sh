#!/bin/bash
# Remove the emulated cluster tools/cluster-local-up.sh started, exactly what its record
# (DIR/created) names and nothing else, also when up was killed half way: every process in the
# cluster's namespaces (daemons, MPI daemons, ranks, job steps) gets SIGTERM, then SIGKILL after
# 5 s; then the namespaces (with their ends of the links and their qdiscs), the links on this side,
# the nodes' mount namespaces (with their /dev/shm), a munged that up started, and the state
# directory go. Idempotent: with nothing recorded it does
# nothing.
#
#   tools/cluster-local-down.sh [--dir DIR] [--keep-logs]
#
#   --dir DIR      the cluster's state directory (default $CLUSTER_LOCAL_DIR, else /tmp/surge-cluster)
#   --keep-logs    move the Slurm logs to DIR.logs before the directory is removed
D=${CLUSTER_LOCAL_DIR:-/tmp/surge-cluster}
keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --dir) D=${2-}; shift ;;
    --keep-logs) keep=1 ;;
    --help|-h) sed -n '2,/^D=/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster-local-down: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
case $D in /*) ;; *) D=$(pwd)/$D ;; esac
journal=$D/created
if [ ! -f "$journal" ]; then
  rmdir "$D" 2>/dev/null # up may have died between making the directory and writing the record
  echo "cluster-local-down: nothing recorded in $D"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "cluster-local-down: run as root" >&2; exit 1; }
mapfile -t netns < <(awk '$1 == "netns" { print $2 }' "$journal")
mapfile -t links < <(awk '$1 == "link" { print $2 }' "$journal")
mapfile -t mounts < <(awk '$1 == "mount" { print $2 }' "$journal")

# pids_in: every process in one of our namespaces
pids_in() {
  local ns
  for ns in "${netns[@]}"; do [ -e "/run/netns/$ns" ] && ip netns pids "$ns" 2>/dev/null; done
}
left=$(pids_in)
if [ -n "$left" ]; then
  # shellcheck disable=SC2086  # one pid per word
  kill -TERM $left 2>/dev/null
  for _ in $(seq 50); do left=$(pids_in); [ -z "$left" ] && break; sleep 0.1; done
  if [ -n "$left" ]; then
    echo "cluster-local-down: killing $(echo "$left" | wc -w) processes still running after 5 s"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    for _ in $(seq 50); do left=$(pids_in); [ -z "$left" ] && break; sleep 0.1; done
  fi
fi
[ -z "$left" ] || echo "cluster-local-down: processes $left do not end" >&2

status=0
for ((i = ${#netns[@]} - 1; i >= 0; i--)); do
  ns=${netns[i]}
  [ -e "/run/netns/$ns" ] || continue
  ip netns del "$ns" || status=1
done
for ((i = ${#links[@]} - 1; i >= 0; i--)); do
  l=${links[i]}
  # a veth goes with its peer's namespace, which the kernel tears down in the background
  ip link del "$l" 2>/dev/null || ! ip link show "$l" >/dev/null 2>&1 || status=1
done
# wait (5 s at most) until the kernel has torn them down
gone() { local l; for l in "${links[@]}"; do ! ip link show "$l" >/dev/null 2>&1 || return 1; done; }
for _ in $(seq 50); do gone && break; sleep 0.1; done
gone || { echo "cluster-local-down: links still there after 5 s" >&2; status=1; }
# the nodes' mount namespaces (their /dev/shm goes with the last process in them), then the
# private mount that held them
mounted() { grep -qF " $1 " /proc/self/mountinfo; }
for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
  m=${mounts[i]}
  mounted "$m" || continue
  umount "$m" || umount -l "$m" || status=1
done
m=$D/slurm/run/munged.pid
if [ -s "$m" ] && [ "$(cat "/proc/$(cat "$m")/comm" 2>/dev/null)" = munged ]; then
  kill "$(cat "$m")"
fi
if [ "$status" = 0 ]; then
  if [ "$keep" = 1 ] && [ -d "$D/slurm/log" ]; then
    rm -rf "$D.logs" && mv "$D/slurm/log" "$D.logs" && echo "cluster-local-down: Slurm logs in $D.logs"
  fi
  grep -qxF "dir $D" "$journal" && rm -rf "$D"
  echo "cluster-local-down: removed ${#netns[@]} namespaces, ${#links[@]} links and ${#mounts[@]} mounts of $D"
else
  echo "cluster-local-down: some objects could not be removed; the record stays in $journal" >&2
fi
exit $status
