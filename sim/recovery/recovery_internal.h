/* agefence recovery internals: what the part's own files share (the transfer engine of xfer.c,
 * the read-sets and the edge log, a replica's state at the committed step) and the driver never
 * calls. */
#ifndef AF_RECOVERY_XFER_H
#define AF_RECOVERY_XFER_H

#include "recovery.h"

/* A batch of block transfers: for item i, where the data comes from and goes to. */
typedef struct xfer_ops {
    void (*ranks)(af_recovery_t *r, void *ctx, int64_t i, int *src, int *dst);
    af_result_t (*read)(af_recovery_t *r, void *ctx, int64_t i, double *buf);
    af_result_t (*write)(af_recovery_t *r, void *ctx, int64_t i, const double *buf);
    /* Optional: a same-rank transfer without staging (slot to slot). */
    af_result_t (*local)(af_recovery_t *r, void *ctx, int64_t i);
    /* Optional: the global slots of an item that goes from one slot's committed buffer to
     * another's (0), or -1 when either end is elsewhere (a replica, a computed buffer). Such an
     * item crosses ranks directly between the two buffers when the fabric reaches the shard's
     * memory: no staging copy on either side. */
    int (*slots)(af_recovery_t *r, void *ctx, int64_t i, int64_t *from, int64_t *to);
    /* Optional: the global slot whose committed buffer item i reads, and the one it writes (-1:
     * none). A batch is applied in list order: an item that reads or overwrites a slot an
     * earlier item of the same chunk writes or reads starts a new chunk (see transfer()). */
    void (*touches)(af_recovery_t *r, void *ctx, int64_t i, int64_t *reads, int64_t *writes);
    /* Optional: whether item i takes a block to where it will be computed, so that its read-set
     * (the two neighbour edges of the state the next compute reads) must go with it: CARRY_NONE,
     * CARRY_XCHG (the source rank has them in its exchange, as the block's computing rank
     * always does) or CARRY_LOG (from the edge log beside the block's replica); *block is the
     * block. */
    int (*carries)(af_recovery_t *r, void *ctx, int64_t i, int64_t *block);
} xfer_ops_t;

enum { CARRY_NONE = 0, CARRY_XCHG = 1, CARRY_LOG = 2 };

/* The rank of global slot g, and its index among this rank's local slots. */
int af_slot_rank(const af_recovery_t *r, int64_t g);
int af_local_slot(const af_recovery_t *r, int64_t g);
/* Applies the n items of ops (with ctx) in chunks: reads, host staging, one batch of
 * point-to-point transfers a chunk, writes, and the read-sets of the items that carry them. */
af_result_t af_transfer(af_recovery_t *r, int64_t n, const xfer_ops_t *ops, void *ctx);
/* The edge log's row of logical step s: replica i's entry is row + 2 i (a step's loops take the
 * row once, not a division an entry). */
uint64_t *af_edge_log_row(const af_recovery_t *r, int64_t s);
/* The edge log entry of logical step s beside replica i of this rank. */
static inline uint64_t *af_edge_log_entry(const af_recovery_t *r, int64_t i, int64_t s)
{
    return af_edge_log_row(r, s) + 2 * i;
}
/* Block b's read-set as this rank has it (how: CARRY_XCHG from the exchange, CARRY_LOG from
 * the log beside its replica). */
void af_get_read_set(const af_recovery_t *r, int how, int64_t b, uint64_t *left, uint64_t *right);
/* The corruption probability per element of local unit u's outputs. */
double af_unit_corrupt_p(const af_recovery_t *r, int64_t u);
/* Block b's state at the committed step, from its replica (this rank keeps it), replayed
 * from the edge log where the replica is older (replicas.c). */
af_result_t af_replica_state(af_recovery_t *r, int64_t b, double *buf);

#endif
