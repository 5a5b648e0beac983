#!/bin/sh
# Checkpoints (src/io/checkpoint.h) through tests/test_checkpoint:
#  - round trips on 4, 2 and 1 ranks (its TAP lines, renumbered into this stream), each run also
#    reading what the runs on the other rank counts wrote before it;
#  - sharded state: halves written by 2 ranks read bitwise by 1 and 4 ranks (whole and in other
#    pieces); a version 1 checkpoint refused naming its version; a tensor of more chunks than one
#    transfer takes, written on 2 ranks and read on 1 and 3;
#  - damaged files (a flipped byte in a chunk, data rewritten behind the hash64's back with a valid
#    Fletcher32, an edited attribute, a truncated copy, bytes scrambled all over, not HDF5 at all) and checkpoints of
#    another model, configuration, seed or shape, a filter plugin that cannot be found, counters out
#    of range under a valid checksum (a step of 2^62 or beyond the run's steps, optimizer steps past
#    the step, samples seen that do not add up, no ranks): exit 2 and one "surge: error:" line
#    naming the file and, where it applies, the dataset; changes that do not matter (test_samples)
#    load;
#  - the newest checkpoint is the one that holds the highest step; a file named for another step
#    than it holds is refused;
#  - a write that runs out of disk (a small tmpfs when mount works here, else a file-size limit):
#    exit 1 naming the file, no temporary file left, the previous checkpoint still the latest and
#    loading; an unwritable directory; a directory one rank of two cannot write (read-only in its
#    mount namespace): exit 1 naming the rank, nothing written;
#  - a writer killed with SIGKILL in the middle of its write: the previous checkpoint is still the
#    latest and loads, and the next write removes the dead writer's temporary file.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

prog="$top_build/tests/test_checkpoint"

# launch NP ARGS...: test_checkpoint on NP ranks. One rank runs as an MPI singleton, without the
# launcher: mpiexec takes two seconds more over every process that exits non-zero.
launch() {
  np=$1; shift
  if [ "$np" = 1 ]; then
    timeout 60 "$prog" "$@"
  else
    timeout 60 "$mpiexec" -n "$np" "$prog" "$@"
  fi
}

# quiet NP ARGS...: run a helper mode that must succeed; its stdout is in $tap_tmp/out.txt.
quiet() {
  np=$1; shift
  launch "$np" "$@" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ "$rc" = 0 ] || tap_diag "test_checkpoint $* failed with $rc:" "$(head -c 2000 "$tap_tmp/err.txt")"
  return $rc
}

# expect_error CODE NP PATTERN DESCRIPTION ARGS...: exit CODE and exactly one "surge: error:" line,
# which matches the extended regular expression PATTERN.
expect_error() {
  code=$1; np=$2; pattern=$3; what=$4; shift 4
  launch "$np" "$@" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  lines=$(grep -c '^surge: error:' "$tap_tmp/err.txt")
  msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
  printf '%s\n' "$msg" | grep -q -E -e "$pattern"
  found=$?
  [ "$rc" = "$code" ] && [ "$lines" = 1 ] && [ "$found" = 0 ]
  tap_ok $? "np=$np: $what: exit $rc, $msg"
  [ "$rc" = "$code" ] && [ "$lines" = 1 ] && [ "$found" = 0 ] ||
    tap_diag "expected exit $code and one line matching /$pattern/, got $lines lines:" \
      "$(head -c 2000 "$tap_tmp/err.txt")"
}

# expect_load NP PATH STEP DESCRIPTION ARGS...: the checkpoint loads and holds the state of STEP.
expect_load() {
  np=$1; path=$2; step=$3; what=$4; shift 4
  quiet "$np" read "$path" "$@"
  ok=$?
  [ "$ok" = 0 ] && grep -q "^loaded step $step: contents as written" "$tap_tmp/out.txt"
  tap_ok $? "np=$np: $what: $(cat "$tap_tmp/out.txt")"
}

# ---- round trips, other rank counts, pruning, latest
for np in 4 2 1; do
  tap_pass_through "np=$np" "$np" "$prog" roundtrip "$tap_tmp/rt"
done

