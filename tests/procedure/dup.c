/* A second library that declares a procedure testlib already has: refused while testlib is loaded. */
#include "duet/procedure.h"

static int p_noop(duet_txn* t, const duet_bytes* k, size_t nk, const duet_bytes* a, size_t na, duet_reply* r) {
  (void)t, (void)k, (void)nk, (void)a, (void)na;
  return duet_reply_nil(r);
}
static const duet_procedure_def kProcs[] = {{"other", p_noop, 0}, {"incr", p_noop, 0}};
static const duet_library_def kLib = {DUET_PROCEDURE_ABI_VERSION, "duplib", kProcs, 2};
DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLib; }
