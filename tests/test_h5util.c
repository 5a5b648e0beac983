/* The one check of HDF5 results (io/h5util.h): a failing call's message names the file, what was
 * being done, the HDF5 path, HDF5's own reason and the hint; the checker's policy decides between
 * an input error (exit 2), a runtime error (exit 1) and recording the first failure. Also the
 * helpers the log's reader and writer share: h5util_exists, the f64 attributes and the check of a
 * file's number types (the crafted layouts themselves: fuzz/regressions, tests/test_sim_report.sh) and
 * of a dataset's chunk index. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/h5util.h"
#include "child.h"
#include "tap.h"

static char dir[64];

/* Open a file that does not exist through the checker of the given policy (a forked child). */
static void open_missing(const void *arg) {
  h5util_check_t c = h5util_checker("nowhere.h5", *(const h5util_policy_t *)arg);
  c.lead = "damaged thing: ";
  c.hint = "look elsewhere";
  h5util_quiet_t q = h5util_quiet_begin();
  h5util_check(&c, H5Fopen("/nonexistent/nowhere.h5", H5F_ACC_RDONLY, H5P_DEFAULT), "open", "/");
  h5util_quiet_end(q);
}

static void test_policies(void) {
  h5util_policy_t input = H5UTIL_INPUT_ERROR, runtime = H5UTIL_RUNTIME_ERROR;
  const char *needles[] = {"nowhere.h5: damaged thing: cannot open / (HDF5: ", ") (hint: look elsewhere)"};
  expect_input_error_all(open_missing, &input, "input policy", needles, 2);
  child_result_t r = run_in_child(open_missing, &runtime);
  tap_ok(r.status == 1 && child_wrote_one_line_with(&r, needles, 2), "runtime policy: exit 1 (got %d), one line: %s",
         r.status, r.err);

  h5util_check_t c = h5util_checker("x.h5", H5UTIL_RECORD);
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t bad = h5util_check(&c, H5Gopen2(-1, "/a", H5P_DEFAULT), "open", "/a");
  h5util_check(&c, H5Gopen2(-1, "/b", H5P_DEFAULT), "open", "/b");
  h5util_quiet_end(q);
  tap_ok(bad < 0 && c.failed && strncmp(c.msg, "x.h5: cannot open /a (HDF5: ", 28) == 0 && !strstr(c.msg, "/b") &&
             !strstr(c.msg, "hint"),
         "record policy: returns the result, keeps the first failure only: %s", c.msg);
  tap_ok(h5util_check(&c, 7, "do", "/c") == 7, "a result that did not fail is returned");
}

