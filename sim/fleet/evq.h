/* agefence event queue: the predicted next step of each unit of a range, as a binary min-heap
 * keyed by (step, unit) with a position index per unit, so that a unit can be re-keyed or
 * removed in O(log n) when its rate changes. The aging model (sim/fleet/aging.c) keeps one entry
 * per live unit whose next event it could predict; popping everything due at a step yields those
 * units in ascending order, the order in which a scan of every unit would have met them.
 *
 * Units are global indices in [u_lo, u_hi); the tables are indexed from u_lo so that a rank
 * can hold a queue for its own range of units. Everything is allocated by af_evq_init (start-up)
 * and nothing after: the heap holds at most one entry per unit of the range. */
#ifndef AF_EVQ_H
#define AF_EVQ_H

#include <stdint.h>

#include "../../common/af_result.h"

/* One entry: the step at which something happens to `unit` (ties go to the lower unit). */
typedef struct af_evq_entry {
    int64_t step;
    int32_t unit;
    int32_t pad; /* keeps the entry 16 bytes; always 0 */
} af_evq_entry_t;

typedef struct af_evq {
    int64_t u_lo; /* the range of units the queue can hold: [u_lo, u_hi) */
    int64_t u_hi;
    int64_t n;            /* entries now */
    af_evq_entry_t *heap; /* heap[0] is the least (step, unit); n of u_hi - u_lo in use */
    int32_t *pos;         /* pos[u - u_lo]: the heap index of unit u, or -1 when absent */
} af_evq_t;

/* Allocates an empty queue for the units [u_lo, u_hi) (u_hi - u_lo <= INT32_MAX). Returns
 * AF_OK, AF_ERR_USAGE for a bad range, or AF_ERR_NOMEM with nothing left allocated. */
af_result_t af_evq_init(af_evq_t *q, int64_t u_lo, int64_t u_hi);
/* Frees the tables and NULLs them; safe on a zeroed or already destroyed queue. */
void af_evq_destroy(af_evq_t *q);

/* Puts unit u (in range) at `step`: inserts it, or re-keys it when it is already there. */
void af_evq_set(af_evq_t *q, int64_t u, int64_t step);
/* Takes unit u out of the queue; nothing happens when it is not there. */
void af_evq_remove(af_evq_t *q, int64_t u);
/* The step unit u is queued at, or -1 when it is not in the queue. */
int64_t af_evq_step_of(const af_evq_t *q, int64_t u);

/* The least entry without removing it: returns 0 when the queue is empty, else 1 with *step
 * and *unit set. */
int af_evq_peek(const af_evq_t *q, int64_t *step, int64_t *unit);
/* Removes and returns the least entry, as af_evq_peek. */
int af_evq_pop(af_evq_t *q, int64_t *step, int64_t *unit);

/* Checks the heap order and that pos[] and the heap are inverse of each other. Returns AF_OK
 * or AF_ERR_INTERNAL with a message (tests and debug builds; O(range)). */
af_result_t af_evq_check(const af_evq_t *q);

#endif
