/* agefence event queue: the predicted next step of each unit of a range, as an 8-ary min-heap of
 * (step, unit) keys with a position index per unit, so that a unit can be re-keyed or removed in
 * O(log n) when its rate changes. The aging model (sim/fleet/aging.c) keeps one entry per live
 * unit whose next event it could predict; popping everything due at a step yields those units
 * in ascending order, the order in which a scan of every unit would have met them.
 *
 * A key is one 64-bit word, the step in its upper half and the unit's index in the range in its
 * lower half, so that one integer comparison orders two entries and eight children fill one cache
 * line: a sift visits log8(n) lines, not the log2(n) of a binary heap of 16-byte entries (at 4
 * million units, 8 levels instead of 22, each a cache miss when the heap has gone cold). The
 * least key is also kept in the queue's first word (`top`), so that a step with nothing due
 * reads one line.
 *
 * Units are global indices in [u_lo, u_hi); the tables are indexed from u_lo so that a rank
 * can hold a queue for its own range of units. Everything is allocated by af_evq_init (start-up)
 * and nothing after: the heap holds at most one entry per unit of the range. */
#ifndef AF_EVQ_H
#define AF_EVQ_H

#include <stdint.h>

#include "../../common/af_result.h"

/* The steps a queue holds: 0 to AF_EVQ_STEP_MAX (the upper half of a key). */
#define AF_EVQ_STEP_MAX INT32_MAX
/* `top` of an empty queue: above every key. */
#define AF_EVQ_NONE UINT64_MAX
/* Children of a heap node: one cache line of keys. */
#define AF_EVQ_ARITY 8

typedef struct af_evq {
    uint64_t top; /* the least key (heap[0]), AF_EVQ_NONE when the queue is empty */
    int64_t n;    /* entries now */
    int64_t u_lo; /* the range of units the queue can hold: [u_lo, u_hi) */
    int64_t u_hi;
    uint64_t *heap; /* keys; heap[0] is the least, the children of i are 8i + 1 .. 8i + 8, each
                       group of them in one 64-byte line; n of u_hi - u_lo in use */
    int32_t *pos;   /* pos[u - u_lo]: the heap index of unit u; -1 when absent, or -2 - v when
                       absent with the word v parked (af_evq_park) */
    uint64_t *mem;  /* the heap's allocation (heap is 7 keys into it, for the lines) */
} af_evq_t;

/* The key of unit u (in the queue's range) at `step`, and a key's step and unit. */
static inline uint64_t af_evq_key(const af_evq_t *q, int64_t u, int64_t step)
{
    return (uint64_t)step << 32 | (uint64_t)(uint32_t)(u - q->u_lo);
}
static inline int64_t af_evq_key_step(uint64_t key)
{
    return (int64_t)(key >> 32);
}
static inline int64_t af_evq_key_unit(const af_evq_t *q, uint64_t key)
{
    return q->u_lo + (int64_t)(uint32_t)key;
}

/* Allocates an empty queue for the units [u_lo, u_hi) (u_hi - u_lo <= INT32_MAX). Returns
 * AF_OK, AF_ERR_USAGE for a bad range, or AF_ERR_NOMEM with nothing left allocated. */
af_result_t af_evq_init(af_evq_t *q, int64_t u_lo, int64_t u_hi);
/* Frees the tables and NULLs them; safe on a zeroed or already destroyed queue. */
void af_evq_destroy(af_evq_t *q);
/* The bytes af_evq_init allocates for a range of n units. */
int64_t af_evq_bytes(int64_t n);

/* Puts unit u (in range) at `step` (0 to AF_EVQ_STEP_MAX): inserts it, or re-keys it when it is
 * already there. */
void af_evq_set(af_evq_t *q, int64_t u, int64_t step);
/* Takes unit u out of the queue; nothing happens when it is not there. */
void af_evq_remove(af_evq_t *q, int64_t u);
/* The step unit u is queued at, or -1 when it is not in the queue. */
int64_t af_evq_step_of(const af_evq_t *q, int64_t u);

/* An absent unit's index word holds a value of its owner's instead (0 to INT32_MAX - 1), for a
 * unit that leaves the queue for good: the aging model keeps a dead unit's death step there.
 * af_evq_park takes unit u out of the queue and parks v; af_evq_parked returns the value parked
 * for u, or -1 when none is (u queued, or absent without one). Queuing u again drops it. */
void af_evq_park(af_evq_t *q, int64_t u, int32_t v);
static inline int64_t af_evq_parked(const af_evq_t *q, int64_t u)
{
    int32_t i = q->pos[u - q->u_lo];
    return i <= -2 ? -2 - (int64_t)i : -1;
}

/* The least entry without removing it: returns 0 when the queue is empty, else 1 with *step
 * and *unit set. */
int af_evq_peek(const af_evq_t *q, int64_t *step, int64_t *unit);
/* Removes and returns the least entry, as af_evq_peek. */
int af_evq_pop(af_evq_t *q, int64_t *step, int64_t *unit);

/* Checks the heap order, `top`, and that pos[] and the heap are inverse of each other. Returns
 * AF_OK or AF_ERR_INTERNAL with a message (tests and debug builds; O(range)). */
af_result_t af_evq_check(const af_evq_t *q);

#endif
