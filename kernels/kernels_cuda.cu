/* agefence CUDA compute backend: the same masked step as kernels_cpu.c, bit for bit, on one GPU.
 *
 * Longer than ~900 lines, on purpose: the device layout below, the kernels that read it and the
 * host side of every backend operation share the one private state struct; nvcc compiles it as
 * one translation unit, with the device functions inlined where they are used.
 *
 * Layout (all allocated in create(), never again):
 *   state    device, n_slots x 2 x T doubles: both buffers of every slot, as on the CPU
 *   diag     device, n_slots x 2 x 3 doubles: (mass, energy, non-finite count) of each buffer
 *   parity   device, n_slots bytes: which buffer of a slot is committed; a host mirror is kept
 *            in step with it by commit(), so slot_data() answers without a synchronisation
 *   control  device, one region: slot_p (f64) | slot_block (i32) | slot_mode (u8) | commit (u8)
 *            | select (u8), filled by upload_control() from a pinned staging copy of the host
 *            views; pack() and compute() read this mirror, so the host views must be uploaded
 *            after they change
 *   results  device, one region: nonfinite | injected | harmful | abft (i32 each), copied back into
 * a pinned host region by download_results(); the host views point into it
 *
 *   graph    the steady-state step (graph_prepare): captured once on the stream and
 *            instantiated once; its per-step inputs are read at launch from pinned host words
 *            (h_key: injection key, h_flags: exchange flag words) and its outputs copied into
 *            pinned host areas (h_results, h_commit, h_xout)
 *
 * Every launch and copy is enqueued on the backend's own stream (a blocking stream, so work on
 * the legacy default stream, e.g. a plain cudaMemcpy, is ordered after it). Only the members
 * whose contract says "blocking" synchronise: write_slot, read_slot, read_next, write_next,
 * download_results, sync.
 *
 * Bitwise agreement with the CPU backend rests on three things: the per-cell update, the
 * injection hash and the containment test come from kernels/af_burgers.h; nvcc runs with
 * -fmad=false; and the block diagnostics accumulate in the CPU's order (lane l of the warp that
 * owns a slot sums elements l, l+32, ... in increasing order, then a __shfl_xor_sync butterfly
 * with offsets 16..1 reproduces af_lane_tree). */
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdio.h>
#include <string.h>

extern "C" {
#include "kernels.h"
#include "../common/af_cuda_check.h"
#include "../common/af_alloc.h"
}

/* common/af_alloc.c counts device bytes too (af_alloc_note_external and its _free), so a run's
 * leak check at exit covers the GPU shard. */
static void note_free(size_t bytes)
{
    if (bytes > 0) {
        af_alloc_note_external_free(bytes);
    }
}

/* Threads per block of the slot kernels: 8 warps, one slot each. */
#define AF_CUDA_BLOCK       256
#define AF_CUDA_SLOTS_BLOCK (AF_CUDA_BLOCK / AF_LANES)
/* Rows of 32 cells a lane loads before it computes any: independent loads in flight. */
#define AF_CUDA_UNROLL 4
#define AF_FULL_MASK   0xffffffffU

/* After a kernel launch: a bad configuration shows up here, not at the next synchronisation. */
#define AF_CUDA_LAUNCHED(name) AF_CUDA_CHECK(af_cuda_launched(name))

static cudaError_t af_cuda_launched(const char *name)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        af_error_set("CUDA: launch of %s failed: %s", name, cudaGetErrorString(e));
    }
    return e;
}

typedef struct af_cuda {
    int device;
    cudaStream_t stream;
    cudaEvent_t staged; /* recorded after the last control upload's copy left the staging area */
    double *state;
    double *diag;
    uint8_t *parity;
    unsigned char *control;   /* device control region, control_bytes */
    unsigned char *results;   /* device results region, results_bytes */
    unsigned char *h_stage;   /* pinned staging copy of the control host views */
    unsigned char *h_results; /* pinned; nonfinite/injected/harmful/abft point into it */
    uint8_t *h_parity;        /* host mirror of parity */
    size_t control_bytes;
    size_t results_bytes;
    /* The step graph (graph_prepare, graph_run). */
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    uint64_t *d_key;        /* device word the graph's compute reads its injection key from */
    uint64_t *h_key;        /* pinned: graph_run writes the key here, the graph copies it */
    uint64_t *h_flags;      /* pinned: AF_XCHG_FLAGS words the graph appends to its pack */
    uint8_t *h_commit;      /* pinned: the graph's containment decisions */
    uint64_t *h_xout;       /* pinned: the graph's exchange, xlen words */
    af_graph_io_t graph_io; /* the buffers and fabric captured */
    size_t noted;           /* bytes noted with af_alloc_note_external, released in destroy */
} af_cuda_t;

/* Views of the control and results regions, in the order described at the top. */
typedef struct af_cuda_ctl {
    const double *slot_p;
    const int32_t *slot_block;
    const uint8_t *slot_mode;
    const uint8_t *commit;
    const uint8_t *select;
} af_cuda_ctl_t;

typedef struct af_cuda_res {
    int32_t *nonfinite;
    int32_t *injected;
    int32_t *harmful;
    int32_t *abft;
} af_cuda_res_t;

static size_t ctl_bytes(size_t n)
{
    return n * (sizeof(double) + sizeof(int32_t) + 3);
}

static af_cuda_ctl_t ctl_view(const unsigned char *base, size_t n)
{
    af_cuda_ctl_t c;
    c.slot_p = (const double *)base;
    c.slot_block = (const int32_t *)(base + n * sizeof(double));
    c.slot_mode = base + n * (sizeof(double) + sizeof(int32_t));
    c.commit = c.slot_mode + n;
    c.select = c.commit + n;
    return c;
}

static af_cuda_res_t res_view(unsigned char *base, size_t n)
{
    af_cuda_res_t r;
    r.nonfinite = (int32_t *)base;
    r.injected = r.nonfinite + n;
    r.harmful = r.injected + n;
    r.abft = r.harmful + n;
    return r;
}

static unsigned int slot_grid(int n_slots)
{
    return (unsigned int)((n_slots + AF_CUDA_SLOTS_BLOCK - 1) / AF_CUDA_SLOTS_BLOCK);
}

/* ---- kernels ------------------------------------------------------------------------------- */

/* The warp butterfly that reproduces af_lane_tree: at offset o, lane l adds lane l^o's
 * partial. For the lane with bit o clear this is partial[l] + partial[l+o], the CPU's order;
 * the other lane computes the same sum with the operands swapped, which IEEE 754 addition
 * gives the same bits for. Every lane ends with the tree's result. */
__device__ __forceinline__ double warp_lane_tree(double x)
{
    for (int o = AF_LANES / 2; o >= 1; o /= 2) {
        x += __shfl_xor_sync(AF_FULL_MASK, x, o);
    }
    return x;
}

/* Diagnostics of T values, one warp: mass and energy in af_block_diag's order exactly, and
 * the number of NaN/Inf values (kernels_cpu.c's cpu_fill_diag). */
