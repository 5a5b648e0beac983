# Sourced by tests (tests/test_burst.sh, tests/test_micro_batches.sh): a burst plan that changes the
# rank set at every layer.
# hand_plan NP PLANNER_PLAN: the planner's plan's header (tests/make_plan), every node on another
# rank set than the one before: node i on all ranks (i mod 3 = 0), on rank i mod NP alone (1), or on
# half the ranks (2), that half starting at rank 0 or at the upper half in turn. The per-rank batch
# is ceil(B / ranks) of the caller's global batch $B.
hand_plan() {
  awk -v G="$1" -v B="$B" '
    /^[0-9]+ / && NF == 5 {
      i = $1
      if (i == 0 || i % 3 == 0) { n = G; f = 0 }
      else if (i % 3 == 1) { n = 1; f = i % G }
      else { n = int(G / 2); f = (int(i / 3) % 2) ? G - n : 0 }
      print i, $2, n, f, int((B + n - 1) / n); next
    }
    { print }' "$2"
}
