/* agefence memory budget (see memory.h). The sizes follow the allocations of start-up one by
 * one (sim/plan/placement.c, sim/driver/step_init.c, sim/recovery/replicas.c,
 * sim/exchange/halo.c, sim/fleet/aging.c, sim/fleet/evq.c, sim/fleet/straggler.c, sim/io/log.c,
 * sim/driver/run.c) and of the verdict (sim/driver/verdict.c, sim/oracle/reference.c);
 * tests/memory.sh compares the sum with what the allocator really held and with the process's peak
 * resident memory. */
#include "memory.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../common/af_rsum.h"
#include "../../common/log_schema.h"
#include "../plan/coord.h"
#include "../fleet/aging.h"
#include "../plan/placement.h"
#include "run_internal.h"

/* What the MPI fabric holds besides (fabric/fabric_mpi.c: a request, a status of at most 24
 * bytes, an expected count and a peer a piece of an exchange), and the log writer's own struct
 * (paths and handles: sim/io/log.c). */
#define FABRIC_BYTES (4.0 * AF_FABRIC_MAX_P2P * (8.0 + 24.0 + 8.0))
/* its offsets, all-gather counts and census, and the small collectives' 64 words, per rank */
#define FABRIC_PER_RANK  (32.0 + 512.0)
#define LOG_STRUCT_BYTES 20480.0
#define LOG_BATCHES      2.0 /* the step thread fills one, the writer thread writes the other */
#define LOG_EVENT_BUFFER 4096.0
#define LOG_INTR_BUFFER  1024.0

/* Blocks placed on `rank`'s devices at start-up. */
static double blocks_of(int64_t B, int64_t D, int nranks, int rank)
{
    int64_t lo = 0;
    int64_t hi = 0;
    af_rank_devices(D, nranks, rank, &lo, &hi);
    return (double)((hi * B) / D - (lo * B) / D);
}

