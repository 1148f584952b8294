#include "af_alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A small header in front of every block keeps its size, so live bytes stay exact. */
#define AF_ALIGN 64
/* Blocks of at least AF_HUGE_MIN bytes (the fleet's tables, the shard, the aging model at scale)
 * start on a 2 MiB boundary and ask the kernel for transparent huge pages (MADV_HUGEPAGE, which
 * the kernel's "madvise" mode needs): a step's passes over tables of gigabytes then walk a
 * page table of 2 MiB pages, not of 4 KiB ones. Where the kernel says no, nothing changes. */
#define AF_HUGE_MIN  ((size_t)8 << 20)
#define AF_HUGE_PAGE ((size_t)2 << 20)

static int af_sealed;
static int64_t af_after_seal;
static int64_t af_comms_after_seal;
static int64_t af_live_bytes;
static int64_t af_peak_bytes;
static int64_t af_total;
static int64_t af_fail_countdown;

void af_alloc_fail_at(int64_t n)
{
    af_fail_countdown = n > 0 ? n : 0;
}

void *af_alloc(size_t bytes)
{
    if (af_fail_countdown > 0 && --af_fail_countdown == 0) {
        return NULL;
    }
    void *raw = NULL;
    const int huge = bytes >= AF_HUGE_MIN;
    if (posix_memalign(&raw, huge ? AF_HUGE_PAGE : AF_ALIGN, bytes + AF_ALIGN) != 0) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    if (huge) {
        /* The whole 2 MiB pages inside the block, and nothing of its neighbours. */
        size_t len = (bytes + AF_ALIGN) / AF_HUGE_PAGE * AF_HUGE_PAGE;
        (void)madvise(raw, len, MADV_HUGEPAGE); /* advice: a refusal changes nothing */
    }
#endif
    memset(raw, 0, bytes + AF_ALIGN);
    *(size_t *)raw = bytes;
    af_live_bytes += (int64_t)bytes;
    af_peak_bytes = af_live_bytes > af_peak_bytes ? af_live_bytes : af_peak_bytes;
    af_total++;
    if (af_sealed) {
        af_after_seal++;
    }
    return (char *)raw + AF_ALIGN;
}

void af_free(void *p)
{
    if (p == NULL) {
        return;
    }
    char *raw = (char *)p - AF_ALIGN;
    af_live_bytes -= (int64_t) * (size_t *)raw;
    free(raw);
}

void af_alloc_reset(void)
{
    af_sealed = 0;
    af_after_seal = 0;
    af_comms_after_seal = 0;
    af_peak_bytes = af_live_bytes;
}

void af_alloc_seal(void)
{
    af_sealed = 1;
}

int af_alloc_sealed(void)
{
    return af_sealed;
}

int64_t af_alloc_after_seal(void)
{
    return af_after_seal;
}

int64_t af_alloc_bytes_live(void)
{
    return af_live_bytes;
}

int64_t af_alloc_bytes_peak(void)
{
    return af_peak_bytes;
}

int64_t af_alloc_count_total(void)
{
    return af_total;
}

void af_alloc_note_external(size_t bytes)
{
    af_live_bytes += (int64_t)bytes;
    af_peak_bytes = af_live_bytes > af_peak_bytes ? af_live_bytes : af_peak_bytes;
    af_total++;
    if (af_sealed) {
        af_after_seal++;
    }
}

void af_alloc_note_comm(void)
{
    if (af_sealed) {
        af_comms_after_seal++;
    }
}

int64_t af_alloc_comms_after_seal(void)
{
    return af_comms_after_seal;
}

void af_alloc_note_external_free(size_t bytes)
{
    af_live_bytes -= (int64_t)bytes;
}
