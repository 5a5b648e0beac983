/* Surge's own files as weights: /params/<name> of model.h5 or a checkpoint, read on one process
 * (each rank of a job may read the same file at once: read-only, no MPI-IO), every tensor checked
 * (present, float32, the model's shape, storage as large as its extent, its hash64 where it has
 * one) before it is read; and model.h5 written from a gpt's parameters (surge-convert). */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/infile.h"
#include "core/state.h"
#include "io/deck.h"
#include "io/h5serial.h"
#include "io/h5util.h"
#include "io/model_file.h"
#include "io/options.h"
#include "io/printable.h"
#include "io/strbuf.h"
#include "io/weights.h"

#define TEXT_VOCAB 256 /* [data] source = text: bytes */

/* The vocabulary of an output of g: its unpadded classes. */
static int model_vocab(const graph_t *g) {
  const layer_t *out = &g->l[graph_output(g)];
  return g->classes_valid > 0 ? g->classes_valid : out->out.d[out->out.ndim - 1];
}

typedef struct h5in {
  const char *path;
  h5util_check_t c;
  hid_t file;
} h5in_t;

static h5in_t h5_open(const char *path) {
  if (infile_check(path, 0, NULL) != 0) surge_input_error("%s: cannot open weights", path);
  h5in_t h = {.path = path, .c = h5util_checker(path, H5UTIL_INPUT_ERROR)};
  h.c.lead = "weights: ";
  h.file = h5util_check(&h.c, H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT), "open", "");
  int has = h5util_exists(h.file, "params", H5I_GROUP);
  if (has == H5UTIL_NOT_HARD) surge_input_error("%s: /params is %s", path, H5UTIL_NOT_HARD_TEXT);
  if (has != 1) surge_input_error("%s: no group /params: not a Surge model file or checkpoint", path);
  return h;
}

/* The "vocab" attribute of / ("SIZE" or "SIZE:HASH"): SIZE, or 0 when there is none. */
static long file_vocab(h5in_t *h) {
  char *v = NULL;
  int rc = h5util_attr_read_string(h->file, "vocab", &v);
  if (rc == H5UTIL_ABSENT) return 0;
  if (rc != 0) h5util_fail(&h->c, "read attribute", "/vocab");
  char *end;
  long n = strtol(v, &end, 10);
  if (end == v || (*end && *end != ':') || n < 1 || n > (1L << 30)) {
    char shown[64];
    surge_input_error("%s: attribute vocab \"%s\" is not SIZE or SIZE:HASH", h->path, printable(v, shown, sizeof shown));
  }
  free(v);
  return n;
}

/* Whether d's storage holds its whole extent (HDF5 1.10 would copy a short chunk past its end). */
static int storage_whole(hid_t d, int ndim, const hsize_t *dims) {
  unsigned long long have = 0, want = 0;
  if (ndim <= 2) return h5util_chunks_whole(d, ndim, dims, sizeof(float), &have, &want);
  hid_t dcpl = H5Dget_create_plist(d); /* more dims: filtered chunks check themselves; contiguous */
  if (dcpl < 0) return -1;
  int chunked = H5Pget_layout(dcpl) == H5D_CHUNKED, filters = H5Pget_nfilters(dcpl);
  H5Pclose(dcpl);
  if (chunked) return filters > 0;
  return h5util_chunks_whole(d, 1, dims, sizeof(float), &have, &want);
}

