/* Native procedures: the C ABI between Duet and a procedure library (docs/compute.md,
 * "Procedures").
 *
 * A procedure library is a shared object (built by any C, C++ or CUDA compiler) that exports one
 * symbol, `duet_procedure_register` (DUET_PROCEDURE_REGISTER), a function returning a static
 * duet_library_def: the ABI version it was built against, the library's name and its
 * procedures (name, entry point, flags). Duet loads it with dlopen, checks the version (it must
 * equal the host's DUET_PROCEDURE_ABI_VERSION) and every field, and refuses the whole library
 * otherwise.
 *
 * A call runs the entry point inside one snapshot-isolation transaction of a `txn` keyspace:
 *
 *   int fn(duet_txn* txn, const duet_bytes* keys, size_t nkeys,
 *          const duet_bytes* args, size_t nargs, duet_reply* reply);
 *
 * Keys and arguments are binary-safe byte strings (FCALL's `numkeys key... arg...`). Through
 * `txn` the procedure reads (get, scan, snapshot: at the transaction's start, overlaid by its own
 * writes), buffers writes (put, del) and runs compute operators (decode a SNAPSHOT into typed
 * columns, filter, aggregate, MLP inference). Through `reply` it builds exactly one reply value
 * (integer, bulk, simple string, error, nil, or an array of values).
 *
 * Outcome. Returning DUET_OK commits the transaction and sends the reply it built. When the
 * commit loses a write conflict (first updater wins), Duet discards the reply and runs the
 * whole procedure again on a new snapshot, up to a configured number of attempts with backoff;
 * so a procedure must not have side effects outside its transaction. Returning anything else
 * aborts the transaction (nothing it wrote is applied) and answers an error: the error reply
 * the procedure built, if it built one, else "ERR procedure '<name>' failed (code <rc>)".
 *
 * Memory. Every pointer Duet hands out (values, pairs, snapshots, tables, selections,
 * inference outputs) is owned by the call and stays valid until the entry point returns; the
 * procedure frees nothing. Host functions never throw; a C++ procedure must not let an
 * exception leave its entry point. A procedure runs in the server's process with its rights:
 * only libraries from the configured directory are loaded, by an administrator.
 *
 * GPU kernels. A library built with nvcc links the CUDA runtime itself and launches its kernels
 * on the call's pooled stream (duet_gpu_stream), which it must synchronise before it returns
 * (no CPU/GPU overlap within a transaction). The kernels register with the runtime as usual for
 * CUDA code in a shared object (no fatbin loading through the driver API). On a machine or
 * build without a GPU duet_gpu_stream answers DUET_ERR_UNAVAILABLE, so a library should keep a
 * CPU path.
 *
 * Thread safety: entry points are called from many threads at once (one call per thread); a
 * duet_txn and its duet_reply belong to the one call.
 */
#ifndef DUET_PROCEDURE_H
#define DUET_PROCEDURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version. A library's duet_library_def.abi_version must equal the host's. */
#define DUET_PROCEDURE_ABI_VERSION 1u
/** The symbol every procedure library exports (a duet_register_fn). */
#define DUET_PROCEDURE_REGISTER "duet_procedure_register"

/** Return codes of the host functions (and of entry points: DUET_OK commits, anything else aborts). */
enum {
  DUET_OK = 0,
  DUET_NOT_FOUND = 1,          /* get: the key is absent (not an error) */
  DUET_ERR_INVALID = -1,       /* bad argument: oversized key or value, inverted range, unknown column, ... */
  DUET_ERR_READ_ONLY = -2,     /* put or del in a read-only call (FCALL_RO) */
  DUET_ERR_ABORTED = -3,       /* the transaction ended (snapshot too old); return this code */
  DUET_ERR_NO_MEMORY = -4,     /* an allocation or a memory budget failed */
  DUET_ERR_UNAVAILABLE = -5,   /* not available here (no GPU) */
  DUET_ERR_FAILED = -6         /* the procedure's own failure (any other nonzero code also aborts) */
};

