#include "placement.h"

#include <math.h>

#include "../../common/af_alloc.h"

int64_t af_capacity(int64_t blocks, int64_t devices, int64_t units, double max_blackout)
{
    /* The formula as documented, on the (fractional) surviving unit count; the small epsilon
     * keeps an exact quotient such as 256 / 16 from rounding up through floating point. */
    double surviving = (double)devices * (double)units * (1.0 - max_blackout);
    double need = ceil((double)blocks / surviving - 1e-9);
    int64_t c = 1;
    while ((double)c < need) {
        c *= 2;
    }
    return c;
}

void af_rank_devices(int64_t devices, int nranks, int rank, int64_t *lo, int64_t *hi)
{
    int64_t q = devices / nranks;
    int64_t r = devices % nranks;
    *lo = rank * q + (rank < r ? rank : r);
    *hi = *lo + q + (rank < r ? 1 : 0);
}

int af_device_rank(int64_t devices, int nranks, int64_t device)
{
    int64_t q = devices / nranks;
    int64_t r = devices % nranks;
    /* The first r ranks own q+1 devices each. */
    if (device < r * (q + 1)) {
        return (int)(device / (q + 1));
    }
    return (int)(r + (device - r * (q + 1)) / q);
}

int64_t af_placement_local_slots(const af_placement_t *p)
{
    return (p->dev_hi - p->dev_lo) * p->units * p->capacity;
}

void af_placement_destroy(af_placement_t *p)
{
    af_free(p->block_slot);
    af_free(p->block_rank);
    af_free(p->slot_block);
    af_free(p->unit_load);
    af_free(p->changed);
    af_free(p->changed_mark);
    af_free(p->moved);
    af_free(p->moved_mark);
    p->moved = NULL;
    p->moved_mark = NULL;
    af_free(p->dir_tree[0]);
    af_free(p->dir_tree[1]);
    af_free(p->dir_dirty);
    af_free(p->dir_mark);
    p->dir_tree[0] = p->dir_tree[1] = NULL;
    p->dir_dirty = NULL;
    p->dir_mark = NULL;
    p->n_dirty = 0;
    p->dir_state = NULL;
    p->block_slot = NULL;
    p->block_rank = NULL;
    p->slot_block = NULL;
    p->unit_load = NULL;
    p->changed = NULL;
    p->changed_mark = NULL;
    p->n_changed = 0;
}

af_result_t af_placement_init(af_placement_t *p, int64_t devices, int64_t units, int64_t blocks,
                              double max_blackout, int nranks, int rank)
{
    p->devices = devices;
    p->units = units;
    p->blocks = blocks;
    p->capacity = af_capacity(blocks, devices, units, max_blackout);
    p->nranks = nranks;
    p->rank = rank;
    af_rank_devices(devices, nranks, rank, &p->dev_lo, &p->dev_hi);
    int64_t nslots = devices * units * p->capacity;
    if (nslots > INT32_MAX) {
        af_error_set("placement: %lld slots exceed the 2^31 table limit", (long long)nslots);
        return AF_ERR_USAGE;
    }
    p->block_slot = af_alloc(sizeof(int32_t) * (size_t)blocks);
    p->block_rank = af_alloc(sizeof(int32_t) * (size_t)blocks);
    p->slot_block = af_alloc(sizeof(int32_t) * (size_t)nslots);
    p->unit_load = af_alloc(sizeof(int32_t) * (size_t)(devices * units));
    p->changed = af_alloc(sizeof(int32_t) * (size_t)(devices * units));
    p->changed_mark = af_alloc(sizeof(uint64_t) * (size_t)((devices * units + 63) / 64));
    p->n_changed = 0;
    p->moved = af_alloc(sizeof(int32_t) * (size_t)(blocks > 0 ? blocks : 1));
    p->moved_mark = af_alloc((size_t)(blocks > 0 ? blocks : 1));
    p->n_moved = 0;
    if (!p->block_slot || !p->block_rank || !p->slot_block || !p->unit_load || !p->changed ||
        !p->changed_mark || !p->moved || !p->moved_mark) {
        af_placement_destroy(p);
        af_error_set("placement: cannot allocate the tables for %lld slots", (long long)nslots);
        return AF_ERR_NOMEM;
    }
    for (int64_t g = 0; g < nslots; ++g) {
        p->slot_block[g] = -1;
    }
    for (int64_t d = 0; d < devices; ++d) {
        int64_t b0 = (d * blocks) / devices;
        int64_t b1 = ((d + 1) * blocks) / devices;
        for (int64_t b = b0; b < b1; ++b) {
            int64_t j = b - b0;
            int64_t unit = d * units + j % units;
            int64_t g = unit * p->capacity + j / units;
            p->block_slot[b] = (int32_t)g;
            p->block_rank[b] = (int32_t)af_device_rank(devices, nranks, d);
            p->slot_block[g] = (int32_t)b;
            p->unit_load[unit]++;
        }
    }
    return AF_OK;
}

