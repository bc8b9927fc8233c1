/* The procedure library the procedure tests load (library "testlib"). Written in C99 and
 * compiled with -pedantic -Werror: it is also the check that include/duet/procedure.h is plain C.
 *
 *   incr key [delta [spin [entered gate]]]
 *                              adds delta (default 1) to the integer at key; `spin` busy-loops
 *                              that many iterations between the read and the write (widens the
 *                              window in which concurrent callers conflict); with `entered` and
 *                              `gate` its first run creates file `entered` after the read and
 *                              waits for file `gate` before the write
 *   incr_hooked key            incr, calling the test's hook (if set) between read and write on
 *                              the first run only: a test commits a conflicting write there
 *   get_ro key                 (read-only) the value or nil
 *   get_many key...            (read-only) get_many of its keys (at most 64): their values or
 *                              nils in order; first checks that NULL keys are refused
 *   echo key... arg...         (read-only) [[keys...], [args...]] as bulk strings
 *   types                      (read-only) [1, "bulk", +simple, nil, [-2, []]]
 *   err_value                  (read-only) commits and answers an error value: -MYERR as a value
 *   fail key                   writes key, builds -MYERR, returns DUET_ERR_FAILED
 *   fail_code key              writes key, returns 7 with no reply
 *   noreply                    returns DUET_OK with no reply
 *   partial                    returns DUET_OK with an array of 2 holding 1 item
 *   liar key                   flagged read-only but tries to write: answers put's code
 *   attempt                    (read-only) the run number
 *   tid                        (read-only) the calling thread's id (which I/O thread runs it)
 *   block entered gate         (read-only) creates file `entered`, waits until file `gate`
 *                              exists (at most 60 s), answers +released
 *   block_long entered gate    block, flagged DUET_PROC_LONG (the server runs it off its I/O
 *                              threads)
 *   sum_ge lo hi min           (read-only) SNAPSHOT of [lo, hi] (8-byte little-endian int64
 *                              values), decode, filter value >= min, aggregate: [count, sum]
 *   columns lo hi name...      (read-only) SNAPSHOT of [lo, hi], decode_columns of 1-4 names
 *                              over the layout {v int64}: answers the table's rows
 *   mlp x0 x1                  (read-only) a fixed 2-2-1 network: round(1000 * y)
 *   gpu                        (read-only) duet_gpu_stream's code
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "duet/procedure.h"

static int parse_i64(const char* p, size_t n, long long* out) {
  char buf[32];
  char* end = NULL;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, p, n);
  buf[n] = 0;
  *out = strtoll(buf, &end, 10);
  return *end == 0;
}

static void (*g_hook)(void) = NULL;
static int g_block_entered = 0, g_block_open = 0; /* read and written with __atomic builtins */

DUET_PROCEDURE_EXPORT void testlib_set_hook(void (*hook)(void)) { g_hook = hook; }
DUET_PROCEDURE_EXPORT int testlib_block_entered(void) { return __atomic_load_n(&g_block_entered, __ATOMIC_SEQ_CST); }
DUET_PROCEDURE_EXPORT void testlib_block_open(int v) { __atomic_store_n(&g_block_open, v, __ATOMIC_SEQ_CST); }

static int file_exists(const duet_bytes* b) {
  char path[4096];
  struct stat sb;
  if (b->len == 0 || b->len >= sizeof path) return 0;
  memcpy(path, b->data, b->len);
  path[b->len] = 0;
  return stat(path, &sb) == 0;
}

/* Creates file `entered`, then waits until file `gate` exists (at most about 60 s). */
static void wait_at_gate(const duet_bytes* entered, const duet_bytes* gate) {
  struct timespec ts = {0, 200000};
  char path[4096];
  FILE* f;
  long waited;
  if (entered->len >= sizeof path) return;
  memcpy(path, entered->data, entered->len);
  path[entered->len] = 0;
  f = fopen(path, "w");
  if (f) fclose(f);
  for (waited = 0; waited < 300000 && !file_exists(gate); ++waited) nanosleep(&ts, NULL);
}