__device__ void warp_block_diag(const double *__restrict__ u, int T, int lane, double *d)
{
    double pm = 0.0;
    double pe = 0.0;
    int nonfinite = 0;
    for (int base = 0; base < T; base += AF_LANES) { /* warp-uniform bounds: the ballot is safe */
        const int i = base + lane;
        const bool in = i < T;
        const double v = in ? u[i] : 0.0;
        if (in) {
            pm += v;
            pe += 0.5 * v * v;
        }
        nonfinite += __popc(__ballot_sync(AF_FULL_MASK, in && af_nonfinite(v)));
    }
    const double mass = warp_lane_tree(pm);
    const double energy = warp_lane_tree(pe);
    if (lane == 0) {
        d[0] = mass;
        d[1] = energy;
        d[2] = (double)nonfinite;
    }
}

typedef struct step_args {
    double *state;
    double *diag;
    const uint8_t *parity;
    af_cuda_ctl_t ctl;
    af_cuda_res_t res;
    const uint64_t *xchg;
    int n_slots;
    int T;
    int B;
    af_coeffs_t coeffs;
    uint64_t seed;
    af_corrupt_mix_t mix;
    int abft;              /* desc.abft: abft_kernel checks each computed slot's mass balance */
    int workload;          /* desc.workload */
    af_attn_params_t attn; /* desc.attn */
    uint64_t step;
    const uint64_t *step_dev; /* when set, the key is read here instead (the step graph) */
    int selected;             /* AF_COMPUTE_SELECTED: only slots whose select[] is set */
} step_args_t;

/* The masked Burgers step (kMasked) or its benchmark twin (every slot computed, no containment
 * count, though the buffer's non-finite count is kept in its diagnostics as on the CPU). One
 * warp per slot, AF_CUDA_SLOTS_BLOCK slots per block. In a retry round (selected) a slot whose
 * select[] is 0 is left alone, result counters included. A masked-out slot (empty, or on a DEAD
 * unit) only has its result counters zeroed and writes nothing else.
 * A computed slot reads its committed buffer and its neighbours' edges from xchg, writes the
 * other buffer, counts its non-finite outputs (warp ballot) and stores the new buffer's
 * diagnostics. Lane l handles cells l, l+32, ... in increasing order, which is also the order
 * its diagnostic partials need. Fault injection is not here but in inject_kernel, launched
 * after it: with the injection path compiled in, this kernel needed 59 registers instead of 48
 * on sm_90 (ptxas), which cuts the warps resident per SM from 40 to 32 for every slot, while
 * only the corrupting slots (FADING, silent) and their twins inject. */
template <bool kMasked> __global__ void __launch_bounds__(AF_CUDA_BLOCK) step_kernel(step_args_t a)
{
    const int lane = (int)(threadIdx.x % AF_LANES);
    const int s = (int)(blockIdx.x * AF_CUDA_SLOTS_BLOCK + threadIdx.x / AF_LANES);
    if (s >= a.n_slots) {
        return; /* the whole warp: s is warp-uniform */
    }
    if (a.selected && a.ctl.select[s] == 0) {
        return;
    }
    int b = a.ctl.slot_block[s];
    const int mode = a.ctl.slot_mode[s];
    if (lane == 0) {
        a.res.nonfinite[s] = 0;
        a.res.injected[s] = 0;
        a.res.harmful[s] = 0;
        a.res.abft[s] = 0;
    }
    if (kMasked && (b < 0 || mode == AF_MODE_DEAD)) {
        return; /* empty or lost: masked out, nothing written */
    }
    if (b < 0) {
        b = 0; /* unmasked benchmark variant: empty slots compute with block 0's halo */
    }
    const int T = a.T;
    const int B = a.B;
    const int p = a.parity[s];
    const double *__restrict__ u = a.state + ((size_t)s * 2 + (size_t)p) * (size_t)T;
    double *__restrict__ un = a.state + ((size_t)s * 2 + (size_t)(p ^ 1)) * (size_t)T;
    const int left = (b + B - 1) % B;
    const int right = (b + 1) % B;
    const double ul = af_double(a.xchg[2 * (size_t)left + 1]);
    const double ur = af_double(a.xchg[2 * (size_t)right]);
    const af_coeffs_t kc = a.coeffs;

    double pm = 0.0;
    double pe = 0.0;
    int nonfinite = 0;
    for (int base = 0; base < T; base += AF_LANES * AF_CUDA_UNROLL) {
        double c[AF_CUDA_UNROLL];
        double l[AF_CUDA_UNROLL];
        double r[AF_CUDA_UNROLL];
#pragma unroll
        for (int j = 0; j < AF_CUDA_UNROLL; ++j) {
            const int i = base + j * AF_LANES + lane;
            c[j] = 0.0;
            l[j] = 0.0;
            r[j] = 0.0;
            if (i < T) {
                c[j] = u[i];
                l[j] = i > 0 ? u[i - 1] : ul;
                r[j] = i + 1 < T ? u[i + 1] : ur;
            }
        }
#pragma unroll
        for (int j = 0; j < AF_CUDA_UNROLL; ++j) {
            const int i = base + j * AF_LANES + lane;
            const bool in = i < T;
            double v = 0.0;
            if (in) {
                v = af_burgers_cell(l[j], c[j], r[j], kc);
                un[i] = v;
                pm += v;
                pe += 0.5 * v * v;
            }
            /* The loop bounds are warp-uniform, so every lane reaches the ballot. */
            nonfinite += __popc(__ballot_sync(AF_FULL_MASK, in && af_nonfinite(v)));
        }
    }
    const double mass = warp_lane_tree(pm);
    const double energy = warp_lane_tree(pe);
    if (lane == 0) {
        double *d = a.diag + ((size_t)s * 2 + (size_t)(p ^ 1)) * 3;
        d[0] = mass;
        d[1] = energy;
        d[2] = (double)nonfinite;
        if (kMasked) {
            a.res.nonfinite[s] = nonfinite;
        }
    }
}

/* Fault injection after step_kernel<true>, on the slots that inject: occupied HEALTHY (silent
 * units) and FADING slots with slot_p > 0, keyed by the step, and SHADOW twins with slot_p > 0,
 * keyed by step ^ AF_TWIN_SALT (in a retry
 * round only the selected ones). One warp per slot, every other warp leaves at once. A slot's
 * computed buffer gets af_inject() cell by cell, as on the CPU; then warp_block_diag() gives
 * the injected buffer's diagnostics and non-finite count in the lane order of the CPU's
 * af_block_diag(), so they are bitwise the CPU's. */
