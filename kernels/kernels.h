/* agefence compute backends. A backend owns the shard: every slot's two state buffers (the
 * committed one and the one being computed), its block diagnostics, and the per-slot control
 * and result arrays. sim/ writes control arrays through the host views below and calls
 * upload_control(); the CUDA backend mirrors them in device memory, so a failure only changes
 * values, never shapes or launches.
 *
 * Slot s of the shard belongs to local device s / (units*capacity), unit (s / capacity) % units.
 * Memory: "cpu" keeps everything in host memory; "cuda" in device memory, with host views of the
 * control and result arrays. The exchange vector handed to pack() and compute() lives in the
 * kernels' memory space (device memory with cuda). Kernels compute and never communicate: what
 * crosses ranks is the driver's business (sim/), over the fabric (fabric/). */
#ifndef AF_KERNELS_H
#define AF_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/af_result.h"
#include "../common/af_rsum.h"
#include "af_workload.h"

/* Health of the unit a slot lives on, as the kernels see it. */
enum {
    AF_MODE_HEALTHY = 0, /* computed, committed, published */
    AF_MODE_FADING = 1,  /* computed with fault injection */
    AF_MODE_DEAD = 2,    /* lost: never computed, never published */
    AF_MODE_SHADOW = 3   /* DMR twin of a FADING slot's block: computed, never published; with
                            slot_p > 0 (a twin on a FADING unit) injected under the key
                            step ^ AF_TWIN_SALT */
};

/* The containment decision of a step without DMR twins: a slot's computed result is committed
 * when the slot is occupied, published (HEALTHY or FADING), every output is finite and (with
 * desc.abft) its mass balance holds. The
 * driver's containment (sim/driver/step.c) and the backends' step graphs decide by this rule. */
AF_HD uint8_t af_commit_decision(int32_t block, int mode, int32_t nonfinite, int32_t abft_fail)
{
    return (uint8_t)(block >= 0 && (mode == AF_MODE_HEALTHY || mode == AF_MODE_FADING) &&
                     nonfinite == 0 && abft_fail == 0);
}

/* The exchange vector of one step:
 * [0, 2B) the edge cells of every block (left, right) by logical id; [2B, 3B) block mass;
 * [3B, 4B) block energy; [4B, 5B) block status: bit 0 set when its owner fenced this step's
 * result (the committed state is still the previous step's), bits 1.. the number of NaN/Inf
 * values in the committed state (counted when the buffer was written; must be 0); then
 * AF_XCHG_FLAGS words of flags (af_workload.h: the stop flag, the global word). */
static inline size_t af_xchg_len(int blocks)
{
    return (size_t)5 * (size_t)blocks + AF_XCHG_FLAGS;
}

typedef struct af_shard_desc {
    int n_slots;   /* local slots: local devices x units x capacity */
    int block_len; /* T, the doubles of state per block (the workload's cells: scenario.block_len
                      for burgers, tokens x dim for attention) */
    int blocks;    /* B, blocks of the whole problem (edge array indexing) */
    int workload;  /* AF_WORKLOAD_*: the step compute() runs (0: burgers) */
    af_coeffs_t coeffs;    /* burgers */
    af_attn_params_t attn; /* attention */
    uint64_t seed;         /* fault-injection key */
    af_corrupt_mix_t mix;  /* what a corrupted element becomes, and when it is harmful */
    int abft;              /* 1: compute() takes the workload's ABFT verdict for each slot */
    int cuda_device;
    int cpu_kernel; /* AF_CPU_KERNEL_*: the cpu backend's hot loop (backend.cpu_kernel) */
    /* The state buffers a pooled backend (cpu) holds: at most this many slots hold a block's
     * state at a time, and only they have memory behind them (docs/scale.md, "Memory that
     * follows the occupied state"). 0, or n_slots or more: every slot has its own. The driver
     * passes af_shard_pool_slots(); the cuda backend keeps the full grid in device memory. */
    int pool_slots;
} af_shard_desc_t;

