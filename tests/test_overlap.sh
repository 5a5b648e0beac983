#!/bin/sh
# Gradient sync overlapped with the backward pass, on 2 ranks: tests/test_overlap's TAP lines.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
tap_pass_through "np=2" 2 "$top_build/tests/test_overlap"
tap_done
