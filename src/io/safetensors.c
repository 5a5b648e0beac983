/* safetensors (Hugging Face): an 8-byte little-endian header length N, N bytes of a JSON object
 * {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [BEGIN, END]}, ..., "__metadata__": {..}},
 * then the data, each tensor's row-major bytes at [BEGIN, END) from the end of the header. Read
 * bounded: N against the file's size and a limit before the header is read, every tensor's offsets
 * against the data the file holds and against its shape and dtype before anything is allocated;
 * then GPT-2's tensors (io/gpt2_map.h) are taken by their Hugging Face names. Written with those
 * names ("transformer." before them, lm_head left out as save_pretrained leaves out tied weights)
 * and config.json beside the file. */
#include <cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/infile.h"
#include "io/printable.h"
#include "io/strbuf.h"
#include "io/weights.h"

#define ST_HEADER_MAX (100u << 20) /* the safetensors library's own limit */
#define ST_NAME_MAX 256
#define ST_MAX_DIMS 4
#define CONFIG_MAX (1 << 20)
#define ST_VOCAB_MULTIPLE 128 /* [model] gpt_vocab_multiple's default */

typedef struct st_entry {
  char name[ST_NAME_MAX];
  weights_dtype_t dtype;
  int ndim;
  long long d[ST_MAX_DIMS];
  uint64_t begin, end; /* from the start of the data */
  int used;
} st_entry_t;

typedef struct st_file {
  const char *path;
  FILE *f;
  uint64_t size, data_at, data_bytes;
  int n;
  st_entry_t *e;
} st_file_t;

static int whole_number(const cJSON *v, double hi, uint64_t *out) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= hi) || v->valuedouble != (double)(uint64_t)v->valuedouble)
    return -1;
  *out = (uint64_t)v->valuedouble;
  return 0;
}

/* One entry of the header, checked against the data the file holds. */
static void parse_entry(st_file_t *s, const cJSON *j, st_entry_t *e) {
  char shown[96];
  const char *name = printable(j->string, shown, sizeof shown);
  if (strlen(j->string) >= ST_NAME_MAX) surge_input_error("%s: tensor name %s... is too long", s->path, name);
  snprintf(e->name, sizeof e->name, "%s", j->string);
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(j, "shape"),
              *off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
  if (!cJSON_IsObject(j) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
    surge_input_error("%s: tensor %s: the header's entry needs dtype, shape and data_offsets [begin, end]", s->path, name);
  if (!strcmp(dt->valuestring, "F32")) e->dtype = WEIGHTS_F32;
  else if (!strcmp(dt->valuestring, "BF16")) e->dtype = WEIGHTS_BF16;
  else if (!strcmp(dt->valuestring, "F16")) e->dtype = WEIGHTS_F16;
  else {
    char t[32];
    surge_input_error("%s: tensor %s: dtype %s; Surge reads F32, BF16 and F16", s->path, name, printable(dt->valuestring, t, sizeof t));
  }
  e->ndim = cJSON_GetArraySize(sh);
  if (e->ndim > ST_MAX_DIMS) surge_input_error("%s: tensor %s: %d dimensions, at most %d", s->path, name, e->ndim, ST_MAX_DIMS);
  uint64_t elems = 1, v;
  for (int i = 0; i < e->ndim; i++) {
    if (whole_number(cJSON_GetArrayItem(sh, i), (double)(1u << 31), &v))
      surge_input_error("%s: tensor %s: shape entry %d is not a whole number up to 2^31", s->path, name, i);
    e->d[i] = (long long)v;
    elems = v && elems > UINT64_MAX / v ? UINT64_MAX : elems * v;
  }
  if (whole_number(cJSON_GetArrayItem(off, 0), 9007199254740992.0, &e->begin) ||
      whole_number(cJSON_GetArrayItem(off, 1), 9007199254740992.0, &e->end) || e->begin > e->end)
    surge_input_error("%s: tensor %s: data_offsets are not whole numbers begin <= end", s->path, name);
  if (e->end > s->data_bytes)
    surge_input_error("%s: tensor %s: data_offsets [%llu, %llu) run past the data the file holds (%llu bytes from offset "
                      "%llu): the file is truncated or its header lies",
                      s->path, name, (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)s->data_bytes, (unsigned long long)s->data_at);
  size_t eb = weights_dtype_bytes(e->dtype);
  if (elems > UINT64_MAX / eb || e->end - e->begin != elems * eb)
    surge_input_error("%s: tensor %s: data_offsets [%llu, %llu) hold %llu bytes, its shape and dtype need %llu", s->path,
                      name, (unsigned long long)e->begin, (unsigned long long)e->end,
                      (unsigned long long)(e->end - e->begin), (unsigned long long)(elems > UINT64_MAX / eb ? UINT64_MAX : elems * eb));
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const st_entry_t *const *)a)->name, (*(const st_entry_t *const *)b)->name);
}