/* The pool a run's shard needs: a block holds state in at most two slots at any moment (its
 * own and its DMR twin's during a compute; a move's source and destination, whose source is
 * emptied when the move ends), so 2 B buffers hold whatever a rank can be given, whichever
 * units fail, and never more than the slots themselves. The driver keeps the moments apart
 * (sim/driver/step.c): it settles after the step's moves, before twins take buffers; after
 * af_dmr_end, before a retry moves a fenced block (else a fenced, twinned block would hold its
 * emptied slot, its emptied twin and the retry's destination: three); after each round's
 * retries, before their twins; and at the step's end. A break of the bound is AF_ERR_NOMEM with
 * a message, never a corruption. Rank-independent, like the capacity:
 * no scenario runs out of buffers on one number of ranks and not on another. */
static inline int af_shard_pool_slots(int64_t n_slots, int64_t blocks)
{
    int64_t two_b = 2 * blocks;
    return (int)(two_b < n_slots ? two_b : n_slots);
}

/* What a shard's desc.pool_slots gives: the entries of a pooled backend's state and the room of
 * the occupied-slot list every backend keeps (pool_slots when it is set and below n_slots, else
 * one a slot). */
static inline int af_shard_pool_cap(const af_shard_desc_t *desc)
{
    return desc->pool_slots > 0 && desc->pool_slots < desc->n_slots ? desc->pool_slots
                                                                    : desc->n_slots;
}

/* The cpu backend's masked step (kernels/kernels_cpu.c), SIMD across cells either way (the
 * widest the processor has: avx2, else the x86-64 baseline's sse2, chosen when the program
 * loads). TWO_PASS updates a block, then reads it again (from L1) for the lane-ordered
 * diagnostics and the non-finite count; FUSED does all three in one pass (blocks of a multiple
 * of 4 cells, at least 8; others take two passes). Both give the same bits. AUTO is TWO_PASS,
 * the faster on the machines measured (README "Performance"). */
enum { AF_CPU_KERNEL_AUTO = 0, AF_CPU_KERNEL_TWO_PASS = 1, AF_CPU_KERNEL_FUSED = 2 };

typedef struct af_kernels af_kernels_t;

/* The all-reduce a step graph runs inside itself: the exact max all-reduce of bit patterns of
 * the driver's device fabric (nccl), handed over as two calls so that the kernels never see a
 * fabric (kernels compute; the driver communicates). */
typedef struct af_graph_reduce {
    const char *name; /* the fabric's name, for messages */
    /* Reduces buf (n words, device memory) in place now, blocking: the warm-up before the
     * capture. Collective over the ranks. */
    af_result_t (*run)(void *ctx, uint64_t *buf, size_t n);
    /* The same, enqueued on `stream` (a cudaStream_t) without waiting, for capture into a CUDA
     * graph; NULL when the fabric cannot be captured. */
    af_result_t (*enqueue)(void *ctx, uint64_t *buf, size_t n, void *stream);
    void *ctx;
} af_graph_reduce_t;

/* The buffers of the step graph (graph_prepare, graph_run). */
typedef struct af_graph_io {
    const uint64_t *xchg_in; /* the exchange the compute reads, in the kernels' memory space */
    uint64_t *xchg_out;      /* where the step packs its exchange (same space), xlen words */
    size_t xlen;             /* af_xchg_len(blocks): the graph carries no tail words */
    /* A device all-reduce (nccl): the graph reduces xchg_out in place on the device. NULL: the
     * driver reduces host_out itself afterwards. */
    const af_graph_reduce_t *reduce;
    uint64_t *host_out; /* host memory, xlen words: xchg_out as the step left it */
} af_graph_io_t;

/* What the fused step (ops->step) hands back besides the per-slot arrays: the exchange's
 * figures of the published slots, which the halo then completes across ranks, and the slots
 * whose containment the driver still has to count. The caller owns the arrays. */
typedef struct af_step_out {
    af_rsum_t mass;   /* exact sum of the published slots' committed mass (diagnostic 0) */
    af_rsum_t energy; /* the same of their energy (diagnostic 1) */
    int64_t leaked;   /* NaN/Inf values in the published slots' committed state */
    int32_t *pub;     /* in: room for pub_cap blocks; out: the published slots' blocks, n_pub */
    int64_t pub_cap;
    int64_t n_pub;
    int32_t *fenced; /* out: the blocks of published slots whose result was not committed */
    int64_t n_fenced;
    /* out: the live (HEALTHY or FADING) slots the driver's containment must look at: those
     * with a corruption injected, a non-finite output or an ABFT failure, and every FADING one
     * (DMR's promise of a twin). Room for pub_cap. For any other live slot the driver's
     * containment rule commits and counts nothing. */
    int32_t *notable;
    int64_t n_notable;
    uint8_t *committed; /* in: n_slots bytes; out: each occupied slot's commit[] decision */
} af_step_out_t;

