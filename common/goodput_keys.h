/* The [goodput] keys: the real job whose cost agefence-report replays a run's history against
 * (analysis/goodput.h, docs/goodput.md). They change no simulated history, so one table serves
 * both readers: the configuration (sim/io/config.c: its key table, bounds, defaults and help
 * come from here) and the report (analysis/goodput.c: the log's /@config and
 * agefence-report --set/--grid goodput.KEY, checked against the same bounds).
 *   X(key, field, is_int, min, max, default, unit, help)
 * field names the member of af_goodput_params_t (analysis/goodput.h) and, as goodput_<field>, of
 * af_config_t (sim/io/config.h). */
#ifndef AF_GOODPUT_KEYS_H
#define AF_GOODPUT_KEYS_H

#define AF_GOODPUT_KEYS(X)                                                                         \
    X(step_seconds, step_s, 0, 1e-3, 1e5, "10", "s",                                               \
      "agefence-report's goodput: one training step of the real job, what shrink_rebuild loses "   \
      "in flight, and the grain of every interval the report searches and prints (chosen: a "      \
      "large model's step on thousands of GPUs)")                                                  \
    X(checkpoint_seconds, checkpoint_s, 0, 0.0, 1e5, "60", "s",                                    \
      "the job's stall to write one checkpoint (chosen; 0: free, a checkpoint every step)")        \
    X(restart_seconds, restart_s, 0, 0.0, 1e6, "600", "s",                                         \
      "a whole-job restart: reschedule, communicator set-up, checkpoint load (chosen)")            \
    X(shrink_seconds, shrink_s, 0, 0.0, 1e5, "2.0", "s",                                           \
      "a communicator shrink after a device-level loss (ncclCommShrink: 1.4-2.0 s measured at "    \
      "32-1,024 GPUs; the upper end)")                                                             \
    X(repartition_seconds, repartition_s, 0, 0.0, 1e5, "30", "s",                                  \
      "after a shrink, the lost device's share rebuilt on the survivors (chosen)")                 \
    X(replica_seconds, replica_s, 0, 0.0, 1e5, "1", "s",                                           \
      "remap: the job's stall to write one in-memory replica of its state (chosen)")               \
    X(detect_seconds, detect_s, 0, 0.0, 1e5, "1", "s", "remap: noticing a lost device (chosen)")   \
    X(remap_seconds, remap_s, 0, 0.0, 1e5, "10", "s",                                              \
      "remap: moving a lost device's blocks onto the survivors from their replicas (chosen)")      \
    X(spare_nodes, spare_nodes, 1, 0, 1e9, "0", "nodes",                                           \
      "spare nodes of the fleet: each lost device's place is taken back by a spare device while "  \
      "they last")                                                                                 \
    X(replace_seconds, replace_s, 0, 0.0, 1e9, "3600", "s",                                        \
      "a spare device in service after this long from the loss it replaces (chosen)")

#endif