/* Lists a unit whose load changed, once: the mark makes the list at most D*U long. */
static void mark_changed(af_placement_t *p, int64_t unit)
{
    if (!af_placement_changed_marked(p, unit)) {
        p->changed_mark[unit >> 6] |= UINT64_C(1) << (unit & 63);
        p->changed[p->n_changed++] = (int32_t)unit;
    }
}

/* ---- the free-capacity directory ------------------------------------------------------------ */

/* Whether unit a is a better target than unit b (either may be -1: none). */
static int dir_better(const af_placement_t *p, int64_t a, int64_t b)
{
    if (a < 0) {
        return 0;
    }
    if (b < 0) {
        return 1;
    }
    int32_t la = p->unit_load[a];
    int32_t lb = p->unit_load[b];
    return la < lb || (la == lb && a < b);
}

/* Device d's best unit in state s, never `exclude`. */
static int64_t dir_leaf(const af_placement_t *p, int s, int64_t d, int64_t exclude)
{
    int64_t best = -1;
    for (int64_t u = d * p->units; u < (d + 1) * p->units; ++u) {
        if (p->dir_state[u] == s && u != exclude && p->unit_load[u] < p->capacity &&
            dir_better(p, u, best)) {
            best = u;
        }
    }
    return best;
}

static void dir_update(af_placement_t *p, int64_t d)
{
    for (int s = 0; s < 2; ++s) {
        int32_t *t = p->dir_tree[s];
        int64_t i = p->dir_leaves + d;
        t[i] = (int32_t)dir_leaf(p, s, d, -1);
        for (i /= 2; i >= 1; i /= 2) {
            int32_t a = t[2 * i];
            int32_t b = t[2 * i + 1];
            t[i] = dir_better(p, b, a) ? b : a;
        }
    }
}

/* Every leaf from the tables, then every inner node: O(D * U). */
static void dir_rebuild(af_placement_t *p)
{
    for (int s = 0; s < 2; ++s) {
        int32_t *t = p->dir_tree[s];
        for (int64_t d = 0; d < p->devices; ++d) {
            t[p->dir_leaves + d] = (int32_t)dir_leaf(p, s, d, -1);
        }
        for (int64_t i = p->dir_leaves - 1; i >= 1; --i) {
            t[i] = dir_better(p, t[2 * i + 1], t[2 * i]) ? t[2 * i + 1] : t[2 * i];
        }
    }
}

/* The marked devices into the trees: one path each, or one rebuild when a path each would
 * cost more (a path is about log2 D nodes). */
static void dir_refresh(af_placement_t *p)
{
    int64_t depth = 1;
    while (((int64_t)1 << depth) < p->dir_leaves) {
        depth++;
    }
    if (p->n_dirty * depth > p->devices) {
        dir_rebuild(p);
    } else {
        for (int64_t i = 0; i < p->n_dirty; ++i) {
            dir_update(p, p->dir_dirty[i]);
        }
    }
    for (int64_t i = 0; i < p->n_dirty; ++i) {
        p->dir_mark[p->dir_dirty[i]] = 0;
    }
    p->n_dirty = 0;
}

