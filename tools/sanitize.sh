#!/bin/sh
# Build Surge once more with AddressSanitizer and UndefinedBehaviorSanitizer in a build directory of
# its own ($SURGE_ASAN_BUILD, default _build-asan) and run the C unit tests and the input-handling
# tests under them (doc/testing.md); and the cpu backend's team of threads under ThreadSanitizer.
# Every sanitizer report ends its test (halt_on_error), so the suite fails on the first one. Prints
# "N passed, N failed, N skipped" last, like run-tests.sh.
#   tools/sanitize.sh              the tests below
#   tools/sanitize.sh all          the whole of make check
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=${SURGE_ASAN_BUILD:-$top/_build-asan}
# leaks are not checked: MPI and HDF5 keep memory to the end of the process by design
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# the instrumented programs run 2 to 5 times slower: a multi-rank unit test gets 4 minutes, not 1
export tap_timeout=${tap_timeout:-240}
unit="tests/test_backend tests/test_bf16 tests/test_gemm_order tests/test_cpu_team tests/test_deck tests/test_options
  tests/test_data tests/test_h5util tests/test_sweep tests/test_optim tests/test_layers_cnn tests/test_layers_gpt
  tests/test_reference tests/test_report_lib tests/test_mux tests/test_planner tests/test_frontier tests/test_graph_file
  tests/test_sim tests/test_gen tests/test_say"
input="tests/test_bad_input.sh tests/test_checkpoint.sh tests/test_log.sh tests/test_report.sh
  tests/test_sweep_programs.sh tests/test_hardening.sh tests/test_layering.sh tests/test_plan_files.sh
  tests/test_profile_plan.sh tests/test_tokenize.sh tests/test_tokens.sh tests/test_sim_programs.sh tests/test_sim_report.sh
  tests/test_fifo.sh tests/test_escape.sh tests/test_messages.sh tests/test_act16.sh tests/test_stall.sh"

mkdir -p "$build" && cd "$build" || exit 1
[ -x "$top/configure" ] || (cd "$top" && ./bootstrap) || exit 1
if [ ! -f Makefile ]; then
  flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  "$top/configure" -q CFLAGS="-g -O1 $flags" LDFLAGS="$flags" ||
    { echo "sanitize: configure failed (see $build/config.log)"; exit 1; }
fi
# a CUDA build (configure found the toolkit) also has the host tests of the graph recording, the marks, the GEMMs and
# the comm layer's device side, and the loading of cuBLAS
grep -q 'S\["HAVE_CUDA_TRUE"\]=""' config.status 2>/dev/null &&
  unit="$unit tests/test_cuda_graph tests/test_cuda_marks tests/test_cuda_blas_api tests/test_cuda_gemm
    tests/test_comm_dev.sh"
if [ "${1:-}" = all ]; then
  make -j"$(nproc)" check >make-check.out 2>&1
else
  # shellcheck disable=SC2086 # the lists are word lists
  make -j"$(nproc)" check TESTS="$(echo $unit $input)" >make-check.out 2>&1
fi
rc=$?
grep -E '^(FAIL|XPASS|ERROR):' make-check.out | sed 's/^/  /'
if [ $rc != 0 ]; then
  grep -l -E 'ERROR: AddressSanitizer|runtime error:' $(find . -name '*.log' ! -name config.log) 2>/dev/null |
    while read -r log; do echo "== $log"; grep -m 5 -A 12 -E 'ERROR: AddressSanitizer|runtime error:' "$log"; done
  tail -n 20 make-check.out
fi
# ThreadSanitizer on the cpu backend's team of threads (its test is its two files alone): every race
# reported ends it; its TAP lines count with the rest
tsan_ok=0 tsan_failed=0 tsan_skipped=0
if cc -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=thread -I"$top" -I"$top/src" -I"$top/tests" \
  "$top/tests/test_cpu_team.c" "$top/src/backend/cpu_team.c" -o test_cpu_team_tsan -lpthread 2>tsan.out &&
  TSAN_OPTIONS=halt_on_error=1 timeout 300 ./test_cpu_team_tsan >>tsan.out 2>&1; then
  tsan_ok=$(grep '^ok ' tsan.out | grep -vc '# SKIP')
  tsan_skipped=$(grep -c '^ok .*# SKIP' tsan.out)
else
  tsan_failed=1
  echo "  FAIL: tests/test_cpu_team under ThreadSanitizer:"
  tail -n 30 tsan.out | sed 's/^/    /'
  rc=1
fi
awk -v tp="$tsan_ok" -v tf="$tsan_failed" -v ts="$tsan_skipped" '/^# PASS:/{p=$3} /^# FAIL:/{f=$3}
     /^# XPASS:/{f+=$3} /^# ERROR:/{e=$3} /^# SKIP:/{s=$3}
     END{printf "sanitizers: %d passed, %d failed, %d skipped\n", p + tp, f + e + tf, s + ts}' \
  test-suite.log 2>/dev/null ||
  echo "sanitizers: 0 passed, 1 failed, 0 skipped"
exit $rc
