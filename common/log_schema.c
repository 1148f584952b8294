/* agefence log schema: the names and docs of the columns and phases, and the HDF5 type of an
 * /events row, once, for the writer, the reader, the checker and the report. */
#include "log_schema.h"

#include <hdf5.h>

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

const char *const af_intr_names[AF_NINTR] = {
#define AF_X(name, grain, doc) #name,
    AF_INTR_CAUSES(AF_X)
#undef AF_X
};
const int af_intr_grain[AF_NINTR] = {
#define AF_X(name, grain, doc) AF_GRAIN_##grain,
#define AF_GRAIN_job           AF_GRAIN_JOB
#define AF_GRAIN_node          AF_GRAIN_NODE
#define AF_GRAIN_device        AF_GRAIN_DEVICE
    AF_INTR_CAUSES(AF_X)
#undef AF_X
};
const char *const af_intr_docs[AF_NINTR] = {
#define AF_X(name, grain, doc) doc,
    AF_INTR_CAUSES(AF_X)
#undef AF_X
};

int64_t af_log_event_type(void)
{
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, sizeof(((af_event_row_t *)0)->kind));
    H5Tset_strpad(str, H5T_STR_NULLTERM);
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(af_event_row_t));
    H5Tinsert(t, "step", HOFFSET(af_event_row_t, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "kind", HOFFSET(af_event_row_t, kind), str);
    H5Tinsert(t, "block", HOFFSET(af_event_row_t, block), H5T_NATIVE_INT64);
    H5Tinsert(t, "from_device", HOFFSET(af_event_row_t, from_device), H5T_NATIVE_INT64);
    H5Tinsert(t, "from_unit", HOFFSET(af_event_row_t, from_unit), H5T_NATIVE_INT64);
    H5Tinsert(t, "from_slot", HOFFSET(af_event_row_t, from_slot), H5T_NATIVE_INT64);
    H5Tinsert(t, "to_device", HOFFSET(af_event_row_t, to_device), H5T_NATIVE_INT64);
    H5Tinsert(t, "to_unit", HOFFSET(af_event_row_t, to_unit), H5T_NATIVE_INT64);
    H5Tinsert(t, "to_slot", HOFFSET(af_event_row_t, to_slot), H5T_NATIVE_INT64);
    H5Tinsert(t, "detail", HOFFSET(af_event_row_t, detail), H5T_NATIVE_INT64);
    H5Tclose(str);
    return t;
}

int64_t af_log_intr_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(af_intr_row_t));
    H5Tinsert(t, "step", HOFFSET(af_intr_row_t, step), H5T_NATIVE_INT64);
    H5Tinsert(t, "sim_hours", HOFFSET(af_intr_row_t, sim_hours), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "cause", HOFFSET(af_intr_row_t, cause), H5T_NATIVE_INT64);
    H5Tinsert(t, "device", HOFFSET(af_intr_row_t, device), H5T_NATIVE_INT64);
    H5Tinsert(t, "node", HOFFSET(af_intr_row_t, node), H5T_NATIVE_INT64);
    H5Tinsert(t, "time_h", HOFFSET(af_intr_row_t, time_h), H5T_NATIVE_DOUBLE);
    return t;
}
