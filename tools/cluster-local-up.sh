#!/bin/bash
# Emulate a cluster of N nodes on this machine (doc/cluster.md): each node is a Linux network
# namespace with its own address, joined to one bridge through a veth pair, and a mount namespace
# with its own /dev/shm; both ends of every node's veth are shaped by a token-bucket filter (tc
# tbf), so each node has a full-duplex link of the given rate. Processes on one node talk through
# shared memory, processes on different nodes over TCP on the shaped links (all share this
# machine's kernel, CPUs, file systems and pid space). With --slurm, a Slurm whose nodes are the
# namespaces: slurmctld in a head namespace, one slurmd per node.
#
#   tools/cluster-local-up.sh [--nodes N] [--link RATE] [--slurm] ...     then: . DIR/cluster.env
#
# It writes down every object before it creates it (DIR/created), so tools/cluster-local-down.sh
# removes exactly what it started, also after this script was killed half way. Run again on a
# running cluster it only reshapes the links when --link, --burst or --latency is given, and starts
# Slurm when asked and not running.
#
# Options:
#   --nodes N        emulated nodes (default 2, at most 32)
#   --link RATE      rate of every node's link in tc's units: 100mbit, 1gbit, 10gbit, ... or none
#                    (unshaped) (default 1gbit)
#   --burst SIZE     token bucket size (default: 1 ms at the link rate, at least 64kb)
#   --latency TIME   how long a packet may wait in the bucket's queue before it is dropped (default 50ms)
#   --slots N        MPI slots per node in the hostfile (default 2)
#   --slurm          also start Slurm: a slurmctld and a slurmd per node (env: AUTH=none|munge,
#                    default none; NCPUS per node, default 8; CRED_EXPIRE, default 120; KILL_WAIT,
#                    seconds from SIGTERM to SIGKILL when a job step ends, default 30 as in Slurm)
#   --name ID        prefix of every name (namespaces, links, hosts): a letter and 1-7 letters or
#                    digits (default: derived from DIR, so two directories give two clusters)
#   --dir DIR        state directory (default $CLUSTER_LOCAL_DIR, else /tmp/surge-cluster)
#   --check          only say whether this machine can run the cluster (root, network and mount
#                    namespaces, veth, bridge, tbf): exit 0, or 1 with the reason
# Exit status: 0 when the nodes (and Slurm) are up, 2 on bad options, 1 otherwise.
set -euo pipefail
tools=$(cd "$(dirname "$0")" && pwd)
die() { echo "cluster-local-up: $*" >&2; exit 1; }
bad() { echo "cluster-local-up: $*" >&2; echo "usage: $0 [--nodes N] [--link RATE] [--slurm] (--help)" >&2; exit 2; }

nodes=2 link=1gbit burst="" latency=50ms slots=2 slurm=0 name="" D=${CLUSTER_LOCAL_DIR:-/tmp/surge-cluster}
nodes_given=0 check=0 shape_given=0
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=${2-}; nodes_given=1; shift ;;
    --link) link=${2-}; shape_given=1; shift ;;
    --burst) burst=${2-}; shape_given=1; shift ;;
    --latency) latency=${2-}; shape_given=1; shift ;;
    --slots) slots=${2-}; shift ;;
    --name) name=${2-}; shift ;;
    --dir) D=${2-}; shift ;;
    --slurm) slurm=1 ;;
    --check) check=1 ;;
    --help|-h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bad "unknown option '$1'" ;;
  esac
  shift
