# The tokenizer (doc/data.md): byte-level BPE vocabularies (GPT-2 / Hugging Face files), GPT-2's
# pre-tokenization through PCRE2, training, and the corpus encoder that writes llm.c shards.
libsurge_a_SOURCES += \
  src/tok/bytemap.c src/tok/bytemap.h src/tok/u64map.c src/tok/u64map.h \
  src/tok/bpe.c src/tok/bpe.h src/tok/bpe_impl.h src/tok/vocab_read.c src/tok/vocab_write.c \
  src/tok/pretok.c src/tok/pretok.h src/tok/encode.c src/tok/train.c src/tok/train.h src/tok/pieces.c src/tok/pieces.h \
  src/tok/files.c src/tok/files.h src/tok/corpus.c src/tok/corpus.h \
  src/tok/shard_read.c src/tok/shard_read.h
bin_PROGRAMS += surge-tokenize
surge_tokenize_SOURCES = src/apps/surge_tokenize.c
surge_tokenize_LDADD = $(SURGE_LIBS)
dist_check_SCRIPTS += tests/test_tokenize.sh
TESTS += tests/test_tokenize.sh
EXTRA_DIST += tools/tok-reference.py tests/data/tok
# The corpus the shipped gpt-bpe and gpt2-124m decks read (doc/data.md), installed beside the decks.
corpusdir = $(pkgdatadir)/tools
dist_corpus_SCRIPTS = tools/make-corpus.sh