/* Tensor t of group gname ("/params", "/buffers"), checked, into out. */
static void read_tensor(h5in_t *h, hid_t group, const char *gname, const slab_tensor_t *t, float *out) {
  char where[SLAB_NAME_MAX + 16];
  snprintf(where, sizeof where, "%s/%s", gname, t->name);
  int has = h5util_exists(group, t->name, H5I_DATASET);
  if (has == H5UTIL_NOT_HARD) surge_input_error("%s: %s is %s", h->path, where, H5UTIL_NOT_HARD_TEXT);
  if (has != 1) surge_input_error("%s: %s: missing (the file holds another model)", h->path, where);
  hid_t d = h5util_check(&h->c, H5Dopen2(group, t->name, H5P_DEFAULT), "open", where);
  hid_t type = h5util_check(&h->c, H5Dget_type(d), "read the type of", where);
  hid_t space = h5util_check(&h->c, H5Dget_space(d), "read the shape of", where);
  if (H5Tget_class(type) != H5T_FLOAT || H5Tget_size(type) != sizeof(float) || !h5util_number_type_ok(type))
    surge_input_error("%s: %s: not float32 data", h->path, where);
  int nd = H5Sget_simple_extent_ndims(space);
  hsize_t dims[H5S_MAX_RANK];
  if (nd < 0 || nd > H5S_MAX_RANK || H5Sget_simple_extent_dims(space, dims, NULL) < 0)
    surge_input_error("%s: %s: unreadable shape", h->path, where);
  int same = nd == t->ndim;
  for (int i = 0; i < nd && same; i++) same = dims[i] == (hsize_t)t->d[i];
  if (!same) {
    long long have[H5S_MAX_RANK], want[SLAB_MAX_DIMS];
    for (int i = 0; i < nd; i++) have[i] = (long long)dims[i];
    for (int i = 0; i < t->ndim; i++) want[i] = t->d[i];
    char a[128], b[128];
    gpt2_shape_text(a, sizeof a, nd, have);
    gpt2_shape_text(b, sizeof b, t->ndim, want);
    surge_input_error("%s: %s: shape %s in the file, %s in this model", h->path, where, a, b);
  }
  int whole = storage_whole(d, nd, dims);
  if (whole < 0) h5util_fail(&h->c, "read the storage of", where);
  if (!whole) surge_input_error("%s: %s: its storage is smaller than its shape: the file is damaged", h->path, where);
  char why[256];
  const int sane = h5util_chunk_index_sane(d, why, sizeof why); /* filtered chunks, which storage_whole trusts */
  if (sane < 0) h5util_fail(&h->c, "read the chunk index of", where);
  if (!sane) surge_input_error("%s: %s: %s: the file is damaged", h->path, where, why);
  h5util_check(&h->c, H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), "read", where);
  uint64_t stored;
  int rc = h5util_attr_read_u64(d, "hash64", &stored);
  if (rc == 0) {
    state_tensor_t st;
    state_tensor_replicated(&st, t, 0, 1);
    st.data = out;
    if (state_hash_rows(&st, 0, st.count[0]) != stored)
      surge_input_error("%s: %s: checksum mismatch (hash64): the file is damaged", h->path, where);
  } else if (rc != H5UTIL_ABSENT)
    h5util_fail(&h->c, "read attribute hash64 of", where);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(d);
}

/* Every tensor of L from group gname (exactly those), each where sink places it. */
static void read_group(h5in_t *h, const char *gname, const slab_layout_t *L, const weights_sink_t *sink) {
  int has = h5util_exists(h->file, gname + 1, H5I_GROUP);
  if (has == H5UTIL_NOT_HARD) surge_input_error("%s: %s is %s", h->path, gname, H5UTIL_NOT_HARD_TEXT);
  if (has != 1)
    surge_input_error("%s: no group %s: the file holds a model without %s", h->path, gname,
                      strcmp(gname, "/buffers") == 0 ? "running statistics (batch norm's buffers)" : "parameters");
  hid_t group = h5util_check(&h->c, H5Gopen2(h->file, gname + 1, H5P_DEFAULT), "open", gname);
  H5G_info_t info;
  h5util_check(&h->c, H5Gget_info(group, &info), "list", gname);
  for (int i = 0; i < L->n; i++) {
    read_tensor(h, group, gname, &L->t[i], sink->place(sink->ctx, i));
    sink->put(sink->ctx, i);
  }
  if (info.nlinks != (hsize_t)L->n)
    surge_input_error("%s: %s holds %llu tensors, this model %d (the file holds another model)", h->path, gname,
                      (unsigned long long)info.nlinks, L->n);
  H5Gclose(group);
}

void weights_read_h5(const char *path, const graph_t *g, const weights_sink_t *sink) {
  h5util_quiet_t quiet = h5util_quiet_begin();
  h5in_t h = h5_open(path);
  long vocab = file_vocab(&h);
  if (vocab && vocab != model_vocab(g))
    surge_input_error("%s: a model of vocabulary %ld, this model's is %d", path, vocab, model_vocab(g));
  read_group(&h, "/params", &g->params, sink);
  h5util_check(&h.c, H5Fclose(h.file), "close", "");
  h5util_quiet_end(quiet);
}

void weights_read_bufs_h5(const char *path, const graph_t *g, float *bufs) {
  h5util_quiet_t quiet = h5util_quiet_begin();
  h5in_t h = h5_open(path);
  weights_slab_t slab = {&g->bufs, bufs};
  weights_sink_t sink = weights_slab_sink(&slab);
  read_group(&h, "/buffers", &g->bufs, &sink);
  h5util_check(&h.c, H5Fclose(h.file), "close", "");
  h5util_quiet_end(quiet);
}

