#include "evq.h"

#include "../../common/af_alloc.h"

/* (step, unit) order: the step first, the lower unit on a tie, so a step's entries leave the
 * queue in ascending unit order. */
static int less(const af_evq_entry_t *x, const af_evq_entry_t *y)
{
    return x->step < y->step || (x->step == y->step && x->unit < y->unit);
}

static void place(af_evq_t *q, int64_t i, af_evq_entry_t e)
{
    q->heap[i] = e;
    q->pos[e.unit - q->u_lo] = (int32_t)i;
}

static void sift_up(af_evq_t *q, int64_t i)
{
    af_evq_entry_t e = q->heap[i];
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!less(&e, &q->heap[parent])) {
            break;
        }
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, e);
}

static void sift_down(af_evq_t *q, int64_t i)
{
    af_evq_entry_t e = q->heap[i];
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= q->n) {
            break;
        }
        if (child + 1 < q->n && less(&q->heap[child + 1], &q->heap[child])) {
            child++;
        }
        if (!less(&q->heap[child], &e)) {
            break;
        }
        place(q, i, q->heap[child]);
        i = child;
    }
    place(q, i, e);
}

void af_evq_destroy(af_evq_t *q)
{
    af_free(q->heap);
    af_free(q->pos);
    q->heap = NULL;
    q->pos = NULL;
    q->n = 0;
}

af_result_t af_evq_init(af_evq_t *q, int64_t u_lo, int64_t u_hi)
{
    q->heap = NULL;
    q->pos = NULL;
    q->n = 0;
    q->u_lo = u_lo;
    q->u_hi = u_hi;
    if (u_lo < 0 || u_hi < u_lo || u_hi > INT32_MAX) {
        af_error_set("evq: the unit range [%lld, %lld) is not one of 32-bit unit indices",
                     (long long)u_lo, (long long)u_hi);
        return AF_ERR_USAGE;
    }
    size_t n = (size_t)(u_hi - u_lo);
    q->heap = af_alloc(sizeof(af_evq_entry_t) * (n > 0 ? n : 1));
    q->pos = af_alloc(sizeof(int32_t) * (n > 0 ? n : 1));
    if (q->heap == NULL || q->pos == NULL) {
        af_evq_destroy(q);
        af_error_set("evq: cannot allocate a queue for %lld units", (long long)n);
        return AF_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; ++i) {
        q->pos[i] = -1;
    }
    return AF_OK;
}

void af_evq_set(af_evq_t *q, int64_t u, int64_t step)
{
    int64_t i = q->pos[u - q->u_lo];
    af_evq_entry_t e = {step, (int32_t)u, 0};
    if (i < 0) {
        i = q->n++;
        place(q, i, e);
        sift_up(q, i);
        return;
    }
    int64_t old = q->heap[i].step;
    q->heap[i] = e;
    if (step < old) {
        sift_up(q, i);
    } else if (step > old) {
        sift_down(q, i);
    }
}

void af_evq_remove(af_evq_t *q, int64_t u)
{
    int64_t i = q->pos[u - q->u_lo];
    if (i < 0) {
        return;
    }
    q->pos[u - q->u_lo] = -1;
    af_evq_entry_t last = q->heap[--q->n];
    if (i == q->n) {
        return; /* it was the last entry */
    }
    /* The last entry fills the hole and moves whichever way its key says. */
    place(q, i, last);
    if (i > 0 && less(&last, &q->heap[(i - 1) / 2])) {
        sift_up(q, i);
    } else {
        sift_down(q, i);
    }
}

int64_t af_evq_step_of(const af_evq_t *q, int64_t u)
{
    int64_t i = q->pos[u - q->u_lo];
    return i < 0 ? -1 : q->heap[i].step;
}

int af_evq_peek(const af_evq_t *q, int64_t *step, int64_t *unit)
{
    if (q->n == 0) {
        return 0;
    }
    *step = q->heap[0].step;
    *unit = q->heap[0].unit;
    return 1;
}

int af_evq_pop(af_evq_t *q, int64_t *step, int64_t *unit)
{
    if (!af_evq_peek(q, step, unit)) {
        return 0;
    }
    af_evq_remove(q, *unit);
    return 1;
}

af_result_t af_evq_check(const af_evq_t *q)
{
    for (int64_t i = 0; i < q->n; ++i) {
        const af_evq_entry_t *e = &q->heap[i];
        if (e->unit < q->u_lo || e->unit >= q->u_hi || q->pos[e->unit - q->u_lo] != i) {
            af_error_set("evq: heap entry %lld (unit %d) is not where its index says", (long long)i,
                         e->unit);
            return AF_ERR_INTERNAL;
        }
        if (i > 0 && less(e, &q->heap[(i - 1) / 2])) {
            af_error_set("evq: heap entry %lld orders before its parent", (long long)i);
            return AF_ERR_INTERNAL;
        }
    }
    int64_t present = 0;
    for (int64_t k = 0; k < q->u_hi - q->u_lo; ++k) {
        present += q->pos[k] >= 0;
        if (q->pos[k] >= q->n) {
            af_error_set("evq: unit %lld points past the heap", (long long)(q->u_lo + k));
            return AF_ERR_INTERNAL;
        }
    }
    if (present != q->n) {
        af_error_set("evq: %lld units are indexed for %lld heap entries", (long long)present,
                     (long long)q->n);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}