size_t af_placement_dir_bytes(int64_t devices)
{
    int64_t leaves = 1;
    while (leaves < devices) {
        leaves *= 2;
    }
    return 2 * sizeof(int32_t) * 2 * (size_t)leaves + (sizeof(int32_t) + 1) * (size_t)devices;
}

af_result_t af_placement_dir_attach(af_placement_t *p, const int8_t *unit_state)
{
    p->dir_leaves = 1;
    while (p->dir_leaves < p->devices) {
        p->dir_leaves *= 2;
    }
    for (int s = 0; s < 2; ++s) {
        if (p->dir_tree[s] == NULL) {
            p->dir_tree[s] = af_alloc(sizeof(int32_t) * 2 * (size_t)p->dir_leaves);
        }
    }
    if (p->dir_dirty == NULL) {
        p->dir_dirty = af_alloc(sizeof(int32_t) * (size_t)(p->devices > 0 ? p->devices : 1));
        p->dir_mark = af_alloc((size_t)(p->devices > 0 ? p->devices : 1));
    }
    if (!p->dir_tree[0] || !p->dir_tree[1] || !p->dir_dirty || !p->dir_mark) {
        af_error_set("placement: cannot allocate the directory of %lld devices",
                     (long long)p->devices);
        return AF_ERR_NOMEM;
    }
    for (int s = 0; s < 2; ++s) {
        for (int64_t i = 0; i < 2 * p->dir_leaves; ++i) {
            p->dir_tree[s][i] = -1;
        }
    }
    for (int64_t d = 0; d < p->devices; ++d) {
        p->dir_mark[d] = 0;
    }
    p->n_dirty = 0;
    p->dir_state = unit_state;
    dir_rebuild(p);
    return AF_OK;
}

void af_placement_dir_unit(af_placement_t *p, int64_t unit)
{
    if (p->dir_state == NULL) {
        return;
    }
    int64_t d = unit / p->units;
    if (!p->dir_mark[d]) {
        p->dir_mark[d] = 1;
        p->dir_dirty[p->n_dirty++] = (int32_t)d;
    }
}

int64_t af_placement_dir_best(af_placement_t *p, int s, int64_t exclude)
{
    if (p->n_dirty > 0) {
        dir_refresh(p);
    }
    const int32_t *t = p->dir_tree[s];
    if (exclude < 0 || t[1] != exclude) {
        return t[1];
    }
    /* The excluded unit is the fleet's best: its device's leaf without it, then the path to
     * the root against the siblings. */
    int64_t i = p->dir_leaves + exclude / p->units;
    int64_t best = dir_leaf(p, s, exclude / p->units, exclude);
    for (; i > 1; i /= 2) {
        int64_t other = t[i ^ 1];
        /* Ties by unit index decide as the tree does: the lower unit wins either way. */
        best = dir_better(p, other, best) ? other : best;
    }
    return best;
}

void af_placement_move(af_placement_t *p, int32_t block, int32_t dst_slot)
{
    int32_t src = p->block_slot[block];
    if (!p->moved_mark[block]) {
        p->moved_mark[block] = 1;
        p->moved[p->n_moved++] = block;
    }
    if (src >= 0) {
        p->slot_block[src] = -1;
        p->unit_load[af_slot_unit(p, src)]--;
        mark_changed(p, af_slot_unit(p, src));
        af_placement_dir_unit(p, af_slot_unit(p, src));
    }
    p->slot_block[dst_slot] = block;
    p->block_slot[block] = dst_slot;
    p->block_rank[block] =
        (int32_t)af_device_rank(p->devices, p->nranks, af_slot_device(p, dst_slot));
    p->unit_load[af_slot_unit(p, dst_slot)]++;
    mark_changed(p, af_slot_unit(p, dst_slot));
    af_placement_dir_unit(p, af_slot_unit(p, dst_slot));
}

