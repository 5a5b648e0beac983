bin_PROGRAMS += surge-train
surge_train_SOURCES = src/apps/surge_train.c
surge_train_LDADD = $(SURGE_LIBS)