done
[[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 32 ] || bad "--nodes '$nodes': a number from 1 to 32"
[[ $slots =~ ^[0-9]+$ ]] && [ "$slots" -ge 1 ] || bad "--slots '$slots': a number of at least 1"
[[ $latency =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] || bad "--latency '$latency': a time such as 50ms"
[ -z "$burst" ] || [[ $burst =~ ^[0-9]+(b|kb|mb)?$ ]] || bad "--burst '$burst': a size such as 64kb"
# link_bps RATE: the rate in bits per second (tc's units: k, m, g, t are powers of 1000)
link_bps() {
  [[ $1 =~ ^([0-9]+(\.[0-9]+)?)(bit|kbit|mbit|gbit|tbit)$ ]] || return 1
  local mult
  case ${BASH_REMATCH[3]} in bit) mult=1 ;; kbit) mult=1e3 ;; mbit) mult=1e6 ;; gbit) mult=1e9 ;; tbit) mult=1e12 ;; esac
  awk -v v="${BASH_REMATCH[1]}" -v m="$mult" 'BEGIN { printf "%.0f\n", v * m }'
}
if [ "$link" = none ]; then bps=0; else bps=$(link_bps "$link") || bad "--link '$link': a rate such as 100mbit, 1gbit, 10gbit, or none"; fi
[ "$bps" = 0 ] || [ "$bps" -ge 1000000 ] || bad "--link '$link': at least 1mbit"
# 1 ms of traffic at the link rate, at least 64 KiB (a TSO segment passes the bucket whole)
[ -n "$burst" ] || burst=$(awk -v b="$bps" 'BEGIN { x = b / 8 / 1000; if (x < 65536) x = 65536; printf "%d\n", x }')
case $D in /*) ;; *) D=$(pwd)/$D ;; esac
[[ ! $D =~ [[:space:]] ]] || bad "--dir '$D': a path without spaces"
if [ -z "$name" ]; then
  name=sc$(printf %s "$D" | md5sum | cut -c1-6)
else
  [[ $name =~ ^[a-z][a-z0-9]{1,7}$ ]] || bad "--name '$name': a letter and 1 to 7 letters or digits"
fi

[ "$(id -u)" = 0 ] || die "run as root (network namespaces and tc need it)"
for p in ip tc unshare nsenter flock md5sum; do command -v $p >/dev/null || die "$p is missing (Debian: iproute2, util-linux)"; done
if [ "$check" = 1 ]; then
  # everything the cluster needs, tried in a throwaway namespace that vanishes with its shell
  unshare --net --uts true 2>/dev/null || die "this machine does not allow network or UTS namespaces"
  unshare --net /bin/sh -c 'ip link add b0 type bridge && ip link add v0 type veth peer name v1 &&
    ip link set v0 master b0 && tc qdisc add dev v0 root tbf rate 1gbit burst 128kb latency 50ms' >/dev/null 2>&1 ||
    die "no bridge, veth or tbf qdisc in this kernel (modules bridge, veth, sch_tbf)"
  unshare --mount --propagation private /bin/sh -c 'mount -t tmpfs shm /dev/shm' >/dev/null 2>&1 ||
    die "this machine does not allow mount namespaces with a tmpfs of their own"
  echo "cluster-local-up: this machine can run the emulated cluster"
  exit 0
fi
journal=$D/created
env_file=$D/cluster.env
ns_of() { echo "$name-n$1"; }         # node i's namespace, also its host name and Slurm node name
veth_of() { echo "${name}n$1"; }      # node i's link, this side of the bridge; eth0 on the node's side
bridge=${name}br
head_ns=$name-head head_veth=${name}hd

# shape DEV [NS]: the tbf of one end of a link (replaced when it exists)
shape() {
  local n=()
  [ -z "${2-}" ] || n=(-n "$2")
  if [ "$bps" = 0 ]; then
    tc "${n[@]}" qdisc del dev "$1" root 2>/dev/null || true
  else
    tc "${n[@]}" qdisc replace dev "$1" root tbf rate "$link" burst "$burst" latency "$latency"
  fi
}
shape_all() {
  local i
  for i in $(seq 0 $((nodes - 1))); do
    shape "$(veth_of "$i")"              # towards the node
    shape eth0 "$(ns_of "$i")"           # from the node
  done
}
# in_ns NS CMD...: run CMD on a node (or the head) under its host name
in_ns() { CLUSTER_LOCAL_DIR=$D "$tools/cluster-local-exec.sh" "$@"; }
slurm_up() { [ -s "$D/slurm/etc/slurm.conf" ] && [ -n "$(ip netns pids "$head_ns" 2>/dev/null)" ]; }

# record WORDS...: write down an object before it is created (down removes what exists of it)
record() { echo "$*" >>"$journal"; }
# add_node NS VETH ADDR [shm]: a namespace joined to the bridge; with shm, a mount namespace with its
# own /dev/shm too (a file under $D/ns, a mount of private propagation made first)
add_node() {
  record netns "$1"
  ip netns add "$1"
  record link "$2"
  ip link add "$2" type veth peer name eth0 netns "$1"
  ip link set "$2" master "$bridge" up
  ip -n "$1" addr add "$3/24" dev eth0
  ip -n "$1" link set eth0 up
  ip -n "$1" link set lo up
  [ "${4-}" = shm ] || return 0
  touch "$D/ns/$1.mnt"
  record mount "$D/ns/$1.mnt"
  unshare --mount="$D/ns/$1.mnt" --propagation private /bin/sh -c 'mount -t tmpfs -o mode=1777 shm /dev/shm'
}

# --- a running cluster: reshape, maybe start Slurm
if [ -f "$journal" ]; then
  grep -qx complete "$journal" ||
    die "$D holds a cluster whose start did not finish: run tools/cluster-local-down.sh --dir $D first"
  . "$env_file"
  [ "$nodes_given" = 0 ] || [ "$nodes" = "$CLUSTER_NODES" ] ||
    die "the cluster in $D has $CLUSTER_NODES nodes, not $nodes: run tools/cluster-local-down.sh --dir $D first"
  nodes=$CLUSTER_NODES name=$CLUSTER_NAME
  bridge=${name}br head_ns=$name-head head_veth=${name}hd
  if [ "$shape_given" = 1 ]; then
    shape_all
    sed -i "s/^export CLUSTER_LINK=.*/export CLUSTER_LINK=$link/; s/^export CLUSTER_LINK_BPS=.*/export CLUSTER_LINK_BPS=$bps/
      s/^export CLUSTER_LINK_BURST=.*/export CLUSTER_LINK_BURST=$burst/; s/^export CLUSTER_LINK_LATENCY=.*/export CLUSTER_LINK_LATENCY=$latency/" "$env_file"
    echo "cluster-local-up: $nodes nodes of cluster $name reshaped: link $link (burst $burst, latency $latency)"
  else
    link=$CLUSTER_LINK burst=$CLUSTER_LINK_BURST latency=$CLUSTER_LINK_LATENCY
    echo "cluster-local-up: $nodes nodes of cluster $name are up, link $link"
  fi
  if [ "$slurm" = 0 ] || slurm_up; then echo ". $env_file"; exit 0; fi
  sed -i '/^complete$/d' "$journal" # Slurm is started below: not complete until it is
  subnet=$CLUSTER_SUBNET