# ---- sharded state: 2 ranks each write half of fc1.weight (by columns) and of fc1.bias (by rows);
# 1 rank reads whole tensors, 4 ranks read fc1.weight as row blocks: bitwise the unsharded values
quiet 2 sharded-write "$tap_tmp/sharded"
sharded=$(cat "$tap_tmp/out.txt")
for np in 1 4; do
  quiet "$np" sharded-read "$sharded"
  rc=$?
  [ "$rc" = 0 ] && grep -q "^sharded step 77 on $np ranks: every piece bitwise as written" "$tap_tmp/out.txt"
  tap_ok $? "sharded: written by 2 ranks in halves, read on $np: $(cat "$tap_tmp/out.txt")"
done
# a version 1 file (whole replicated tensors, before state could be sharded) is refused, naming it
quiet 1 damage "$sharded" "$tap_tmp/v1.h5" version1
expect_error 2 1 "v1\.h5: checkpoint format version 1; this Surge reads version 2 \(hint: version 1" \
  "a version 1 checkpoint is refused naming its version" read "$tap_tmp/v1.h5"

# ---- a tensor of more chunks than one transfer takes (--call-chunks 16 instead of 64, chunks of at
# most 1 MiB): fc2.weight of 4200 x 2048 floats is 33 chunks of 128 rows; 2 ranks write 17 and 16 of
# them in 2 transfers each (the second rank's second one empty), 1 rank reads it in 3 and 3 ranks in 1
wide="model.mlp_hidden=2048,4200"
quiet 2 write "$tap_tmp/wide" 5 -D "$wide" --call-chunks 16
tap_ok $? "np=2: a state with a tensor of 33 chunks is written, 16 chunks a transfer (2 transfers a rank)"
for np in 1 3; do
  expect_load "$np" "$tap_tmp/wide/ckpt-00000005.h5" 5 "the tensor of 33 chunks reads back, 16 chunks a transfer" \
    -D "$wide" --call-chunks 16
done

# ---- damaged files and refusals
good="$tap_tmp/good/ckpt-00000007.h5"
for c in none shuffle-deflate; do
  quiet 1 write "$tap_tmp/good" 7 -D checkpoint.compression=$c || true
  for kind in flip tamper attr truncate scramble; do
    quiet 1 damage "$good" "$tap_tmp/$kind-$c.h5" "$kind" || true
  done
  d="$tap_tmp/flip-$c.h5"
  expect_error 2 1 "$d: /params/fc1\.weight: cannot read \(.*[Ff]letcher32.*\): the file is damaged; remove it" \
    "$c: a flipped byte in a chunk fails its Fletcher32" read "$d"
  d="$tap_tmp/tamper-$c.h5"
  expect_error 2 1 "$d: /params/fc1\.weight: checksum mismatch \(the file is damaged" \
    "$c: data rewritten with a valid Fletcher32 fails the hash64 checksum" read "$d"
  d="$tap_tmp/scramble-$c.h5"
  expect_error 2 1 "$d: .*(damaged|truncated)" "$c: bytes scrambled all over the file" read "$d"
done
d="$tap_tmp/flip-shuffle-deflate.h5"
expect_error 2 2 "rank [01]: $d: /params/fc1\.weight: cannot read" "a flipped byte, read on two ranks" read "$d"
d="$tap_tmp/attr-shuffle-deflate.h5"
expect_error 2 1 "$d: attributes of /: checksum mismatch \(the file is damaged" "an edited attribute" read "$d"
d="$tap_tmp/truncate-shuffle-deflate.h5"
expect_error 2 1 "$d: the file is truncated" "a truncated copy" read "$d"
expect_error 2 2 "$d: the file is truncated" "a truncated copy, two ranks" read "$d"
# an external link (to a fifo: following it would block in its open) is refused, not followed
mkfifo "$tap_tmp/fifo"
quiet 1 damage "$good" "$tap_tmp/extlink.h5" "extlink:$tap_tmp/fifo" || true
expect_error 2 1 "extlink.h5: /params/fc1\.weight is a soft or external link, which Surge never writes" \
  "a tensor that is an external link to a fifo" read "$tap_tmp/extlink.h5"
