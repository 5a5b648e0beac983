# Sourced by tests after tests/tap.sh (tests/test_shard_optimizer.sh, tests/test_shard_layouts.sh):
#   same NAME REF WHAT [h5_compare options]
#     one test: run NAME's final parameters ($tap_tmp/NAME/model.h5) within 1e-5 of run REF's, the
#     worst tensor in the message; a run without a model file fails, quoting its output's last lines.
same() {
  same_name=$1; same_ref=$2; same_what=$3; shift 3
  if [ -f "$tap_tmp/$same_name/model.h5" ]; then
    same_res=$("$top_build/tests/h5_compare" "$tap_tmp/$same_name/model.h5" "$tap_tmp/$same_ref/model.h5" 1e-5 "$@" 2>&1)
    same_rc=$?
  else
    same_res="training failed: $(tail -n 3 "$tap_tmp/$same_name.txt")"; same_rc=1
  fi
  tap_ok $same_rc "$same_what: $same_res"
}