__global__ void __launch_bounds__(AF_CUDA_BLOCK) inject_kernel(step_args_t a)
{
    const int lane = (int)(threadIdx.x % AF_LANES);
    const int s = (int)(blockIdx.x * AF_CUDA_SLOTS_BLOCK + threadIdx.x / AF_LANES);
    if (s >= a.n_slots || (a.selected && a.ctl.select[s] == 0)) {
        return; /* the whole warp: s is warp-uniform */
    }
    const int b = a.ctl.slot_block[s];
    const int mode = a.ctl.slot_mode[s];
    const double prob = a.ctl.slot_p[s];
    if (b < 0 || mode == AF_MODE_DEAD || !(prob > 0.0)) {
        return;
    }
    const int T = a.T;
    const int p = a.parity[s];
    double *un = a.state + ((size_t)s * 2 + (size_t)(p ^ 1)) * (size_t)T;
    const uint64_t step = a.step_dev != NULL ? *a.step_dev : a.step;
    const uint64_t key = mode == AF_MODE_SHADOW ? step ^ AF_TWIN_SALT : step;
    int injected = 0;
    int harmful = 0;
    for (int base = 0; base < T; base += AF_LANES) { /* warp-uniform bounds: the ballots are safe */
        const int i = base + lane;
        int kind = AF_CORRUPT_NONE;
        int harm = 0;
        if (i < T) {
            un[i] =
                af_inject(un[i], prob, a.seed, key, (uint64_t)b, (uint64_t)i, a.mix, &kind, &harm);
        }
        injected += __popc(__ballot_sync(AF_FULL_MASK, kind != AF_CORRUPT_NONE));
        harmful += __popc(__ballot_sync(AF_FULL_MASK, harm != 0));
    }
    double *d = a.diag + ((size_t)s * 2 + (size_t)(p ^ 1)) * 3;
    warp_block_diag(un, T, lane, d);
    if (lane == 0) {
        a.res.nonfinite[s] = (int32_t)d[2];
        a.res.injected[s] = injected;
        a.res.harmful[s] = harmful;
    }
}

/* The masked-attention step (desc.workload = attention), masked (kMasked) or its benchmark
 * twin. One warp per slot; lane l computes the rows (tokens) l, l + 32, ... with af_attn_row,
 * the CPU's arithmetic operation for operation (each row's scratch of scores in the thread's
 * local memory), injection included: a slot that injects (slot_p > 0: FADING, silent, and
 * SHADOW twins keyed by step ^ AF_TWIN_SALT) corrupts its softmax weights and outputs inside
 * the row, as the CPU's scalar path does. Then the warp sums the counts, and warp_block_diag
 * gives the new buffer's diagnostics in the CPU's lane order; the ABFT verdict (every row sums
 * to 1, every output in [-1, 1], every row's output checksum holds) needs every lane's. */
template <bool kMasked> __global__ void __launch_bounds__(AF_CUDA_BLOCK) attn_kernel(step_args_t a)
{
    const int lane = (int)(threadIdx.x % AF_LANES);
    const int s = (int)(blockIdx.x * AF_CUDA_SLOTS_BLOCK + threadIdx.x / AF_LANES);
    if (s >= a.n_slots) {
        return; /* the whole warp: s is warp-uniform */
    }
    if (a.selected && a.ctl.select[s] == 0) {
        return;
    }
    int b = a.ctl.slot_block[s];
    const int mode = a.ctl.slot_mode[s];
    if (lane == 0) {
        a.res.nonfinite[s] = 0;
        a.res.injected[s] = 0;
        a.res.harmful[s] = 0;
        a.res.abft[s] = 0;
    }
    if (kMasked && (b < 0 || mode == AF_MODE_DEAD)) {
        return;
    }
    if (b < 0) {
        b = 0;
    }
    const int T = a.T;
    const int p = a.parity[s];
    const double *u = a.state + ((size_t)s * 2 + (size_t)p) * (size_t)T;
    double *un = a.state + ((size_t)s * 2 + (size_t)(p ^ 1)) * (size_t)T;
    size_t i0 = 0;
    size_t i1 = 0;
    af_wl_read_set(AF_WORKLOAD_ATTENTION, a.B, b, &i0, &i1);
    const double g = af_double(a.xchg[i0]);
    const double prob = kMasked ? a.ctl.slot_p[s] : 0.0;
    const uint64_t step = a.step_dev != NULL ? *a.step_dev : a.step;
    const uint64_t key = mode == AF_MODE_SHADOW ? step ^ AF_TWIN_SALT : step;
    double srow[AF_ATTN_MAX_TOKENS];
    int injected = 0;
    int harmful = 0;
    int ok = 1;
    for (int i = lane; i < a.attn.tokens; i += AF_LANES) {
        int ri = 0;
        int rh = 0;
        int row_ok = 1;
        af_attn_row(u, un, i, g, a.attn, prob > 0.0 ? prob : 0.0, a.seed, key, (uint64_t)b, a.mix,
                    srow, &ri, &rh, &row_ok);
        injected += ri;
        harmful += rh;
        ok &= row_ok;
    }
    for (int o = AF_LANES / 2; o >= 1; o /= 2) {
        injected += __shfl_xor_sync(AF_FULL_MASK, injected, o);
        harmful += __shfl_xor_sync(AF_FULL_MASK, harmful, o);
    }
    const int all_ok = __all_sync(AF_FULL_MASK, ok);
    __syncwarp(); /* every lane's rows written before the warp reads the buffer */
    double *d = a.diag + ((size_t)s * 2 + (size_t)(p ^ 1)) * 3;
    warp_block_diag(un, T, lane, d);
    if (kMasked && lane == 0) {
        a.res.nonfinite[s] = (int32_t)d[2];
        a.res.injected[s] = injected;
        a.res.harmful[s] = harmful;
        a.res.abft[s] = a.abft ? !all_ok : 0;
    }
}

/* The mass balance (desc.abft) of every computed slot, after step_kernel<true> and
 * inject_kernel, from the diagnostics both buffers already have (the committed one and the
 * computed one, injected or not) and the committed buffer's two end cells: af_abft_consistent,
 * the CPU's check. In its own kernel, not in step_kernel, so the step's register count stays
 * where the injection's split left it. One thread per slot; a masked-out slot keeps the 0
 * step_kernel gave it, and in a retry round an unselected one keeps its result. */
__global__ void abft_kernel(step_args_t a)
{
    const int s = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= a.n_slots || (a.selected && a.ctl.select[s] == 0)) {
        return;
    }
    const int b = a.ctl.slot_block[s];
    if (b < 0 || a.ctl.slot_mode[s] == AF_MODE_DEAD) {
        return;
    }
    const int T = a.T;
    const int p = a.parity[s];
    const double *u = a.state + ((size_t)s * 2 + (size_t)p) * (size_t)T;
    const double *od = a.diag + ((size_t)s * 2 + (size_t)p) * 3;
    const double *nd = a.diag + ((size_t)s * 2 + (size_t)(p ^ 1)) * 3;
    const double ul = af_double(a.xchg[2 * (size_t)((b + a.B - 1) % a.B) + 1]);
    const double ur = af_double(a.xchg[2 * (size_t)((b + 1) % a.B)]);
    a.res.abft[s] =
        !af_abft_consistent(od[0], od[1], nd[0], nd[1], u[0], u[T - 1], ul, ur, T, a.coeffs);
}

