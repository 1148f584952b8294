/* agefence recovery, moves: applying the plan's drains, restores and retries to the slots
 * (af_apply_moves), and the retries of the blocks fenced in a step (af_retry_fenced). A restore
 * with data reads the block's replica (replicas.c); every move goes through xfer.c. */
#include <string.h>

#include "../../common/af_alloc.h"
#include "../../common/percentile.h"
#include "../io/backend.h"
#include "../oracle/reference.h"
#include "recovery_internal.h"

/* ---- moves ----------------------------------------------------------------------------------- */

typedef struct move_ctx {
    const af_move_t *moves;
    int restore_data; /* 1: restores read the replica (no rollback); 0: they carry nothing */
} move_ctx_t;

static void move_ranks(af_recovery_t *r, void *vctx, int64_t i, int *src, int *dst)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    *dst = af_slot_rank(r, m->to_slot);
    if (m->kind == AF_MOVE_RESTORE) {
        /* Without data to carry (a rollback restores every block afterwards), nobody sends. */
        *src = c->restore_data ? r->rep.rank[m->block] : -1;
        if (*src < 0) {
            *dst = -1;
        }
    } else {
        *src = af_slot_rank(r, m->from_slot);
    }
}

static af_result_t move_read(af_recovery_t *r, void *vctx, int64_t i, double *buf)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        return af_replica_state(r, m->block, buf);
    }
    return r->s->k->ops->read_slot(r->s->k, af_local_slot(r, m->from_slot), buf);
}

static af_result_t move_write(af_recovery_t *r, void *vctx, int64_t i, const double *buf)
{
    const move_ctx_t *c = vctx;
    return r->s->k->ops->write_slot(r->s->k, af_local_slot(r, c->moves[i].to_slot), buf);
}

static af_result_t move_local(af_recovery_t *r, void *vctx, int64_t i)
{
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        AF_CHECK(af_replica_state(r, m->block, r->s->cellbuf));
        return r->s->k->ops->write_slot(r->s->k, af_local_slot(r, m->to_slot), r->s->cellbuf);
    }
    return r->s->k->ops->copy_slot(r->s->k, af_local_slot(r, m->from_slot),
                                   af_local_slot(r, m->to_slot));
}

static int move_slots(af_recovery_t *r, void *vctx, int64_t i, int64_t *from, int64_t *to)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    if (m->kind == AF_MOVE_RESTORE) {
        return -1; /* from a replica in host memory */
    }
    *from = m->from_slot;
    *to = m->to_slot;
    return 0;
}

static void move_touches(af_recovery_t *r, void *vctx, int64_t i, int64_t *reads, int64_t *writes)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    int restore = m->kind == AF_MOVE_RESTORE;
    *reads = restore ? -1 : m->from_slot; /* a restore reads the replica */
    *writes = restore && !c->restore_data ? -1 : m->to_slot;
}

/* A drain or retry takes its read-set from the block's rank; a restore with data from the log
 * beside its replica. A restore without data (a rollback follows, and an exchange of the
 * rolled-back state) takes nothing. */
static int move_carries(af_recovery_t *r, void *vctx, int64_t i, int64_t *block)
{
    (void)r;
    const move_ctx_t *c = vctx;
    const af_move_t *m = &c->moves[i];
    *block = m->block;
    if (m->kind == AF_MOVE_RESTORE) {
        return c->restore_data ? CARRY_LOG : CARRY_NONE;
    }
    return CARRY_XCHG;
}

af_result_t af_apply_moves(af_recovery_t *r, const af_move_t *moves, int64_t n, int restore_data)
{
    static const xfer_ops_t ops = {move_ranks, move_read,    move_write,  move_local,
                                   move_slots, move_touches, move_carries};
    move_ctx_t ctx = {moves, restore_data};
    AF_CHECK(af_transfer(r, n, &ops, &ctx));
    for (int64_t i = 0; i < n; ++i) {
        af_slot_control(r, moves[i].from_slot);
        af_slot_control(r, moves[i].to_slot);
    }
    return r->s->k->ops->upload_control(r->s->k);
}

/* ---- retries ----------------------------------------------------------------------------------
 */

/* Blocks fenced this step (their status word is set in the exchange) are re-homed to a healthy
 * unit and recomputed there from the previous step's state and halos. Every rank plans the same
 * re-homing from the same tables, so no message is needed. */
af_result_t af_retry_fenced(af_recovery_t *r, int64_t *n_retried, const char **exhausted_why)
{
    *exhausted_why = NULL;
    int64_t n = 0;
    for (int64_t i = 0; i < r->halo->n_fenced; ++i) {
        int32_t b = r->halo->fenced[i];
        int32_t from = r->s->pl.block_slot[b];
        int64_t dev = af_slot_device(&r->s->pl, from);
        /* A healthy unit; with no healthy room left, another FADING unit than the one that
         * failed (with fresh injection draws). */
        int32_t to = af_coord_target_excluding(&r->s->pl, r->s->unit_state, dev, 1,
                                               af_slot_unit(&r->s->pl, from));
        if (to < 0) {
            /* None of this round's retries happens: every block stays where its data is. */
            af_coord_undo(&r->s->pl, r->moves, n);
            *exhausted_why = "no live slot is left to retry a fenced block on";
            *n_retried = 0;
            return AF_OK;
        }
        af_placement_move(&r->s->pl, (int32_t)b, to);
        r->moves[n] = (af_move_t){(int32_t)b, from, to, AF_MOVE_RETRY};
        n++;
    }
    *n_retried = n;
    if (n == 0) {
        return AF_OK;
    }
    AF_CHECK(af_apply_moves(r, r->moves, n, 0));
    for (int i = 0; i < r->s->k->n_occ; ++i) {
        r->s->k->select[r->s->k->occ[i]] = 0;
    }
    for (int64_t i = 0; i < n; ++i) {
        if (af_slot_is_local(&r->s->pl, r->moves[i].to_slot)) {
            r->s->k->select[af_local_slot(r, r->moves[i].to_slot)] = 1;
        }
    }
    AF_CHECK(r->s->k->ops->upload_control(r->s->k));
    return AF_OK;
}
