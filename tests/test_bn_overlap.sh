#!/bin/sh
# Batch norm's sums overlapped with other nodes ([parallel] bn_overlap) on 4 ranks: tests/test_bn_overlap's
# TAP lines.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
tap_pass_through "np=4" 4 "$top_build/tests/test_bn_overlap"
tap_done