/* Writes the edge cells, diagnostics and status word (bit 0: this step's result was fenced, as
 * commit[] says; bits 1..: non-finite values in the committed buffer) of every occupied,
 * published (HEALTHY or FADING) slot at its logical block's place in xchg, zeroed before by a
 * memset on the same stream. One thread per slot. */
__global__ void pack_kernel(const double *__restrict__ state, const double *__restrict__ diag,
                            const uint8_t *__restrict__ parity, af_cuda_ctl_t ctl,
                            uint64_t *__restrict__ xchg, int n_slots, int T, int B)
{
    const int s = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= n_slots) {
        return;
    }
    const int b = ctl.slot_block[s];
    const int mode = ctl.slot_mode[s];
    if (b < 0 || mode == AF_MODE_DEAD || mode == AF_MODE_SHADOW) {
        return;
    }
    const int p = parity[s];
    const double *u = state + ((size_t)s * 2 + (size_t)p) * (size_t)T;
    const double *d = diag + ((size_t)s * 2 + (size_t)p) * 3;
    xchg[2 * (size_t)b] = af_bits(u[0]);
    xchg[2 * (size_t)b + 1] = af_bits(u[T - 1]);
    xchg[2 * (size_t)B + (size_t)b] = af_bits(d[0]);
    xchg[3 * (size_t)B + (size_t)b] = af_bits(d[1]);
    xchg[4 * (size_t)B + (size_t)b] = (ctl.commit[s] ? 0U : 1U) | ((uint64_t)d[2] << 1);
}

/* Flips the parity of every slot whose commit flag is set. One thread per slot. */
__global__ void commit_kernel(uint8_t *__restrict__ parity, af_cuda_ctl_t ctl, int n_slots)
{
    const int s = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s < n_slots) {
        parity[s] ^= (uint8_t)(ctl.commit[s] != 0);
    }
}

/* The step graph's containment: each slot's commit flag from its control and its result, by
 * af_commit_decision, in the device mirror of commit[] (which pack and commit read next). One
 * thread per slot. */
__global__ void contain_kernel(uint8_t *__restrict__ commit, af_cuda_ctl_t ctl,
                               const int32_t *__restrict__ nonfinite,
                               const int32_t *__restrict__ abft, int n_slots)
{
    const int s = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (s < n_slots) {
        commit[s] = af_commit_decision(ctl.slot_block[s], ctl.slot_mode[s], nonfinite[s], abft[s]);
    }
}

/* Recomputes the diagnostics of one slot's committed buffer (next = 0) or computed buffer
 * (next = 1). One warp. */
__global__ void refresh_kernel(const double *__restrict__ state, double *__restrict__ diag,
                               const uint8_t *__restrict__ parity, int slot, int T, int next)
{
    const int lane = (int)threadIdx.x;
    const int p = parity[slot] ^ next;
    warp_block_diag(state + ((size_t)slot * 2 + (size_t)p) * (size_t)T, T, lane,
                    diag + ((size_t)slot * 2 + (size_t)p) * 3);
}

/* Fills both buffers of one slot with a NaN pattern; their diagnostics say so (mass and energy
 * the pattern, T non-finite values), as on the CPU. */
__global__ void poison_kernel(double *__restrict__ state, double *__restrict__ diag, int slot,
                              int T, uint64_t pattern)
{
    const double nan = af_double(pattern);
    double *u = state + (size_t)slot * 2 * (size_t)T;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < 2 * T;
         i += (int)(gridDim.x * blockDim.x)) {
        u[i] = nan;
    }
    if (blockIdx.x == 0 && threadIdx.x < 6) {
        diag[(size_t)slot * 6 + threadIdx.x] = threadIdx.x % 3 == 2 ? (double)T : nan;
    }
}

/* ---- the backend ------------------------------------------------------------------------ */

static inline af_cuda_t *impl(af_kernels_t *k)
{
    return (af_cuda_t *)k->impl;
}

static inline double *dev_buf(const af_kernels_t *k, const af_cuda_t *c, int slot, int which)
{
    return c->state + ((size_t)slot * 2 + (size_t)which) * (size_t)k->desc.block_len;
}

static inline double *dev_diag(const af_cuda_t *c, int slot, int which)
{
    return c->diag + ((size_t)slot * 2 + (size_t)which) * 3;
}

static af_result_t check_slot(const af_kernels_t *k, int slot, const char *what)
{
    if (slot < 0 || slot >= k->desc.n_slots) {
        af_error_set("cuda backend: %s of slot %d, outside [0, %d)", what, slot, k->desc.n_slots);
        return AF_ERR_INTERNAL;
    }
    return AF_OK;
}

/* cudaMalloc that the allocation counter sees. */
static af_result_t dev_alloc(void **p, size_t bytes, size_t *total)
{
    AF_CUDA_CHECK(cudaMalloc(p, bytes > 0 ? bytes : 1));
    af_alloc_note_external(bytes);
    *total += bytes;
    return AF_OK;
}

static af_result_t host_alloc(void **p, size_t bytes, size_t *total)
{
    AF_CUDA_CHECK(cudaMallocHost(p, bytes > 0 ? bytes : 1));
    af_alloc_note_external(bytes);
    memset(*p, 0, bytes > 0 ? bytes : 1);
    *total += bytes;
    return AF_OK;
}

static void cuda_destroy(af_kernels_t *k)
{
    if (k == NULL) {
        return;
    }
    af_cuda_t *c = impl(k);
    if (c != NULL) {
        cudaSetDevice(c->device);
        if (c->stream != NULL) {
            cudaStreamSynchronize(c->stream);
        }
        cudaFree(c->state);
        cudaFree(c->diag);
        cudaFree(c->parity);
        cudaFree(c->control);
        cudaFree(c->results);
        cudaFreeHost(c->h_stage);
        cudaFreeHost(c->h_results);
        if (c->graph_exec != NULL) {
            cudaGraphExecDestroy(c->graph_exec);
        }
        if (c->graph != NULL) {
            cudaGraphDestroy(c->graph);
        }
        cudaFree(c->d_key);
        cudaFreeHost(c->h_key);
        cudaFreeHost(c->h_flags);
        cudaFreeHost(c->h_commit);
        cudaFreeHost(c->h_xout);
        if (c->staged != NULL) {
            cudaEventDestroy(c->staged);
        }
        if (c->stream != NULL) {
            cudaStreamDestroy(c->stream);
        }
        af_free(c->h_parity);
        note_free(c->noted);
        af_free(c);
    }
    af_free(k->slot_block);
    af_free(k->slot_mode);
    af_free(k->slot_p);
    af_free(k->commit);
    af_free(k->select);
    af_kernels_occ_free(k);
    af_free(k);
}

static af_result_t cuda_upload_control(af_kernels_t *k);