/* compute() flags. */
enum {
    AF_COMPUTE_UNMASKED = 1, /* benchmark only: every slot computed, no containment count */
    AF_COMPUTE_SELECTED = 2  /* only slots whose select[] is 1 (within-step retries) */
};

/* The contract both backends keep on what the buffers hold, and where their bits may differ
 * (tests/test_cuda.c holds them to it; `test_cuda fixtures` checks, without a GPU, that its
 * fixtures reach each case).
 *
 * An empty slot (slot_block -1) under each compute mode:
 *   - masked (flags 0) and AF_COMPUTE_SELECTED: not computed, and neither is a DEAD slot. Its
 *     buffers keep what was last written to them (a pooled backend may have given them back to
 *     its pool: then the slot has no memory at all, and a read of it is an error), and its
 *     results are 0.
 *   - AF_COMPUTE_UNMASKED (the benchmarks' reference for the masking's cost): every slot that
 *     has memory behind it is computed, whatever its block and mode, an empty one with block
 *     0's read-set, without injection; nonfinite, injected, harmful and abft stay 0. The cuda
 *     backend has memory behind every slot of the grid; the cpu backend behind every slot
 *     without a pool, and behind the slots holding a pool entry with one. Where both computed
 *     a slot, the computed buffers are the same bits.
 *   - commit(): flips the occupied slots whose commit[] is 1. The caller leaves commit[] 0 on
 *     an empty slot (af_kernels_set_block zeroes it when the slot empties, and
 *     af_commit_decision never sets it); what a 1 there does is not promised (the cpu backend
 *     visits the occupied slots only, the cuda backend flips the slot's parity).
 *
 * NaNs: a NaN that arithmetic produces, on an injected NaN or Inf among others, has no promised
 * sign or payload: x86 gives the negative default NaN or an operand's payload, a GPU the
 * positive canonical NaN. A NaN that af_inject writes is a bit pattern, the same on both. A
 * computed NaN lives only in a buffer that is never committed (a slot with a non-finite output
 * is fenced), so committed buffers, edge cells, status words and result counts are the same bits
 * on both backends; in a computed (next) buffer and in a diagnostic word (a sum of finite values
 * that overflowed, inf - inf), two NaNs compare equal. */