void weights_h5_gpt2_dims(const char *path, gpt2_dims_t *d) {
  h5util_quiet_t quiet = h5util_quiet_begin();
  h5in_t h = h5_open(path);
  char *model = NULL, *deck = NULL, shown[64];
  if (h5util_attr_read_string(h.file, "model", &model) != 0 || h5util_attr_read_string(h.file, "deck", &deck) != 0)
    surge_input_error("%s: attributes model and deck of / are missing: not written by a Surge run", path);
  if (strcmp(model, "gpt") != 0)
    surge_input_error("%s: a %s model: only the gpt has a GPT-2 counterpart", path, printable(model, shown, sizeof shown));
  config_t cfg;
  char where[4200];
  snprintf(where, sizeof where, "%s (its deck)", path);
  deck_parse(deck, where, 0, NULL, &cfg, NULL);
  zoo_opts_t o = zoo_opts_of(&cfg);
  char table[SLAB_NAME_MAX + 16] = "/params/";
  zoo_gpt_param_name(ZOO_GPT_WTE, 0, table + 8, sizeof table - 8);
  if (h5util_exists(h.file, table, H5I_DATASET) != 1)
    surge_input_error("%s: %s is missing, not a dataset, or %s", path, table, H5UTIL_NOT_HARD_TEXT);
  hid_t wte = h5util_check(&h.c, H5Dopen2(h.file, table, H5P_DEFAULT), "open", table);
  hid_t space = h5util_check(&h.c, H5Dget_space(wte), "read the shape of", table);
  hsize_t dims[2];
  if (H5Sget_simple_extent_ndims(space) != 2 || H5Sget_simple_extent_dims(space, dims, NULL) < 0 || dims[0] > (1 << 24))
    surge_input_error("%s: %s: not a (vocabulary, width) table", path, table);
  long vocab = file_vocab(&h);
  *d = (gpt2_dims_t){.L = o.gpt.layers, .C = o.gpt.width, .NH = o.gpt.heads, .maxT = o.gpt.context,
                     .Vp = (int)dims[0]};
  d->V = vocab ? (int)vocab : strcmp(data_opts(&cfg)->source, "text") == 0 ? TEXT_VOCAB : d->Vp;
  H5Sclose(space);
  H5Dclose(wte);
  free(model);
  free(deck);
  h5util_check(&h.c, H5Fclose(h.file), "close", "");
  h5util_quiet_end(quiet);
}

/* The smallest multiple m (within the deck's limit) that pads V up to exactly Vp, or 0. */
static int vocab_multiple(int V, int Vp) {
  for (int m = 1; m <= 4096 && m <= Vp; m++)
    if (Vp % m == 0 && (V + m - 1) / m * m == Vp) return m;
  return 0;
}

void weights_write_h5(const char *path, const graph_t *g, const float *params, comm_t *world) {
  H5_SERIAL_COLLECTIVE(world); /* io/h5serial.h: one HDF5 call at a time in the process */
  gpt2_dims_t d;
  gpt2_dims_or_refuse(g, &d, path, "cannot write this model as a gpt");
  int m = vocab_multiple(d.V, d.Vp);
  if (!m) surge_input_error("%s: a vocabulary of %d padded to %d is no [model] gpt_vocab_multiple up to 4096", path, d.V, d.Vp);
  strbuf_t deck = STRBUF_INIT;
  sb_printf(&deck, "# written by surge-convert: the model's sizes\n[model]\nzoo = gpt\ngpt_layers = %d\ngpt_width = %d\n"
                   "gpt_heads = %d\ngpt_context = %d\ngpt_vocab_multiple = %d\n[data]\nsource = tokens\nvocab_size = %d\n",
            d.L, d.C, d.NH, d.maxT, m, d.V);
  state_region_t r = {.group = "/params", .n = g->params.n};
  r.t = xcalloc((size_t)r.n, sizeof *r.t);
  for (int i = 0; i < r.n; i++) {
    state_tensor_replicated(&r.t[i], &g->params.t[i], world->rank, world->size);
    r.t[i].data = (float *)params + g->params.t[i].off;
  }
  char vocab[32];
  snprintf(vocab, sizeof vocab, "%d", d.V);
  model_file_write(path, &r, 1, 0, "gpt", sb_str(&deck), "", vocab, world);
  free(r.t);
  sb_free(&deck);
}