static size_t cuda_host_bytes(const af_shard_desc_t *desc)
{
    /* Host side only (the state lives on the device): the staged control and the results in
     * pinned memory, the parity mirror, the control views, and graph_prepare()'s pinned
     * commit decisions and exchange copy. */
    size_t n = (size_t)desc->n_slots;
    return sizeof(af_kernels_t) + ctl_bytes(n) + n * 4 * sizeof(int32_t) + n +
           n * (sizeof(int32_t) + 1 + sizeof(double) + 1 + 1) + n +
           af_xchg_len(desc->blocks) * sizeof(uint64_t) + af_kernels_occ_bytes(desc);
}

static af_result_t cuda_create(const af_shard_desc_t *desc, af_kernels_t **out)
{
    af_result_t rc = AF_OK;
    const size_t n = (size_t)desc->n_slots;
    const size_t T = (size_t)desc->block_len;
    af_cuda_t *c = NULL;
    af_kernels_t *k = (af_kernels_t *)af_alloc(sizeof *k);
    AF_REQUIRE_GOTO(k != NULL, AF_ERR_NOMEM, rc, fail);
    k->ops = af_kernels_cuda;
    k->desc = *desc;
    c = (af_cuda_t *)af_alloc(sizeof *c);
    k->impl = c;
    AF_REQUIRE_GOTO(c != NULL, AF_ERR_NOMEM, rc, fail);
    c->device = desc->cuda_device >= 0 ? desc->cuda_device : 0;
    AF_CUDA_CHECK_GOTO(cudaSetDevice(c->device), rc, fail);
    AF_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&c->stream, cudaStreamDefault), rc, fail);
    AF_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&c->staged, cudaEventDisableTiming), rc, fail);
    c->control_bytes = ctl_bytes(n);
    c->results_bytes = n * 4 * sizeof(int32_t);
    AF_CHECK_GOTO(dev_alloc((void **)&c->state, n * 2 * T * sizeof(double), &c->noted), rc, fail);
    AF_CHECK_GOTO(dev_alloc((void **)&c->diag, n * 6 * sizeof(double), &c->noted), rc, fail);
    AF_CHECK_GOTO(dev_alloc((void **)&c->parity, n, &c->noted), rc, fail);
    AF_CHECK_GOTO(dev_alloc((void **)&c->control, c->control_bytes, &c->noted), rc, fail);
    AF_CHECK_GOTO(dev_alloc((void **)&c->results, c->results_bytes, &c->noted), rc, fail);
    AF_CHECK_GOTO(host_alloc((void **)&c->h_stage, c->control_bytes, &c->noted), rc, fail);
    AF_CHECK_GOTO(host_alloc((void **)&c->h_results, c->results_bytes, &c->noted), rc, fail);
    /* Start-up contents match the CPU backend's zeroed memory. */
    AF_CUDA_CHECK_GOTO(cudaMemsetAsync(c->state, 0, n * 2 * T * sizeof(double), c->stream), rc,
                       fail);
    AF_CUDA_CHECK_GOTO(cudaMemsetAsync(c->diag, 0, n * 6 * sizeof(double), c->stream), rc, fail);
    AF_CUDA_CHECK_GOTO(cudaMemsetAsync(c->parity, 0, n > 0 ? n : 1, c->stream), rc, fail);
    AF_CUDA_CHECK_GOTO(cudaMemsetAsync(c->results, 0, c->results_bytes, c->stream), rc, fail);
    c->h_parity = (uint8_t *)af_alloc(n > 0 ? n : 1);
    k->slot_block = (int32_t *)af_alloc(n * sizeof(int32_t));
    k->slot_mode = (uint8_t *)af_alloc(n > 0 ? n : 1);
    k->slot_p = (double *)af_alloc(n * sizeof(double));
    k->commit = (uint8_t *)af_alloc(n > 0 ? n : 1);
    k->select = (uint8_t *)af_alloc(n > 0 ? n : 1);
    AF_REQUIRE_GOTO(c->h_parity && k->slot_block && k->slot_mode && k->slot_p && k->commit &&
                        k->select,
                    AF_ERR_NOMEM, rc, fail);
    AF_CHECK_GOTO(af_kernels_occ_alloc(k), rc, fail);
    {
        af_cuda_res_t hr = res_view(c->h_results, n);
        k->nonfinite = hr.nonfinite;
        k->injected = hr.injected;
        k->harmful = hr.harmful;
        k->abft = hr.abft;
    }
    for (size_t s = 0; s < n; ++s) {
        k->slot_block[s] = -1;
    }
    k->bytes = c->noted + n * (1 + sizeof(int32_t) + 1 + sizeof(double) + 1 + 1) +
               af_kernels_occ_bytes(desc);
    k->path = desc->workload == AF_WORKLOAD_ATTENTION ? "cuda attention, a warp per block" : "cuda";
    AF_CHECK_GOTO(cuda_upload_control(k), rc, fail);
    AF_CUDA_CHECK_GOTO(cudaStreamSynchronize(c->stream), rc, fail);
    *out = k;
    return AF_OK;
fail:
    af_error_set("cuda backend: cannot set up the shard (%d slots of %d cells) on GPU %d",
                 desc->n_slots, desc->block_len, desc->cuda_device);
    cuda_destroy(k);
    return rc;
}

/* Copies the host views into the pinned staging area, then enqueues one copy of it to the
 * device. The host views may be rewritten as soon as this returns: the only wait is for the
 * previous upload's copy to have left the staging area (normally long done). */
static af_result_t cuda_upload_control(af_kernels_t *k)
{
    af_cuda_t *c = impl(k);
    const size_t n = (size_t)k->desc.n_slots;
    if (n == 0) {
        return AF_OK;
    }
    AF_CUDA_CHECK(cudaEventSynchronize(c->staged));
    unsigned char *h = c->h_stage;
    memcpy(h, k->slot_p, n * sizeof(double));
    memcpy(h + n * sizeof(double), k->slot_block, n * sizeof(int32_t));
    unsigned char *bytes = h + n * (sizeof(double) + sizeof(int32_t));
    memcpy(bytes, k->slot_mode, n);
    memcpy(bytes + n, k->commit, n);
    memcpy(bytes + 2 * n, k->select, n);
    AF_CUDA_CHECK(
        cudaMemcpyAsync(c->control, h, c->control_bytes, cudaMemcpyHostToDevice, c->stream));
    AF_CUDA_CHECK(cudaEventRecord(c->staged, c->stream));
    return AF_OK;
}

static af_result_t cuda_write_slot(af_kernels_t *k, int slot, const double *host)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "write_slot"));
    const int T = k->desc.block_len;
    AF_CUDA_CHECK(cudaMemcpyAsync(dev_buf(k, c, slot, c->h_parity[slot]), host,
                                  sizeof(double) * (size_t)T, cudaMemcpyHostToDevice, c->stream));
    refresh_kernel<<<1, AF_LANES, 0, c->stream>>>(c->state, c->diag, c->parity, slot, T, 0);
    AF_CUDA_LAUNCHED("refresh_kernel");
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return AF_OK;
}