typedef struct af_kernels_ops {
    const char *name;
    /* Allocates the whole shard (both buffers of every slot, diagnostics, control and result
     * arrays). Called once at start-up; nothing else allocates. */
    af_result_t (*create)(const af_shard_desc_t *desc, af_kernels_t **out);
    void (*destroy)(af_kernels_t *k);
    /* The host memory create() (and graph_prepare()) will allocate for desc's shard, in bytes
     * (device memory aside): what the driver budgets before start-up (sim/driver/memory.c). */
    size_t (*host_bytes)(const af_shard_desc_t *desc);
    /* Copies the control host views (slot_block, slot_mode, slot_p, commit) to where the
     * kernels read them. Asynchronous on CUDA (stream-ordered). */
    af_result_t (*upload_control)(af_kernels_t *k);
    /* Writes T host doubles into the committed buffer of a slot and refreshes its diagnostics.
     * Blocking. Start-up and tests only. */
    af_result_t (*write_slot)(af_kernels_t *k, int slot, const double *host);
    /* Reads the committed buffer of a slot into T host doubles. Blocking. */
    af_result_t (*read_slot)(af_kernels_t *k, int slot, double *host);
    /* Writes the edge cells, mass and energy of every occupied, published (HEALTHY or FADING)
     * slot into xchg at its logical block's place, and its status word (bit 0: commit[] is 0,
     * the step's result was fenced; bits 1..: non-finite values in the committed buffer);
     * every other entry of xchg is zeroed (flags too). */
    af_result_t (*pack)(af_kernels_t *k, uint64_t *xchg);
    /* As pack, but the entries of blocks not published by this shard (and the flags) are left
     * as they were: what the driver's neighbour halo needs, whose cost then follows the
     * shard's slots, not the fleet's blocks. NULL when the backend has only pack. */
    af_result_t (*pack_owned)(af_kernels_t *k, uint64_t *xchg);
    /* The workload's masked step (desc.workload) over the full static grid: every occupied,
     * non-dead slot reads its committed buffer and its read-set from xchg (af_wl_read_set: the
     * neighbours' edges for burgers, the global word for attention) and writes the other buffer;
     * HEALTHY and FADING slots with slot_p > 0 get fault injection (desc.mix) keyed by (seed,
     * step, block, element), SHADOW slots with slot_p > 0 by (seed, step ^ AF_TWIN_SALT, block,
     * element); per-slot counts of non-finite outputs, injected corruptions and harmful ones,
     * and with desc.abft the workload's ABFT verdict (burgers: the mass balance; attention:
     * every softmax row sums to 1, every output lies in [-1, 1] and every row's output
     * checksum holds), go to the result arrays. Nothing is committed. */
    af_result_t (*compute)(af_kernels_t *k, uint64_t step, const uint64_t *xchg, int flags);
    /* Makes the result arrays (nonfinite, injected) readable through the host views. Blocking. */
    af_result_t (*download_results)(af_kernels_t *k);
    /* Commits the computed buffer of every slot whose commit[] is 1 (a parity flip: no copy). */
    af_result_t (*commit)(af_kernels_t *k);
    /* Copies the committed buffer and diagnostics of slot src into slot dst (same shard). */
    af_result_t (*copy_slot)(af_kernels_t *k, int src, int dst);
    /* Address of a slot's committed buffer, T doubles, in the kernels' memory space: the
     * source or destination of a cross-rank move the driver hands to its fabric. A pooled
     * backend gives a slot with no buffer one first (the destination's); NULL, with the error
     * set, when its pool has none left. */
    double *(*slot_data)(af_kernels_t *k, int slot);
    /* Reads / overwrites the computed (not yet committed) buffer of a slot: DMR compares a
     * FADING slot's result with its healthy twin's and adopts the twin's on a mismatch.
     * Blocking. write_next refreshes that buffer's diagnostics. */
    af_result_t (*read_next)(af_kernels_t *k, int slot, double *host);
    af_result_t (*write_next)(af_kernels_t *k, int slot, const double *host);
    /* Recomputes a slot's diagnostics after its committed buffer was written from outside. */
    af_result_t (*refresh_slot)(af_kernels_t *k, int slot);
    /* Overwrites both buffers of a slot with a NaN pattern: what a dead unit's memory holds. */
    af_result_t (*poison_slot)(af_kernels_t *k, int slot);
    /* Waits for everything enqueued. */
    af_result_t (*sync)(af_kernels_t *k);
    /* Prepares graph_run() for io's device buffers and fabric (host_out may change between
     * runs). The CUDA backend captures the whole steady-state step on its stream as one CUDA
     * graph and instantiates it, once (graph_instantiations); the CPU backend checks io and
     * has nothing to prepare. Start-up only: it may allocate; with io->reduce it is collective
     * (a warm-up all-reduce). */
    af_result_t (*graph_prepare)(af_kernels_t *k, const af_graph_io_t *io);
    /* One steady-state step, after the control arrays were uploaded: compute() of every slot
     * with injection key `step` reading io->xchg_in; the containment decision on the backend's
     * side (af_commit_decision, into commit[]); commit(); pack() into io->xchg_out followed by
     * the AF_XCHG_FLAGS host words `flags`; io->reduce's all-reduce of io->xchg_out when set;
     * then the results, the commit[] host view and io->host_out. Blocking. Counts
     * graph_launches. */
    af_result_t (*graph_run)(af_kernels_t *k, const af_graph_io_t *io, uint64_t step,
                             const uint64_t *flags);
    /* The eager step of a step without DMR twins, in one pass over each occupied slot's block
     * (NULL where the backend has none: the driver then calls compute, commit and pack_owned):
     * compute() with injection key `step` reading xchg_in; the containment rule
     * (af_commit_decision) into commit[] and out->committed[]; the commit; the entries of every
     * published slot into xchg_out (as pack_owned); and out's figures and lists. The same bits
     * as those calls in sequence (tests/test_kernels.c). Blocking. */
    af_result_t (*step)(af_kernels_t *k, uint64_t step, const uint64_t *xchg_in, uint64_t *xchg_out,
                        af_step_out_t *out);
    /* A pooled backend's pool (NULL where every slot has its own buffers). release_slot notes
     * that a slot was set empty (af_kernels_set_block calls it); its buffers still hold its
     * state, which a move may yet copy out. settle gives back to the pool the buffers of every
     * slot so noted that is still empty (the next write to such a slot takes a buffer again):
     * the driver calls it once a step's moves are applied, before twins take buffers, and at
     * the step's end. Neither allocates. */
    void (*release_slot)(af_kernels_t *k, int slot);
    void (*settle)(af_kernels_t *k);
} af_kernels_ops_t;

