/* A procedure library built for another ABI version: loading it must be refused. */
#include "duet/procedure.h"

static int p_noop(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_nil(r);
}
static const duet_procedure_def kProcs[] = {{"noop_bad_abi", p_noop, 0}};
static const duet_library_def kLib = {DUET_PROCEDURE_ABI_VERSION + 998u, "badabi", kProcs, 1};
DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLib; }
