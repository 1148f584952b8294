/* agefence: the slots' pool of entries (see pool.h). */
#include "pool.h"

#include <string.h>

#include "../common/af_alloc.h"

size_t af_pool_bytes(int64_t n_slots, int64_t cap)
{
    if (cap <= 0 || cap >= n_slots) {
        return 0;
    }
    /* entry per slot; free list, pending list and pending marks per entry */
    return (size_t)n_slots * sizeof(int32_t) + (size_t)cap * (2 * sizeof(int32_t) + 1);
}

af_result_t af_pool_init(af_pool_t *p, int n_slots, int cap)
{
    memset(p, 0, sizeof *p);
    p->cap = cap > 0 && cap < n_slots ? cap : n_slots;
    if (p->cap == n_slots) {
        return AF_OK; /* a slot's entry is its own */
    }
    const size_t n = (size_t)p->cap;
    p->entry = af_alloc(sizeof(int32_t) * (size_t)n_slots);
    p->free_list = af_alloc(sizeof(int32_t) * n);
    p->pending = af_alloc(sizeof(int32_t) * n);
    p->pending_e = af_alloc(n);
    if (!p->entry || !p->free_list || !p->pending || !p->pending_e) {
        af_pool_free(p);
        return AF_ERR_NOMEM;
    }
    for (int s = 0; s < n_slots; ++s) {
        p->entry[s] = -1;
    }
    for (size_t e = 0; e < n; ++e) {
        p->free_list[e] = (int32_t)(n - 1 - e);
    }
    p->n_free = (int32_t)n;
    memset(p->pending_e, 0, n);
    return AF_OK;
}

void af_pool_free(af_pool_t *p)
{
    af_free(p->entry);
    af_free(p->free_list);
    af_free(p->pending);
    af_free(p->pending_e);
    memset(p, 0, sizeof *p);
}

int32_t af_pool_take(af_pool_t *p, int s, int *taken)
{
    *taken = 0;
    int32_t e = af_pool_entry(p, s);
    if (e >= 0) {
        return e;
    }
    if (p->n_free == 0) {
        return -1;
    }
    e = p->free_list[--p->n_free];
    p->entry[s] = e;
    *taken = 1;
    return e;
}

void af_pool_release(af_pool_t *p, int s)
{
    if (p->entry == NULL || p->entry[s] < 0 || p->pending_e[p->entry[s]]) {
        return;
    }
    p->pending_e[p->entry[s]] = 1;
    p->pending[p->n_pending++] = s;
}

int32_t af_pool_settle(af_pool_t *p, const int32_t *slot_block)
{
    int32_t back = 0;
    for (int32_t i = 0; i < p->n_pending; ++i) {
        int s = p->pending[i];
        int32_t e = p->entry[s];
        p->pending_e[e] = 0;
        if (slot_block[s] >= 0) {
            continue; /* occupied again since: it keeps its state */
        }
        p->free_list[p->n_free++] = e;
        p->entry[s] = -1;
        back++;
    }
    p->n_pending = 0;
    return back;
}
