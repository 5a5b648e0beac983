# Evaluating a trained gpt (doc/eval.md): the scorer, the loss of a token stream, multiple choice.
libsurge_a_SOURCES += src/eval/eval.h src/eval/scorer.c src/eval/stream.c src/eval/choice.c
bin_PROGRAMS += surge-eval
surge_eval_SOURCES = src/apps/surge_eval.c
surge_eval_LDADD = $(SURGE_LIBS)
# Export, import, the independent numpy forward, [model] init and surge-eval together.
dist_check_SCRIPTS += tests/test_convert.sh
TESTS += tests/test_convert.sh
EXTRA_DIST += tests/gpt2_numpy.py