static int by_offsets(const void *a, const void *b) {
  const st_entry_t *x = *(const st_entry_t *const *)a, *y = *(const st_entry_t *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* As the format says (and the safetensors library refuses otherwise): every name once, and the
 * tensors' bytes tile the data, in some order, without overlap or gap or bytes after them. */
static void check_tiling(const st_file_t *s) {
  const st_entry_t **o = xcalloc((size_t)s->n + 1, sizeof *o);
  for (int i = 0; i < s->n; i++) o[i] = &s->e[i];
  char a[96], b[96];
  qsort(o, (size_t)s->n, sizeof *o, by_name); /* (sorted: a hostile header may list a million) */
  for (int i = 1; i < s->n; i++)
    if (!strcmp(o[i - 1]->name, o[i]->name))
      surge_input_error("%s: tensor %s is listed twice in the header", s->path, printable(o[i]->name, a, sizeof a));
  qsort(o, (size_t)s->n, sizeof *o, by_offsets);
  uint64_t at = 0;
  for (int i = 0; i < s->n; i++) {
    if (o[i]->begin < at)
      surge_input_error("%s: tensors %s and %s share bytes of the data (data_offsets [%llu, %llu) and up to %llu)",
                        s->path, printable(o[i - 1]->name, a, sizeof a), printable(o[i]->name, b, sizeof b),
                        (unsigned long long)o[i]->begin, (unsigned long long)o[i]->end, (unsigned long long)at);
    if (o[i]->begin > at)
      surge_input_error("%s: bytes [%llu, %llu) of the data belong to no tensor (before %s): not a safetensors file "
                        "as the format lays it out", s->path, (unsigned long long)at, (unsigned long long)o[i]->begin,
                        printable(o[i]->name, a, sizeof a));
    at = o[i]->end;
  }
  if (at != s->data_bytes)
    surge_input_error("%s: %llu bytes after the last tensor's data belong to no tensor: not a safetensors file as "
                      "the format lays it out", s->path, (unsigned long long)(s->data_bytes - at));
  free(o);
}

static void st_open(st_file_t *s, const char *path) {
  *s = (st_file_t){.path = path};
  s->f = infile_fopen(path, NULL);
  if (!s->f) surge_input_error("%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(s->f), &sb) != 0) surge_input_error("%s: cannot stat: %s", path, strerror(errno));
  s->size = (uint64_t)sb.st_size;
  unsigned char b[8];
  if (s->size < 8 || fread(b, 1, 8, s->f) != 8)
    surge_input_error("%s: truncated: %llu bytes, the 8-byte header length does not fit", path, (unsigned long long)s->size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
  if (n > s->size - 8)
    surge_input_error("%s: the header length %llu at offset 0 runs past the end of the file (%llu bytes): truncated",
                      path, (unsigned long long)n, (unsigned long long)s->size);
  if (n > ST_HEADER_MAX) surge_input_error("%s: header of %llu bytes, more than %u", path, (unsigned long long)n, ST_HEADER_MAX);
  char *text = xmalloc(n + 1);
  if (fread(text, 1, n, s->f) != n) surge_input_error("%s: cannot read the header: %s", path, strerror(errno));
  text[n] = '\0';
  s->data_at = 8 + n;
  s->data_bytes = s->size - s->data_at;
  cJSON *root = cJSON_ParseWithLength(text, n);
  if (!root || !cJSON_IsObject(root)) {
    const char *at = cJSON_GetErrorPtr();
    surge_input_error("%s: the header is not a JSON object (at byte %lld of it)", path,
                      root || !at ? 0LL : (long long)(at - text) + 8);
  }
  s->e = xcalloc((size_t)cJSON_GetArraySize(root) + 1, sizeof *s->e);
  for (const cJSON *j = root->child; j; j = j->next)
    if (strcmp(j->string, "__metadata__") != 0) parse_entry(s, j, &s->e[s->n++]);
  cJSON_Delete(root);
  free(text);
  check_tiling(s);
}

static void st_close(st_file_t *s) {
  fclose(s->f);
  free(s->e);
}

/* The entry of Hugging Face's name `full` ("transformer.h.0..."), with the prefix or without. */
static st_entry_t *st_find(st_file_t *s, const char *full) {
  const char *bare = !strncmp(full, "transformer.", 12) ? full + 12 : full;
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->e[i].name, full) || !strcmp(s->e[i].name, bare)) return &s->e[i];
  return NULL;
}

/* The name of kind k of block b in Hugging Face's file. */
static void hf_name(gpt2_kind_t k, int b, char *out, size_t len) { snprintf(out, len, gpt2_tensors[k].hf, b); }

/* Entry e's values as floats (malloc'd). */
static float *st_values(st_file_t *s, const st_entry_t *e) {
  size_t eb = weights_dtype_bytes(e->dtype), n = (size_t)((e->end - e->begin) / eb);
  unsigned char *raw = xmalloc(e->end - e->begin + 1);
  float *out = xmalloc(n * sizeof *out + 1);
  if (fseeko(s->f, (off_t)(s->data_at + e->begin), SEEK_SET) != 0 || fread(raw, 1, n * eb, s->f) != n * eb)
    surge_input_error("%s: tensor %s: cannot read its %zu bytes at offset %llu", s->path, e->name, n * eb,
                      (unsigned long long)(s->data_at + e->begin));
  weights_decode(e->dtype, raw, n, out);
  free(raw);
  return out;
}

/* Hugging Face's shape of kind k: Surge's, transposed for Conv1D, wte of V rows. */
static int hf_shape(const gpt2_dims_t *d, gpt2_kind_t k, long long out[2]) {
  int dims[2], nd = gpt2_shape(d, k, dims);
  if (k == ZOO_GPT_WTE) dims[0] = d->V;
  int t = gpt2_tensors[k].transposed;
  out[0] = dims[t ? 1 : 0];
  if (nd == 2) out[1] = dims[t ? 0 : 1];
  return nd;
}

/* Buffers of the causal mask that older GPT-2 files hold: no parameters. */
static int is_buffer(const char *name) {
  const char *p = !strncmp(name, "transformer.", 12) ? name + 12 : name;
  size_t n = strlen(p);
  return !strncmp(p, "h.", 2) && ((n > 10 && !strcmp(p + n - 10, ".attn.bias")) || (n > 17 && !strcmp(p + n - 17, ".attn.masked_bias")));
}

void weights_read_safetensors(const char *path, const graph_t *g, const weights_sink_t *sink) {
  gpt2_dims_t d;
  gpt2_dims_or_refuse(g, &d, path, "a GPT-2 file cannot fill this model");
  st_file_t s;
  st_open(&s, path);
  for (int k = 0; k < ZOO_GPT_PARAMS; k++)
    for (int b = 0; b < (zoo_gpt_param_per_block(k) ? d.L : 1); b++) {
      char hf[ST_NAME_MAX];
      hf_name(k, b, hf, sizeof hf);
      st_entry_t *e = st_find(&s, hf);
      long long want[2];
      int nd = hf_shape(&d, k, want);
      if (!e) {
        char c[128];
        gpt2_shape_text(c, sizeof c, nd, want);
        surge_input_error("%s: tensor %s: missing (this model's shape for it: %s)", path, hf, c);
      }
      if (e->ndim != nd || e->d[0] != want[0] || (nd == 2 && e->d[1] != want[1])) {
        char a[128], c[128];
        gpt2_shape_text(a, sizeof a, e->ndim, e->d);
        gpt2_shape_text(c, sizeof c, nd, want);
        surge_input_error("%s: tensor %s: shape %s in the file, %s in this model%s", path, e->name, a, c,
                          k == ZOO_GPT_WTE && e->ndim == 2 && e->d[1] == want[1] ? " (the vocabularies differ)" : "");
      }
      float *v = st_values(&s, e);
      const int t = gpt2_find(g, k, b);
      gpt2_import(&d, k, d.V, gpt2_tensors[k].transposed, v, sink->place(sink->ctx, t));
      sink->put(sink->ctx, t);
      free(v);
      e->used = 1;
    }
  for (int i = 0; i < s.n; i++) {
    st_entry_t *e = &s.e[i];
    if (e->used || is_buffer(e->name)) continue;
    char shown[96];
    if (strcmp(e->name, gpt2_hf_head) != 0)
      surge_input_error("%s: tensor %s has no counterpart in this model (a GPT-2 of %d blocks)", path,
                        printable(e->name, shown, sizeof shown), d.L);
    float *head = e->ndim == 2 && e->d[0] == d.V && e->d[1] == d.C ? st_values(&s, e) : NULL;
    char table[ST_NAME_MAX];
    hf_name(ZOO_GPT_WTE, 0, table, sizeof table);
    float *wte = st_values(&s, st_find(&s, table)); /* (V, C), read above: the file's own */
    if (!head || memcmp(head, wte, (size_t)d.V * (size_t)d.C * sizeof *head) != 0)
      surge_input_error("%s: %s is not the token embedding: the output is untied, Surge's gpt ties it", path, gpt2_hf_head);
    free(head);
    free(wte);
  }
  st_close(&s);
}

/* A config.json key that would change what the weights compute, where present: GPT-2's value
 * (`text`, or `alias`, else the number `value`, true/false as 1/0), or refused naming it. */
static void config_key_is(const char *cfg, const cJSON *root, const char *key, const char *text, const char *alias,
                          double value) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
  if (!v || cJSON_IsNull(v)) return;
  double x = cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : cJSON_IsNumber(v) ? v->valuedouble : NAN;
  int ok = text ? cJSON_IsString(v) && (!strcmp(v->valuestring, text) || (alias && !strcmp(v->valuestring, alias)))
                : fabs(x - value) <= 1e-9 * fabs(value);
  if (ok) return;
  char *json = cJSON_PrintUnformatted(v), shown[96], want[64];
  printable(json ? json : "?", shown, sizeof shown); /* the file's text, escaped for a terminal */
  if (text) snprintf(want, sizeof want, "\"%s\"", text);
  else snprintf(want, sizeof want, cJSON_IsBool(v) ? (value ? "true" : "false") : "%.10g", value);
  surge_input_error("%s: \"%s\" is %s; the weights beside it are read as GPT-2's, which has %s there (hint: "
                    "only GPT-2's own architecture, at the weights' sizes, converts exactly)", cfg, key, shown, want);
}

/* config.json beside path: n_head, or 0 when there is none; the keys that would change what the
 * weights compute must be GPT-2's (and the sizes the weights'). */
static int config_heads(const char *path, const gpt2_dims_t *d) {
  char dir[4096], cfg[4200];
  snprintf(dir, sizeof dir, "%s", path);
  snprintf(cfg, sizeof cfg, "%s/config.json", dirname(dir));
  FILE *f = infile_fopen(cfg, NULL);
  if (!f) return 0;
  char *text = xmalloc(CONFIG_MAX + 1);
  size_t n = fread(text, 1, CONFIG_MAX + 1, f);
  fclose(f);
  if (n > CONFIG_MAX) surge_input_error("%s: larger than %d bytes", cfg, CONFIG_MAX);
  cJSON *root = cJSON_ParseWithLength(text, n);
  const cJSON *h = root ? cJSON_GetObjectItemCaseSensitive(root, "n_head") : NULL;
  uint64_t heads = 0;
  if (!h || whole_number(h, 256, &heads) || !heads) surge_input_error("%s: no n_head of 1 to 256", cfg);
  config_key_is(cfg, root, "model_type", "gpt2", NULL, 0);
  config_key_is(cfg, root, "activation_function", "gelu_new", "gelu_pytorch_tanh", 0); /* one function */
  config_key_is(cfg, root, "layer_norm_epsilon", NULL, NULL, 1e-5);
  config_key_is(cfg, root, "scale_attn_weights", NULL, NULL, 1);
  config_key_is(cfg, root, "scale_attn_by_inverse_layer_idx", NULL, NULL, 0);
  config_key_is(cfg, root, "add_cross_attention", NULL, NULL, 0);
  config_key_is(cfg, root, "n_embd", NULL, NULL, d->C); /* the sizes: the weights' */
  config_key_is(cfg, root, "n_layer", NULL, NULL, d->L);
  config_key_is(cfg, root, "n_positions", NULL, NULL, d->maxT);
  config_key_is(cfg, root, "vocab_size", NULL, NULL, d->V);
  config_key_is(cfg, root, "n_inner", NULL, NULL, 4.0 * d->C);
  cJSON_Delete(root);
  free(text);
  return (int)heads;
}

void weights_safetensors_dims(const char *path, gpt2_dims_t *d) {
  st_file_t s;
  st_open(&s, path);
  st_entry_t *wte = st_find(&s, gpt2_tensors[ZOO_GPT_WTE].hf), *wpe = st_find(&s, gpt2_tensors[ZOO_GPT_WPE].hf);
  if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || wte->d[1] != wpe->d[1])
    surge_input_error("%s: no GPT-2 embedding (transformer.wte.weight (V,C) and transformer.wpe.weight (maxT,C))", path);
  /* the token table padded as Surge and llm.c pad it by default (50257 -> 50304) */
  long long Vp = (wte->d[0] + ST_VOCAB_MULTIPLE - 1) / ST_VOCAB_MULTIPLE * ST_VOCAB_MULTIPLE;
  *d = (gpt2_dims_t){.C = (int)wte->d[1], .V = (int)wte->d[0], .Vp = (int)Vp, .maxT = (int)wpe->d[0]};
  for (char name[ST_NAME_MAX];; d->L++) {
    hf_name(ZOO_GPT_LN1W, d->L, name, sizeof name);
    if (!st_find(&s, name)) break;
  }
  /* every tensor of these sizes must be in the file: bound them by its data (2 bytes a value at
   * least) before anyone allocates a model of them */
  uint64_t values = 0;
  for (int k = 0; k < ZOO_GPT_PARAMS; k++)
    values += (uint64_t)gpt2_floats(d, k) * (zoo_gpt_param_per_block(k) ? (uint64_t)d->L : 1);
  values -= (uint64_t)(d->Vp - d->V) * (uint64_t)d->C; /* the file holds V rows of the table */
  if (values > s.data_bytes / 2)
    surge_input_error("%s: a GPT-2 of %d blocks of width %d needs %llu values, more than the %llu bytes of data hold",
                      path, d->L, d->C, (unsigned long long)values, (unsigned long long)s.data_bytes);
  d->NH = config_heads(path, d);
  if (!d->NH)
    surge_input_error("%s: the attention heads are not in the weights: put Hugging Face's config.json (n_head) beside it",
                      path);
  st_close(&s);
}