# a checkpoint its reader may not read is said so, not called damaged ("remove it" would lose it);
# root reads any file, so as user nobody where this runs as root
pd="$tap_tmp/perm"
mkdir "$pd" && cp "$good" "$pd/ckpt.h5" && chmod 711 "$tap_tmp" && chmod 755 "$pd" && chmod 000 "$pd/ckpt.h5"
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null 2>&1 && runuser -u nobody -- test -x "$prog" 2>/dev/null; then
  runuser -u nobody -- timeout 60 "$prog" read "$pd/ckpt.h5" >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  [ $rc = 2 ] && grep -q "^surge: error: $pd/ckpt.h5: cannot open checkpoint: Permission denied$" "$tap_tmp/err.txt"
  tap_ok $? "an unreadable checkpoint (as nobody): exit $rc, $(grep '^surge: error' "$tap_tmp/err.txt" | head -c 200)"
else
  tap_skip "an unreadable checkpoint: needs root, runuser and the test program reachable by user nobody"
fi
chmod 700 "$tap_tmp"
printf 'step,loss\n1,2.3\n' >"$tap_tmp/text.h5"
expect_error 2 1 "$tap_tmp/text.h5: not an HDF5 file" "a text file" read "$tap_tmp/text.h5"
expect_error 2 1 "$tap_tmp/missing.h5: cannot open checkpoint: No such file" "a missing file" \
  read "$tap_tmp/missing.h5"

expect_error 2 1 "$good was written by model mlp, this run's \[model\] zoo is vgg-mini: refusing to resume" \
  "another model" read "$good" -D model.zoo=vgg-mini -G model.zoo=mlp
expect_error 2 1 "$good was written by another configuration \(\[train\] lr is 0\.001 in the checkpoint, \
0\.002 in this run\): refusing" \
  "another lr" read "$good" -D train.lr=0.002
expect_error 2 1 "\(\[train\] global_batch is 16 in the checkpoint, 32 in this run\)" \
  "another global_batch" read "$good" -D train.global_batch=32
expect_error 2 1 "\(\[model\] mlp_hidden is 600,1 in the checkpoint, 600,2 in this run\)" \
  "another hidden width" read "$good" -D model.mlp_hidden=600,2
expect_error 2 1 "\[run\] seed is 5 in the checkpoint, 6 in this run" "another seed" read "$good" -D run.seed=6
expect_error 2 1 "$good: /params/fc2\.weight: shape \(1,600\) in the checkpoint, \(2,600\) in this model" \
  "a tensor of another shape" read "$good" -G model.mlp_hidden=600,2
expect_error 2 2 "rank 0: $good was written by another configuration \(\[train\] optimizer is adamw" \
  "another optimizer, two ranks" read "$good" -D train.optimizer=sgd
if launch 1 write "$tap_tmp/bs" 7 -D checkpoint.compression=bitshuffle-lz4 >/dev/null 2>&1; then
  ( # a checkpoint whose filter this HDF5 cannot find: named as such, not as damage
    HDF5_PLUGIN_PATH=/nonexistent
    export HDF5_PLUGIN_PATH
    expect_error 2 1 "ckpt-00000007\.h5: /params/fc1\.weight: cannot be read: HDF5 filter 32008 .* not available" \
      "bitshuffle-lz4 without the plugin" read "$tap_tmp/bs/ckpt-00000007.h5"
    echo "$tap_n $tap_failed" >"$tap_tmp/counts"
  )
  read -r tap_n tap_failed <"$tap_tmp/counts"
fi
# counters out of range, written with a valid checksum of the attributes (as a hostile tool would):
# refused naming the file and the value, never trusted (2^62 steps would overflow and then shadow
# every real checkpoint)
for forged in step=4611686018427387904 step=-1 opt_t=8 samples_seen=111 ranks=0; do
  quiet 1 damage "$good" "$tap_tmp/forged.h5" "forge:$forged"
  expect_error 2 1 "forged\.h5: ${forged%%=*} .*(out of range|is not step)" "forged $forged is refused" \
    read "$tap_tmp/forged.h5"
done
expect_error 2 1 "$good holds step 7, beyond this run's \[run\] steps = 5: refusing to resume" \
  "a step beyond the run's [run] steps is refused" read "$good" -D run.steps=5
