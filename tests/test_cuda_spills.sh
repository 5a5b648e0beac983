#!/bin/sh
# Register spills in the CUDA kernels (issue 32 item 5): every src/backend/cuda_kern_*.cu (a glob:
# kernel files added later are covered) compiled for sm_90 with the build's nvcc flags
# (SURGE_NVCC_FLAGS, src/backend/local.mk) and `-Xptxas -v`; a kernel whose ptxas report shows
# spill stores or loads above 0 bytes fails, by name. Device code only (-cubin): no GPU needed. First
# a probe kernel squeezed into 24 registers must be seen to spill, so a change in ptxas's report
# that the parser no longer reads fails here rather than passing every kernel. Without nvcc or a
# CUDA build: one SKIP line.
. "$(dirname "$0")/tap.sh"

nvcc=${SURGE_NVCC:-}
flags=${SURGE_NVCC_FLAGS:-}
[ -n "$flags" ] || tap_skip_all "the build has no CUDA backend (configure found no usable toolkit)"
[ -n "$nvcc" ] && [ "$nvcc" != no ] && [ -x "$nvcc" ] || tap_skip_all "nvcc not found ('$nvcc')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ptxas's report on stdin -> "FUNCTION STORES LOADS" for each function with spills (demangled when
# c++filt is here). The report names a function ("Function properties for NAME"), then its
# "N bytes stack frame, S bytes spill stores, L bytes spill loads".
spills() {
  awk '/Function properties for / { fn = $NF }
       /bytes spill stores/ {
         for (i = 1; i <= NF; i++) { if ($(i + 1) == "bytes" && $(i + 2) == "spill") {
           if ($(i + 3) == "stores,") st = $i; else if ($(i + 3) == "loads") ld = $i } }
         if (st + 0 > 0 || ld + 0 > 0) print fn, st, ld; st = ld = 0 }' |
    if command -v c++filt >/dev/null 2>&1; then c++filt; else cat; fi
}

# compile FILE [EXTRA FLAGS]: ptxas's report in $work/report; status of nvcc
compile() {
  src=$1; shift
  # shellcheck disable=SC2086 # the flags are words
  "$nvcc" $flags -arch=sm_90 -cubin -Xptxas -v "$@" -o "$work/k.cubin" "$src" >"$work/report" 2>&1
}

# the probe: 64 values live at once (unrolled: registers, not a local array) in 24 registers, the
# fewest sm_90 allows
cat >"$work/probe.cu" <<'EOF'
__global__ void spill_probe(const float *x, float *y) {
  float v[64];
#pragma unroll
  for (int i = 0; i < 64; i++) v[i] = x[threadIdx.x * 64 + i];
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 64; i++)
#pragma unroll
    for (int j = 63; j >= i; j--) s += v[i] * v[j];
  y[threadIdx.x] = s;
}
EOF
compile "$work/probe.cu" -maxrregcount=24
probe_rc=$?
spills <"$work/report" >"$work/probe.spills"
[ $probe_rc = 0 ] && grep -q spill_probe "$work/probe.spills"
tap_ok $? "the check sees the spills of a probe kernel squeezed into 24 registers"
[ $probe_rc = 0 ] || tap_diag "$(tail -n 5 "$work/report")"

for src in "${SURGE_TOP_SRCDIR:-$top_src}"/src/backend/cuda_kern_*.cu; do
  name=$(basename "$src")
  compile "$src"
  rc=$?
  tap_ok $rc "$name compiles for sm_90 with -Xptxas -v"
  if [ $rc != 0 ]; then
    tap_diag "$(tail -n 5 "$work/report")"
    continue
  fi
  spills <"$work/report" >"$work/spills"
  [ ! -s "$work/spills" ]
  tap_ok $? "$name: no kernel spills registers ($(grep -c 'Compiling entry function' "$work/report") kernels)"
  [ -s "$work/spills" ] && tap_diag "$(sed 's/^\(.*\) \([0-9]*\) \([0-9]*\)$/\1: \2 bytes spill stores, \3 bytes spill loads/' "$work/spills")"
done
tap_done
