/* agefence fabric: how ranks talk. A backend is a const table of function pointers (after
 * NCCL's transport.h); sim/ sees only this header. Only fabric/ includes <mpi.h>.
 *
 * Every operation is collective over all ranks of the launch unless its comment says
 * otherwise, blocks until its buffers may be reused, and leaves ownership of the buffers with
 * the caller. `mem` says where the buffers handed to a backend live: host memory for "mpi",
 * device memory for "nccl". */
#ifndef AF_FABRIC_H
#define AF_FABRIC_H

#include <stddef.h>
#include <stdint.h>

#include "../common/af_result.h"

typedef enum af_mem { AF_MEM_HOST = 0, AF_MEM_DEVICE = 1 } af_mem_t;

typedef struct af_fabric af_fabric_t;

/* One half of a point-to-point transfer; a batch of them is posted together by exchange(). */
typedef struct af_p2p {
    int peer;    /* the other rank */
    int is_send; /* 1: send buf to peer; 0: receive into buf from peer */
    void *buf;   /* `bytes` bytes in the backend's memory space */
    size_t bytes;
} af_p2p_t;

typedef struct af_fabric_ops {
    const char *name;
    af_mem_t mem;
    /* Exact all-reduce of bit patterns: buf[i] becomes the unsigned maximum over ranks. With
     * non-owners contributing 0, every bit of the owner's value (-0.0, NaN payloads, denormals)
     * arrives unchanged everywhere. In place, n elements. A backend must not trust its
     * library's unsigned comparison blindly (the MPI one reduces as signed, with the top bit
     * flipped: MPICH 4.0.2 compares MPI_UINT64_T as signed). */
    af_result_t (*allreduce_max_u64)(af_fabric_t *f, uint64_t *buf, size_t n);
    /* Integer sum over ranks, in place (counters: exact and order-independent). */
    af_result_t (*allreduce_sum_i64)(af_fabric_t *f, int64_t *buf, size_t n);
    /* Copies `bytes` bytes from root's buf into every other rank's buf. */
    af_result_t (*bcast)(af_fabric_t *f, void *buf, size_t bytes, int root);
    /* Root receives every rank's `bytes` bytes into recv, rank-major (recv only read on root,
     * sized size*bytes there). */
    af_result_t (*gather)(af_fabric_t *f, const void *send, size_t bytes, void *recv, int root);
    /* As gather, with a byte count per rank known to root (counts[] only read on root). */
    af_result_t (*gatherv)(af_fabric_t *f, const void *send, size_t bytes, void *recv,
                           const size_t *counts, int root);
    /* Every rank gets every rank's n int32 values (n may differ between ranks, and be 0),
     * rank-major, in recv (at most cap values) and their number in *total. AF_ERR_INTERNAL on
     * every rank when the total exceeds cap or INT_MAX. send may lie inside recv's cap values
     * (the gather is then made in place: the rank's values are moved to their place first), so
     * that a list gathered from every rank needs no second buffer for this rank's part. Host
     * fabric only (NULL for nccl): the driver's lists of blocks (the fenced ones of a step)
     * are host data. */
    af_result_t (*allgatherv_i32)(af_fabric_t *f, const int32_t *send, size_t n, int32_t *recv,
                                  size_t cap, size_t *total);
    /* Posts every transfer of the batch at once and waits for all, so any order of sends and
     * receives is deadlock-free. Not collective: only the ranks named in the batch take part.
     * At most AF_FABRIC_MAX_P2P entries. */
    af_result_t (*exchange)(af_fabric_t *f, const af_p2p_t *ops, int n);
    af_result_t (*barrier)(af_fabric_t *f);
    /* allreduce_max_u64 enqueued on the caller's CUDA stream (a cudaStream_t), without waiting
     * and without ordering against other streams: for capture into a CUDA graph. Every rank
     * must enqueue it in the same order as its other collectives. NULL for a fabric whose
     * buffers live in host memory. */
    af_result_t (*enqueue_allreduce_max_u64)(af_fabric_t *f, uint64_t *buf, size_t n, void *stream);
    /* Frees the backend's state; does not finalize MPI. */
    void (*destroy)(af_fabric_t *f);
} af_fabric_ops_t;

#define AF_FABRIC_MAX_P2P 4096