/** A binary-safe byte string (not NUL terminated). */
typedef struct duet_bytes {
  const char* data;
  size_t len;
} duet_bytes;

typedef struct duet_api duet_api;
/** The call's transaction (with the host's function table). */
typedef struct duet_txn {
  const duet_api* api;
  void* impl;
} duet_txn;
/** The call's reply under construction. */
typedef struct duet_reply {
  const duet_api* api;
  void* impl;
} duet_reply;
/** A SNAPSHOT's result and a decoded table (opaque; owned by the call). */
typedef struct duet_snapshot duet_snapshot;
typedef struct duet_table duet_table;

/* ---- Ranges, SNAPSHOT ------------------------------------------------------------------- */

#define DUET_RANGE_START_EXCLUSIVE 1u
#define DUET_RANGE_END_EXCLUSIVE 2u
#define DUET_RANGE_START_UNBOUNDED 4u /* from the first key (start ignored) */
#define DUET_RANGE_END_UNBOUNDED 8u   /* to the last key (end ignored) */

/** A key range: [start, end] unless flags say otherwise. */
typedef struct duet_range {
  duet_bytes start, end;
  uint32_t flags;
} duet_range;

/** scan's result: count pairs in key order; when the limit cut the range, more = 1 and resume
 *  is the key to continue from with DUET_RANGE_START_EXCLUSIVE. */
typedef struct duet_pairs {
  size_t count;
  const duet_bytes* keys;
  const duet_bytes* values;
  int more;
  duet_bytes resume;
} duet_pairs;

/** One SNAPSHOT argument: a point (is_range = 0, key) or a range with a limit (0: none). */
typedef struct duet_snapshot_arg {
  int is_range;
  duet_bytes key;
  duet_range range;
  size_t limit;
} duet_snapshot_arg;

/** SNAPSHOT's columnar layout (as TxnSnapshot, include/duet/txn.hpp): slot i has key
 *  key_bytes[key_offsets[i] .. key_offsets[i+1]) and value likewise; argument j filled slots
 *  arg_offsets[j] .. arg_offsets[j+1]; present[i] = 0 for an absent point. */
typedef struct duet_snapshot_view {
  size_t slots, args;
  const uint64_t* key_offsets;   /* slots + 1 */
  const uint64_t* value_offsets; /* slots + 1 */
  const uint64_t* arg_offsets;   /* args + 1 */
  const uint8_t* present;        /* slots */
  const char* key_bytes;
  const char* value_bytes;
} duet_snapshot_view;

/* ---- Compute operators (src/compute, docs/compute.md) ----------------------------------- */

/** Column types of the fixed-width row codec. */
typedef enum duet_type { DUET_INT64 = 0, DUET_MONEY = 1, DUET_FLOAT32 = 2, DUET_FLOAT64 = 3, DUET_BYTES = 4 } duet_type;

/** A field of the row codec (width: DUET_BYTES only, 1..4096). */
typedef struct duet_field {
  const char* name;
  duet_type type;
  uint32_t width;
} duet_field;

/** A column of a table: rows values of `width` bytes each (int64 and money: int64_t, float32:
 *  float, float64: double, bytes: zero padded). */
typedef struct duet_column_view {
  duet_type type;
  uint32_t width;
  size_t rows;
  const void* data;
} duet_column_view;

typedef enum duet_cmp { DUET_LT = 0, DUET_LE, DUET_EQ, DUET_NE, DUET_GE, DUET_GT, DUET_BETWEEN } duet_cmp;

/** A predicate: integer columns compare with i (and i_hi, inclusive, for DUET_BETWEEN), float
 *  columns with f / f_hi, bytes columns with s / s_hi (memcmp over the width, zero padded). */
typedef struct duet_predicate {
  const char* column;
  duet_cmp cmp;
  int64_t i, i_hi;
  double f, f_hi;
  duet_bytes s, s_hi;
} duet_predicate;

typedef enum duet_agg_op { DUET_COUNT = 0, DUET_SUM, DUET_MIN, DUET_MAX } duet_agg_op;

