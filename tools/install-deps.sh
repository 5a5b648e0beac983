#!/bin/sh
# Install the Debian 12 packages Surge needs to build, test and run its examples.
# Idempotent: installs only what is missing. Run as root (or through sudo).
#   tools/install-deps.sh           build + run + test dependencies
# clang and its runtime libraries (libFuzzer, the sanitizers; only recommended by clang, so named here)
# build the fuzzing harnesses (tools/fuzz.sh), gdb places a finding whose report has no stack (a
# glibc stack-smashing abort); python3-numpy runs the independent GPT-2 forward of
# tests/test_convert.sh (skipped without it).
set -eu

packages="build-essential autoconf automake libtool pkg-config
  libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools libopenblas-dev zlib1g-dev libcjson-dev libpcre2-dev
  clang libclang-rt-dev gdb
  python3-numpy
  dataset-fashion-mnist fortunes-min fortunes bitshuffle linux-doc-6.1
  slurmctld slurmd slurm-client munge libpmix-dev"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then exec sudo "$0" "$@"; fi
  echo "install-deps: run as root to install:$missing" >&2
  exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086  # word splitting of the package list is intended
apt-get install -y -qq --no-install-recommends $missing