else
  # --- a new cluster
  if [ -e "$D" ] && [ -n "$(ls -A "$D" 2>/dev/null)" ]; then
    die "$D exists and is not empty, and is not a cluster of this script (choose another --dir)"
  fi
  for i in $(seq 0 $((nodes - 1))); do
    [ ! -e "/run/netns/$(ns_of "$i")" ] && ! ip link show "$(veth_of "$i")" >/dev/null 2>&1 ||
      die "namespace $(ns_of "$i") or link $(veth_of "$i") exists already: another cluster has the name $name (use --name or --dir)"
  done
  ! ip link show "$bridge" >/dev/null 2>&1 || die "link $bridge exists already: another cluster has the name $name"
  mkdir -p "$D"
  echo "dir $D" >"$journal"


  # the subnet: the first free 10.213.X.0/24 from X = a number of the name; chosen and taken under a
  # lock, so two clusters started at once get two subnets
  exec 9</run
  flock 9
  x0=$((0x$(printf %s "$name" | md5sum | cut -c1-2)))
  subnet=
  for k in $(seq 0 255); do
    x=$(((x0 + k) % 256))
    if ! ip -4 -o addr show | grep -qF " 10.213.$x." && ! ip -4 route show | grep -q "^10\.213\.$x\."; then
      subnet=10.213.$x
      break
    fi
  done
  [ -n "$subnet" ] || die "no free subnet 10.213.X.0/24 left"
  record link "$bridge"
  ip link add "$bridge" type bridge forward_delay 0
  ip addr add "$subnet.254/24" dev "$bridge" # this machine's own address on the cluster network
  ip link set "$bridge" up
  flock -u 9
  exec 9<&-

  # every node's own /dev/shm, as on separate machines: a persistent mount namespace per node (a
  # file under $D/ns, which must be a mount of private propagation) with a tmpfs on /dev/shm, so
  # shared memory (OpenMPI's, multiplexing's) never reaches another node, yet every job on a node
  # shares it
  mkdir -p "$D/ns"
  record mount "$D/ns"
  mount --bind "$D/ns" "$D/ns"
  mount --make-private "$D/ns"

  for i in $(seq 0 $((nodes - 1))); do add_node "$(ns_of "$i")" "$(veth_of "$i")" "$subnet.$((i + 1))" shm; done
  shape_all

  hostfile=$D/hostfile
  for i in $(seq 0 $((nodes - 1))); do echo "$(ns_of "$i") slots=$slots"; done >"$hostfile"
  cat >"$env_file" <<ENV
# written by tools/cluster-local-up.sh: source it to launch on the emulated cluster
export CLUSTER_LOCAL_DIR=$D
export CLUSTER_NAME=$name
export CLUSTER_NODES=$nodes
export CLUSTER_SUBNET=$subnet
export CLUSTER_HOSTFILE=$hostfile
export CLUSTER_LINK=$link
export CLUSTER_LINK_BPS=$bps
export CLUSTER_LINK_BURST=$burst
export CLUSTER_LINK_LATENCY=$latency
# mpiexec runs on the nodes of the hostfile (--hostfile overrides it); its daemons enter the nodes
# through the launch agent, and OpenMPI's out-of-band and TCP traffic stays on the cluster network
export OMPI_MCA_orte_default_hostfile=$hostfile
export OMPI_MCA_plm_rsh_agent=$tools/cluster-local-exec.sh
export OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include=$subnet.0/24
export OMPI_MCA_btl_tcp_if_include=$subnet.0/24
# more ranks than cores: ranks yield while they wait, and the OS places them
export OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_hwloc_base_binding_policy=none
ENV
fi

