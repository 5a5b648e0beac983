/* h5_compare A.h5 B.h5 TOL [--key-bias-bound X]: compare the /params of two Surge model files, and
 * their /buffers (batch norm's running statistics) where A has them, tensor by tensor:
 * ||a - b|| / ||b|| <= TOL for every tensor. Prints the worst tensor; exit 0 when
 * all are within TOL, 1 when one is not, 2 on unreadable files or different tensor sets.
 *
 * --key-bias-bound X: the key third of every "*.qkv.bias" (the attention key bias, whose true
 * gradient is exactly zero because softmax ignores a shift of all scores) is compared with an
 * absolute bound X instead, and left out of the relative error: AdamW turns the float32 rounding
 * noise of its zero gradient into updates of up to lr per step, differently for each summation
 * order. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
  hid_t b;
  const char *group; /* "/params" or "/buffers" */
  double tol, key_bound, worst;
  char worst_name[256];
  int bad;
} walk_t;

static float *read_all(hid_t d, size_t *n) {
  hid_t sp = H5Dget_space(d);
  *n = (size_t)H5Sget_simple_extent_npoints(sp);
  H5Sclose(sp);
  float *v = malloc((*n ? *n : 1) * sizeof *v);
  if (H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
    free(v);
    return NULL;
  }
  return v;
}

static herr_t visit(hid_t grp, const char *name, const H5L_info_t *info, void *op) {
  (void)info;
  walk_t *w = op;
  hid_t da = H5Dopen2(grp, name, H5P_DEFAULT);
  char path[300];
  snprintf(path, sizeof path, "%s/%s", w->group, name);
  hid_t db = H5Dopen2(w->b, path, H5P_DEFAULT);
  size_t na = 0, nb = 0;
  float *a = da >= 0 ? read_all(da, &na) : NULL, *b = db >= 0 ? read_all(db, &nb) : NULL;
  if (!a || !b || na != nb) {
    fprintf(stderr, "h5_compare: %s missing, unreadable or of another size in one file\n", path);
    w->bad = 2;
  } else {
    size_t klo = 0, khi = 0;
    size_t len = strlen(name);
    if (w->key_bound > 0 && len > 9 && strcmp(name + len - 9, ".qkv.bias") == 0) klo = na / 3, khi = 2 * na / 3;
    double num = 0, den = 0;
    for (size_t i = 0; i < na; i++) {
      double d = (double)a[i] - (double)b[i];
      if (i >= klo && i < khi) {
        if (fabs(d) > w->key_bound) {
          fprintf(stderr, "h5_compare: %s[%zu] (key bias) differs by %g > %g\n", path, i, fabs(d), w->key_bound);
          if (!w->bad) w->bad = 1;
        }
        continue;
      }
      num += d * d;
      den += (double)b[i] * (double)b[i];
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    if (rel >= w->worst) {
      w->worst = rel;
      snprintf(w->worst_name, sizeof w->worst_name, "%s", name);
    }
    if (rel > w->tol && !w->bad) w->bad = 1;
  }
  free(a);
  free(b);
  if (da >= 0) H5Dclose(da);
  if (db >= 0) H5Dclose(db);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 6 && strcmp(argv[4], "--key-bias-bound") == 0)) {
    fprintf(stderr, "usage: h5_compare A.h5 B.h5 TOL [--key-bias-bound X]\n");
    return 2;
  }
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  walk_t w = {.tol = atof(argv[3]), .key_bound = argc == 6 ? atof(argv[5]) : 0, .group = "/params"};
  hid_t fa = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  w.b = H5Fopen(argv[2], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fa < 0 || w.b < 0) {
    fprintf(stderr, "h5_compare: cannot open %s\n", fa < 0 ? argv[1] : argv[2]);
    return 2;
  }
  hid_t g = H5Gopen2(fa, "/params", H5P_DEFAULT);
  hsize_t na = 0, nb = 0;
  hid_t gb = H5Gopen2(w.b, "/params", H5P_DEFAULT);
  if (g < 0 || gb < 0 || H5Gget_num_objs(g, &na) < 0 || H5Gget_num_objs(gb, &nb) < 0 || na != nb || na == 0) {
    fprintf(stderr, "h5_compare: the files hold different or no /params tensors\n");
    return 2;
  }
  H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, visit, &w);
  if (H5Lexists(fa, "/buffers", H5P_DEFAULT) > 0) { /* B must have each of them (visit says which not) */
    hid_t gbuf = H5Gopen2(fa, "/buffers", H5P_DEFAULT);
    w.group = "/buffers";
    H5Literate(gbuf, H5_INDEX_NAME, H5_ITER_INC, NULL, visit, &w);
    H5Gclose(gbuf);
  }
  printf("worst tensor %s: relative difference %.3e (tolerance %g)\n", w.worst_name, w.worst, w.tol);
  H5Gclose(g);
  H5Gclose(gb);
  H5Fclose(fa);
  H5Fclose(w.b);
  return w.bad;
}
