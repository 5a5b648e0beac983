#include "io/config_schema.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define FIELD(f) .offset = offsetof(config_t, f), .size = sizeof(((config_t *)0)->f)
#define VALUES(...) ((const char *const[]){__VA_ARGS__, NULL})
enum { CLOSED = 0, OPEN = 1 };

/* One row per key type; every row names its config_t field, so offset and size cannot drift. */
#define KEY(s, k, t, d, f, text) .section = s, .key = k, .type = t, .def = d, FIELD(f), .doc = text
#define INT_KEY(s, k, f, d, lo, hi, text)                                                                    \
  { KEY(s, k, CFG_INT, d, f, text), .imin = lo, .imax = hi }
#define FLOAT_KEY(s, k, f, d, lo, lo_open, hi, hi_open, text)                                                \
  { KEY(s, k, CFG_FLOAT, d, f, text), .fmin = lo, .fmin_open = lo_open, .fmax = hi, .fmax_open = hi_open }
#define BOOL_KEY(s, k, f, d, text)                                                                           \
  { KEY(s, k, CFG_BOOL, d, f, text) }
#define STRING_KEY(s, k, f, d, minlen, text)                                                                 \
  { KEY(s, k, CFG_STRING, d, f, text), .imin = minlen }
#define NAME_KEY(s, k, f, d, text)                                                                           \
  { KEY(s, k, CFG_NAME, d, f, text), .imin = 1 }
#define ENUM_KEY(s, k, f, d, vals, text)                                                                     \
  { KEY(s, k, CFG_ENUM, d, f, text), .values = vals }
#define LIST_KEY(s, k, f, count_f, d, lo, hi, text)                                                          \
  { KEY(s, k, CFG_INT_LIST, d, f, text), .imin = lo, .imax = hi, .count_offset = offsetof(config_t, count_f) }

// clang-format off: the table reads best one key per row
#define MAX_COUNT 1000000000LL /* steps, samples, intervals */
#define MAX_WIDTH 65536LL      /* any layer width */

const cfg_section_t cfg_sections[] = {
    {"run", "What the run is called, how long it runs, where it writes"},
    {"model", "The network: a model from the zoo and its shape"},
    {"data", "The training and evaluation data"},
    {"train", "Batch, optimizer, learning-rate schedule, clipping"},
    {"parallel", "How the ranks share the work"},
    {"compress", "Optimus-CC's compression of critical-path traffic in 3d runs (doc/compression.md)"},
    {"multiplex", "Foreground/background co-scheduling (surge-train --foreground / --background)"},
    {"log", "The HDF5 metrics log"},
    {"checkpoint", "Checkpoints (parallel HDF5) and restarts"},
    {"backend", "Where the arithmetic runs"},
};
const int cfg_nsections = (int)(sizeof cfg_sections / sizeof cfg_sections[0]);