static int do_incr(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                   duet_reply* r, int hooked) {
  duet_bytes v;
  long long cur = 0, delta = 1, spin = 0, i;
  char out[32];
  int rc;
  volatile long long sink = 0;
  if (nkeys != 1) return duet_reply_error(r, "ERR incr takes one key"), DUET_ERR_INVALID;
  if (nargs >= 1 && !parse_i64(args[0].data, args[0].len, &delta))
    return duet_reply_error(r, "ERR delta is not an integer"), DUET_ERR_INVALID;
  if (nargs >= 2 && !parse_i64(args[1].data, args[1].len, &spin)) return DUET_ERR_INVALID;
  rc = duet_get(t, keys[0].data, keys[0].len, &v);
  if (rc < 0) return rc;
  if (rc == DUET_OK && !parse_i64(v.data, v.len, &cur))
    return duet_reply_error(r, "ERR value is not an integer"), DUET_ERR_INVALID;
  for (i = 0; i < spin; ++i) sink += i;
  if (hooked && g_hook && t->api->attempt(t) == 0) g_hook();
  if (nargs >= 4 && t->api->attempt(t) == 0) wait_at_gate(&args[2], &args[3]);
  cur += delta;
  snprintf(out, sizeof out, "%lld", cur);
  rc = duet_put(t, keys[0].data, keys[0].len, out, strlen(out));
  if (rc != DUET_OK) return rc;
  return duet_reply_int(r, cur);
}

static int p_incr(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  return do_incr(t, k, nk, a, na, r, 0);
}
static int p_incr_hooked(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  return do_incr(t, k, nk, a, na, r, 1);
}

static int p_get_ro(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  duet_bytes v;
  int rc;
  (void)a;
  (void)na;
  if (nk != 1) return DUET_ERR_INVALID;
  rc = duet_get(t, k[0].data, k[0].len, &v);
  if (rc < 0) return rc;
  return rc == DUET_NOT_FOUND ? duet_reply_nil(r) : duet_reply_bulk(r, v.data, v.len);
}

static int p_get_many(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  duet_bytes v[64];
  int found[64];
  size_t i;
  int rc;
  (void)a;
  (void)na;
  if (nk > 64) return DUET_ERR_INVALID;
  if (duet_get_many(t, NULL, 1, v, found) != DUET_ERR_INVALID) return duet_reply_error(r, "ERR NULL keys accepted"), DUET_OK;
  rc = duet_get_many(t, k, nk, v, found);
  if (rc != DUET_OK) return rc;
  duet_reply_array(r, nk);
  for (i = 0; i < nk; ++i) {
    if (found[i]) duet_reply_bulk(r, v[i].data, v[i].len);
    else duet_reply_nil(r);
  }
  return DUET_OK;
}

static int p_echo(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  size_t i;
  (void)t;
  duet_reply_array(r, 2);
  duet_reply_array(r, nk);
  for (i = 0; i < nk; ++i) duet_reply_bulk(r, k[i].data, k[i].len);
  duet_reply_array(r, na);
  for (i = 0; i < na; ++i) duet_reply_bulk(r, a[i].data, a[i].len);
  return DUET_OK;
}

static int p_types(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  duet_reply_array(r, 5);
  duet_reply_int(r, 1);
  duet_reply_bulk(r, "bulk", 4);
  duet_reply_simple(r, "simple");
  duet_reply_nil(r);
  duet_reply_array(r, 2);
  duet_reply_int(r, -2);
  duet_reply_array(r, 0);
  /* complete now: anything more is refused */
  return duet_reply_int(r, 3) == DUET_ERR_INVALID ? DUET_OK : DUET_ERR_FAILED;
}

static int p_err_value(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_error(r, "MYERR an error value");
}

static int p_fail(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)a, (void)na;
  if (nk != 1) return DUET_ERR_INVALID;
  duet_put(t, k[0].data, k[0].len, "x", 1);
  duet_reply_error(r, "MYERR custom failure");
  return DUET_ERR_FAILED;
}

static int p_fail_code(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)a, (void)na, (void)r;
  if (nk != 1) return DUET_ERR_INVALID;
  duet_put(t, k[0].data, k[0].len, "x", 1);
  return 7;
}

static int p_noreply(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na, (void)r;
  return DUET_OK;
}

static int p_partial(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  duet_reply_array(r, 2);
  return duet_reply_int(r, 1);
}

static int p_liar(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)a, (void)na;
  if (nk != 1) return DUET_ERR_INVALID;
  return duet_reply_int(r, duet_put(t, k[0].data, k[0].len, "x", 1));
}

static int p_attempt(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_int(r, (int64_t)t->api->attempt(t));
}

static int p_tid(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_int(r, (int64_t)syscall(SYS_gettid));
}

static int p_block(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  /* With two arguments: files (the server tests). Without: the exported flags (the unit tests). */
  struct timespec ts = {0, 200000};
  long waited;
  (void)t, (void)k, (void)nk;
  __atomic_store_n(&g_block_entered, 1, __ATOMIC_SEQ_CST);
  if (na == 2) {
    wait_at_gate(&a[0], &a[1]);
  } else {
    for (waited = 0; waited < 300000 && !__atomic_load_n(&g_block_open, __ATOMIC_SEQ_CST); ++waited) nanosleep(&ts, NULL);
  }
  __atomic_store_n(&g_block_entered, 0, __ATOMIC_SEQ_CST);
  return duet_reply_simple(r, "released");
}