void weights_write_safetensors(const char *path, const graph_t *g, const float *params, int bf16) {
  gpt2_dims_t d;
  gpt2_dims_or_refuse(g, &d, path, "no exact GPT-2 conversion");
  weights_dtype_t t = bf16 ? WEIGHTS_BF16 : WEIGHTS_F32;
  strbuf_t h = STRBUF_INIT;
  sb_printf(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
  uint64_t at = 0;
  for (int k = 0; k < ZOO_GPT_PARAMS; k++)
    for (int b = 0; b < (zoo_gpt_param_per_block(k) ? d.L : 1); b++) {
      long long s[2];
      int nd = hf_shape(&d, k, s);
      uint64_t bytes = (uint64_t)s[0] * (uint64_t)(nd == 2 ? s[1] : 1) * weights_dtype_bytes(t);
      char hf[ST_NAME_MAX];
      hf_name(k, b, hf, sizeof hf);
      sb_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", hf, bf16 ? "BF16" : "F32", s[0]);
      if (nd == 2) sb_printf(&h, ",%lld", s[1]);
      sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + bytes));
      at += bytes;
    }
  sb_printf(&h, "}");
  size_t n = strlen(sb_str(&h));
  while (n % 8) sb_printf(&h, " "), n++; /* the data starts 8-byte aligned, as the library writes it */
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)n >> 8 * i);
  weights_out_t o;
  weights_out_open(&o, path);
  weights_out_write(&o, len, 8);
  weights_out_write(&o, sb_str(&h), n);
  float *buf = xmalloc(gpt2_max_floats(&d) * sizeof *buf);
  for (int k = 0; k < ZOO_GPT_PARAMS; k++)
    for (int b = 0; b < (zoo_gpt_param_per_block(k) ? d.L : 1); b++) {
      gpt2_export(&d, k, d.V, gpt2_tensors[k].transposed, params + g->params.t[gpt2_find(g, k, b)].off, buf);
      weights_out_floats(&o, buf, k == ZOO_GPT_WTE ? (size_t)d.V * (size_t)d.C : gpt2_floats(&d, k), t);
    }
  free(buf);
  weights_out_commit(&o);
  sb_free(&h);

  char dir[4096], cfg[4200];
  snprintf(dir, sizeof dir, "%s", path);
  snprintf(cfg, sizeof cfg, "%s/config.json", dirname(dir));
  strbuf_t c = STRBUF_INIT;
  sb_printf(&c,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"vocab_size\": %d,\n"
            "  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n"
            "  \"n_inner\": null,\n  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
            "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n  \"initializer_range\": 0.02,\n"
            "  \"scale_attn_weights\": true,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"%s\"\n}\n",
            d.V, d.maxT, d.maxT, d.C, d.L, d.NH, bf16 ? "bfloat16" : "float32");
  weights_out_open(&o, cfg);
  weights_out_write(&o, sb_str(&c), strlen(sb_str(&c)));
  weights_out_commit(&o);
  sb_free(&c);
}
