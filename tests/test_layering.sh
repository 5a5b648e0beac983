#!/bin/sh
# The parts below the deck take their own option structs, whose deck keys they declare themselves
# (core/keys.h; io/options.h completes them with the run's values): no file of src/nn, src/optim,
# src/data or src/tok includes a header of src/io or names config_t.
. "${SURGE_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/tests/tap.sh"
for part in nn optim data tok; do
  found=$(grep -ln -E '#include "io/|config_t' "$top_src/src/$part"/*.[ch] 2>/dev/null)
  [ -z "$found" ]
  tap_ok $? "src/$part depends on no deck configuration${found:+: $(echo $found)}"
done
tap_done