void af_memory_estimate(const af_config_t *cfg, int nranks, int rank, const af_kernels_ops_t *kops,
                        af_memory_t *m)
{
    memset(m, 0, sizeof *m);
    const int64_t D = af_config_devices(cfg, nranks);
    const double U = (double)cfg->units_per_device;
    const double B = (double)cfg->blocks;
    const double T = (double)af_config_cells(cfg);
    const double R = (double)nranks;
    const double C = (double)af_capacity(cfg->blocks, D, cfg->units_per_device, cfg->max_blackout);
    const double units = (double)D * U;
    int64_t lo = 0;
    int64_t hi = 0;
    af_rank_devices(D, nranks, rank, &lo, &hi);
    const double ldev = (double)(hi - lo);
    const double xlen = 5.0 * B + 1.0 + (cfg->straggler_detect ? (double)D : 0.0);
    const double flush = (double)cfg->flush_interval;
    const double chg = sizeof(af_health_change_t);
    const double mv = sizeof(af_move_t);

    /* Every unit and slot of the fleet: placement (slot_block, unit_load, the list of changed
     * units and its bitmap of marks), health (unit_state), the plan's changes (every unit and
     * the scripted events' units: sim/driver/step_init.c), the devices' words and the local
     * devices' delays. */
    const double scripted = (double)af_config_scripted_units(cfg);
    m->fleet = 4.0 * units * C + 4.0 * units + 4.0 * units + 8.0 * ceil(units / 64.0) +
               1.0 * units + chg * (units + scripted + 1.0) + 8.0 * (double)D +
               8.0 * fmax(ldev, 1.0) +
               (cfg->straggler_detect ? 4.0 * units : 0.0) /* the declared stragglers' units */
               + 8.0 * (double)D + 8.0 * (double)(D / cfg->devices_per_node) /* interruptions */
               + 6.0 * (double)D /* the replicas' devices: gone and lost marks, the lost list */
               + (double)af_placement_dir_bytes(D); /* the free-capacity directory */

    /* Every block: block_slot and block_rank, the two exchange vectors, the move list, the replica
     * map (rep_rank, rep_off, rep_step), items and twins. */
    /* items holds the twin candidates before their deduplication: two int32 per block; twin one. */
    m->blocks = 8.0 * B + 2.0 * 8.0 * xlen + mv * B + 20.0 * B + 12.0 * B + 4.0 * B /* rep_dev */ +
                5.0 * B /* the placement's moved blocks and their marks */;
    /* The halo (sim/exchange/halo.c): two (index, bits) pairs each way for every block the rank can
     * hold, its fenced ones and published slots, every rank's fenced ones (B), counts and offsets
     * per rank, and the figures' words. */
    const double most = fmax(fmin(B, ldev * U * C), 1.0);
    m->blocks += 2.0 * 32.0 * most + 8.0 * most + 4.0 * B +
                 (3.0 * 8.0 + sizeof(af_p2p_t) * 2.0) * R + 8.0 * (2.0 * AF_RSUM_WORDS + 3.0);
    /* The fused step's list of notable slots (sim/driver/step_init.c fused_init), as long. */
    if (kops->step != NULL && cfg->step_pass != AF_STEP_PASS_SEPARATE) {
        m->blocks += 4.0 * most;
    }

    /* The shard: the backend's host memory for its slots (a pooled backend's buffers for at
     * most two slots a block: af_shard_pool_slots), the DMR marks and the commit marks.
     * A slot holds a block's doubles of state, af_config_cells (block_len x dim for attention),
     * as run_init's descriptor says, not block_len. */
    af_shard_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.n_slots = (int)(ldev * U * C);
    desc.block_len = (int)af_config_cells(cfg);
    desc.blocks = (int)cfg->blocks;
    desc.workload = af_config_wl(cfg)->kind;
    desc.pool_slots = af_shard_pool_slots(desc.n_slots, desc.blocks);
    m->shard = (double)kops->host_bytes(&desc) + 2.0 * (double)desc.n_slots;

    /* The replicas this rank keeps: those of the blocks that start on the rank whose buddy it
     * is (af_replica_rank is a permutation of the ranks). */
    double reps = 0;
    for (int q = 0; q < nranks; ++q) {
        if (af_replica_rank(q, nranks) == rank) {
            reps += blocks_of(cfg->blocks, D, nranks, q);
        }
    }
    const double chunk = fmin(B, AF_XFER_CHUNK);
    /* Beside each replica: its block's read-set (two edge words) for each logical step kept
     * (replica_interval with replay = local, the newest with global), the replica's block, the
     * read-set its block's rank sends each step (two words: the block is implied by the
     * position) and the bitmap of the blocks this rank published (B / 64 + 1 words); one more
     * block buffer for a replay, and the read-sets carried with a batch's moves (AF_XFER_CHUNK
     * triples each way). */
    const double depth = cfg->replay == AF_REPLAY_LOCAL ? (double)cfg->replica_interval : 1.0;
    const double edge_log = fmax(reps, 1.0) * (16.0 * depth + 4.0 + 16.0) +
                            8.0 * (floor(B / 64.0) + 1.0) + 8.0 * T + 2.0 * 24.0 * AF_XFER_CHUNK;
    m->replicas = 8.0 * fmax(reps, 1.0) * T + edge_log + 2.0 * 8.0 * chunk * T + 2.0 * 8.0 * T +
                  sizeof(af_p2p_t) * 2.0 * AF_XFER_CHUNK + 8.0 * AF_XFER_SET +
                  4.0 * 2.0 * AF_XFER_CHUNK + 32.0 * R /* xfer.peer */ +
                  12.0 * AF_XFER_CHUNK /* route */ + FABRIC_BYTES + FABRIC_PER_RANK * R +
                  sizeof(af_payload_t) * (flush + 1.0);

    /* The aging model of the rank's own units (sim/fleet/aging.h, af_aging_bytes): per unit its
     * segment (32 bytes: base age, rate, sudden-failure time, base step, load), lifetime (a
     * double), sudden cause, state and cause (three int8), fade step and the fading list (two
     * int32), and its event queue (an 8-byte key and a 4-byte position, where a dead unit's death
     * step is kept; the keys hold /units' temperatures at the end); what it shares each step (its
     * changes, written in the tail of the plan's change list and gathered in place there, so
     * nothing; the scripted events' changes set aside); the own units the slow events name
     * (sim/driver/throttle.c: unit, slowdown and lookup index, 16 bytes each). A FADING unit's
     * corruption probability and degradation are read from the model: nothing else is kept per own
     * unit but the first corrupted step. */
    const double own = fmax(ldev * U, 1.0);
    const double slowed =
        (double)af_throttle_slow_bound(cfg, lo * cfg->units_per_device, hi * cfg->units_per_device);
    m->aging = (double)af_aging_bytes((int64_t)(ldev * U)) + chg * (scripted + 1.0) +
               16.0 * fmax(slowed, 1.0);
    /* The own units' first corrupted step (unit_first_corrupt). */
    m->aging += 4.0 * own;
    /* Every rank's coordinator: the list of the fleet's FADING units, and the straggler detector
     * (57 bytes per device). */
    m->aging += 4.0 * units + (cfg->straggler_detect ? 57.0 * (double)D : 0.0);
    /* The detectors (sim/driver/step_init.c detectors_init): sampled's blocks by turn and the
     * turns' offsets; the quarantine's fence counts and declaration steps of every unit, the
     * suspects of a step, and the drain list it shares with the stragglers. */
    if (af_detect_flags(cfg->detect) & AF_DET_SAMPLED) {
        m->aging += 4.0 * B + 8.0 * (ceil(1.0 / cfg->sample_fraction) + 1.0);
    }
    if (cfg->quarantine_after > 0) {
        m->aging +=
            4.0 * units + 4.0 * fmin(7.0 * B, units) + (cfg->straggler_detect ? 0.0 : 4.0 * units);
    }
    if (rank == 0) {
        double log = LOG_STRUCT_BYTES + 8.0 * flush + 8.0 * flush * R +
                     LOG_BATCHES * (sizeof(af_step_row_t) * flush + 8.0 * flush * AF_NPHASES * R +
                                    sizeof(af_event_row_t) * LOG_EVENT_BUFFER +
                                    sizeof(af_intr_row_t) * LOG_INTR_BUFFER);
        double gathered = sizeof(af_payload_t) * (flush + 1.0) * R +
                          sizeof(af_step_row_t) * (flush + 1.0) + 8.0 * AF_NPHASES * R;
        m->rank0 = log + gathered;
    }
    m->startup = m->fleet + m->blocks + m->shard + m->replicas + m->aging + m->rank0;

    /* The verdict (sim/driver/verdict.c): every rank sends its blocks in rounds of at most K blocks
     * (R K T <= 2^20 cells); rank 0 holds the gathered state and the reference (computed in
     * place), a round's receive buffer and the blocks grouped by rank. */
    double k_blocks = fmax(floor(1048576.0 / (R * T)), 1.0);
    m->verdict =
        8.0 * k_blocks * T +
        (rank == 0 ? 2.0 * 8.0 * B * T + 8.0 * R * k_blocks * T + 4.0 * B + 16.0 * R : 0.0);
    /* The replicas' states and edge logs and the plan's change list are freed before it
     * (af_step_release): the verdict adds to the peak only what it takes beyond them. */
    const double released =
        8.0 * fmax(reps, 1.0) * T + 16.0 * fmax(reps, 1.0) * depth + chg * (units + scripted + 1.0);
    m->peak = m->startup + fmax(m->verdict - released, 0.0);
}

/* A "Name:   N kB" line of a /proc file, in bytes; 0 when absent. */
static double proc_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    char line[256];
    double kb = 0;
    size_t len = strlen(name);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, name, len) == 0 && line[len] == ':' &&
            sscanf(line + len + 1, "%lf", &kb) == 1) {
            break;
        }
    }
    fclose(f);
    return kb * 1024.0;
}

double af_memory_rss_now(void)
{
    return proc_kb("/proc/self/status", "VmRSS");
}

double af_memory_rss_peak(void)
{
    return proc_kb("/proc/self/status", "VmHWM");
}

double af_memory_node_available(void)
{
    return proc_kb("/proc/meminfo", "MemAvailable");
}