/** An aggregate: op over an integer column (none for DUET_COUNT), named `name` in the output. */
typedef struct duet_agg {
  duet_agg_op op;
  const char* column;
  const char* name;
} duet_agg;

typedef enum duet_act { DUET_ACT_NONE = 0, DUET_ACT_RELU, DUET_ACT_SIGMOID } duet_act;

/** A dense layer y = act(x W^T + b): w row-major [out][in], b [out]. */
typedef struct duet_dense {
  duet_act act;
  uint32_t in, out;
  const float* w;
  const float* b;
} duet_dense;

/* ---- Column mirrors (docs/compute.md, "Column mirror") ----------------------------------- */

/** A column mirror of one table: the keys of `range` that are key_len bytes long, each value a
 *  row of `fields`, kept as versioned integer columns (`columns`: DUET_INT64 or DUET_MONEY fields)
 *  by the keyspace's commits, so that an aggregate at a transaction's start scans columns instead
 *  of SNAPSHOTting the table. A mirrored key's id is its bytes [id_from, key_len), big-endian
 *  (1 to 8 bytes; distinct keys must have distinct ids); keys of another length are ignored.
 *  device_copy: also keep the rows in GPU memory when a GPU is present. query_threads: CPU
 *  threads an aggregate scans on (0: 1). */
typedef struct duet_mirror_def {
  const char* name; /* 1-64 of [A-Za-z0-9_.-] */
  duet_range range; /* start inclusive, end exclusive (DUET_RANGE_END_EXCLUSIVE), both bounded */
  const duet_field* fields;
  size_t nfields;
  const char* const* columns;
  size_t ncolumns;
  uint32_t key_len, id_from;
  int device_copy;
  uint32_t query_threads;
} duet_mirror_def;

/* ---- The host's function table ----------------------------------------------------------- */

struct duet_api {
  uint32_t abi_version; /* DUET_PROCEDURE_ABI_VERSION of the host */
  uint32_t size;        /* sizeof(duet_api) of the host */

  /* Transaction. All reads see the transaction's start, overlaid by its own writes. */
  /** *value = the key's value and DUET_OK, or DUET_NOT_FOUND (value empty). */
  int (*get)(duet_txn* t, const char* key, size_t key_len, duet_bytes* value);
  /** Buffers key = value (DUET_ERR_READ_ONLY in a read-only call). */
  int (*put)(duet_txn* t, const char* key, size_t key_len, const char* value, size_t value_len);
  /** Buffers the deletion of key (an absent key is allowed). */
  int (*del)(duet_txn* t, const char* key, size_t key_len);
  /** The present pairs of `range` in key order, at most limit (0: all). */
  int (*scan)(duet_txn* t, const duet_range* range, size_t limit, duet_pairs* out);
  /** SNAPSHOT of the arguments (Algorithm 2); *out stays valid for the call. */
  int (*snapshot)(duet_txn* t, const duet_snapshot_arg* args, size_t nargs, duet_snapshot** out);
  /** The columnar layout of a snapshot. */
  int (*snapshot_view)(const duet_snapshot* s, duet_snapshot_view* out);
  /** The transaction's start timestamp. */
  uint64_t (*start_ts)(duet_txn* t);
  /** 1 in a read-only call (FCALL_RO), else 0. */
  int (*read_only)(duet_txn* t);
  /** Which run of the procedure this is: 0, then 1, 2, ... after conflicts. */
  uint32_t (*attempt)(duet_txn* t);