static af_result_t cuda_read_slot(af_kernels_t *k, int slot, double *host)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "read_slot"));
    AF_CUDA_CHECK(cudaMemcpyAsync(host, dev_buf(k, c, slot, c->h_parity[slot]),
                                  sizeof(double) * (size_t)k->desc.block_len,
                                  cudaMemcpyDeviceToHost, c->stream));
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return AF_OK;
}

/* xchg: device memory, af_xchg_len(B) words. Reads the device mirror of the control arrays:
 * call upload_control() after changing slot_block or slot_mode. */
static af_result_t cuda_pack(af_kernels_t *k, uint64_t *xchg)
{
    af_cuda_t *c = impl(k);
    const int n = k->desc.n_slots;
    AF_CUDA_CHECK(
        cudaMemsetAsync(xchg, 0, sizeof(uint64_t) * af_xchg_len(k->desc.blocks), c->stream));
    if (n == 0) {
        return AF_OK;
    }
    pack_kernel<<<(unsigned int)((n + AF_CUDA_BLOCK - 1) / AF_CUDA_BLOCK), AF_CUDA_BLOCK, 0,
                  c->stream>>>(c->state, c->diag, c->parity, ctl_view(c->control, (size_t)n), xchg,
                               n, k->desc.block_len, k->desc.blocks);
    AF_CUDA_LAUNCHED("pack_kernel");
    return AF_OK;
}

/* Enqueues compute(): the key is `step`, or read on the device from step_dev when it is set
 * (the step graph). */
static af_result_t launch_compute(af_kernels_t *k, const uint64_t *xchg, uint64_t step,
                                  const uint64_t *step_dev, int flags)
{
    af_cuda_t *c = impl(k);
    const int n = k->desc.n_slots;
    if (n == 0) {
        return AF_OK;
    }
    step_args_t a;
    a.state = c->state;
    a.diag = c->diag;
    a.parity = c->parity;
    a.ctl = ctl_view(c->control, (size_t)n);
    a.res = res_view(c->results, (size_t)n);
    a.xchg = xchg;
    a.n_slots = n;
    a.T = k->desc.block_len;
    a.B = k->desc.blocks;
    a.coeffs = k->desc.coeffs;
    a.seed = k->desc.seed;
    a.mix = k->desc.mix;
    a.abft = k->desc.abft;
    a.step = step;
    a.step_dev = step_dev;
    a.selected = (flags & AF_COMPUTE_SELECTED) != 0;
    a.workload = k->desc.workload;
    a.attn = k->desc.attn;
    if (a.workload == AF_WORKLOAD_ATTENTION) {
        if ((flags & AF_COMPUTE_UNMASKED) != 0) {
            attn_kernel<false><<<slot_grid(n), AF_CUDA_BLOCK, 0, c->stream>>>(a);
            AF_CUDA_LAUNCHED("attn_kernel<unmasked>");
        } else {
            attn_kernel<true><<<slot_grid(n), AF_CUDA_BLOCK, 0, c->stream>>>(a);
            AF_CUDA_LAUNCHED("attn_kernel<masked>");
        }
        return AF_OK;
    }
    if ((flags & AF_COMPUTE_UNMASKED) != 0) {
        step_kernel<false><<<slot_grid(n), AF_CUDA_BLOCK, 0, c->stream>>>(a);
        AF_CUDA_LAUNCHED("step_kernel<unmasked>");
    } else {
        step_kernel<true><<<slot_grid(n), AF_CUDA_BLOCK, 0, c->stream>>>(a);
        AF_CUDA_LAUNCHED("step_kernel<masked>");
        inject_kernel<<<slot_grid(n), AF_CUDA_BLOCK, 0, c->stream>>>(a);
        AF_CUDA_LAUNCHED("inject_kernel");
        if (a.abft) {
            abft_kernel<<<(unsigned int)((n + AF_CUDA_BLOCK - 1) / AF_CUDA_BLOCK), AF_CUDA_BLOCK, 0,
                          c->stream>>>(a);
            AF_CUDA_LAUNCHED("abft_kernel");
        }
    }
    return AF_OK;
}

/* xchg: device memory. */
static af_result_t cuda_compute(af_kernels_t *k, uint64_t step, const uint64_t *xchg, int flags)
{
    return launch_compute(k, xchg, step, NULL, flags);
}

static af_result_t cuda_download_results(af_kernels_t *k)
{
    af_cuda_t *c = impl(k);
    if (k->desc.n_slots > 0) {
        AF_CUDA_CHECK(cudaMemcpyAsync(c->h_results, c->results, c->results_bytes,
                                      cudaMemcpyDeviceToHost, c->stream));
    }
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return AF_OK;
}

/* Flips the device parity from the device commit mirror, and the host mirror from the staged
 * copy of the same upload, so both agree without a synchronisation. */
static af_result_t cuda_commit(af_kernels_t *k)
{
    af_cuda_t *c = impl(k);
    const int n = k->desc.n_slots;
    if (n == 0) {
        return AF_OK;
    }
    commit_kernel<<<(unsigned int)((n + AF_CUDA_BLOCK - 1) / AF_CUDA_BLOCK), AF_CUDA_BLOCK, 0,
                    c->stream>>>(c->parity, ctl_view(c->control, (size_t)n), n);
    AF_CUDA_LAUNCHED("commit_kernel");
    const uint8_t *staged_commit = ctl_view(c->h_stage, (size_t)n).commit;
    for (int s = 0; s < n; ++s) {
        c->h_parity[s] ^= (uint8_t)(staged_commit[s] != 0);
    }
    return AF_OK;
}

static af_result_t cuda_copy_slot(af_kernels_t *k, int src, int dst)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, src, "copy_slot"));
    AF_CHECK(check_slot(k, dst, "copy_slot"));
    if (src == dst) {
        return AF_OK;
    }
    AF_CUDA_CHECK(cudaMemcpyAsync(
        dev_buf(k, c, dst, c->h_parity[dst]), dev_buf(k, c, src, c->h_parity[src]),
        sizeof(double) * (size_t)k->desc.block_len, cudaMemcpyDeviceToDevice, c->stream));
    AF_CUDA_CHECK(cudaMemcpyAsync(dev_diag(c, dst, c->h_parity[dst]),
                                  dev_diag(c, src, c->h_parity[src]), 3 * sizeof(double),
                                  cudaMemcpyDeviceToDevice, c->stream));
    return AF_OK;
}

/* Device address of the committed buffer. Work enqueued on the backend's stream that writes it
 * may still be in flight: the NCCL fabric orders itself after it (fabric_nccl.c). */
static double *cuda_slot_data(af_kernels_t *k, int slot)
{
    af_cuda_t *c = impl(k);
    if (slot < 0 || slot >= k->desc.n_slots) {
        return NULL;
    }
    return dev_buf(k, c, slot, c->h_parity[slot]);
}

