#!/bin/sh
# A small data-parallel step's collectives on 2 ranks: tests/test_step_collectives' TAP lines.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
tap_pass_through "np=2" 2 "$top_build/tests/test_step_collectives"
tap_done
