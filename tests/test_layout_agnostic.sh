#!/bin/sh
# The trainer runs any layout without knowing which (layout/layout.h): nothing in src/train/ names a
# layout, includes a layout's folder or reaches into an executor. The same search finds the names
# where they belong (the layout table, the burst layout), so it can fail. The metrics log
# (src/io/log*) and surge-report (src/report/) know no layout or feature either: the parts describe
# their own groups and views (io/log.h, io/log_part.h, report/report.h), searched in the code
# without its comments. Nor does the deck (src/io/config*, deck*, options*): each part declares its
# own keys beside its options struct (core/keys.h) and checks them; the schema only merges.
. "${SURGE_TOP_SRCDIR:-.}/tests/tap.sh"

# names: the layouts of the table and words only a layout's own code uses
pattern='burst|executor|"dp"|"3d"|pipeline|tensor.parallel|#include "(burst|pipe|mux)/layout'

found=$(grep -n -i -E "$pattern" "$top_src"/src/train/*.c "$top_src"/src/train/*.h)
[ -z "$found" ]
tap_ok $? "src/train/ names no layout (grep -iE '$pattern')"
[ -z "$found" ] || tap_diag "$found"

grep -q -i -E "$pattern" "$top_src/src/layout/layouts.c" && grep -q -i -E "$pattern" "$top_src/src/burst/layout.c"
tap_ok $? "the same search finds the names in the layout table and the burst layout"

grep -q "layout->ops->step\|l->ops->step" "$top_src/src/train/train.c"
tap_ok $? "the trainer steps through the layout's table of operations"

code_of() { sed -e 's,/\*.*,,' -e 's,^[[:space:]]*\*.*,,' "$1"; } # without its comments
# the log and the report: no layout, none of the layouts' features (a plan, a pipeline, compression),
# no multiplexing group, no include of their folders
parts='burst|executor|"dp"|"3d"|pipeline|tensor.parallel|compress|"/plan|/multiplex|#include "(burst|pipe|mux|compress|layout)/'
found=""
for f in $(ls "$top_src"/src/io/log*.[ch] "$top_src"/src/report/*.[ch] | sort); do
  hits=$(code_of "$f" | grep -n -i -E "$parts") && found="$found ${f#"$top_src"/}: $hits"
done
[ -z "$found" ]
tap_ok $? "src/io/log* and src/report/ name no layout or feature of one (grep -iE '$parts' without comments)"
[ -z "$found" ] || tap_diag "$found"
code_of "$top_src/src/pipe/pipe_log.c" | grep -q -i -E "$parts" && code_of "$top_src/src/burst/plan_log.c" | grep -q -i -E "$parts"
tap_ok $? "the same search finds the names in the parts' own log files"

# the deck: no layout or feature option in its structs, schema, parser or the options it hands out
deck='"(dp|burst|3d)"|compress_|mux_|multiplex|pipe_|plan_file|profile_file|bucket_mb|node_shared|->(tp|pp|dp)\b|#include "(burst|pipe|mux|compress|sync)/'
found=""
for f in $(ls "$top_src"/src/io/config*.[ch] "$top_src"/src/io/deck*.[ch] "$top_src"/src/io/options.[ch] | sort); do
  hits=$(code_of "$f" | grep -n -E "$deck") && found="$found ${f#"$top_src"/}: $hits"
done
[ -z "$found" ]
tap_ok $? "src/io's deck files name no layout or feature option (grep -E '$deck' without comments)"
[ -z "$found" ] || tap_diag "$found"
code_of "$top_src/src/pipe/options.c" | grep -q -E "$deck" && code_of "$top_src/src/mux/options.c" | grep -q -E "$deck" &&
  code_of "$top_src/src/layout/deck_parts.c" | grep -q -E "$deck"
tap_ok $? "the same search finds them in the parts' own option files and the list of parts"

# roles are not names (nn/layer.h): no code outside the zoo matches on the gpt's node names; the
# executor's sums, the pieces, the norm and checkpoints read the nodes' tensor-parallel roles. The
# weights formats' table (io/gpt2_map.c) holds Hugging Face's names, some of which look alike
# (wte.weight, lm_head.weight); Surge's own names it takes from the zoo.
names='"(wte|lm_head|lnf)[".]|\.(qkv|proj|fc|fcproj|attn)"|"blocks\.'
found=""
for f in $(find "$top_src/src" -name '*.[ch]' ! -path '*/nn/zoo.c' ! -path '*/io/gpt2_map.c' | sort); do
  hits=$(code_of "$f" | grep -n -E "$names") && found="$found ${f#"$top_src"/}: $hits"
done
[ -z "$found" ]
tap_ok $? "no code outside src/nn/zoo.c (and io/gpt2_map.c, Hugging Face's names) names a gpt node (grep -E '$names' without comments)"
[ -z "$found" ] || tap_diag "$found"
code_of "$top_src/src/nn/zoo.c" | grep -q -E "$names"
tap_ok $? "the same search finds the names in the zoo"

tap_done