/* The computed (not yet committed) buffer, for DMR. Blocking. */
static af_result_t cuda_read_next(af_kernels_t *k, int slot, double *host)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "read_next"));
    AF_CUDA_CHECK(cudaMemcpyAsync(host, dev_buf(k, c, slot, c->h_parity[slot] ^ 1),
                                  sizeof(double) * (size_t)k->desc.block_len,
                                  cudaMemcpyDeviceToHost, c->stream));
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return AF_OK;
}

static af_result_t cuda_write_next(af_kernels_t *k, int slot, const double *host)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "write_next"));
    const int T = k->desc.block_len;
    AF_CUDA_CHECK(cudaMemcpyAsync(dev_buf(k, c, slot, c->h_parity[slot] ^ 1), host,
                                  sizeof(double) * (size_t)T, cudaMemcpyHostToDevice, c->stream));
    refresh_kernel<<<1, AF_LANES, 0, c->stream>>>(c->state, c->diag, c->parity, slot, T, 1);
    AF_CUDA_LAUNCHED("refresh_kernel");
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return AF_OK;
}

static af_result_t cuda_refresh_slot(af_kernels_t *k, int slot)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "refresh_slot"));
    refresh_kernel<<<1, AF_LANES, 0, c->stream>>>(c->state, c->diag, c->parity, slot,
                                                  k->desc.block_len, 0);
    AF_CUDA_LAUNCHED("refresh_kernel");
    return AF_OK;
}

static af_result_t cuda_poison_slot(af_kernels_t *k, int slot)
{
    af_cuda_t *c = impl(k);
    AF_CHECK(check_slot(k, slot, "poison_slot"));
    const uint64_t pattern = 0x7ff8dead0000deadULL; /* the CPU backend's pattern */
    const int T = k->desc.block_len;
    unsigned int grid = (unsigned int)((2 * T + AF_CUDA_BLOCK - 1) / AF_CUDA_BLOCK);
    poison_kernel<<<grid, AF_CUDA_BLOCK, 0, c->stream>>>(c->state, c->diag, slot, T, pattern);
    AF_CUDA_LAUNCHED("poison_kernel");
    return AF_OK;
}

static af_result_t cuda_sync(af_kernels_t *k)
{
    AF_CUDA_CHECK(cudaStreamSynchronize(impl(k)->stream));
    return AF_OK;
}

/* Enqueues the step graph's work on the stream being captured (graph_run documents it). */
static af_result_t capture_step(af_kernels_t *k, const af_graph_io_t *io)
{
    af_cuda_t *c = impl(k);
    const int n = k->desc.n_slots;
    const size_t B = (size_t)k->desc.blocks;
    const unsigned int grid = (unsigned int)((n + AF_CUDA_BLOCK - 1) / AF_CUDA_BLOCK);
    af_cuda_ctl_t ctl = ctl_view(c->control, (size_t)n);
    af_cuda_res_t res = res_view(c->results, (size_t)n);
    AF_CUDA_CHECK(
        cudaMemcpyAsync(c->d_key, c->h_key, sizeof(uint64_t), cudaMemcpyHostToDevice, c->stream));
    AF_CHECK(launch_compute(k, io->xchg_in, 0, c->d_key, 0));
    if (n > 0) {
        contain_kernel<<<grid, AF_CUDA_BLOCK, 0, c->stream>>>((uint8_t *)ctl.commit, ctl,
                                                              res.nonfinite, res.abft, n);
        AF_CUDA_LAUNCHED("contain_kernel");
        commit_kernel<<<grid, AF_CUDA_BLOCK, 0, c->stream>>>(c->parity, ctl, n);
        AF_CUDA_LAUNCHED("commit_kernel");
    }
    AF_CHECK(cuda_pack(k, io->xchg_out)); /* io->xlen = af_xchg_len(blocks): no tail words */
    AF_CUDA_CHECK(cudaMemcpyAsync(io->xchg_out + 5 * B, c->h_flags,
                                  sizeof(uint64_t) * AF_XCHG_FLAGS, cudaMemcpyHostToDevice,
                                  c->stream));
    if (io->reduce != NULL) {
        AF_CHECK(io->reduce->enqueue(io->reduce->ctx, io->xchg_out, io->xlen, (void *)c->stream));
    }
    AF_CUDA_CHECK(cudaMemcpyAsync(c->h_xout, io->xchg_out, sizeof(uint64_t) * io->xlen,
                                  cudaMemcpyDeviceToHost, c->stream));
    if (n > 0) {
        AF_CUDA_CHECK(cudaMemcpyAsync(c->h_results, c->results, c->results_bytes,
                                      cudaMemcpyDeviceToHost, c->stream));
        AF_CUDA_CHECK(
            cudaMemcpyAsync(c->h_commit, ctl.commit, (size_t)n, cudaMemcpyDeviceToHost, c->stream));
    }
    return AF_OK;
}

/* Captures the steady-state step once and instantiates it. Every input that changes from step
 * to step is read at launch from pinned host memory, and the control arrays, the move list's
 * effects and the health masks live in device memory the graph reads: nothing about a failure
 * asks for a new graph. */
static af_result_t cuda_graph_prepare(af_kernels_t *k, const af_graph_io_t *io)
{
    af_cuda_t *c = impl(k);
    if (c->graph_exec != NULL) {
        af_error_set("cuda backend: the step graph is already instantiated (graph_prepare is "
                     "called once, at start-up)");
        return AF_ERR_INTERNAL;
    }
    if (io->reduce != NULL) {
        /* First, so that every rank takes part whatever fails below: one all-reduce of the
         * captured size outside the capture (all ranks prepare at the same point of start-up).
         * NCCL sets its connections up lazily, at the first collective that needs them, which
         * must not happen inside a capture. xchg_out is overwritten by every graph run. */
        AF_CHECK(io->reduce->run(io->reduce->ctx, io->xchg_out, io->xlen));
    }
    if (io->xlen != af_xchg_len(k->desc.blocks)) {
        af_error_set("cuda backend: a step graph carries %zu exchange words, not %zu", io->xlen,
                     af_xchg_len(k->desc.blocks));
        return AF_ERR_INTERNAL;
    }
    if (io->reduce != NULL && io->reduce->enqueue == NULL) {
        af_error_set("cuda backend: the %s fabric cannot run inside a CUDA graph",
                     io->reduce->name);
        return AF_ERR_UNSUPPORTED;
    }
    const size_t n = (size_t)k->desc.n_slots;
    AF_CUDA_CHECK(cudaSetDevice(c->device));
    AF_CHECK(dev_alloc((void **)&c->d_key, sizeof(uint64_t), &c->noted));
    AF_CHECK(host_alloc((void **)&c->h_key, sizeof(uint64_t), &c->noted));
    AF_CHECK(host_alloc((void **)&c->h_flags, sizeof(uint64_t) * AF_XCHG_FLAGS, &c->noted));
    AF_CHECK(host_alloc((void **)&c->h_commit, n > 0 ? n : 1, &c->noted));
    AF_CHECK(host_alloc((void **)&c->h_xout, sizeof(uint64_t) * io->xlen, &c->noted));
    /* Nothing of the start-up may still be running on the stream when the capture begins. */
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));

    AF_CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    af_result_t rc = capture_step(k, io);
    cudaGraph_t graph = NULL;
    cudaError_t end = cudaStreamEndCapture(c->stream, &graph);
    if (rc != AF_OK) {
        if (graph != NULL) {
            cudaGraphDestroy(graph);
        }
        cudaGetLastError();
        return rc;
    }
    AF_CUDA_CHECK(end);
    c->graph = graph;
    AF_CUDA_CHECK(cudaGraphInstantiate(&c->graph_exec, c->graph, 0));
    AF_CUDA_CHECK(cudaGraphUpload(c->graph_exec, c->stream));
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    c->graph_io = *io;
    k->graph_instantiations++;
    return AF_OK;
}