# the newest checkpoint is the one holding the highest step; a file whose name says another step
# (copied or renamed by hand) is refused rather than shadowing the others
mkdir -p "$tap_tmp/named"
cp "$good" "$tap_tmp/named/ckpt-00000007.h5"
quiet 1 damage "$good" "$tap_tmp/named/ckpt-00000002.h5" "forge:step=2"
quiet 1 latest "$tap_tmp/named" && grep -q "named/ckpt-00000007.h5$" "$tap_tmp/out.txt"
tap_ok $? "latest: the checkpoint holding the highest step ($(cat "$tap_tmp/out.txt"))"
cp "$tap_tmp/named/ckpt-00000002.h5" "$tap_tmp/named/ckpt-00000099.h5"
expect_error 2 1 "ckpt-00000099\.h5 holds step 2, not the step its name says" \
  "latest: a file named for step 99 that holds step 2 is refused" latest "$tap_tmp/named"
quiet 1 damage "$good" "$tap_tmp/named/ckpt-00000099.h5" "forge:step=4611686018427387904"
expect_error 2 1 "ckpt-00000099\.h5: step 4611686018427387904 is out of range" \
  "latest: a file holding step 2^62 is refused" latest "$tap_tmp/named"
expect_load 1 "$good" 7 "another test_samples, keep, compression and steps still load" \
  -D data.test_samples=7 -D checkpoint.keep=9 -D checkpoint.compression=bitshuffle-lz4 -D run.steps=9
expect_load 2 "$good" 7 "the 1-rank checkpoint loads on two ranks"

# ---- a full disk: a small tmpfs where this may mount one (root), else a limit on file size set by
# the writer after MPI_Init (RLIMIT_FSIZE: writes past it fail with EFBIG). SURGE_TEST_NO_MOUNT=1
# tries the second way where the first would work.
full="$tap_tmp/full"
mkdir -p "$full"
if [ "${SURGE_TEST_NO_MOUNT:-0}" != 1 ] && mount -t tmpfs -o size=6m surge-ckpt-test "$full" 2>/dev/null; then
  trap 'umount "$full" 2>/dev/null; rm -rf "$tap_tmp"' EXIT
  mechanism="a 6 MiB tmpfs"
  limit=""
  quiet 1 write "$full/ck" 1
  tap_ok $? "full disk: the first checkpoint fits"
  avail=$(df -k "$full" | awk 'NR == 2 { print $4 }')
  dd if=/dev/zero of="$full/filler" bs=1k count=$((avail - 1024)) 2>/dev/null
  reason=".*no space left on device: [0-9]+ KiB free in $full/ck"
else
  mechanism="a 1 MB file-size limit (RLIMIT_FSIZE)"
  limit="--file-size-limit 1000000"
  quiet 1 write "$full/ck" 1
  tap_ok $? "full disk: the first checkpoint fits"
  reason=""
fi
tap_diag "disk-full mechanism: $mechanism"
# shellcheck disable=SC2086 # $limit is two words or none
expect_error 1 2 "cannot write checkpoint $full/ck/ckpt-00000002\.h5: $reason.* earlier checkpoints are intact" \
  "full disk ($mechanism): the write fails naming the file" write "$full/ck" 2 $limit
expect_error 1 1 "cannot write checkpoint $full/ck/ckpt-00000002\.h5: $reason.* earlier checkpoints are intact" \
  "full disk ($mechanism), one rank" write "$full/ck" 2 $limit
[ ! -e "$full/ck/.ckpt-00000002.h5.tmp" ] && [ ! -e "$full/ck/ckpt-00000002.h5" ]
tap_ok $? "full disk: no temporary or partial file left [$(ls -A "$full/ck" | tr '\n' ' ')]"
quiet 1 latest "$full/ck"
[ "$(cat "$tap_tmp/out.txt")" = "$full/ck/ckpt-00000001.h5" ]
tap_ok $? "full disk: the previous checkpoint is still the latest ($(cat "$tap_tmp/out.txt"))"
rm -f "$full/filler"
expect_load 1 "$full/ck/ckpt-00000001.h5" 1 "full disk: the previous checkpoint loads"

# ---- a file-size limit (RLIMIT_FSIZE, or a quota): on one rank alone, and on one of two ranks. The
# writer leaves the file open and ends at once: HDF5's close of it failed again past the limit and
# crashed at exit on one rank (exit 139), and on two ranks ran other collectives on the limited rank
# than on the other, and the job waited in it for ever.
fsz="$tap_tmp/fsz"
quiet 1 write "$fsz" 1
expect_error 1 1 "cannot write checkpoint $fsz/ckpt-00000002\.h5: .* earlier checkpoints are intact" \
  "a file-size limit: the write fails naming the file" write "$fsz" 2 --file-size-limit 1000000
