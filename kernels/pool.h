/* agefence: the pool a backend keeps the state of its slots in, when not every slot has buffers
 * of its own (af_shard_desc_t.pool_slots): a slot takes an entry when it is first written and
 * gives it back at the settle after it is set empty, so the memory behind a shard follows its
 * occupied slots, not its static grid (docs/scale.md, "Memory that follows the occupied
 * state"). The pool hands out entry numbers; what an entry holds is the backend's. Every array
 * is allocated by af_pool_init; nothing else allocates. */
#ifndef AF_POOL_H
#define AF_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/af_result.h"

typedef struct af_pool {
    int32_t cap;        /* entries */
    int32_t *entry;     /* per slot: its entry, -1 when it holds none; NULL when cap is the
                           slots' number: slot s is then entry s, always */
    int32_t *free_list; /* the entries no slot holds, a stack (n_free of them) */
    int32_t n_free;
    /* Slots set empty since the last settle, which still hold their entry: a slot is set empty
     * when the placement says so, which for a move's source comes before its block's state is
     * copied out (sim/driver/health.c af_apply_plan). pending_e marks their entries, so that a
     * slot emptied twice is listed once. */
    int32_t *pending;
    int32_t n_pending;
    uint8_t *pending_e;
} af_pool_t;

/* The bytes af_pool_init allocates for a pool of cap entries over n_slots slots (0 when cap
 * is n_slots or more: no pool). */
size_t af_pool_bytes(int64_t n_slots, int64_t cap);
/* A pool of min(cap, n_slots) entries, all free; entries are taken 0, 1, 2, ... in the order
 * slots are first written, so the blocks written at start-up lie in one run of memory. */
af_result_t af_pool_init(af_pool_t *p, int n_slots, int cap);
void af_pool_free(af_pool_t *p);

/* Slot s's entry, -1 when it holds none. */
static inline int32_t af_pool_entry(const af_pool_t *p, int s)
{
    return p->entry == NULL ? (int32_t)s : p->entry[s];
}

/* Slot s's entry, taken from the free ones when it holds none (*taken is then 1); -1 when none
 * is free. */
int32_t af_pool_take(af_pool_t *p, int s, int *taken);
/* Notes that slot s was set empty: its entry goes back at the next settle. */
void af_pool_release(af_pool_t *p, int s);
/* Gives back the entries of the slots noted since the last settle whose slot_block is still
 * -1; returns how many went back. */
int32_t af_pool_settle(af_pool_t *p, const int32_t *slot_block);

#endif