static af_result_t cuda_graph_run(af_kernels_t *k, const af_graph_io_t *io, uint64_t step,
                                  const uint64_t *flags)
{
    af_cuda_t *c = impl(k);
    const af_graph_io_t *g = &c->graph_io;
    if (c->graph_exec == NULL || io->xchg_in != g->xchg_in || io->xchg_out != g->xchg_out ||
        io->xlen != g->xlen || io->reduce != g->reduce) {
        af_error_set("cuda backend: graph_run with buffers the step graph was not captured for "
                     "(the driver keeps the device exchange buffers fixed)");
        return AF_ERR_INTERNAL;
    }
    /* The last control upload's staging copy and every earlier launch are done when a graph
     * step starts: graph_run itself waits for its graph below. */
    *c->h_key = step;
    memcpy(c->h_flags, flags, sizeof(uint64_t) * AF_XCHG_FLAGS);
    AF_CUDA_CHECK(cudaGraphLaunch(c->graph_exec, c->stream));
    AF_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    const int n = k->desc.n_slots;
    for (int s = 0; s < n; ++s) {
        k->commit[s] = c->h_commit[s];
        c->h_parity[s] ^= (uint8_t)(c->h_commit[s] != 0);
    }
    memcpy(io->host_out, c->h_xout, sizeof(uint64_t) * io->xlen);
    k->graph_launches++;
    return AF_OK;
}

/* C++20 designated initialisers: a member out of kernels.h's order fails to compile. */
static const af_kernels_ops_t af_kernels_cuda_table = {
    .name = "cuda",
    .create = cuda_create,
    .destroy = cuda_destroy,
    .host_bytes = cuda_host_bytes,
    .upload_control = cuda_upload_control,
    .write_slot = cuda_write_slot,
    .read_slot = cuda_read_slot,
    .pack = cuda_pack,
    .pack_owned = nullptr, /* the device exchange is combined whole (sim/exchange/halo.c) */
    .compute = cuda_compute,
    .download_results = cuda_download_results,
    .commit = cuda_commit,
    .copy_slot = cuda_copy_slot,
    .slot_data = cuda_slot_data,
    .read_next = cuda_read_next,
    .write_next = cuda_write_next,
    .refresh_slot = cuda_refresh_slot,
    .poison_slot = cuda_poison_slot,
    .sync = cuda_sync,
    .graph_prepare = cuda_graph_prepare,
    .graph_run = cuda_graph_run,
    /* The graph is the cuda backend's one launch a step; the full grid lives in device memory,
     * a slot's buffers its own. */
    .step = NULL,
    .release_slot = NULL,
    .settle = NULL,
};

extern "C" {

const af_kernels_ops_t *const af_kernels_cuda = &af_kernels_cuda_table;

int af_cuda_visible_devices(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* without a driver this is an error, not zero devices */
        return 0;
    }
    return n > 0 ? n : 0;
}

const char *af_device_versions(void)
{
    static char text[160];
    int runtime = 0;
    int driver = 0;
    int nccl = 0;
    cudaRuntimeGetVersion(&runtime);
    if (cudaDriverGetVersion(&driver) != cudaSuccess) {
        driver = 0;
    }
    cudaGetLastError();
    if (ncclGetVersion(&nccl) != ncclSuccess) {
        nccl = 0;
    }
    char drv[32];
    if (driver > 0) {
        snprintf(drv, sizeof drv, "%d.%d", driver / 1000, (driver % 1000) / 10);
    } else {
        snprintf(drv, sizeof drv, "none");
    }
    /* NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch. */
    snprintf(text, sizeof text, "CUDA runtime %d.%d, driver %s, NCCL %d.%d.%d", runtime / 1000,
             (runtime % 1000) / 10, drv, nccl / 10000, (nccl % 10000) / 100, nccl % 100);
    return text;
}

/* The sizes of af_cuda_alloc's live buffers, so that af_cuda_free can release what was noted
 * (a handful at start-up: the exchange vector and its like). */
#define AF_CUDA_TRACKED 64
static struct {
    void *p;
    size_t bytes;
} af_cuda_tracked[AF_CUDA_TRACKED];

af_result_t af_cuda_alloc(void **out, size_t bytes)
{
    *out = NULL;
    AF_CUDA_CHECK(cudaMalloc(out, bytes > 0 ? bytes : 1));
    af_alloc_note_external(bytes);
    for (int i = 0; i < AF_CUDA_TRACKED; ++i) {
        if (af_cuda_tracked[i].p == NULL) {
            af_cuda_tracked[i].p = *out;
            af_cuda_tracked[i].bytes = bytes;
            break;
        }
    }
    return AF_OK;
}

void af_cuda_free(void *p)
{
    if (p == NULL) {
        return;
    }
    for (int i = 0; i < AF_CUDA_TRACKED; ++i) {
        if (af_cuda_tracked[i].p == p) {
            note_free(af_cuda_tracked[i].bytes);
            af_cuda_tracked[i].p = NULL;
            break;
        }
    }
    cudaFree(p);
}

/* The copies run on the legacy default stream, which waits for all earlier work on the
 * blocking streams of the device (the kernels' stream is one): a copy sees what was enqueued
 * before it, and returns when it is done. cudaStreamLegacy names that stream explicitly, so a
 * build with --default-stream per-thread keeps the ordering. */
af_result_t af_cuda_copy_to_host(void *host, const void *dev, size_t bytes)
{
    AF_CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, cudaStreamLegacy));
    AF_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    return AF_OK;
}

af_result_t af_cuda_copy_to_device(void *dev, const void *host, size_t bytes)
{
    AF_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy));
    AF_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
    return AF_OK;
}

/* On the legacy stream too: ordered after the kernels' earlier work and before their later work,
 * with no wait on the host. */
af_result_t af_cuda_copy_on_device(void *dst, const void *src, size_t bytes)
{
    AF_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cudaStreamLegacy));
    return AF_OK;
}

} /* extern "C" */