struct af_kernels {
    const af_kernels_ops_t *ops;
    af_shard_desc_t desc;
    /* Control, written by sim/ then upload_control(). */
    int32_t *slot_block; /* logical block of each slot, -1 when empty */
    uint8_t *slot_mode;  /* AF_MODE_* of the slot's unit */
    double *slot_p;      /* corruption probability per element (FADING units, silent units) */
    uint8_t *commit;     /* 1: commit this slot's computed buffer */
    uint8_t *select;     /* 1: compute this slot under AF_COMPUTE_SELECTED */
    /* Results, valid after download_results(). */
    int32_t *nonfinite; /* non-finite outputs of the last compute */
    int32_t *injected;  /* corruptions injected by the last compute */
    int32_t *harmful;   /* of which harmful: non-finite, or a relative error above mix.harm_rel */
    int32_t *abft;      /* 1: the computed buffer failed the workload's ABFT (desc.abft; else 0) */
    /* The occupied slots (slot_block >= 0), in no particular order, kept by
     * af_kernels_set_block(): the CPU backend's passes and the driver's host passes visit
     * these, so their cost follows the shard's blocks, not its static grid of slots.
     * occ_pos[s] is slot s's index in occ[], -1 when the slot is empty. Host memory. occ[]
     * holds occ_cap entries, the bound desc.pool_slots gives (a block is in at most two slots at
     * a time) when it is set and below n_slots, else one a slot; a slot occupied past it is not
     * listed and occ_overflow says so (the driver fails the step: af_kernels_occ_ok). */
    int32_t *occ;
    int32_t *occ_pos;
    int32_t n_occ;
    int32_t occ_cap;
    int32_t occ_overflow;
    /* A pooled backend's buffers (desc.pool_slots): how many there are (0: none, every slot
     * has its own) and how many slots hold one now. */
    int32_t pool_cap;
    int32_t pool_used;
    size_t bytes;     /* bytes the backend allocated for the shard */
    const char *path; /* what the hot loop runs ("avx2, streaming stores", "scalar", "cuda") */
    int64_t graph_instantiations; /* CUDA graphs instantiated (graph_prepare) */
    int64_t graph_launches;       /* graph_run calls */
    void *impl;
};

extern const af_kernels_ops_t af_kernels_cpu;
/* The last-level cache of this machine in bytes (sysfs, else sysconf; 32 MiB when neither
 * says): the kernel benchmark sizes its STREAM arrays from it. */
size_t af_cpu_llc_bytes(void);
/* The multiply-add peak the cpu backend's vectors can reach, for the kernel benchmark:
 * AF_CPU_PEAK_CHAINS independent chains of acc = acc * m + c on four-double vectors (a multiply
 * and an add, no FMA, built like the hot loops: avx2 or the baseline, chosen when the program
 * loads), `iters` times each, with m = AF_CPU_PEAK_M and c = AF_CPU_PEAK_C, chain i starting
 * at 1 + i / 16 in every lane (the values approach c / (1 - m) = 1.5: never subnormal, never
 * large). Writes the chains' final values, AF_CPU_PEAK_CHAINS x 4 doubles, to out (so nothing
 * is optimised away, and the caller can check them) and returns the flops executed: 2 per
 * multiply-add per lane. */
