#!/bin/sh
# The release tarball (make dist) holds every file of the repository that a build or a test needs: a
# header that only the CUDA build includes (src/backend/cuda_attention_rf.h) and one that every build
# includes (src/io/log_part.h) were left out, so a tarball's build failed (make distcheck found it),
# and so were the README's one-command scripts (tools/run-demo.sh, run-tests.sh, install-deps.sh).
# Compares make distdir's files with git's; skipped outside a git checkout (a tarball's own check).
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"
command -v git >/dev/null 2>&1 && git -C "$top_src" rev-parse --git-dir >/dev/null 2>&1 ||
  tap_skip_all "the source tree is not a git checkout (a tarball's own check)"
d="$tap_tmp/dist"
# a make of its own (not the make check that runs this test: its flags and jobs stay there)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${MAKE:-make}" -s -C "$top_build" distdir distdir="$d" >"$tap_tmp/distdir.txt" 2>&1
tap_ok $? "make distdir: $(find "$d" -type f | wc -l) files"
# repository files a tarball need not hold: CI's script and git's own
git -C "$top_src" ls-files | grep -v -e '^\.ci/' -e '^\.gitignore$' | LC_ALL=C sort >"$tap_tmp/git.txt"
(cd "$d" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$tap_tmp/dist.txt"
missing=$(LC_ALL=C comm -23 "$tap_tmp/git.txt" "$tap_tmp/dist.txt")
[ -z "$missing" ]
tap_ok $? "every file git tracks is in the tarball${missing:+; missing: $(echo $missing)}"
tap_done
