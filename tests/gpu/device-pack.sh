#!/bin/sh
# tests/gpu/device-pack.sh BUILD PACKDIR: make what tests/gpu/device-check.sh needs on a GPU machine
# that has the CUDA driver and toolkit but neither Open MPI, HDF5 nor the data sets (a bare CUDA
# image), from this Debian machine (doc/gpu.md "On a machine without MPI"):
#   PACKDIR/root.tar.xz   Open MPI (mpiexec.openmpi, orted, plugins, help files), parallel HDF5,
#                         h5dump, OpenBLAS and every shared library they and the build's programs
#                         load (ldd's closure, less the C library itself and the CUDA libraries,
#                         cudart, cuBLAS and cuBLASLt, NCCL, which the GPU machine's driver and
#                         toolkit provide: device-run.sh finds them there), Fashion-MNIST cut
#                         to its first 12000 training and 2000 test images, and the fortunes;
#   PACKDIR/build.tar.xz  the configured CUDA build tree BUILD (its programs stripped, no objects).
# On the GPU machine, tests/gpu/device-run.sh unpacks both (never overwriting a file that is there)
# and runs the check. Exit 0, or 1 with the reason.
set -eu
[ $# = 2 ] || { echo "usage: tests/gpu/device-pack.sh BUILD PACKDIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
[ -x "$build/surge-train" ] && [ -x "$build/tests/gpu/gpu_probe" ] ||
  { echo "device-pack: $build has no surge-train or tests/gpu/gpu_probe: build it first (make && make check TESTS=)" >&2; exit 1; }
grep -q '^NVCC = ' "$build/Makefile" || { echo "device-pack: $build was configured without CUDA" >&2; exit 1; }
mkdir -p "$2"
pack=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sh "$(dirname "$0")/build-kernel-times.sh" "$build" || echo "device-pack: no kernel-time profiles (no CUPTI)" >&2
# ---- the build tree: programs (stripped) and the test scripts' inputs, no objects or archives
bname=$(basename "$build")
(cd "$build/.." && find "$bname" -type f ! -name '*.o' ! -name '*.a' ! -name '*.Po' ! -name '*.d' ! -name '*.log' \
  ! -name '*.trs' ! -name '*.tar.gz' ! -path '*/.deps/*' ! -path '*/_tmp*' ! -path '*/tmp.*' >"$work/build.list")
mkdir -p "$work/b"
(cd "$build/.." && tar -cf - -T "$work/build.list") | (cd "$work/b" && tar -xf -)
find "$work/b" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ^ELF && strip "$1"' sh {} \;
tar -C "$work/b" -cJf "$pack/build.tar.xz" "$bname"
# the commit the build is of ("-dirty": with changes not committed), for the summary
c=$(git -C "$build/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$build/.." diff --quiet HEAD 2>/dev/null || c="$c-dirty"
echo "$c" >"$pack/commit"

# ---- the system files
pkgfiles() { for p in "$@"; do dpkg -L "$p"; done | while read -r f; do [ -f "$f" ] && echo "$f"; done; }
pkgfiles openmpi-bin libopenmpi3 openmpi-common libpmix2 libhdf5-openmpi-103-1 hdf5-tools |
  grep -v -e '^/usr/share/doc/' -e '^/usr/share/man/' -e '^/usr/share/lintian/' -e 'java' >"$work/files"
# HDF5's filter plugins (bitshuffle-lz4, the checkpoints' default), copied: Debian links them into
# Python's folders
for d in /usr/lib/x86_64-linux-gnu/hdf5/openmpi/plugins /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins; do
  mkdir -p "$work/r$d"
  for f in "$d"/*.so; do cp "$(realpath "$f")" "$work/r$f"; done
done
# ldd's closure of every ELF file so far and of the build's programs; the C library, the loader and
# the CUDA libraries stay the GPU machine's own.
{
  cat "$work/files"
  find "$work/b" "$work/r" -type f
} | while read -r f; do file -b "$f" | grep -q '^ELF' && ldd "$f" 2>/dev/null; done |
  sed -n 's/.*=> \(\/[^ ]*\) (0x.*/\1/p' | sed 's|^/lib/|/usr/lib/|' | sort -u |
  grep -v -e '/libc\.so' -e '/libm\.so' -e '/libdl\.so' -e '/libpthread\.so' -e '/librt\.so' -e '/ld-linux' \
    -e '/libresolv\.so' -e '/libutil\.so' -e '/usr/local/cuda' >"$work/libs"
missing=$(find "$work/b" -type f -perm -u+x -exec sh -c 'file -b "$1" | grep -q ^ELF && ldd "$1"' sh {} \; |
  grep "not found" | grep -v -e libcuda -e libnccl -e libcublas -e libcudart | sort -u || true)
[ -z "$missing" ] || { echo "device-pack: libraries not found here: $missing" >&2; exit 1; }
# each library under the name its users ask for (the soname link) and its real file; a link
# through /etc/alternatives (OpenBLAS) becomes a copy of the file it ends at
mkdir -p "$work/r/usr/lib/x86_64-linux-gnu"
while read -r l; do
  r=$(realpath "$l")
  if readlink "$l" | grep -q '^/etc/alternatives'; then
    cp "$r" "$work/r$l"
  else
    echo "$l"
    [ "$r" = "$l" ] || echo "$r"
  fi
done <"$work/libs" >>"$work/files"
find /usr/share/games/fortunes -type f >>"$work/files"

# Fashion-MNIST, cut: the IDX header's count says how many follow (src/data/idx.c reads that)
d=/usr/share/datasets/fashion-mnist
mkdir -p "$work/r$d"
python3 - "$d" "$work/r$d" <<'EOF'
import gzip, struct, sys
src, dst = sys.argv[1], sys.argv[2]
for split, n in (("train", 12000), ("t10k", 2000)):
    for kind, item in (("images-idx3", 784), ("labels-idx1", 1)):
        name = f"{split}-{kind}-ubyte.gz"
        with gzip.open(f"{src}/{name}") as f:
            magic = f.read(4)
            dims = struct.unpack(">%dI" % magic[3], f.read(4 * magic[3]))
            body = f.read(n * item)
        with gzip.open(f"{dst}/{name}", "wb") as f:
            f.write(magic + struct.pack(">%dI" % len(dims), n, *dims[1:]) + body)
EOF
sort -u "$work/files" | sed 's|^/||' >"$work/files.rel"
tar -C / -cf "$work/root.tar" -T "$work/files.rel"
tar -C "$work/r" -rf "$work/root.tar" usr
xz -T0 -6 <"$work/root.tar" >"$pack/root.tar.xz"
echo "device-pack: $(wc -l <"$work/files.rel") system files, $(du -h "$pack/root.tar.xz" | cut -f1) root.tar.xz, $(du -h "$pack/build.tar.xz" | cut -f1) build.tar.xz in $pack"
