/* An example procedure library ("bank"): accounts are keys holding a decimal integer balance.
 *
 *   FCALL deposit 1 account amount        adds amount (may be negative); answers the balance
 *   FCALL transfer 2 from to amount       moves amount when `from` holds enough; otherwise
 *                                         answers -INSUFFICIENT and applies nothing
 *   FCALL_RO balance 1 account            the balance (0 for an absent account)
 *   FCALL_RO total 0 first last           the sum of the balances of accounts [first, last]
 *
 * Each call is one snapshot-isolation transaction; when two calls write one account at once,
 * the later commit loses and Duet runs the procedure again on a new snapshot, so balances are
 * exact under any concurrency.
 *
 * Build (from the repository root), then load it from the server's procedure-dir:
 *   cc -std=c99 -O2 -Wall -shared -fPIC -fvisibility=hidden -Iinclude \
 *      -o /srv/duet-procedures/bank.so examples/procedures/bank.c
 *   duet server --database-kinds kv,1=txn --procedure-enable yes --procedure-dir /srv/duet-procedures
 *   redis-cli -n 1 PROCEDURE LOAD bank.so
 *   redis-cli -n 1 FCALL deposit 1 alice 100
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duet/procedure.h"

/* Parses a decimal int64 from a byte string (1 to 20 characters). */
static int parse(const char* p, size_t n, long long* out) {
  char buf[24];
  char* end = NULL;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, p, n);
  buf[n] = 0;
  *out = strtoll(buf, &end, 10);
  return *end == 0;
}

/* The balance of an account: 0 when absent, DUET_ERR_INVALID when not a number. */
static int balance_of(duet_txn* t, duet_bytes key, long long* out) {
  duet_bytes v;
  const int rc = duet_get(t, key.data, key.len, &v);
  if (rc == DUET_NOT_FOUND) {
    *out = 0;
    return DUET_OK;
  }
  if (rc != DUET_OK) return rc;
  return parse(v.data, v.len, out) ? DUET_OK : DUET_ERR_INVALID;
}

static int set_balance(duet_txn* t, duet_bytes key, long long v) {
  char buf[24];
  const int n = snprintf(buf, sizeof buf, "%lld", v);
  return duet_put(t, key.data, key.len, buf, (size_t)n);
}

static int deposit(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                   duet_reply* r) {
  long long bal, amount;
  int rc;
  if (nkeys != 1 || nargs != 1 || !parse(args[0].data, args[0].len, &amount)) {
    duet_reply_error(r, "ERR usage: FCALL deposit 1 account amount");
    return DUET_ERR_INVALID;
  }
  if ((rc = balance_of(t, keys[0], &bal)) != DUET_OK) return rc;
  if ((rc = set_balance(t, keys[0], bal + amount)) != DUET_OK) return rc;
  return duet_reply_int(r, bal + amount);
}

static int transfer(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                    duet_reply* r) {
  long long from, to, amount;
  int rc;
  if (nkeys != 2 || nargs != 1 || !parse(args[0].data, args[0].len, &amount) || amount < 0) {
    duet_reply_error(r, "ERR usage: FCALL transfer 2 from to amount (amount >= 0)");
    return DUET_ERR_INVALID;
  }
  if ((rc = balance_of(t, keys[0], &from)) != DUET_OK || (rc = balance_of(t, keys[1], &to)) != DUET_OK) return rc;
  if (from < amount) {
    duet_reply_error(r, "INSUFFICIENT the source account holds less than the amount");
    return DUET_ERR_FAILED; /* aborts: nothing is applied */
  }
  if (keys[0].len == keys[1].len && memcmp(keys[0].data, keys[1].data, keys[0].len) == 0) return duet_reply_int(r, from);
  if ((rc = set_balance(t, keys[0], from - amount)) != DUET_OK || (rc = set_balance(t, keys[1], to + amount)) != DUET_OK)
    return rc;
  return duet_reply_int(r, from - amount);
}

static int balance(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                   duet_reply* r) {
  long long bal;
  int rc;
  (void)args;
  if (nkeys != 1 || nargs != 0) {
    duet_reply_error(r, "ERR usage: FCALL_RO balance 1 account");
    return DUET_ERR_INVALID;
  }
  if ((rc = balance_of(t, keys[0], &bal)) != DUET_OK) return rc;
  return duet_reply_int(r, bal);
}

static int total(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
                 duet_reply* r) {
  duet_range range;
  duet_pairs pairs;
  long long sum = 0, v;
  size_t i;
  int rc;
  (void)keys;
  if (nkeys != 0 || nargs != 2) {
    duet_reply_error(r, "ERR usage: FCALL_RO total 0 first last");
    return DUET_ERR_INVALID;
  }
  range.start = args[0];
  range.end = args[1];
  range.flags = 0;
  if ((rc = duet_scan(t, &range, 0, &pairs)) != DUET_OK) return rc;
  for (i = 0; i < pairs.count; ++i)
    if (parse(pairs.values[i].data, pairs.values[i].len, &v)) sum += v;
  return duet_reply_int(r, sum);
}

static const duet_procedure_def kProcedures[] = {
    {"deposit", deposit, 0},
    {"transfer", transfer, 0},
    {"balance", balance, DUET_PROC_READ_ONLY},
    {"total", total, DUET_PROC_READ_ONLY},
};

static const duet_library_def kLibrary = {DUET_PROCEDURE_ABI_VERSION, "bank", kProcedures,
                                          sizeof kProcedures / sizeof kProcedures[0]};

DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLibrary; }
