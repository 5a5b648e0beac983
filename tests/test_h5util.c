/* The one check of HDF5 results (io/h5util.h): a failing call's message names the file, what was
 * being done, the HDF5 path, HDF5's own reason and the hint; the checker's policy decides between
 * an input error (exit 2), a runtime error (exit 1) and recording the first failure. Also the
 * helpers the log's reader and writer share: h5util_exists and the f64 attributes. */
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
             h5util_exists(f, "none", H5I_GROUP) == 0 && h5util_exists(f, "dangling", H5I_GROUP) == 0,
         "exists: a group is a group, not a dataset; a missing name and a dangling link are not there");
  tap_ok(h5util_exists(-1, "grp", H5I_GROUP) == -1, "exists: a failing call says -1");
  h5util_quiet_end(q);
  H5Gclose(g);
  H5Fclose(f);
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/surge-h5util.XXXXXX");
  if (!mkdtemp(dir)) return 99;
  test_policies();
  test_helpers();
  rmdir(dir);
  return tap_done();
}
