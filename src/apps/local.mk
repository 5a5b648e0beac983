bin_PROGRAMS += surge-train
surge_train_SOURCES = src/apps/surge_train.c
surge_train_LDADD = $(SURGE_LIBS)

# surge-sample: text from a trained gpt (doc/generate.md).
bin_PROGRAMS += surge-sample
surge_sample_SOURCES = src/apps/surge_sample.c
surge_sample_LDADD = $(SURGE_LIBS)

# surge-sweep: the variants of a deck's [sweep] section, for Slurm job arrays (doc/sweeps.md).
bin_PROGRAMS += surge-sweep
surge_sweep_SOURCES = src/apps/surge_sweep.c
surge_sweep_LDADD = $(SURGE_LIBS)

# surge-convert: a gpt's weights between model.h5, checkpoints, safetensors and llm.c's file
# (doc/formats.md, "Weights in and out").
bin_PROGRAMS += surge-convert
surge_convert_SOURCES = src/apps/surge_convert.c
surge_convert_LDADD = $(SURGE_LIBS)