struct af_fabric {
    const af_fabric_ops_t *ops;
    int rank;
    int size;
    void *impl;
    /* The watchdog (run.step_timeout), on the mpi backend: when deadline_us is not 0 (af_now_us's
     * clock), every operation's waits poll non-blocking requests and give up at it with
     * AF_ERR_HUNG, and timed_out is set; the requests stay posted, so a fabric that timed out is
     * fit only for af_fabric_hung_census and the end of the launch. 0: wait for ever, in the
     * blocking calls. Every rank of a collective has a deadline or none (the backend takes
     * another path with one). The nccl backend does not read them yet (docs/GPU.md,
     * "Planned"). */
    double deadline_us;
    int timed_out;
};

/* The launch, as MPI sees it. */
typedef struct af_world {
    int rank;
    int size;
    int local_rank; /* rank among the ranks of the same node */
    int local_size;
    char hostname[64];
} af_world_t;

/* MPI_Init and the node-local split. Must be called before any other function here. */
af_result_t af_world_init(int *argc, char ***argv, af_world_t *world);
void af_world_finalize(void);
/* Ends every rank of the launch with `code` (the last resort when ranks disagree). */
void af_world_abort(int code);
/* Sums n doubles over the ranks of this node (collective over them; exact for integers up to
 * 2^53, as byte counts are). */
af_result_t af_world_node_sum_f64(double *v, int n);
/* Root gets every rank's hostname, 64 bytes each, rank-major (size*64 bytes). */
af_result_t af_world_hostnames(const af_world_t *world, char *out);
/* Library versions as text, for the log. */
void af_world_versions(char *out, size_t size);
/* The MPI library's name as its version string starts ("MPICH", "Open MPI", "MVAPICH2"), for
 * messages; the whole first line where no version word follows a name. Callable before
 * af_world_init. */
void af_world_library(char *out, size_t size);

/* Creates the MPI backend over a private duplicate of MPI_COMM_WORLD. Every communicator a
 * fabric creates is reported to af_alloc_note_comm() (counted after start-up). */
af_result_t af_fabric_mpi_create(af_fabric_t **out);
/* The largest count the MPI backend passes to one MPI call: transfers beyond it go in pieces
 * (INT_MAX, or the small size a test build forces). */
size_t af_fabric_mpi_max_count(void);
/* A new MPI fabric over a split of f's communicator (MPI_Comm_split with color and key): the
 * reshape-and-rebuild baseline of `agefence bench recovery`: after start-up it counts in
 * comms_after_init, as any other would. */
af_result_t af_fabric_mpi_split(af_fabric_t *f, int color, int key, af_fabric_t **out);

/* NCCL backend (device buffers), bootstrapped over MPI. AF_ERR_UNSUPPORTED when built without
 * CUDA. `cuda_device` is the GPU this rank drives. */
af_result_t af_fabric_nccl_create(af_fabric_t **out, int cuda_device);
/* After a wait of f timed out (AF_ERR_HUNG): which ranks are still there. Every rank that timed
 * out calls it: each sends its step to every other rank and takes theirs, for up to grace_us;
 * arrived[q] (size entries) becomes 1 for every rank heard from, this one included, and *step_of
 * the largest step heard. Not collective in MPI's sense: a rank that never calls it (stopped,
 * or still computing past the grace) is one that did not arrive. *late becomes 1 when another
 * rank's word (af_fabric_hung_word) came before the census ended: the others counted this
 * rank among those that did not arrive (it was stopped, and went on while the launch ends). */
af_result_t af_fabric_hung_census(af_fabric_t *f, int64_t step, double grace_us, uint8_t *arrived,
                                  int64_t *step_of, int *late);
/* After a census: a word to every rank q with to[q] set (rank 0: the log is closed; the rank
 * that speaks for a missing rank 0: it was counted out). Does not wait. */
void af_fabric_hung_word(af_fabric_t *f, const uint8_t *to);
/* Waits up to wait_us for rank 0's word that the log is closed, so that the end of the launch
 * does not cut its writing short. */
void af_fabric_hung_wait_word(af_fabric_t *f, double wait_us);
/* Frees the fabric and sets *f to NULL. */
void af_fabric_destroy(af_fabric_t **f);

#endif