void af_placement_moved_clear(af_placement_t *p)
{
    for (int64_t i = 0; i < p->n_moved; ++i) {
        p->moved_mark[p->moved[i]] = 0;
    }
    p->n_moved = 0;
}

void af_placement_reserve(af_placement_t *p, int32_t slot)
{
    p->slot_block[slot] = AF_SLOT_RESERVED;
    p->unit_load[af_slot_unit(p, slot)]++;
    af_placement_dir_unit(p, af_slot_unit(p, slot));
}

void af_placement_release(af_placement_t *p, int32_t slot)
{
    p->slot_block[slot] = AF_SLOT_FREE;
    p->unit_load[af_slot_unit(p, slot)]--;
    af_placement_dir_unit(p, af_slot_unit(p, slot));
}

void af_placement_changed_clear(af_placement_t *p)
{
    for (int64_t i = 0; i < p->n_changed; ++i) {
        p->changed_mark[p->changed[i] >> 6] &= ~(UINT64_C(1) << (p->changed[i] & 63));
    }
    p->n_changed = 0;
}

int32_t af_placement_free_slot(const af_placement_t *p, int64_t unit)
{
    int64_t g0 = unit * p->capacity;
    for (int64_t c = 0; c < p->capacity; ++c) {
        if (p->slot_block[g0 + c] == AF_SLOT_FREE) {
            return (int32_t)(g0 + c);
        }
    }
    return -1;
}

af_result_t af_placement_check(const af_placement_t *p)
{
    int64_t nslots = p->devices * p->units * p->capacity;
    int64_t occupied = 0;
    for (int64_t g = 0; g < nslots; ++g) {
        int32_t b = p->slot_block[g];
        if (b < 0) {
            continue;
        }
        occupied++;
        if (b >= p->blocks || p->block_slot[b] != g) {
            af_error_set("placement: slot %lld holds block %d whose table says slot %d",
                         (long long)g, b, b < p->blocks ? p->block_slot[b] : -1);
            return AF_ERR_INTERNAL;
        }
        int want = af_device_rank(p->devices, p->nranks, af_slot_device(p, g));
        if (p->block_rank[b] != want) {
            af_error_set("placement: block %d's rank is %d, its slot %lld is rank %d's", b,
                         p->block_rank[b], (long long)g, want);
            return AF_ERR_INTERNAL;
        }
    }
    if (occupied != p->blocks) {
        af_error_set("placement: %lld slots occupied for %lld blocks", (long long)occupied,
                     (long long)p->blocks);
        return AF_ERR_INTERNAL;
    }
    for (int64_t u = 0; u < p->devices * p->units; ++u) {
        int32_t n = 0;
        for (int64_t c = 0; c < p->capacity; ++c) {
            n += p->slot_block[u * p->capacity + c] >= 0;
        }
        if (n != p->unit_load[u]) {
            af_error_set("placement: unit %lld holds %d blocks, its load says %d", (long long)u, n,
                         p->unit_load[u]);
            return AF_ERR_INTERNAL;
        }
    }
    /* The list of changed units: each listed unit marked, and as many marks as entries. */
    int64_t marked = 0;
    for (int64_t u = 0; u < p->devices * p->units; ++u) {
        marked += af_placement_changed_marked(p, u);
    }
    for (int64_t i = 0; i < p->n_changed; ++i) {
        if (!af_placement_changed_marked(p, p->changed[i])) {
            af_error_set("placement: unit %d is listed as changed but not marked", p->changed[i]);
            return AF_ERR_INTERNAL;
        }
    }
    if (marked != p->n_changed) {
        af_error_set("placement: %lld units marked as changed, %lld listed", (long long)marked,
                     (long long)p->n_changed);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}