static void test_helpers(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/h.h5", dir);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_soft("/missing", f, "dangling", H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_soft("/grp", f, "alias", H5P_DEFAULT, H5P_DEFAULT);
  H5Lcreate_external("/nonexistent/other.h5", "/x", f, "away", H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(H5Gcreate2(g, "sub", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  tap_ok(h5util_attr_write_f64(g, "x", 2.5) == 0 && h5util_attr_write_i64(g, "n", -3) == 0 &&
             h5util_attr_write_string(g, "s", "text", H5T_CSET_UTF8) == 0,
         "write f64, i64 and string attributes");
  double x = 0, n = 0, s = 0;
  int rx = h5util_attr_read_f64(g, "x", &x), rn = h5util_attr_read_f64(g, "n", &n);
  int rs = h5util_attr_read_f64(g, "s", &s), rm = h5util_attr_read_f64(g, "missing", &s);
  tap_ok(rx == 0 && x == 2.5 && rn == 0 && n == -3.0, "read f64: a float (%g) and an integer (%g)", x, n);
  tap_ok(rs == H5UTIL_ABSENT && rm == H5UTIL_ABSENT, "read f64: a string or a missing attribute is absent");
  h5util_quiet_t q = h5util_quiet_begin();
  tap_ok(h5util_exists(f, "grp", H5I_GROUP) == 1 && h5util_exists(f, "grp", H5I_DATASET) == 0 &&
             h5util_exists(f, "none", H5I_GROUP) == 0 && h5util_exists(f, "/grp/sub", H5I_GROUP) == 1 &&
             h5util_exists(f, "grp/none", H5I_GROUP) == 0,
         "exists: a group is a group, not a dataset, along a path too; a missing name is not there");
  tap_ok(h5util_exists(f, "dangling", H5I_GROUP) == H5UTIL_NOT_HARD &&
             h5util_exists(f, "alias", H5I_GROUP) == H5UTIL_NOT_HARD &&
             h5util_exists(f, "alias/sub", H5I_GROUP) == H5UTIL_NOT_HARD &&
             h5util_exists(f, "away", H5I_DATASET) == H5UTIL_NOT_HARD,
         "exists: soft links (dangling or not, also along a path) and external links are not followed");
  tap_ok(h5util_exists(-1, "grp", H5I_GROUP) == -1, "exists: a failing call says -1");
  h5util_quiet_end(q);
  H5Gclose(g);
  H5Fclose(f);
  unlink(path);
}

/* The number types every Surge file stores, in both byte orders, pass, and so does a type with its
 * bits moved inside its size; strings, wide integers and long double do not. (HDF5's own H5Tset_*
 * calls cannot make the impossible layouts a crafted file records: fuzz/regressions/sim has two,
 * tests/test_sim_report.sh reads them.) */
static void test_number_types(void) {
  const hid_t sane[] = {H5T_NATIVE_INT8,  H5T_NATIVE_UINT8,  H5T_NATIVE_INT32, H5T_NATIVE_INT64,
                        H5T_NATIVE_UINT64, H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE, H5T_IEEE_F32BE,
                        H5T_IEEE_F64BE,   H5T_STD_I64BE,    H5T_STD_U16LE,   H5T_NATIVE_HBOOL};
  int all = 1;
  for (size_t i = 0; i < sizeof sane / sizeof sane[0]; i++) all = all && h5util_number_type_ok(sane[i]) == 1;
  tap_ok(all, "number types: the native and IEEE/standard integers and floats of 1-8 bytes, both orders, pass");
  hid_t str = h5util_string_type(8, H5T_CSET_ASCII), wide = H5Tcopy(H5T_NATIVE_INT64);
  H5Tset_precision(wide, 64);
  H5Tset_size(wide, 16);
  hid_t moved = H5Tcopy(H5T_NATIVE_INT32);
  H5Tset_offset(moved, 8); /* 32 bits from bit 8 need 5 bytes: HDF5 grows the size to hold them */
  int moved_ok = H5Tget_size(moved) == 5 && h5util_number_type_ok(moved) == 1;
  tap_ok(h5util_number_type_ok(str) == 0 && h5util_number_type_ok(wide) == 0 && h5util_number_type_ok(-1) == 0 &&
             moved_ok && (H5Tget_size(H5T_NATIVE_LDOUBLE) <= 8 || h5util_number_type_ok(H5T_NATIVE_LDOUBLE) == 0),
         "number types: a string, a 16-byte integer, long double (%zu bytes) and no type are refused; 32 bits "
         "from bit 8 of %zu bytes pass",
         H5Tget_size(H5T_NATIVE_LDOUBLE), H5Tget_size(moved));
  H5Tclose(str);
  H5Tclose(wide);
  H5Tclose(moved);
}

/* The chunk index of a crafted checkpoint (fuzz/regressions/checkpoint: 10 chunks listed for a
 * dataset of one, at offsets outside it, on which HDF5's Fletcher32 filter read past its buffer) is
 * refused with what is wrong; the file's sound datasets, and a contiguous one, pass. */
static void test_chunk_index(void) {
  const char *top = getenv("SURGE_TOP_SRCDIR");
  char path[512], why[256] = "";
  snprintf(path, sizeof path, "%s/fuzz/regressions/checkpoint/chunk-index-past-its-extent.h5", top ? top : ".");
  h5util_quiet_t q = h5util_quiet_begin();
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t bad = f < 0 ? -1 : H5Dopen2(f, "/optim/v/fc2.weight", H5P_DEFAULT);
  hid_t good = f < 0 ? -1 : H5Dopen2(f, "/params/fc1.weight", H5P_DEFAULT);
  const int rb = bad < 0 ? -2 : h5util_chunk_index_sane(bad, why, sizeof why);
  tap_ok(rb == 0 && strstr(why, "lists 10 chunks, more than the 1") != NULL,
         "chunk index: a damaged one is refused (%d: %s)", rb, why);
  char unused[256];
  const int rg = good < 0 ? -2 : h5util_chunk_index_sane(good, unused, sizeof unused);
  tap_ok(rg == 1, "chunk index: the same file's sound dataset passes (%d)", rg);
  if (bad >= 0) H5Dclose(bad);
  if (good >= 0) H5Dclose(good);
  if (f >= 0) H5Fclose(f);
  snprintf(path, sizeof path, "%s/c.h5", dir);
  f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = 8;
  hid_t space = H5Screate_simple(1, &n, NULL);
  hid_t d = H5Dcreate2(f, "contiguous", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const float v[8] = {0};
  H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  tap_ok(h5util_chunk_index_sane(d, unused, sizeof unused) == 1, "chunk index: a contiguous dataset passes");
  tap_ok(h5util_chunk_index_sane(-1, unused, sizeof unused) == -1, "chunk index: no dataset says -1");
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
  unlink(path);
  h5util_quiet_end(q);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/surge-h5util.XXXXXX");
  if (!mkdtemp(dir)) return 99;
  test_policies();
  test_helpers();
  test_number_types();
  test_chunk_index();
  rmdir(dir);
  return tap_done();
}
