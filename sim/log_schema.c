/* agefence log schema: the names and docs of the columns and phases, once, for the writer, the
 * reader, the checker and the report. */
#include "log_schema.h"

const char *const af_step_column_names[] = {
#define AF_X(name, type, doc) #name,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
};
const int af_step_column_is_int[] = {
#define AF_X(name, type, doc) AF_ISINT_##type,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
};
const char *const af_step_column_docs[] = {
#define AF_X(name, type, doc) doc,
    AF_STEP_COLUMNS(AF_X)
#undef AF_X
};
const char *const af_phase_names[] = {
#define AF_X(name, doc) #name,
    AF_PHASES(AF_X)
#undef AF_X
};
const char *const af_phase_docs[] = {
#define AF_X(name, doc) doc,
    AF_PHASES(AF_X)
#undef AF_X
};
