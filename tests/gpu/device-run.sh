#!/bin/sh
# tests/gpu/device-run.sh OUT: tests/gpu/device-check.sh on a GPU machine that has the NVIDIA driver
# and the CUDA toolkit but not Open MPI, HDF5 or the data sets, from the pack that
# tests/gpu/device-pack.sh made here (PACK, default .devpack in the source tree):
#   1. unpack PACK/root.tar.xz into / without overwriting any file that is there, and the prebuilt
#      tree PACK/build.tar.xz into the source tree;
#   2. find the CUDA libraries the programs ask for where the machine keeps them (the toolkit, or
#      the NVIDIA wheels of its Python) and put their folders on LD_LIBRARY_PATH;
#   3. run the check with at most DEVICE_LIMIT seconds (default 480), its report written into OUT as
#      it runs (device-check.txt, its output; summary.md, after each part; gemm-*.txt, attention.txt;
#      logs/), so that a check stopped early, or a device call's own limit, leaves what it reached;
#      at its end logs/ and the runs' log.h5 files go into OUT/logs.tgz.
# Exit: the check's (0 all passed, 1 a test failed, 77 no GPU, 124 out of time), or 2 when the pack
# cannot be unpacked.
set -u
[ $# = 1 ] || { echo "usage: tests/gpu/device-run.sh OUT" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd) || exit 2
pack=${PACK:-$src/.devpack}
log=$out/device-check.txt
: >"$log"
say() { echo "device-run: $*" | tee -a "$log"; }

# unxz FILE: its contents on stdout, through xz or else Python's lzma
unxz() {
  if command -v xz >/dev/null; then xz -dc "$1"; else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1"
  fi
}
unxz "$pack/root.tar.xz" | tar -x -C / --skip-old-files --keep-directory-symlink 2>>"$log" ||
  { say "cannot unpack $pack/root.tar.xz"; exit 2; }
ldconfig
unxz "$pack/build.tar.xz" | tar -x -C "$src" || { say "cannot unpack $pack/build.tar.xz"; exit 2; }
build=$src/$(unxz "$pack/build.tar.xz" | tar -t | head -n 1 | cut -d/ -f1)

# CUDA libraries the loader does not find: the first folder under the usual places holding each.
libpath=""
add_lib() {
  f=$(find /usr/local /opt /usr/lib -name "$1" 2>/dev/null | head -n 1)
  [ -n "$f" ] && libpath="$libpath${libpath:+:}${f%/*}"
  say "$1: ${f:-not found anywhere}"
}
for lib in $(ldd "$build/surge-train" "$build/tests/gpu/libkernel_times.so" 2>/dev/null |
  sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sort -u); do
  add_lib "$lib"
done
# Also cuBLAS and cuBLASLt, which the backend loads itself (dlopen: src/backend/cuda_blas_api.c) in the
# major version of the CUDA runtime the programs link, where neither the loader's cache nor the
# configured toolkit's lib64 has them.
major=$(readelf -d "$build/surge-train" 2>/dev/null | sed -n 's/.*\[libcudart\.so\.\([0-9]*\)\].*/\1/p' | head -n 1)
for lib in "libcublas.so.${major:-13}" "libcublasLt.so.${major:-13}"; do
  ldconfig -p 2>/dev/null | grep -q "[[:space:]]$lib " || [ -e "/usr/local/cuda/lib64/$lib" ] || add_lib "$lib"
done
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ldd "$build/surge-train" | grep -q "not found" && say "surge-train still misses: $(ldd "$build/surge-train" | grep "not found" | tr -s ' \n' ' ')"

mpiexec=$(command -v mpiexec.openmpi || command -v mpiexec)
say "$(uname -sr), $(nproc) cores, $(grep -m1 PRETTY_NAME /etc/os-release 2>/dev/null | cut -d= -f2), mpiexec $mpiexec ($("$mpiexec" --version 2>&1 | head -n 1))"
# one node: Open MPI starts its ranks without ssh (plm isolated), whether or not ssh is there
export OMPI_MCA_plm="${OMPI_MCA_plm:-isolated}"
export SURGE_COMMIT="$(cat "$pack/commit" 2>/dev/null || echo unknown)"
export MPIEXEC="$mpiexec" SURGE_BUILD="$build" SURGE_PREBUILT=1 DEVICE_TEST_LIMIT="${DEVICE_TEST_LIMIT:-150}"
work=$(mktemp -d)
. "$src/tests/gpu/limited.sh"
DEVICE_REPORT="$out" limited "${DEVICE_LIMIT:-480}" sh "$src/tests/gpu/device-check.sh" "$work" >>"$log" 2>&1
rc=$?
[ $rc = 124 ] && say "the check ran past ${DEVICE_LIMIT:-480} s and was stopped"
h5=$(cd "$work" && ls -d */log.h5 2>/dev/null)
if [ -n "$h5" ]; then tar -czf "$out/logs.tgz" -C "$out" logs -C "$work" $h5; else tar -czf "$out/logs.tgz" -C "$out" logs; fi &&
  rm -rf "$out/logs"
say "exit $rc"
exit $rc