const cfg_key_t cfg_keys[] = {
    NAME_KEY("run", "name", run_name, "run", "name of the run (used in file names)"),
    INT_KEY("run", "steps", steps, "100", 1, MAX_COUNT, "optimizer steps to run"),
    INT_KEY("run", "seed", seed, "1", 0, INT64_MAX, "seed of every random stream (weights, data order)"),
    INT_KEY("run", "eval_every", eval_every, "0", 0, MAX_COUNT,
            "evaluate every N steps (0: only at the end)"),
    INT_KEY("run", "print_every", print_every, "10", 1, MAX_COUNT, "print a progress line every N steps"),
    INT_KEY("run", "sample_every", sample_every, "0", 0, MAX_COUNT,
            "gpt: after each evaluation at a multiple of N steps and after the last one, rank 0 prints a "
            "sample of the model and stores it in the log's /samples (0: never; a multiple of eval_every)"),
    INT_KEY("run", "sample_tokens", sample_tokens, "64", 1, MAX_COUNT,
            "new tokens of each sample (below gpt_context: it starts from one token)"),
    STRING_KEY("run", "out_dir", out_dir, "runs/${run.name}", 1, "directory the run writes its files to"),
    BOOL_KEY("run", "overwrite", overwrite, "false", "replace the files of a finished run in out_dir"),

    ENUM_KEY("model", "zoo", zoo, NULL, VALUES("mlp", "vgg-mini", "resnet-mini", "gpt"),
             "model architecture from the zoo"),
    LIST_KEY("model", "mlp_hidden", mlp_hidden, mlp_nhidden, "512,512", 1, MAX_WIDTH,
             "mlp: hidden layer widths, input to output"),
    LIST_KEY("model", "vgg_channels", vgg_channels, vgg_nstages, "32,64", 1, 4096,
             "vgg-mini: conv channels per stage (two 3x3 convs and a 2x2 max-pool each)"),
    INT_KEY("model", "vgg_fc", vgg_fc, "256", 1, MAX_WIDTH,
            "vgg-mini: width of the hidden fully-connected layer"),
    INT_KEY("model", "resnet_width", resnet_width, "16", 1, 4096, "resnet-mini: stem channels"),
    INT_KEY("model", "resnet_blocks", resnet_blocks, "2", 1, 64, "resnet-mini: residual blocks per stage"),
    INT_KEY("model", "resnet_stages", resnet_stages, "2", 1, 8,
            "resnet-mini: stages (each after the first halves H,W and doubles channels)"),
    ENUM_KEY("model", "norm", norm, "none", VALUES("none", "batchnorm"),
             "vgg-mini, resnet-mini: batchnorm puts a batch norm after every convolution (which then has no bias)"),
    ENUM_KEY("model", "batchnorm", batchnorm, "global", VALUES("global", "local"),
             "batch norm statistics: global, of the whole batch a layer runs on, summed over its ranks (every "
             "layout computes one rank's numbers); local, of each rank's samples only (PyTorch DDP's default: "
             "the maths changes with the rank count)"),
    FLOAT_KEY("model", "dropout", dropout, "0", 0, CLOSED, 1, OPEN,
              "vgg-mini, resnet-mini: dropout probability before the output layer (0: no dropout; the mask is "
              "a function of seed, step, sample id and element, the same in every layout)"),
    INT_KEY("model", "gpt_layers", gpt_layers, "4", 1, 256, "gpt: transformer blocks"),
    INT_KEY("model", "gpt_width", gpt_width, "256", 1, MAX_WIDTH,
            "gpt: embedding width (a multiple of gpt_heads)"),
    INT_KEY("model", "gpt_heads", gpt_heads, "4", 1, 256, "gpt: attention heads per block"),
    INT_KEY("model", "gpt_context", gpt_context, "128", 1, MAX_WIDTH, "gpt: context length in tokens"),
    INT_KEY("model", "gpt_vocab_multiple", gpt_vocab_multiple, "128", 1, 4096,
            "gpt: the token table and logits padded to a multiple of this (llm.c: 50257 -> 50304); the padding "
            "is kept out of the loss and the gradients (1: no padding)"),
    STRING_KEY("model", "init", model_init, "", 0,
               "start from these parameters: model.h5, a checkpoint (its parameters only), safetensors (Hugging "
               "Face GPT-2) or llm.c's model file; shapes checked against the deck; fresh optimizer state "
               "(empty: from the seed)"),

    ENUM_KEY("data", "source", data_source, "fashion-mnist", VALUES("fashion-mnist", "text", "tokens", "synthetic"),
             "where samples come from (tokens: llm.c token shards, doc/data.md)"),
    STRING_KEY("data", "path", data_path, "", 0,
               "fashion-mnist: directory; text: file or directory (empty: the default location); tokens: the "
               "training shards, a glob (shards/x_train_*.bin) or a directory (its *train*.bin)"),
    STRING_KEY("data", "val_path", val_path, "", 0,
               "tokens: the validation shards, a glob or a directory (empty: the *val*.bin of path's directory)"),
    STRING_KEY("data", "tokenizer", tokenizer, "", 0,
               "tokens: directory of the vocab.json + merges.txt that made the shards (gives the vocabulary)"),
    INT_KEY("data", "vocab_size", vocab_size, "0", 0, 65536,
            "tokens: the vocabulary when no tokenizer is named (0: the tokenizer's; GPT-2: 50257)"),
    INT_KEY("data", "train_samples", train_samples, "0", 0, MAX_COUNT,
            "use the first N training samples (0: all)"),
    INT_KEY("data", "test_samples", test_samples, "0", 0, MAX_COUNT,
            "evaluate on the first N test/validation samples (0: all)"),
    FLOAT_KEY("data", "val_fraction", val_fraction, "0.05", 0, CLOSED, 1, OPEN,
              "text: fraction held out at the end for validation"),
    INT_KEY("data", "synthetic_samples", synthetic_samples, "4096", 1, MAX_COUNT,
            "synthetic: samples generated"),

    INT_KEY("train", "global_batch", global_batch, "128", 1, 10000000,
            "samples per optimizer step, over all ranks"),
    ENUM_KEY("train", "optimizer", optimizer, "sgd", VALUES("sgd", "adamw"), "update rule"),
    FLOAT_KEY("train", "lr", lr, "0.05", 0, CLOSED, 10, CLOSED, "peak learning rate"),
    FLOAT_KEY("train", "momentum", momentum, "0.9", 0, CLOSED, 1, OPEN, "sgd: momentum (0: plain sgd)"),
    BOOL_KEY("train", "nesterov", nesterov, "false", "sgd: Nesterov momentum"),
    FLOAT_KEY("train", "weight_decay", weight_decay, "0", 0, CLOSED, 10, CLOSED,
              "decoupled weight decay (adamw) or L2 coefficient (sgd)"),
    FLOAT_KEY("train", "beta1", beta1, "0.9", 0, CLOSED, 1, OPEN, "adamw: first-moment decay"),
    FLOAT_KEY("train", "beta2", beta2, "0.95", 0, CLOSED, 1, OPEN, "adamw: second-moment decay"),
    FLOAT_KEY("train", "eps", eps, "1e-8", 0, OPEN, 1, CLOSED, "adamw: denominator epsilon"),
    ENUM_KEY("train", "schedule", schedule, "constant", VALUES("constant", "cosine"),
             "constant: lr at every step; cosine: warmup, then cosine decay to min_lr at the last step"),
    INT_KEY("train", "warmup_steps", warmup_steps, "0", 0, MAX_COUNT,
            "cosine: linear warmup to lr over the first N steps"),
    FLOAT_KEY("train", "min_lr", min_lr, "0", 0, CLOSED, 10, CLOSED,
              "cosine: final learning rate (at most lr)"),
    FLOAT_KEY("train", "clip_norm", clip_norm, "0", 0, CLOSED, 1e6, CLOSED,
              "clip the global gradient norm to this (0: no clipping)"),

    ENUM_KEY("parallel", "mode", parallel_mode, "dp", VALUES("dp", "burst", "3d"),
             "dp: data parallelism, every layer on all ranks, gradients summed by allreduce; burst: every "
             "layer on the ranks of the plan file (doc/burst.md); 3d: tensor x pipeline x data parallelism of "
             "the gpt (doc/3d.md)"),
    STRING_KEY("parallel", "plan", plan_file, "", 0,
               "burst: the plan file (surge-burst-plan text) giving each layer its ranks; without one, burst "
               "plans at start-up from [parallel] profile"),
    FLOAT_KEY("parallel", "bucket_mb", bucket_mb, "1", 0, OPEN, 1024, CLOSED,
              "gradient allreduce bucket size in MiB (buckets hold whole tensors; a larger tensor is one bucket)"),
    BOOL_KEY("parallel", "overlap", overlap, "true",
             "start each gradient bucket's allreduce during the backward pass as soon as its gradients are "
             "final (false: all buckets after the backward pass, behind a barrier)"),
    BOOL_KEY("parallel", "node_shared", node_shared, "true",
             "dp with all ranks on one node and a host-memory backend (cpu, ref): sum gradients and update "
             "parameters through node-shared memory, each rank its 1/R slice of the slab (false, or ranks on "
             "several nodes: allreduce in buckets, every rank updates all; doc/design.md)"),
    FLOAT_KEY("parallel", "amplification", amplification, "2", 1, CLOSED, 1e6, CLOSED,
              "surge-plan: per-layer amplification limit A (a layer may use n ranks only if n times its "
              "time there is at most A times its one-rank time; doc/burst.md); --amp overrides it"),
    STRING_KEY("parallel", "profile", profile_file, "", 0,
               "the burst cost profile (HDF5): surge-profile writes it (default profile.h5 when empty), "
               "surge-plan reads it; --profile / -o override it; surge-train in burst mode plans from it (or "
               "predicts the plan file's costs with it)"),
    FLOAT_KEY("parallel", "net_p2p_alpha_us", net_p2p_alpha_us, "-1", -1, CLOSED, 1e9, CLOSED,
              "surge-plan, surge-sim: point-to-point latency (us) of the cost model; negative: the profile's"),
    FLOAT_KEY("parallel", "net_p2p_bytes_per_us", net_p2p_bytes_per_us, "-1", -1, CLOSED, 1e15, CLOSED,
              "surge-plan, surge-sim: point-to-point bandwidth (bytes/us) of one rank's link; negative: the "
              "profile's"),
    FLOAT_KEY("parallel", "net_ar_alpha_us", net_ar_alpha_us, "-1", -1, CLOSED, 1e9, CLOSED,
              "surge-plan, surge-sim: latency (us) of one allreduce step; negative: the profile's"),
    FLOAT_KEY("parallel", "net_ar_bytes_per_us", net_ar_bytes_per_us, "-1", -1, CLOSED, 1e15, CLOSED,
              "surge-plan, surge-sim: allreduce bandwidth (bytes/us) per rank; negative: the profile's"),

    INT_KEY("parallel", "tp", tp, "1", 1, 4096,
            "3d: tensor-parallel ranks per pipeline stage (must divide gpt_heads and the vocabulary)"),
    INT_KEY("parallel", "pp", pp, "1", 1, 4096, "3d: pipeline stages (at most gpt_layers)"),
    INT_KEY("parallel", "dp", dp, "1", 1, 1000000,
            "3d: data-parallel replicas of the pipeline (tp * pp * dp = the rank count)"),
    INT_KEY("parallel", "micro_batches", micro_batches, "1", 1, 65536,
            "3d: micro-batches per step; each replica's share of the global batch splits into this many"),
    ENUM_KEY("parallel", "schedule", pipe_schedule, "1f1b", VALUES("1f1b", "gpipe"),
             "3d: pipeline schedule; 1f1b: warm-up forwards, then one forward and one backward alternating "
             "(at most pp - s micro-batches held on stage s); gpipe: all forwards, then all backwards"),
    LIST_KEY("parallel", "stages", pipe_stages, pipe_nstages, "0", 0, 4096,
             "3d: transformer blocks per pipeline stage, first to last (pp entries, summing to gpt_layers); 0: "
             "balanced by training FLOPs"),

    BOOL_KEY("compress", "cb", compress_cb, "false",
             "3d: compressed back-propagation: the activation gradients a stage sends to the one before it "
             "go as PowerSGD factors P, Q of rank cb_rank (needs pp > 1)"),
    INT_KEY("compress", "cb_rank", compress_cb_rank, "16", 1, 65536,
            "3d: rank of the compressed activation gradients (at most the width and the tokens of a "
            "micro-batch)"),
    BOOL_KEY("compress", "lep", compress_lep, "true",
             "3d: lazy error propagation: what a compressed gradient missed is added to the next one sent over "
             "the same boundary (across micro-batches and steps)"),
    BOOL_KEY("compress", "epilogue_only", compress_epilogue_only, "true",
             "3d: compress only the backward transfers after a stage's last forward (the cool-down of 1f1b: "
             "pp - s of them from stage s, pp (pp - 1) / 2 per pipeline and step); false: all of them"),
    BOOL_KEY("compress", "fe", compress_fe, "false",
             "3d: fused embedding synchronisation: the word embedding's gradient is left out of the "
             "data-parallel sum and summed once over the first and last stages' ranks of its tensor-parallel "
             "index (2 dp ranks) (needs pp > 1)"),
    INT_KEY("compress", "sc_stages", compress_sc_stages, "0", 0, 4096,
            "3d: selective stage compression: stages 0 .. sc_stages-1 sum their data-parallel gradients as "
            "PowerSGD factors of rank dp_rank (0: none; at most pp; needs dp > 1)"),
    INT_KEY("compress", "dp_rank", compress_dp_rank, "128", 1, 65536,
            "3d: rank of the compressed data-parallel gradients (each matrix: at most its smaller side)"),
    FLOAT_KEY("compress", "warmup_fraction", compress_warmup_fraction, "0", 0, CLOSED, 1, CLOSED,
              "3d: the first warmup_fraction * [run] steps sum the data-parallel gradients exactly"),
    FLOAT_KEY("compress", "min_rate", compress_min_rate, "0", 0, CLOSED, 1e6, CLOSED,
              "3d: a matrix (data-parallel or activation gradient) is sent exact unless its factors are at "
              "least min_rate times smaller: (n + m) r * min_rate <= n m (0: always compressed)"),

    STRING_KEY("multiplex", "channel", mux_channel, "", 0,
               "name both partners use (1..64 of A-Z a-z 0-9 . _ -); empty: chosen automatically in one MPMD "
               "mpiexec, slurm-JOBID inside a Slurm job; separate jobs elsewhere must set it"),
    ENUM_KEY("multiplex", "on_foreground_end", mux_on_fg_end, "stop", VALUES("stop", "continue"),
             "background: when its foreground ends, stop after the step with a checkpoint, or continue at "
             "full speed"),
    FLOAT_KEY("multiplex", "min_wait_us", mux_min_wait_us, "500", 0, CLOSED, 1e9, CLOSED,
              "background: run while the foreground waits on a receive expected to last at least this many "
              "microseconds (always while it is inactive, never during its allreduce)"),
    FLOAT_KEY("multiplex", "poll_us", mux_poll_us, "1000", 0, CLOSED, 1e6, CLOSED,
              "foreground: a wait polls without sleeping for its first 100 microseconds (or poll_us if shorter), "
              "then sleeps between polls, twice as long each time up to poll_us, leaving the core to the "
              "background (0: wait spinning inside MPI)"),
    FLOAT_KEY("multiplex", "partner_wait_s", mux_partner_wait_s, "120", 0, OPEN, 1e6, CLOSED,
              "background: give up (exit 1) when no foreground attached within this many seconds"),
    ENUM_KEY("multiplex", "priority", mux_priority, "idle", VALUES("idle", "nice", "none"),
             "background: CPU priority; idle: SCHED_IDLE (nice 19 where refused), nice: nice 19, none: as started"),
    INT_KEY("multiplex", "partner_offset", mux_partner_offset, "0", 0, 4095,
            "pair local rank i of this job on a node with rank i + offset of the partner job there (e.g. one "
            "1-rank background job per foreground rank: offsets 0, 1, ...)"),
    STRING_KEY("multiplex", "baseline", mux_baseline, "", 0,
               "foreground: the HDF5 log of a foreground-only run of the same deck; the slowdown is its median "
               "samples/s over this run's (empty: measured within the run when some steps had no background)"),
    BOOL_KEY("multiplex", "follow_affinity", mux_follow_affinity, "true",
             "background: run on the CPU set of its foreground partner"),
    FLOAT_KEY("multiplex", "slowdown_limit", mux_slowdown_limit, "1.1", 1, OPEN, 100, CLOSED,
              "background: hold back while the foreground's recent pieces of work take more than this many times "
              "as long as they do without a background (DeepPool's slowdown feedback)"),
    ENUM_KEY("multiplex", "slowdown_feedback", mux_slowdown_feedback, "device", VALUES("device", "always", "off"),
             "background: where slowdown_limit applies; device: on a GPU backend, whose kernels overlap the "
             "foreground's; always: also on CPUs (where the OS priority already keeps it off the foreground's "
             "core); off: never"),

    STRING_KEY("log", "file", log_file, "${run.out_dir}/log.h5", 1, "HDF5 metrics log of the run"),
    INT_KEY("log", "flush_every", log_flush_every, "10", 1, MAX_COUNT,
            "flush the log every N steps (what a kill can lose)"),
    INT_KEY("log", "timeline_every", timeline_every, "1", 0, MAX_COUNT,
            "3d: record every rank's pipeline events (/pipeline/events) every N steps (0: never)"),

    INT_KEY("checkpoint", "every", ckpt_every, "0", 0, MAX_COUNT,
            "write a checkpoint every N steps (0: only at the end and on SIGTERM/SIGUSR1)"),
    STRING_KEY("checkpoint", "dir", ckpt_dir, "${run.out_dir}/checkpoints", 1, "directory of the checkpoints"),
    INT_KEY("checkpoint", "keep", ckpt_keep, "3", 1, 1000000, "newest checkpoints kept (older ones are removed)"),
    ENUM_KEY("checkpoint", "compression", ckpt_compression, "bitshuffle-lz4",
             VALUES("bitshuffle-lz4", "shuffle-deflate", "none"),
             "HDF5 filter of checkpoint datasets (bitshuffle-lz4 needs the Debian package bitshuffle)"),
    BOOL_KEY("checkpoint", "resume", resume, "false",
             "start from the newest checkpoint in dir (also: surge-train --resume)"),

    ENUM_KEY("backend", "name", backend, "cpu", VALUES("cpu", "ref", "cuda"),
             "cpu: OpenBLAS; ref: naive reference (tests only); cuda: an NVIDIA GPU per rank (cuBLAS, kernels, "
             "NCCL; doc/gpu.md)"),
    INT_KEY("backend", "threads", threads, "1", 1, 1024, "BLAS threads per rank"),
    INT_KEY("backend", "device", device, "-1", -1, 1023,
            "cuda: the GPU of this rank; -1: its index among its job's ranks on the node, modulo the GPUs there"),
    ENUM_KEY("backend", "precision", precision, "fp32", VALUES("fp32", "bf16"),
             "matrix products in float32, or bf16 (operands rounded to bfloat16, float32 sums; parameters, "
             "gradients, optimizer state and activations stay float32, gradients are reduced in float32; cuda "
             "only)"),
    BOOL_KEY("backend", "tf32", tf32, "false",
             "cuda: float32 products may use TF32 tensor cores (false: true float32, as the equivalence tests "
             "need)"),
    BOOL_KEY("backend", "flush_denormals", flush_denormals, "true",
             "cpu: float values below 1.2e-38 count as zero (the CPU's flush-to-zero and denormals-are-zero "
             "modes, on the rank's own thread): the optimizer's moments of idle units decay into that range, "
             "where every operation takes a slow path; false: gradual underflow, as IEEE and the ref backend"),
    ENUM_KEY("backend", "simd", simd, "auto", VALUES("auto", "avx512", "avx2", "none"),
             "cpu: the vector width of the hand-written kernels (direct convolutions, the 2x2 max-pool, the "
             "unpacked linear forward); auto: the widest this CPU executes; avx512 (16 floats) or avx2 (8, with FMA) "
             "force one, an error where the CPU lacks it; none: convolutions lowered to OpenBLAS GEMMs, the general "
             "loops elsewhere"),
    ENUM_KEY("backend", "device_comm", device_comm, "auto", VALUES("auto", "nccl", "staged"),
             "cuda: how GPU buffers travel between ranks; nccl: NCCL collectives and grouped send/receive; "
             "staged: copied through host memory and sent with MPI; auto: NCCL unless ranks of a group share a "
             "GPU (which NCCL refuses)"),
};
// clang-format on
const int cfg_nkeys = (int)(sizeof cfg_keys / sizeof cfg_keys[0]);

