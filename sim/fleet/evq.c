#include "evq.h"

#include "../../common/af_alloc.h"

/* Keys in front of heap[0] in its allocation: af_alloc's blocks start on a 64-byte line, so
 * heap[1], the first child group, starts on the next line and so does every group of 8. */
#define HEAP_LEAD (AF_EVQ_ARITY - 1)

static int64_t range_of(int64_t n)
{
    return n > 0 ? n : 1;
}

int64_t af_evq_bytes(int64_t n)
{
    return (int64_t)sizeof(uint64_t) * (range_of(n) + HEAP_LEAD) +
           (int64_t)sizeof(int32_t) * range_of(n);
}

static void place(af_evq_t *q, int64_t i, uint64_t key)
{
    q->heap[i] = key;
    q->pos[(uint32_t)key] = (int32_t)i;
}

static void sift_up(af_evq_t *q, int64_t i, uint64_t key)
{
    while (i > 0) {
        int64_t parent = (i - 1) / AF_EVQ_ARITY;
        if (q->heap[parent] < key) {
            break;
        }
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, key);
}

static void sift_down(af_evq_t *q, int64_t i, uint64_t key)
{
    for (;;) {
        int64_t first = AF_EVQ_ARITY * i + 1;
        if (first >= q->n) {
            break;
        }
        int64_t end = first + AF_EVQ_ARITY < q->n ? first + AF_EVQ_ARITY : q->n;
        int64_t least = first;
        for (int64_t c = first + 1; c < end; ++c) {
            least = q->heap[c] < q->heap[least] ? c : least;
        }
        if (key < q->heap[least]) {
            break; /* keys are unique: one per unit */
        }
        place(q, i, q->heap[least]);
        i = least;
    }
    place(q, i, key);
}

static void set_top(af_evq_t *q)
{
    q->top = q->n > 0 ? q->heap[0] : AF_EVQ_NONE;
}

void af_evq_destroy(af_evq_t *q)
{
    af_free(q->mem);
    af_free(q->pos);
    q->mem = NULL;
    q->heap = NULL;
    q->pos = NULL;
    q->n = 0;
    q->top = AF_EVQ_NONE;
}

af_result_t af_evq_init(af_evq_t *q, int64_t u_lo, int64_t u_hi)
{
    q->mem = NULL;
    q->heap = NULL;
    q->pos = NULL;
    q->n = 0;
    q->top = AF_EVQ_NONE;
    q->u_lo = u_lo;
    q->u_hi = u_hi;
    if (u_lo < 0 || u_hi < u_lo || u_hi > INT32_MAX) {
        af_error_set("evq: the unit range [%lld, %lld) is not one of 32-bit unit indices",
                     (long long)u_lo, (long long)u_hi);
        return AF_ERR_USAGE;
    }
    int64_t n = range_of(u_hi - u_lo);
    q->mem = af_alloc(sizeof(uint64_t) * (size_t)(n + HEAP_LEAD));
    q->pos = af_alloc(sizeof(int32_t) * (size_t)n);
    if (q->mem == NULL || q->pos == NULL) {
        af_evq_destroy(q);
        af_error_set("evq: cannot allocate a queue for %lld units", (long long)(u_hi - u_lo));
        return AF_ERR_NOMEM;
    }
    q->heap = q->mem + HEAP_LEAD;
    for (int64_t i = 0; i < n; ++i) {
        q->pos[i] = -1;
    }
    return AF_OK;
}

void af_evq_set(af_evq_t *q, int64_t u, int64_t step)
{
    int64_t i = q->pos[u - q->u_lo];
    uint64_t key = af_evq_key(q, u, step);
    if (i < 0) {
        sift_up(q, q->n++, key);
    } else if (key < q->heap[i]) {
        sift_up(q, i, key);
    } else if (key > q->heap[i]) {
        sift_down(q, i, key);
    }
    set_top(q);
}

void af_evq_remove(af_evq_t *q, int64_t u)
{
    int64_t i = q->pos[u - q->u_lo];
    if (i < 0) {
        return;
    }
    q->pos[u - q->u_lo] = -1;
    uint64_t last = q->heap[--q->n];
    if (i < q->n) {
        /* The last entry fills the hole and moves whichever way its key says. */
        if (i > 0 && last < q->heap[(i - 1) / AF_EVQ_ARITY]) {
            sift_up(q, i, last);
        } else {
            sift_down(q, i, last);
        }
    }
    set_top(q);
}

void af_evq_park(af_evq_t *q, int64_t u, int32_t v)
{
    af_evq_remove(q, u);
    q->pos[u - q->u_lo] = -2 - v;
}

int64_t af_evq_step_of(const af_evq_t *q, int64_t u)
{
    int64_t i = q->pos[u - q->u_lo];
    return i < 0 ? -1 : af_evq_key_step(q->heap[i]);
}

int af_evq_peek(const af_evq_t *q, int64_t *step, int64_t *unit)
{
    if (q->top == AF_EVQ_NONE) {
        return 0;
    }
    *step = af_evq_key_step(q->top);
    *unit = af_evq_key_unit(q, q->top);
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
        uint64_t key = q->heap[i];
        int64_t k = (int64_t)(uint32_t)key;
        if (k >= q->u_hi - q->u_lo || q->pos[k] != i) {
            af_error_set("evq: heap entry %lld (unit %lld) is not where its index says",
                         (long long)i, (long long)(q->u_lo + k));
            return AF_ERR_INTERNAL;
        }
        if (i > 0 && key < q->heap[(i - 1) / AF_EVQ_ARITY]) {
            af_error_set("evq: heap entry %lld orders before its parent", (long long)i);
            return AF_ERR_INTERNAL;
        }
    }
    if (q->top != (q->n > 0 ? q->heap[0] : AF_EVQ_NONE)) {
        af_error_set("evq: the top word is not the least key");
        return AF_ERR_INTERNAL;
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
