#!/bin/sh
# The comm layer's device side (src/comm/comm_nccl.c) on the host, over faked CUDA and NCCL
# (tests/comm_dev_fakes.h): tests/test_comm_dev's checks on 1 to 4 ranks with device_comm = auto,
# nccl and staged, and with every rank on one GPU (auto stages then); NCCL refused on a shared GPU
# with one line; a host-only call given a device buffer caught by the fakes.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

prog="$top_build/tests/test_comm_dev"

for np in 1 2 3 4; do
  for mode in auto nccl staged; do
    tap_pass_through "np=$np $mode" "$np" "$prog" "$mode"
  done
done
SURGE_FAKE_SHARED_GPU=1 tap_pass_through "np=3 auto, one GPU" 3 "$prog" auto

SURGE_FAKE_SHARED_GPU=1 timeout 60 "$mpiexec" -n 2 "$prog" nccl >/dev/null 2>"$tap_tmp/shared.err"
rc=$?
line=$(grep '^surge: error:' "$tap_tmp/shared.err" | head -n 1)
[ "$rc" = 1 ] && printf '%s\n' "$line" | grep -q 'device_comm = nccl, but ranks 0 and 1 of a group share the GPU.*hint'
tap_ok $? "np=2 nccl, one GPU: exit $rc, $line"

timeout 60 "$mpiexec" -n 2 "$prog" auto --fail host-only >/dev/null 2>"$tap_tmp/touch.err"
rc=$?
line=$(grep '^fake cuda:' "$tap_tmp/touch.err" | head -n 1)
[ "$rc" != 0 ] && printf '%s\n' "$line" | grep -q 'touched device memory'
tap_ok $? "np=2: a device buffer given to comm_allgatherv_float (host memory only) is caught: exit $rc, $line"

tap_done