  /* Compute: on the engine's device (the GPU when one is present, else the CPU twin). */
  /** Decodes the snapshot's present slots as rows of the given fields (one column each; with
   *  with_key a first int64 column "key": the key's bytes big-endian, keys of at most 8 bytes). */
  int (*decode)(duet_txn* t, const duet_snapshot* s, const duet_field* fields, size_t nfields, int with_key,
                duet_table** out);
  size_t (*table_rows)(const duet_table* table);
  /** The column named `name` (DUET_ERR_INVALID when there is none). */
  int (*column)(const duet_table* table, const char* name, duet_column_view* out);
  /** Rows meeting every predicate (AND), ascending. */
  int (*filter)(duet_txn* t, const duet_table* table, const duet_predicate* preds, size_t npreds,
                const uint32_t** rows, size_t* count);
  /** Hash aggregate over the rows in sel (all rows when sel is NULL) grouped by 0-4 integer
   *  key columns: the key columns then one column per aggregate, groups in key order. */
  int (*aggregate)(duet_txn* t, const duet_table* table, const uint32_t* sel, size_t nsel, const char* const* keys,
                   size_t nkeys, const duet_agg* aggs, size_t naggs, duet_table** out);
  /** Loads an MLP once per process (an identical model loaded again gets the same id). */
  int (*model_load)(duet_txn* t, const duet_dense* layers, size_t nlayers, uint32_t* model);
  /** Inference: x row-major [rows][inputs]; *y row-major [rows][outputs], *ny = rows * outputs. */
  int (*infer)(duet_txn* t, uint32_t model, const float* x, size_t rows, const float** y, size_t* ny);
  /** The call's pooled CUDA stream (a cudaStream_t); DUET_ERR_UNAVAILABLE without a GPU. */
  int (*gpu_stream)(duet_txn* t, void** stream);

  /* Reply builder: exactly one value; an array of n is followed by its n values. A call that
   * would add a value after the reply is complete, or text with CR or LF, is DUET_ERR_INVALID. */
  int (*reply_int)(duet_reply* r, int64_t v);
  int (*reply_bulk)(duet_reply* r, const char* data, size_t len);
  int (*reply_simple)(duet_reply* r, const char* text);
  /** An error ("CODE message"; "ERR " is prepended when the text does not start with an
   *  upper-case code). */
  int (*reply_error)(duet_reply* r, const char* text);
  int (*reply_nil)(duet_reply* r);
  int (*reply_array)(duet_reply* r, size_t n);

  /* Added within version 1 (a host that has them reports a size covering them; duet_abi_check
   * requires one at least as new as this header). */
  /** decode() of only the columns named in `names` (in that order), the rows' layout still given
   *  by all `fields`: a query decodes the columns it reads, not the whole row. DUET_ERR_INVALID
   *  for a name that is not one of the fields, or is named twice. */
  int (*decode_columns)(duet_txn* t, const duet_snapshot* s, const duet_field* fields, size_t nfields,
                        const char* const* names, size_t nnames, int with_key, duet_table** out);
  /** n gets at once, their index lookups overlapped (n reads cost about one read's cache
   *  misses): values[i] and found[i] (1 present, 0 absent: value empty) for keys[i], each as get
   *  answers it. DUET_OK, or an error code with no output meaningful (a bad key refuses all). */
  int (*get_many)(duet_txn* t, const duet_bytes* keys, size_t n, duet_bytes* values, int* found);
  /** Attaches the column mirror `def` to the call's keyspace, once per name: the first call
   *  loads the table (one pass, commits meanwhile queued, not blocked) and keeps it; a later
   *  call with the same definition answers DUET_OK at once. A keyspace takes up to 8 mirrors of
   *  different names (each adds its cost to every commit): DUET_ERR_INVALID for a bad
   *  definition, a different one under a name already attached (that mirror stays), or a ninth.
   *  Calls that use mirrors wait while one is being attached. Flag a procedure that attaches
   *  DUET_PROC_LONG. */
  int (*mirror_attach)(duet_txn* t, const duet_mirror_def* def);
  /** An aggregate over the mirror `name` at the transaction's start: the row versions visible
   *  then that meet every predicate (integer columns), grouped by the column `group` (values 0
   *  to 255; NULL: one group), one output column per aggregate (at most 8 predicates and 8
   *  aggregates); *out holds the group column then the aggregates, one row per group that has
   *  rows, in group order (no group: one row). Own writes of the transaction are not seen.
   *  DUET_NOT_FOUND: no such mirror on this keyspace; DUET_ERR_UNAVAILABLE: the mirror was made
   *  after this transaction began (read the table instead); DUET_ERR_ABORTED: snapshot too old;
   *  DUET_ERR_INVALID: an unknown column or too many terms. */
  int (*mirror_aggregate)(duet_txn* t, const char* name, const duet_predicate* preds, size_t npreds, const char* group,
                          const duet_agg* aggs, size_t naggs, duet_table** out);
};