# --- Slurm: slurmctld in the head namespace, a slurmd in every node's
if [ "$slurm" = 1 ]; then
  AUTH=${AUTH:-none} NCPUS=${NCPUS:-8} CRED_EXPIRE=${CRED_EXPIRE:-120} KILL_WAIT=${KILL_WAIT:-30}
  [[ $KILL_WAIT =~ ^[0-9]+$ ]] || bad "KILL_WAIT '$KILL_WAIT': seconds"
  [[ $NCPUS =~ ^[0-9]+$ ]] && [ "$NCPUS" -ge 1 ] || bad "NCPUS '$NCPUS': a number of at least 1"
  [[ $CRED_EXPIRE =~ ^[0-9]+$ ]] && [ "$CRED_EXPIRE" -ge 5 ] || bad "CRED_EXPIRE '$CRED_EXPIRE': seconds, at least 5"
  case $AUTH in none|munge) ;; *) bad "AUTH '$AUTH': none or munge" ;; esac
  # shellcheck source=tools/slurm-local-lib.sh
  . "$tools/slurm-local-lib.sh"
  slurm_local_check_tools die
  S=$D/slurm
  export SLURM_CONF=$S/etc/slurm.conf
  mkdir -p "$S"/{etc,state,spool,log,run}
  [ -e "/run/netns/$head_ns" ] || add_node "$head_ns" "$head_veth" "$subnet.250"
  {
    cat <<CONF
# written by tools/cluster-local-up.sh: the nodes are the namespaces of cluster $name
ClusterName=$name
$(slurm_local_conf_common "$AUTH" "$CRED_EXPIRE")
SlurmctldHost=$head_ns($subnet.250)
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool/%n
SlurmctldPidFile=$S/run/slurmctld.pid
SlurmdPidFile=$S/run/slurmd-%n.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd-%n.log
# each node its own temporary directory (PMIx puts a directory per job step there, and two nodes
# on one file system would collide in /tmp)
TmpFS=$S/tmp/%n
# a rank that dies ends its job step on every node: SIGTERM to the others, SIGKILL KillWait later
KillOnBadExit=1
KillWait=$KILL_WAIT
PartitionName=nodes Nodes=$name-n[0-$((nodes - 1))] Default=YES MaxTime=INFINITE State=UP
CONF
    for i in $(seq 0 $((nodes - 1))); do
      echo "NodeName=$(ns_of "$i") NodeAddr=$subnet.$((i + 1)) CPUs=$NCPUS Sockets=1 CoresPerSocket=$NCPUS ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN"
    done
  } >"$SLURM_CONF"
  if [ "$AUTH" = munge ]; then slurm_local_munge "$S/run/munged.pid" die; fi # then ours to stop
  in_ns "$head_ns" slurmctld -f "$SLURM_CONF" || die "slurmctld did not start: $S/log/slurmctld.log"
  for i in $(seq 0 $((nodes - 1))); do
    mkdir -p "$S/spool/$(ns_of "$i")" "$S/tmp/$(ns_of "$i")"
    in_ns "$(ns_of "$i")" slurmd -f "$SLURM_CONF" || die "slurmd on $(ns_of "$i") did not start: $S/log/slurmd-$(ns_of "$i").log"
  done
  state=$(slurm_local_wait_idle "$nodes" 30) ||
    die "node states '$state' after 30 s: see $S/log/slurmctld.log and $S/log/slurmd-*.log"
  grep -q '^export SLURM_CONF=' "$env_file" || echo "export SLURM_CONF=$SLURM_CONF" >>"$env_file"
fi
echo complete >>"$journal"
echo "cluster-local-up: $nodes nodes $name-n0..$((nodes - 1)) on $subnet.0/24, link $link (burst $burst, latency $latency)$([ "$slurm" = 0 ] || echo ", Slurm on $head_ns")"
# each node's ranks become a session of their own (Open MPI's daemon, slurmd), and with the kernel's
# autogroups the sessions share this machine's cores as equals (doc/cluster.md, multiplexing)
[ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ] &&
  echo "cluster-local-up: note: kernel.sched_autogroup_enabled = 1: each node's processes are a session, and a foreground beside low-priority backgrounds can stall for seconds; measure multiplexing with it at 0 (doc/cluster.md)" >&2
echo ". $env_file"
