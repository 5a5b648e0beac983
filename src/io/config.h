/* The run's configuration: every deck key lands in one field here. The deck parser (io/deck.h)
 * fills it from a schema table (io/config_schema.c) that also drives validation, the resolved-deck
 * echo and doc/deck.md, so a key is declared in exactly one place. */
#ifndef SURGE_CONFIG_H
#define SURGE_CONFIG_H

#include <stdint.h>

#define CFG_STR 256
#define CFG_MAX_LIST 16

typedef struct config {
  /* [run] */
  char run_name[CFG_STR];
  long steps;          /* optimizer steps to run */
  uint64_t seed;
  long eval_every;     /* evaluate every N steps (0: only at the end) */
  long print_every;    /* progress line every N steps */
  long sample_every;   /* gpt: a sample after each evaluation at a multiple of N steps, and the last (0: never) */
  long sample_tokens;  /* new tokens of each such sample */
  char out_dir[CFG_STR]; /* where the run writes its files */
  int overwrite;       /* allow replacing the files of a finished run in out_dir */

  /* [model] */
  char zoo[32];        /* mlp | vgg-mini | resnet-mini | gpt */
  int mlp_hidden[CFG_MAX_LIST]; /* mlp hidden widths, e.g. 512,512 */
  int mlp_nhidden;
  int vgg_channels[CFG_MAX_LIST]; /* vgg-mini conv widths per stage (two convs each), e.g. 32,64 */
  int vgg_nstages;
  int vgg_fc;          /* vgg-mini hidden fully-connected width */
  int resnet_width;    /* resnet-mini stem channels */
  int resnet_blocks;   /* residual blocks per stage */
  int resnet_stages;   /* stages (each after the first halves H,W and doubles channels) */
  char norm[16];       /* vgg-mini, resnet-mini: none | batchnorm (after every convolution) */
  char batchnorm[16];  /* global (statistics of the whole batch, every layout alike) | local (each rank's) */
  double dropout;      /* vgg-mini, resnet-mini: dropout probability before the output layer (0: none) */
  int gpt_layers, gpt_width, gpt_heads, gpt_context;
  int gpt_vocab_multiple; /* pad the vocabulary to a multiple of this */
  char model_init[CFG_STR]; /* start from these parameters (io/weights.h); "": from the seed */

  /* [data] */
  char data_source[32]; /* fashion-mnist | text | tokens | synthetic */
  char data_path[CFG_STR]; /* directory (fashion-mnist), file/directory (text), shards (tokens) */
  char val_path[CFG_STR];  /* tokens: the validation shards ("" = *val*.bin beside a directory's) */
  char tokenizer[CFG_STR]; /* tokens: directory of vocab.json + merges.txt ("" = none) */
  long vocab_size;         /* tokens: the vocabulary when no tokenizer is named (0: take it from it) */
  long train_samples;  /* use the first N training samples (0: all) */
  long test_samples;   /* evaluate on the first N test/validation samples (0: all) */
  double val_fraction; /* text: held-out tail for validation */
  long synthetic_samples;

  /* [train] */
  long global_batch;
  char optimizer[16];  /* sgd | adamw */
  double lr, momentum, weight_decay, beta1, beta2, eps;
  int nesterov;
  char schedule[16];   /* constant | cosine */
  long warmup_steps;
  double min_lr;       /* cosine floor */
  double clip_norm;    /* 0: no clipping */

  /* [parallel] */
  char parallel_mode[16]; /* dp | burst | 3d */
  char plan_file[CFG_STR]; /* burst: the plan (burst/plan.h file format) */
  double bucket_mb;    /* gradient allreduce bucket size, MiB */
  int overlap;         /* start gradient buckets during the backward pass */
  int node_shared;     /* dp on one node: sum and update through node-shared memory */
  double amplification; /* surge-plan: per-layer amplification limit A >= 1 (burst/plan.h) */
  char profile_file[CFG_STR]; /* surge-profile output / surge-plan input (burst/profiler.h) */
  double net_p2p_alpha_us, net_p2p_bytes_per_us, net_ar_alpha_us, net_ar_bytes_per_us; /* surge-plan/-sim
                          cost model network; negative: the profile's (burst/graph_file.h) */
  int tp, pp, dp;      /* 3d: tensor, pipeline and data parallel degrees (product: the rank count) */
  int micro_batches;   /* 3d: micro-batches per step */
  char pipe_schedule[8]; /* 3d: 1f1b | gpipe */
  int pipe_stages[CFG_MAX_LIST]; /* 3d: blocks per pipeline stage; {0}: balanced by FLOPs */
  int pipe_nstages;

  /* [compress] (compress/, doc/compression.md; 3d only) */
  int compress_cb;          /* compressed back-propagation of pipeline activation gradients */
  int compress_cb_rank;
  int compress_lep;         /* lazy error propagation */
  int compress_epilogue_only;
  int compress_fe;          /* fused embedding synchronisation */
  int compress_sc_stages;   /* stages below this compress their data-parallel gradients */
  int compress_dp_rank;
  double compress_warmup_fraction;
  double compress_min_rate; /* 0: off */

  /* [multiplex] (mux/mux.h) */
  char mux_channel[CFG_STR];  /* partner channel name; "" = automatic (MPMD, or Slurm's job id) */
  char mux_on_fg_end[16];     /* background: stop | continue when the foreground ends */
  double mux_min_wait_us;     /* background: a waiting foreground counts as idle from this expected wait */
  double mux_poll_us;         /* foreground: longest sleep between polls while waiting (0: spin in MPI) */
  double mux_partner_wait_s;  /* background: how long to wait for a foreground to attach */
  char mux_priority[16];      /* background: idle | nice | none (OS priority) */
  int mux_follow_affinity;    /* background: run on its partner's CPU set */
  double mux_slowdown_limit;  /* background: hold back while the foreground runs over this x its solo time */
  char mux_slowdown_feedback[8]; /* background: device | always | off */
  long mux_partner_offset;    /* partner slot = this rank's index on its node + offset */
  char mux_baseline[CFG_STR]; /* foreground: the log of a foreground-only run ("" = none) */
  /* set by surge-train's command line and launch, not by deck keys */
  int mux_role;               /* mux_role_t: --foreground, --background, or MPMD partner */
  char mux_auto_channel[72];  /* MPMD with a background: the channel all its jobs agreed on */
  char job_label[24];         /* MPMD: this job's name in shared output ("background", "job 2"); "" alone */

  /* [log] */
  char log_file[CFG_STR];
  long log_flush_every; /* flush the HDF5 log every N steps */
  long timeline_every;  /* 3d: log the pipeline timeline every N steps (0: never) */

  /* [checkpoint] */
  long ckpt_every;     /* steps between checkpoints (0: only at the end and on a signal) */
  char ckpt_dir[CFG_STR];
  int ckpt_keep;       /* newest checkpoints kept */
  char ckpt_compression[24]; /* shuffle-deflate | bitshuffle-lz4 | none */
  int resume;          /* start from the newest checkpoint in ckpt_dir */

  /* [backend] */
  char backend[16];    /* cpu | ref | cuda */
  int threads;         /* BLAS threads per rank */
  int device;          /* cuda: GPU index, -1: by local rank */
  char precision[8];   /* fp32 | bf16 (matrix products) */
  int tf32;            /* cuda: float32 products may use TF32 */
  int flush_denormals; /* cpu: flush-to-zero and denormals-are-zero on the rank's thread */
  char simd[8];        /* cpu: auto | avx512 | avx2 | none (the kernels' vector width) */
  char device_comm[8]; /* cuda: auto | nccl | staged */
} config_t;

#endif