/* ---- Registration ------------------------------------------------------------------------ */

/** Entry point of one procedure (see the top of this file). */
typedef int (*duet_procedure_fn)(duet_txn* txn, const duet_bytes* keys, size_t nkeys, const duet_bytes* args,
                                 size_t nargs, duet_reply* reply);

/** The procedure never writes: FCALL_RO may call it (and its put/del are refused anyway). */
#define DUET_PROC_READ_ONLY 1u
/** The procedure may run long (an analytical query): the server runs its calls on its procedure
 *  threads (`procedure-threads`), off the I/O threads, and sends the reply when it ends, so the
 *  other clients of the caller's I/O thread go on meanwhile. Costs a hand-off between threads
 *  per call (microseconds): leave it off for short procedures. The embedded API ignores it. */
#define DUET_PROC_LONG 2u

/** One procedure: name (1-64 of [A-Za-z0-9_.-], unique across loaded libraries), entry point
 *  and DUET_PROC_* flags. */
typedef struct duet_procedure_def {
  const char* name;
  duet_procedure_fn fn;
  uint32_t flags;
} duet_procedure_def;

/** What duet_procedure_register returns (static storage: read once at load). */
typedef struct duet_library_def {
  uint32_t abi_version;  /* DUET_PROCEDURE_ABI_VERSION */
  const char* name;      /* the library's name (PROCEDURE DELETE takes it); same rules as procedures */
  const duet_procedure_def* procedures;
  size_t count;          /* 1 .. 1024 */
} duet_library_def;

typedef const duet_library_def* (*duet_register_fn)(void);

#if defined(_WIN32)
#define DUET_PROCEDURE_EXPORT __declspec(dllexport)
#else
#define DUET_PROCEDURE_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Short forms --------------------------------------------------------------------------- */

static inline int duet_get(duet_txn* t, const char* k, size_t kl, duet_bytes* v) { return t->api->get(t, k, kl, v); }
static inline int duet_get_many(duet_txn* t, const duet_bytes* k, size_t n, duet_bytes* v, int* found) {
  return t->api->get_many(t, k, n, v, found);
}
static inline int duet_put(duet_txn* t, const char* k, size_t kl, const char* v, size_t vl) {
  return t->api->put(t, k, kl, v, vl);
}
static inline int duet_del(duet_txn* t, const char* k, size_t kl) { return t->api->del(t, k, kl); }
static inline int duet_scan(duet_txn* t, const duet_range* r, size_t limit, duet_pairs* out) {
  return t->api->scan(t, r, limit, out);
}
static inline int duet_reply_int(duet_reply* r, int64_t v) { return r->api->reply_int(r, v); }
static inline int duet_reply_bulk(duet_reply* r, const char* d, size_t n) { return r->api->reply_bulk(r, d, n); }
static inline int duet_reply_simple(duet_reply* r, const char* s) { return r->api->reply_simple(r, s); }
static inline int duet_reply_error(duet_reply* r, const char* s) { return r->api->reply_error(r, s); }
static inline int duet_reply_nil(duet_reply* r) { return r->api->reply_nil(r); }
static inline int duet_reply_array(duet_reply* r, size_t n) { return r->api->reply_array(r, n); }
/** 1 when the host's table has every function this header declares, else 0. */
static inline int duet_abi_check(const duet_api* api) {
  return api != NULL && api->abi_version == DUET_PROCEDURE_ABI_VERSION && api->size >= sizeof(duet_api);
}

#ifdef __cplusplus
}
#endif

#endif /* DUET_PROCEDURE_H */
