/* agefence: the host-side control state every compute backend shares: the list of occupied
 * slots. A shard holds capacity for the design's blackout (one or more slots per unit), so
 * most of its slots are empty in a healthy fleet; the passes that run on the host visit the
 * list, and the masked kernels of the CUDA backend keep covering the full static grid. */
#include "kernels.h"

#include "../common/af_alloc.h"
#include "../common/af_result.h"

/* The occupied-slot list's entries (at least one). */
static size_t occ_cap(const af_shard_desc_t *desc)
{
    int n = af_shard_pool_cap(desc);
    return (size_t)(n > 0 ? n : 1);
}

size_t af_kernels_occ_bytes(const af_shard_desc_t *desc)
{
    return sizeof(int32_t) * (occ_cap(desc) + (size_t)(desc->n_slots > 0 ? desc->n_slots : 1));
}

af_result_t af_kernels_occ_alloc(af_kernels_t *k)
{
    size_t n = (size_t)(k->desc.n_slots > 0 ? k->desc.n_slots : 1);
    k->occ_cap = (int32_t)occ_cap(&k->desc);
    k->occ = af_alloc(sizeof(int32_t) * (size_t)k->occ_cap);
    k->occ_pos = af_alloc(sizeof(int32_t) * n);
    k->n_occ = 0;
    k->occ_overflow = 0;
    if (k->occ == NULL || k->occ_pos == NULL) {
        af_kernels_occ_free(k);
        return AF_ERR_NOMEM;
    }
    for (int s = 0; s < k->desc.n_slots; ++s) {
        k->occ_pos[s] = -1;
    }
    return AF_OK;
}

void af_kernels_occ_free(af_kernels_t *k)
{
    af_free(k->occ);
    af_free(k->occ_pos);
    k->occ = NULL;
    k->occ_pos = NULL;
    k->n_occ = 0;
}

void af_kernels_set_block(af_kernels_t *k, int s, int32_t block)
{
    int32_t b = block >= 0 ? block : -1;
    k->slot_block[s] = b;
    int32_t at = k->occ_pos[s];
    if (b >= 0 && at < 0) {
        if (k->n_occ == k->occ_cap) {
            k->occ_overflow = 1;
            return;
        }
        k->occ_pos[s] = k->n_occ;
        k->occ[k->n_occ++] = s;
    } else if (b < 0 && at >= 0) {
        int32_t last = k->occ[--k->n_occ];
        k->occ[at] = last;
        k->occ_pos[last] = at;
        k->occ_pos[s] = -1;
        k->nonfinite[s] = 0;
        k->injected[s] = 0;
        k->harmful[s] = 0;
        k->abft[s] = 0;
        k->commit[s] = 0;
        k->select[s] = 0;
    }
    if (b < 0 && k->ops->release_slot != NULL) {
        k->ops->release_slot(k, s);
    }
}

af_result_t af_kernels_occ_ok(const af_kernels_t *k)
{
    if (k->occ_overflow) {
        af_error_set("kernels: more than %d slots of the shard occupied at once (the bound of two "
                     "a block)",
                     (int)k->occ_cap);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

void af_kernels_settle(af_kernels_t *k)
{
    if (k->ops->settle != NULL) {
        k->ops->settle(k);
    }
}
