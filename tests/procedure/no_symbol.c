/* A shared object that exports no duet_procedure_register: loading it must be refused. */
#include "duet/procedure.h"

DUET_PROCEDURE_EXPORT int not_a_procedure_library(void) { return 42; }