timeout 60 "$mpiexec" -n 1 "$prog" write "$fsz" 2 : -n 1 "$prog" write "$fsz" 2 --file-size-limit 1000000 \
  >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
rc=$?
msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
[ $rc = 1 ] && printf '%s\n' "$msg" | grep -q "rank 1: cannot write checkpoint $fsz/ckpt-00000002.h5: .* earlier checkpoints are intact" &&
  [ "$(ls -A "$fsz" | tr '\n' ' ')" = "ckpt-00000001.h5 " ]
tap_ok $? "np=2: a file-size limit on rank 1 alone ends the job: exit $rc, $msg [$(ls -A "$fsz" | tr '\n' ' ')]"

touch "$tap_tmp/plainfile"
expect_error 1 1 "cannot write checkpoint $tap_tmp/plainfile/ck/ckpt-00000001\.h5: \
cannot create directory $tap_tmp/plainfile: Not a directory" \
  "a directory that cannot be created" write "$tap_tmp/plainfile/ck" 1

# one rank whose node mounts the directory read-only (its own mount namespace): the others must not
# be left in the collective create (they waited there for ever)
ro="$tap_tmp/ro"
quiet 1 write "$ro" 1
if unshare --mount true 2>/dev/null; then
  timeout 60 "$mpiexec" -n 1 "$prog" write "$ro" 2 : -n 1 unshare --mount sh -c \
    'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$1" write "$0" 2' "$ro" "$prog" \
    >"$tap_tmp/out.txt" 2>"$tap_tmp/err.txt"
  rc=$?
  msg=$(grep '^surge: error:' "$tap_tmp/err.txt" | head -n 1)
  [ $rc = 1 ] && printf '%s\n' "$msg" | grep -q "rank 1: cannot write checkpoint $ro/ckpt-00000002.h5: this rank's node \
.* cannot write in $ro: Read-only file system (no file was written; earlier checkpoints are intact" &&
    [ "$(ls -A "$ro" | tr '\n' ' ')" = "ckpt-00000001.h5 " ]
  tap_ok $? "np=2: rank 1 cannot write the directory (read-only on its node): exit $rc, $msg [$(ls -A "$ro" | tr '\n' ' ')]"
else
  tap_skip "unshare --mount does not work here (a rank with the directory read-only needs its own mount namespace)"
fi

# ---- kill -9 in the middle of a write (a state of 3 x 12.5 MB, so the write takes a while)
k="$tap_tmp/kill"
big="model.mlp_hidden=2048,1024"
quiet 1 write "$k" 1 -D "$big" -D checkpoint.compression=shuffle-deflate
"$prog" write "$k" 2 -D "$big" -D checkpoint.compression=shuffle-deflate >/dev/null 2>&1 &
writer=$!
tries=0
while [ ! -e "$k/.ckpt-00000002.h5.tmp" ] && [ $tries -lt 3000 ]; do
  sleep 0.01
  tries=$((tries + 1))
done
kill -9 $writer
wait $writer 2>/dev/null
[ -e "$k/.ckpt-00000002.h5.tmp" ] && [ ! -e "$k/ckpt-00000002.h5" ]
tap_ok $? "kill -9: the writer died with its temporary file there and no ckpt-00000002.h5"
quiet 1 latest "$k"
[ "$(cat "$tap_tmp/out.txt")" = "$k/ckpt-00000001.h5" ]
tap_ok $? "kill -9: the latest is still the previous checkpoint ($(cat "$tap_tmp/out.txt"))"
expect_load 2 "$k/ckpt-00000001.h5" 1 "kill -9: the previous checkpoint loads" -D "$big"
quiet 2 write "$k" 3 -D "$big" -D checkpoint.compression=shuffle-deflate
[ ! -e "$k/.ckpt-00000002.h5.tmp" ] && [ -e "$k/ckpt-00000003.h5" ] && [ -e "$k/ckpt-00000001.h5" ]
tap_ok $? "kill -9: the next write removes the dead writer's temporary file [$(ls -A "$k" | tr '\n' ' ')]"

tap_done
