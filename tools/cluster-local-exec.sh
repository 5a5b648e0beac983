#!/bin/sh
# Run a command on a node of the emulated cluster (tools/cluster-local-up.sh), as ssh would: in the
# node's network and mount namespaces (its address, its /dev/shm), under the node's host name (a
# UTS namespace of its own), in the current directory, the command words joined into one shell
# command line. OpenMPI's mpiexec uses it as its launch agent
# (plm_rsh_agent in DIR/cluster.env) to start its daemon on every host of the hostfile.
#
#   tools/cluster-local-exec.sh NODE [COMMAND [ARG...]]      (no command: a shell)
#
# NODE must be a namespace the cluster in $CLUSTER_LOCAL_DIR (default /tmp/surge-cluster) created.
D=${CLUSTER_LOCAL_DIR:-/tmp/surge-cluster}
[ $# -ge 1 ] || { echo "usage: $0 NODE [COMMAND [ARG...]]" >&2; exit 2; }
node=$1
shift
case $node in *[!a-z0-9-]* | '') echo "cluster-local-exec: '$node' is not a node name" >&2; exit 2 ;; esac
grep -qx "netns $node" "$D/created" 2>/dev/null ||
  { echo "cluster-local-exec: $node is not a node of the cluster in $D (set CLUSTER_LOCAL_DIR)" >&2; exit 2; }
[ $# -gt 0 ] || set -- "${SHELL:-/bin/sh}"
# a node's own /dev/shm: its mount namespace (the head has none); keep the working directory
mnt=
[ -e "$D/ns/$node.mnt" ] && mnt=--mount=$D/ns/$node.mnt
exec nsenter --net="/run/netns/$node" ${mnt:+"$mnt"} --wd="$(pwd)" -- unshare --uts -- \
  /bin/sh -c 'hostname "$0" && exec /bin/sh -c "$*"' "$node" "$@"
