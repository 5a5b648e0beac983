#!/bin/sh
# The sharded optimizer's shards, reduce-scatter and all-gather on 1, 2, 3 and 4 ranks:
# tests/test_shard's TAP lines.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
for np in 1 2 3 4; do
  tap_pass_through "np=$np" "$np" "$top_build/tests/test_shard"
done
tap_done
