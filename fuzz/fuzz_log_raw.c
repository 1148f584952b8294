/* libFuzzer harness: the log reader behind agefence-report, on raw bytes written to a file.
 *
 * This one feeds libhdf5 damaged files, and libhdf5 1.10 is known to crash, read out of bounds
 * and loop on some of them: those are HDF5's bugs, not agefence's. scripts/fuzz.sh therefore
 * runs this harness in libFuzzer's fork mode, which goes on after a crash, and sorts every
 * crash, leak and timeout by the first stack frame that is HDF5's or agefence's own: only the
 * latter fail the run (the HDF5 ones are counted and listed). fuzz_log.c, which builds
 * well-formed files, is where agefence's reader is fuzzed in depth. The seeds
 * (fuzz/corpus/log_raw) are small logs written by agefence itself. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = af_fuzz_temp_path("raw.h5");
    if (af_fuzz_write_file(path, data, size) != 0) {
        af_fuzz_fail("cannot write %s", path);
    }
    af_fuzz_read_log(path);
    return 0;
}
