#!/bin/sh
# The ring reduce-scatter (src/comm/ring.h) in groups of 1 to 8 ranks: tests/test_ring's TAP lines.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
tap_pass_through "np=8" 8 "$top_build/tests/test_ring"
tap_done