int cfg_find_section(const char *section) {
  for (int i = 0; i < cfg_nsections; i++)
    if (strcmp(cfg_sections[i].name, section) == 0) return i;
  return -1;
}

int cfg_find_key(const char *section, const char *key) {
  for (int i = 0; i < cfg_nkeys; i++)
    if (strcmp(cfg_keys[i].section, section) == 0 && strcmp(cfg_keys[i].key, key) == 0) return i;
  return -1;
}

#define SUGGEST_MAX_LEN 64

/* Edit distance between two short strings: insertions, deletions, substitutions and swaps of
 * neighbours ("gtp" is one edit from "gpt"), each costing 1 (optimal string alignment). */
static int edit_distance(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  int d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1]; // d[i][j]: a[0,i) vs b[0,j)
  for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= na; i++)
    for (size_t j = 1; j <= nb; j++) {
      int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[na][nb];
}

static int is_prefix(const char *p, const char *s) { return *p && strncmp(p, s, strlen(p)) == 0; }

const char *cfg_closest(const char *word, const char *const *cands, int n) {
  size_t len = strlen(word);
  if (len == 0 || len > SUGGEST_MAX_LEN) return NULL;
  const char *best = NULL;
  int best_d = 3;
  for (int i = 0; n < 0 ? cands[i] != NULL : i < n; i++) {
    if (strlen(cands[i]) > SUGGEST_MAX_LEN) continue;
    int d = edit_distance(word, cands[i]);
    if (d < best_d && d < (int)len) best = cands[i], best_d = d;
  }
  if (best) return best;
  for (int i = 0; n < 0 ? cands[i] != NULL : i < n; i++)
    if (is_prefix(word, cands[i]) || is_prefix(cands[i], word)) return cands[i];
  return NULL;
}

const char *cfg_closest_key(const char *name, char *buf, size_t size) {
  enum { FULL = 80 };
  char(*full)[FULL] = xmalloc(FULL * (size_t)cfg_nkeys); /* "section.key" per schema key */
  const char **names = xmalloc(sizeof(char *) * (size_t)cfg_nkeys);
  for (int i = 0; i < cfg_nkeys; i++) {
    snprintf(full[i], FULL, "%s.%s", cfg_keys[i].section, cfg_keys[i].key);
    names[i] = full[i];
  }
  const char *close = cfg_closest(name, names, cfg_nkeys);
  if (close) snprintf(buf, size, "%s", close);
  free(names);
  free(full);
  return close ? buf : NULL;
}
