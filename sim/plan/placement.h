/* agefence placement: the table block -> (device, unit, slot) and its inverse, sized once from
 * the static capacity. Every rank holds the whole table and applies the same move list, so all
 * agree on where each block lives without asking. A global slot index is
 * g = (device * units + unit) * capacity + slot. */
#ifndef AF_PLACEMENT_H
#define AF_PLACEMENT_H

#include <stdint.h>

#include "../../common/af_result.h"

/* slot_block values that are not blocks. A reserved slot holds a transient DMR twin. */
#define AF_SLOT_FREE     (-1)
#define AF_SLOT_RESERVED (-2)

typedef struct af_placement {
    int64_t devices;          /* D */
    int64_t units;            /* U per device */
    int64_t capacity;         /* C slots per unit */
    int64_t blocks;           /* B */
    int64_t devices_per_node; /* the node a device belongs to is device / devices_per_node (0 or
                                 1: a node per device); moves prefer the block's own node next */
    int nranks;
    int rank;
    int64_t dev_lo; /* this rank's devices: [dev_lo, dev_hi) */
    int64_t dev_hi;
    int32_t *block_slot; /* B entries: global slot of each block */
    int32_t *block_rank; /* B entries: the rank owning each block's slot (af_device_rank) */
    int32_t *slot_block; /* D*U*C entries: block in each slot, -1 when empty */
    int32_t *unit_load;  /* D*U entries: occupied slots of each unit */
    /* The units whose unit_load af_placement_move changed since the list was last emptied,
     * each once, in the order of their first change: the aging model reads the loads of these
     * alone. Whoever consumes the list empties it (af_placement_changed_clear). */
    int32_t *changed; /* D*U entries at most */
    int64_t n_changed;
    uint64_t *changed_mark; /* D*U bits: set while the unit is on the list */
    /* The free-capacity directory (af_placement_dir_attach): for each state s in {0, 1} (the
     * aging model's HEALTHY and FADING), a tournament tree over the devices whose leaf is the
     * device's least-loaded unit in state s with a free slot (ties to the lowest unit index, -1
     * when it has none) and whose inner nodes hold the better of their two children: the
     * fleet's best unit is the root, so a target search beyond a block's own device costs
     * O(1) instead of a scan of every unit. A change of one unit's load or state only marks its
     * device (O(1)); the first search after changes refreshes the marked devices' leaves and
     * their paths to the root (O(U + log D) each, or one rebuild of the whole tree when many
     * are marked), so the plans that never search beyond a block's own device do not pay for
     * it. Kept by af_placement_move and the reservations below; a change of a unit's state is
     * reported with af_placement_dir_unit. */
    const int8_t *dir_state; /* the unit states the directory follows; NULL: no directory */
    int32_t *dir_tree[2];    /* 2 * dir_leaves entries each; node 1 is the root */
    int64_t dir_leaves;      /* a power of two >= D */
    int32_t *dir_dirty;      /* D entries at most: devices marked since the last refresh */
    int64_t n_dirty;
    uint8_t *dir_mark; /* D entries: 1 while the device is on dir_dirty */
    /* The blocks af_placement_move moved since the list was last emptied, each once, in the
     * order of their first move (the same on every rank: every rank makes the same moves), so
     * the replicas follow the blocks that moved, not every block (sim/recovery/replicas.c). */
    int32_t *moved; /* B entries at most */
    int64_t n_moved;
    uint8_t *moved_mark; /* B entries: 1 while the block is on the list */
} af_placement_t;

/* C = next_pow2(ceil(B / (D*U*(1 - max_blackout)))): the power-of-two bucket that holds every
 * block when only 1 - max_blackout of the units survive. */
int64_t af_capacity(int64_t blocks, int64_t devices, int64_t units, double max_blackout);

/* The contiguous range of devices owned by `rank` (sizes differ by at most one). */
void af_rank_devices(int64_t devices, int nranks, int rank, int64_t *lo, int64_t *hi);
int af_device_rank(int64_t devices, int nranks, int64_t device);

/* Allocates the tables and gives device d the blocks [floor(d*B/D), floor((d+1)*B/D)),
 * round-robin over its units. Deterministic and independent of the number of ranks. */
af_result_t af_placement_init(af_placement_t *p, int64_t devices, int64_t units, int64_t blocks,
                              double max_blackout, int nranks, int rank);
void af_placement_destroy(af_placement_t *p);
/* Empties the list of moved blocks. */
void af_placement_moved_clear(af_placement_t *p);

static inline int64_t af_slot_unit(const af_placement_t *p, int64_t g)
{
    return g / p->capacity; /* global unit index d*U + u */
}
static inline int64_t af_slot_device(const af_placement_t *p, int64_t g)
{
    return g / (p->capacity * p->units);
}
static inline int af_slot_is_local(const af_placement_t *p, int64_t g)
{
    int64_t d = af_slot_device(p, g);
    return d >= p->dev_lo && d < p->dev_hi;
}
/* Index of a global slot within this rank's shard (only for local slots). */
static inline int af_slot_local(const af_placement_t *p, int64_t g)
{
    return (int)(g - p->dev_lo * p->units * p->capacity);
}
int64_t af_placement_local_slots(const af_placement_t *p);

/* Moves a block into an empty slot, keeping both tables and the loads consistent; lists the
 * source and destination units as changed. (A DMR twin's reservation, which raises a unit's
 * load and lowers it again within one step, writes unit_load directly and is not listed: the
 * loads the model sees from one step to the next do not include it.) */
void af_placement_move(af_placement_t *p, int32_t block, int32_t dst_slot);
/* Reserves a free slot for a transient DMR twin (slot_block AF_SLOT_RESERVED, the unit's load
 * up by one, the directory kept; not listed as changed: the reservation ends within the step),
 * and releases it again. */
void af_placement_reserve(af_placement_t *p, int32_t slot);
void af_placement_release(af_placement_t *p, int32_t slot);
/* Builds the free-capacity directory over unit_state (D*U entries, which the caller keeps and
 * reports changes of with af_placement_dir_unit); again, it rebuilds it from the tables (after
 * they were rewritten wholesale) without allocating. The first call allocates: start-up. */
af_result_t af_placement_dir_attach(af_placement_t *p, const int8_t *unit_state);
/* The bytes af_placement_dir_attach allocates for a fleet of `devices` devices. */
size_t af_placement_dir_bytes(int64_t devices);
/* Unit u's state (or load) changed: its device is marked for the next search. O(1). */
void af_placement_dir_unit(af_placement_t *p, int64_t unit);
/* The fleet's least-loaded unit in state s (0 or 1) with a free slot, never `exclude` (-1:
 * none excluded); ties to the lowest unit index; -1 when there is none. Refreshes the marked
 * devices first; then O(U + log D) with an exclusion that is the best, O(1) otherwise. Needs
 * the directory. */
int64_t af_placement_dir_best(af_placement_t *p, int s, int64_t exclude);

/* Whether unit u is on the list of changed units. */
static inline int af_placement_changed_marked(const af_placement_t *p, int64_t u)
{
    return (int)(p->changed_mark[u >> 6] >> (u & 63) & 1);
}
/* Empties the list of changed units (O(listed units)). */
void af_placement_changed_clear(af_placement_t *p);
/* First free (not reserved) slot of a unit, or -1. */
int32_t af_placement_free_slot(const af_placement_t *p, int64_t unit);

/* Checks the invariants: every block in exactly one slot, tables inverse of each other, loads
 * equal to occupancy. Returns AF_OK or AF_ERR_INTERNAL (tests and debug builds). */
af_result_t af_placement_check(const af_placement_t *p);

#endif