/* aggs[0]: COUNT as "n", aggs[1]: SUM of "v" as "s". */
static void count_and_sum(duet_agg aggs[2]) {
  aggs[0].op = DUET_COUNT;
  aggs[0].column = NULL;
  aggs[0].name = "n";
  aggs[1].op = DUET_SUM;
  aggs[1].column = "v";
  aggs[1].name = "s";
}

static int p_sum_ge(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  duet_snapshot_arg arg;
  duet_snapshot* snap;
  duet_table* tab;
  duet_table* agg;
  duet_field field = {"v", DUET_INT64, 0};
  duet_predicate pred;
  duet_agg aggs[2];
  duet_column_view cnt, sum;
  const uint32_t* rows;
  size_t nrows;
  long long min;
  int rc;
  (void)k, (void)nk;
  if (na != 3 || !parse_i64(a[2].data, a[2].len, &min)) return DUET_ERR_INVALID;
  memset(&arg, 0, sizeof arg);
  arg.is_range = 1;
  arg.range.start = a[0];
  arg.range.end = a[1];
  if ((rc = t->api->snapshot(t, &arg, 1, &snap)) != DUET_OK) return rc;
  if ((rc = t->api->decode(t, snap, &field, 1, 1, &tab)) != DUET_OK) return rc;
  memset(&pred, 0, sizeof pred);
  pred.column = "v";
  pred.cmp = DUET_GE;
  pred.i = min;
  if ((rc = t->api->filter(t, tab, &pred, 1, &rows, &nrows)) != DUET_OK) return rc;
  count_and_sum(aggs);
  if ((rc = t->api->aggregate(t, tab, rows, nrows, NULL, 0, aggs, 2, &agg)) != DUET_OK) return rc;
  if ((rc = t->api->column(agg, "n", &cnt)) != DUET_OK || (rc = t->api->column(agg, "s", &sum)) != DUET_OK) return rc;
  duet_reply_array(r, 2);
  duet_reply_int(r, ((const int64_t*)cnt.data)[0]);
  return duet_reply_int(r, ((const int64_t*)sum.data)[0]);
}

static int p_columns(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  duet_snapshot_arg arg;
  duet_snapshot* snap;
  duet_table* tab;
  duet_field field = {"v", DUET_INT64, 0};
  char names[4][16];
  const char* p[4];
  size_t i;
  int rc;
  (void)k, (void)nk;
  if (na < 3 || na > 6) return DUET_ERR_INVALID;
  for (i = 0; i + 2 < na; ++i) {
    if (a[i + 2].len >= sizeof names[i]) return DUET_ERR_INVALID;
    memcpy(names[i], a[i + 2].data, a[i + 2].len);
    names[i][a[i + 2].len] = '\0';
    p[i] = names[i];
  }
  memset(&arg, 0, sizeof arg);
  arg.is_range = 1;
  arg.range.start = a[0];
  arg.range.end = a[1];
  if ((rc = t->api->snapshot(t, &arg, 1, &snap)) != DUET_OK) return rc;
  if ((rc = t->api->decode_columns(t, snap, &field, 1, p, na - 2, 0, &tab)) != DUET_OK) return rc;
  return duet_reply_int(r, (int64_t)t->api->table_rows(tab));
}

static int p_mlp(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  static const float w1[4] = {1.0f, 0.0f, 0.0f, 1.0f}, b1[2] = {0.0f, 0.0f};
  static const float w2[2] = {0.5f, 0.25f}, b2[1] = {0.125f};
  duet_dense layers[2];
  uint32_t model;
  float x[2];
  const float* y;
  size_t ny;
  long long x0, x1;
  int rc;
  (void)k, (void)nk;
  if (na != 2 || !parse_i64(a[0].data, a[0].len, &x0) || !parse_i64(a[1].data, a[1].len, &x1)) return DUET_ERR_INVALID;
  layers[0].act = DUET_ACT_RELU, layers[0].in = 2, layers[0].out = 2, layers[0].w = w1, layers[0].b = b1;
  layers[1].act = DUET_ACT_NONE, layers[1].in = 2, layers[1].out = 1, layers[1].w = w2, layers[1].b = b2;
  if ((rc = t->api->model_load(t, layers, 2, &model)) != DUET_OK) return rc;
  x[0] = (float)x0;
  x[1] = (float)x1;
  if ((rc = t->api->infer(t, model, x, 1, &y, &ny)) != DUET_OK) return rc;
  if (ny != 1) return DUET_ERR_FAILED;
  return duet_reply_int(r, (int64_t)(y[0] * 1000.0f + 0.5f));
}