#define AF_CPU_PEAK_CHAINS 12
#define AF_CPU_PEAK_M      0.99951171875  /* 1 - 2^-11 */
#define AF_CPU_PEAK_C      0.000732421875 /* 1.5 x 2^-11 */
double af_cpu_muladd_peak(int64_t iters, double *out);
/* NULL when built without CUDA. */
extern const af_kernels_ops_t *const af_kernels_cuda;

/* The number of GPUs this process sees: 0 when built without CUDA, and 0 when CUDA reports
 * an error (no driver, no device); never fails. */
int af_cuda_visible_devices(void);

/* "CUDA runtime X, driver Y, NCCL Z", or a note that the build has no CUDA (for the logs). */
const char *af_device_versions(void);

/* Device memory on the current GPU for buffers the driver hands to the cuda kernels and the
 * nccl fabric alike (the exchange vector), and blocking copies between it and host memory that
 * come after all work enqueued on the device before them. Counted by af_alloc_note_external.
 * AF_ERR_UNSUPPORTED when built without CUDA. */
af_result_t af_cuda_alloc(void **out, size_t bytes);
void af_cuda_free(void *p);
af_result_t af_cuda_copy_to_host(void *host, const void *dev, size_t bytes);
af_result_t af_cuda_copy_to_device(void *dev, const void *host, size_t bytes);
/* A device-to-device copy ordered after everything enqueued on the device's blocking streams
 * before it and before everything enqueued after it; does not wait. */
af_result_t af_cuda_copy_on_device(void *dst, const void *src, size_t bytes);

void af_kernels_destroy(af_kernels_t **k);

/* The occupied-slot list every backend keeps beside its control arrays. occ_alloc allocates
 * occ[] and occ_pos[] for desc->n_slots slots, all empty (create() calls it after allocating
 * slot_block, and sets every slot_block to -1); occ_free releases them; occ_bytes is what
 * occ_alloc allocates, for host_bytes(). */
af_result_t af_kernels_occ_alloc(af_kernels_t *k);
/* AF_OK, or AF_ERR_INTERNAL with a message when a slot was occupied past occ_cap. */
af_result_t af_kernels_occ_ok(const af_kernels_t *k);
void af_kernels_occ_free(af_kernels_t *k);
size_t af_kernels_occ_bytes(const af_shard_desc_t *desc);

/* Sets slot s's block (-1: empty) in the slot_block host view and keeps the occupied list in
 * step. A slot that empties gets zero results (nonfinite, injected, harmful) and zero
 * commit[] and select[], as a masked compute leaves them, and a pooled backend's buffers go
 * back to its pool at the next af_kernels_settle (ops->release_slot). Every write of
 * slot_block goes through here; upload_control() still publishes it. O(1), never allocates. */
void af_kernels_set_block(af_kernels_t *k, int s, int32_t block);
/* ops->settle where the backend has a pool; nothing otherwise. */
void af_kernels_settle(af_kernels_t *k);

/* The host arithmetic the CPU backend and the workload table (the reference, the replay of a
 * lost block) share, kernels/arith_cpu.c. The diagnostics of T values. */
void af_block_diag(const double *u, int len, double *mass, double *energy);
/* One step of one block on the host, exactly as every backend computes it: un[i] from u[i-1],
 * u[i], u[i+1] (af_burgers_cell), with ul and ur the neighbours' edge cells. The driver
 * replays a lost block from its replica with it. */
void af_block_update(const double *u, double *un, int len, double ul, double ur, af_coeffs_t k);
/* One attention block's step on the host without injection, exactly as every backend computes
 * it, on the CPU backend's vector path where the tokens are a multiple of 8 (af_attn_block,
 * row by row, otherwise); *abft_ok as af_attn_block's. The driver replays a lost attention
 * block with it (the workload table's block_update); the serial reference keeps the row by row
 * af_attn_block, so the bitwise verdict compares the vector path with code it does not share. */
void af_attn_block_update(const double *u, double *un, const af_attn_params_t *p, double g,
                          int *abft_ok);
/* One attention block's step on the host without injection; *abft_ok is 1 when every softmax
 * row summed to 1 within its bound. Row by row (af_attn_row): the serial reference, the check of
 * the CPU backend's vector path (af_attn_block_update) in tests and benchmarks. */
void af_attn_block(const double *u, double *un, const af_attn_params_t *p, double g, int *abft_ok);

#endif
