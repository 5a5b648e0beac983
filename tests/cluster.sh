# Helpers of the emulated-cluster tests (sourced after tests/tap.sh; doc/cluster.md): skip where the
# machine cannot run the cluster, a private cluster removed at exit, launching on it, and what a
# cluster leaves on the machine.
cluster_up="$top_src/tools/cluster-local-up.sh"
cluster_down="$top_src/tools/cluster-local-down.sh"

# cluster_require: skip the whole test (with the reason) unless this machine allows root, network
# namespaces, bridges, veth pairs and the tbf qdisc
cluster_require() {
  cr_why=$("$cluster_up" --check 2>&1) || tap_skip_all "${cr_why#cluster-local-up: }"
}

# cluster_start ARGS...: bring up a cluster of this test in $tap_tmp/cluster (a name and subnet of
# its own, so concurrent runs coexist) with tools/cluster-local-up.sh ARGS; it is removed at exit.
# Sets CLUSTER_LOCAL_DIR and, when up succeeds, the cluster's variables (CLUSTER_NAME, ...).
# Output in $tap_tmp/up.txt; the status of up.
cluster_start() {
  export CLUSTER_LOCAL_DIR="$tap_tmp/cluster"
  trap '"$cluster_down" >/dev/null 2>&1; rm -rf "$tap_tmp"' EXIT
  trap 'exit 1' INT TERM
  "$cluster_up" "$@" >"$tap_tmp/up.txt" 2>&1 || return 1
  CLUSTER_NAME=$(sed -n 's/^export CLUSTER_NAME=//p' "$CLUSTER_LOCAL_DIR/cluster.env")
}

# on_cluster COMMAND...: run COMMAND with the cluster's environment (OpenMPI's launch agent and
# interfaces, SLURM_CONF), in a subshell so the caller's stays plain
on_cluster() { (. "$CLUSTER_LOCAL_DIR/cluster.env" && exec "$@"); }

# cluster_mpiexec SECONDS NP ARGS...: mpiexec on the cluster's hostfile (its slots fill node 0 first)
cluster_mpiexec() {
  cm_t=$1 cm_np=$2
  shift 2
  on_cluster sh -c 't=$1 m=$2 n=$3; shift 3; exec timeout "$t" "$m" --hostfile "$CLUSTER_HOSTFILE" -n "$n" "$@"' sh \
    "$cm_t" "$mpiexec" "$cm_np" "$@"
}

# link_bytes I: bytes through node I's link so far, both directions (kernel counters of its veth on
# this side of the bridge: what crossed between node I and the rest of the cluster)
link_bytes() {
  lb=/sys/class/net/${CLUSTER_NAME}n$1/statistics
  echo $(($(cat "$lb/rx_bytes") + $(cat "$lb/tx_bytes")))
}

# node_pids I COMM: pids of the processes named COMM in node I's namespace
node_pids() {
  for np_pid in $(ip netns pids "$CLUSTER_NAME-n$1" 2>/dev/null); do
    [ "$(cat "/proc/$np_pid/comm" 2>/dev/null)" = "$2" ] && echo "$np_pid"
  done
}

# ranks_gone: no surge-train process on either node (the killed-rank tests wait on it: the launcher
# can return while the kernel is still ending the ranks it killed)
ranks_gone() { [ -z "$(node_pids 0 surge-train; node_pids 1 surge-train)" ]; }

# cluster_inodes NAME: the inode numbers of cluster NAME's namespaces (a process is in one of them
# when its /proc/PID/ns/net names the inode), one a line
cluster_inodes() {
  for ci_ns in $(ip netns list | awk '{ print $1 }' | grep "^$1-"); do stat -L -c %i "/run/netns/$ci_ns"; done
}

# cluster_objects NAME INODES DIR: what cluster NAME (state directory DIR) has on this machine, one
# line each: its namespaces, links (this side), qdiscs (this side), mounts, and the processes in its
# namespaces (by the namespace inodes listed in the file INODES, so they are found after the
# namespaces lost their names)
cluster_objects() {
  awk -v d="$3/" '$5 ~ "^" d { print "mount " $5 }' /proc/self/mountinfo
  ip netns list | awk '{ print "namespace " $1 }' | grep " $1-"
  ip -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print "link " $2 }' | grep " $1"
  tc qdisc show | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") print "qdisc " $2 " " $(i + 1) }' | grep " $1"
  if [ -s "$2" ]; then
    for co_p in /proc/[0-9]*; do
      co_ino=$(readlink "$co_p/ns/net" 2>/dev/null | tr -dc 0-9)
      [ -n "$co_ino" ] && grep -qx "$co_ino" "$2" && echo "process ${co_p#/proc/} $(cat "$co_p/comm" 2>/dev/null)"
    done
  fi
  return 0
}