static int p_gpu(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  void* stream = NULL;
  (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_int(r, t->api->gpu_stream(t, &stream));
}

/* mirror_sum name min: count and sum of the mirror's v >= min at the call's start, or the code. */
static int mirror_sum(duet_txn* t, const duet_bytes* name, long long min, duet_reply* r) {
  char n[80];
  duet_predicate pred;
  duet_agg aggs[2];
  duet_table* agg;
  duet_column_view cnt, sum;
  int rc;
  if (name->len >= sizeof n) return DUET_ERR_INVALID;
  memcpy(n, name->data, name->len);
  n[name->len] = '\0';
  memset(&pred, 0, sizeof pred);
  pred.column = "v";
  pred.cmp = DUET_GE;
  pred.i = min;
  count_and_sum(aggs);
  if ((rc = t->api->mirror_aggregate(t, n, &pred, 1, NULL, aggs, 2, &agg)) != DUET_OK) return duet_reply_int(r, rc);
  if ((rc = t->api->column(agg, "n", &cnt)) != DUET_OK || (rc = t->api->column(agg, "s", &sum)) != DUET_OK) return rc;
  duet_reply_array(r, 2);
  duet_reply_int(r, ((const int64_t*)cnt.data)[0]);
  return duet_reply_int(r, ((const int64_t*)sum.data)[0]);
}

static int p_mirror_sum(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  long long min;
  (void)k, (void)nk;
  if (na != 2 || !parse_i64(a[1].data, a[1].len, &min)) return DUET_ERR_INVALID;
  return mirror_sum(t, &a[0], min, r);
}

/* mirror name lo hi key_len id_from column: attaches a mirror of rows of one int64 field "v";
 * answers [attach code, the same call's mirror_sum(name, 0) code or reply]. */
static int p_mirror(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  char name[80], column[32];
  const char* columns[1];
  duet_field field = {"v", DUET_INT64, 0};
  duet_mirror_def d;
  long long key_len, id_from;
  int rc;
  (void)k, (void)nk;
  if (na != 6 || a[0].len >= sizeof name || a[5].len >= sizeof column || !parse_i64(a[3].data, a[3].len, &key_len) ||
      !parse_i64(a[4].data, a[4].len, &id_from))
    return DUET_ERR_INVALID;
  memcpy(name, a[0].data, a[0].len);
  name[a[0].len] = '\0';
  memcpy(column, a[5].data, a[5].len);
  column[a[5].len] = '\0';
  columns[0] = column;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.range.start = a[1];
  d.range.end = a[2];
  d.range.flags = DUET_RANGE_END_EXCLUSIVE;
  d.fields = &field;
  d.nfields = 1;
  d.columns = columns;
  d.ncolumns = 1;
  d.key_len = (uint32_t)key_len;
  d.id_from = (uint32_t)id_from;
  rc = t->api->mirror_attach(t, &d);
  duet_reply_array(r, 2);
  duet_reply_int(r, rc);
  return mirror_sum(t, &a[0], 0, r);
}

static const duet_procedure_def kProcs[] = {
    {"incr", p_incr, 0},
    {"incr_hooked", p_incr_hooked, 0},
    {"get_ro", p_get_ro, DUET_PROC_READ_ONLY},
    {"get_many", p_get_many, DUET_PROC_READ_ONLY},
    {"echo", p_echo, DUET_PROC_READ_ONLY},
    {"types", p_types, DUET_PROC_READ_ONLY},
    {"err_value", p_err_value, DUET_PROC_READ_ONLY},
    {"fail", p_fail, 0},
    {"fail_code", p_fail_code, 0},
    {"noreply", p_noreply, 0},
    {"partial", p_partial, 0},
    {"liar", p_liar, DUET_PROC_READ_ONLY},
    {"attempt", p_attempt, DUET_PROC_READ_ONLY},
    {"tid", p_tid, DUET_PROC_READ_ONLY},
    {"block", p_block, DUET_PROC_READ_ONLY},
    {"block_long", p_block, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"sum_ge", p_sum_ge, DUET_PROC_READ_ONLY},
    {"columns", p_columns, DUET_PROC_READ_ONLY},
    {"mlp", p_mlp, DUET_PROC_READ_ONLY},
    {"gpu", p_gpu, DUET_PROC_READ_ONLY},
    {"mirror", p_mirror, DUET_PROC_READ_ONLY | DUET_PROC_LONG},
    {"mirror_sum", p_mirror_sum, DUET_PROC_READ_ONLY},
};

static const duet_library_def kLib = {DUET_PROCEDURE_ABI_VERSION, "testlib", kProcs, sizeof kProcs / sizeof kProcs[0]};

DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLib; }
