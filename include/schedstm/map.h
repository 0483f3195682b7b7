/* SPDX-License-Identifier: MIT */
/** @file
 * Sharing-aware thread mapping [Pasqualin20] and the static placements it
 * is compared with: where the library pins the threads that run
 * transactions.
 *
 * Configured in sstm_config_t (schedstm/config.h: map, map_si, map_mi,
 * map_da_threshold, map_table_bits, map_gain_pct, map_file, map_dump,
 * map_topology) or by the SCHEDSTM_MAP_* variables, at sstm_init(). Off by
 * default (SSTM_MAP_STRATEGY_NONE): the library then neither samples nor
 * pins, and the barriers run exactly as without this subsystem.
 *
 * @par Strategies (sstm_map_strategy_t)
 * - none: the operating system places the threads.
 * - compact, scatter, round-robin: each registering thread is pinned, on
 *   itself, to the processing unit (PU) the strategy gives its thread
 *   index (below); the placements are those of the topology layer
 *   (docs/design/mapping.md). With more threads than PUs, several threads
 *   share a PU.
 * - file: a sharing-aware placement computed at sstm_init() from a
 *   communication matrix that an earlier run dumped (map_file, the format of
 *   docs/design/mapping.md); thread index i goes where row i was placed, an
 *   index beyond the matrix stays unpinned. A missing or malformed file
 *   fails sstm_init() with SSTM_EINVAL and the file's line and column in
 *   sstm_last_error().
 * - stmap: online detection (sampling in the barriers, the address table
 *   of the last two sharers of each sampled address, the communication
 *   matrix), the enable heuristic, the mapping and pinning, re-evaluated
 *   periodically; the threads are unpinned when the heuristic turns mapping
 *   off.
 * - detect: the detection and the heuristic of stmap without pinning (to
 *   record matrices; to measure the detection apart from the mapping).
 *
 * With a topology of one core (hwloc's view of the PUs the process may
 * use), every strategy but detect is disabled at sstm_init(): nothing is
 * pinned, sstm_describe() says "map=<strategy>(off: single core)" and
 * sstm_map_stats_t::single_core is set. With sstm_config_t::map_topology,
 * placements are computed on that topology and reported
 * (sstm_map_thread_cpu()), never applied.
 *
 * @par The machine's topology: cache and background load
 * hwloc's discovery of the machine takes tens of milliseconds. sstm_init()
 * first looks for it in the topology cache (sstm_config_t::map_topo_cache,
 * SCHEDSTM_MAP_TOPO_CACHE), a small file per machine, kernel, boot and CPU
 * set, written by the first run that had to ask hwloc; a file that is
 * stale is replaced, one that is corrupt is refused (never trusted) and
 * replaced, and sstm_describe()'s map-topo-from says which happened and
 * why. On a miss, the static strategies ask hwloc in sstm_init(); stmap and
 * detect, which need the topology only at their first evaluation, ask it
 * in a thread of the library's own (all signals blocked) that the first
 * evaluation waits for if it is still running. A topology of one core
 * found that way disables stmap from that evaluation on (single_core is
 * then set; the sampling goes on, nothing is pinned).
 *
 * @par Affinity
 * A thread's first registration (sstm_thread_init()) under a pinning
 * strategy sets its affinity, whatever it inherited from the thread that
 * created it: its PU under a static strategy, the process's CPU set under
 * stmap until a mapping places it. With sstm_config_t::map_log
 * (SCHEDSTM_MAP_LOG) every affinity change the library makes is logged
 * with the thread id and the time bracket of the system call, so that a
 * reader of the kernel's view (/proc/PID/task/TID/status) can check that
 * each thread runs where the mapping decided
 * (bench/harness/map_affinity.py).
 *
 * @par When stmap evaluates
 * Every thread counts its transactional accesses (map_si at a time, at
 * each sample); the first evaluation comes once all threads together have
 * made map_mi accesses, the next after twice as many more while
 * evaluations change nothing, back to map_mi after one that changes the
 * decision or the placement. The evaluation runs on the thread whose sample
 * crossed the mark, after its attempt has ended (in its commit or abort
 * event), never inside a transaction: Equation 1 of [Pasqualin20] on the
 * distinct sampled addresses and the aborts and commits of all threads
 * since the last evaluation; when on, the mapping of the current matrix;
 * a new placement replaces the current one only when the cost model
 * predicts a cost lower by more than map_gain_pct percent.
 *
 * @par Thread indices
 * The rows of the matrix and the static placements are numbered by thread:
 * an operating-system thread gets an index at its first sstm_thread_init()
 * (the lowest one never given: 0, 1, ... in registration order, also when
 * the threads before it have ended) and keeps it, with its row and its
 * pinning, through later sstm_thread_exit() / sstm_thread_init() pairs, so
 * a pool whose workers register for each parallel phase has one row per
 * worker. An index goes to another thread only once every index has been
 * given, and only after its thread has ended (the lowest such index); when
 * the thread of every index is still alive (registered or not), a new
 * thread is not followed.
 *
 * Pinning uses pthread_setaffinity_np() with one CPU per thread. A thread
 * whose PU is not in the CPUs the process was allowed at sstm_init() is
 * given that whole set instead (counted in pin_fallbacks), and so is a
 * thread whose one CPU the kernel refuses (counted in pin_errors, with
 * the thread not pinned; a refused set leaves it as it was); un-pinning gives
 * every thread that set back, also a thread that has left
 * (sstm_thread_exit()) and lives on, if its affinity is still the one CPU
 * the library gave it (one the program set since stands). sstm_shutdown()
 * does the same for every such thread, its caller included: no thread
 * stays pinned by a library that has shut down, and a thread it never
 * pinned keeps its affinity.
 */
#ifndef SCHEDSTM_MAP_H
#define SCHEDSTM_MAP_H

#include <schedstm/common.h>
#include <schedstm/config.h>
#include <schedstm/thread.h>

SSTM_EXTERN_C_BEGIN

/** The mapping subsystem's counters and state (sstm_map_stats_get()). */
typedef struct sstm_map_stats {
  /** The bytes of this struct the library filled (as sstm_stats_t). */
  size_t size;
  sstm_map_strategy_t strategy; /**< the configured strategy */
  bool single_core;             /**< disabled: the topology has one core */
  bool simulated;               /**< map_topology given: nothing is pinned */
  bool enabled;                 /**< the last heuristic decision (stmap, detect) */
  bool applied;                 /**< threads are pinned by the strategy now */
  unsigned threads;             /**< registered threads the subsystem tracks */
  uint64_t samples;             /**< sampled accesses */
  uint64_t accesses;            /**< transactional accesses counted (stmap, detect) */
  uint64_t events;              /**< communication events counted in the matrix */
  uint64_t distinct;            /**< distinct sampled addresses in the table */
  uint64_t dropped;             /**< sampled accesses of addresses the full
                                   table could not hold */
  uint64_t evaluations;         /**< heuristic evaluations */
  uint64_t decisions_on;        /**< evaluations that turned (or kept) mapping on */
  uint64_t decisions_off;       /**< evaluations that turned (or kept) it off */
  uint64_t mappings_computed;   /**< placements computed */
  uint64_t mappings_applied;    /**< placements applied (threads pinned) */
  uint64_t mappings_kept;       /**< placements computed but not applied: the
                                   predicted gain was below map_gain_pct */
  uint64_t migrations;          /**< threads moved to another CPU */
  uint64_t unpins;              /**< threads given the whole allowed set back */
  uint64_t pin_fallbacks;       /**< threads whose PU was not allowed */
  uint64_t pin_errors;          /**< affinity calls the kernel refused (a
                                   thread that ended meanwhile excepted) */
  uint64_t last_cost;           /**< the cost model's value of the placement
                                   in force after the last evaluation */
} sstm_map_stats_t;

/** The subsystem's counters into the first `size` bytes of *out
 * (sizeof(sstm_map_stats_t) as the caller was compiled, which
 * sstm_map_stats_get() passes). Lock-free reads, each value whole.
 * Errors: SSTM_EINVAL (out NULL or size too small), SSTM_ESTATE (not
 * initialised).
 * @param[out] out receives the counters
 * @param size sizeof(sstm_map_stats_t) as the caller sees it
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
SSTM_API int sstm_map_stats_get_sized(sstm_map_stats_t *out, size_t size);

/** The subsystem's counters (see sstm_map_stats_get_sized()).
 * @param[out] out receives the counters
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
static inline int sstm_map_stats_get(sstm_map_stats_t *out) {
  return sstm_map_stats_get_sized(out, sizeof *out);
}

/** Where the thread of descriptor slot `slot` runs: *cpu the OS CPU the
 * strategy pinned it to (-1: not pinned), *seen the CPU it was last seen
 * on (at its registration, a pinning and each sample; -1: never), *pu the
 * topology's PU the strategy assigned it (-1: none; also with
 * map_topology, where nothing is pinned). Any pointer may be NULL.
 * Blocks while an evaluation or a registration runs (it reads the
 * placement under the subsystem's lock).
 * Errors: SSTM_ESTATE (not initialised), SSTM_EINVAL (a slot the
 * subsystem does not track: no registered thread has it, or past the
 * largest matrix), SSTM_EINVAL also for the strategy none.
 * @param slot a descriptor slot (sstm_desc_slot())
 * @param[out] cpu pinned CPU or -1
 * @param[out] seen last CPU seen or -1
 * @param[out] pu assigned PU or -1
 * @return 0, SSTM_ESTATE or SSTM_EINVAL */
SSTM_API int sstm_map_thread_cpu(unsigned slot, int *cpu, int *seen, int *pu);

/** Copy the communication matrix of thread indices [0, n) into m (n x n,
 * row-major, symmetric, zero diagonal; rows past the matrix's order are
 * zero). Returns the number of thread indices given so far (the order a
 * dump uses), or SSTM_ESTATE (not initialised), SSTM_EINVAL (m NULL with
 * n > 0), SSTM_EINVAL also for a strategy without detection.
 * @param[out] m receives n * n counters
 * @param n rows and columns wanted
 * @return the thread indices in use, or an error */
SSTM_API int sstm_map_matrix(uint64_t *m, unsigned n);

/** Write the communication matrix (thread indices up to the highest given) to the file at path, in
 * the matrix format of docs/design/mapping.md (what the strategy "file" loads). Reads the
 * counters without a lock; blocks on the file's creation and writing only. Errors:
 * SSTM_ESTATE, SSTM_EINVAL (path NULL), SSTM_EINVAL also without detection,
 * SSTM_EPERM (the file cannot be written: the reason in sstm_last_error()),
 * SSTM_ENOMEM.
 * @param path the file to create or truncate
 * @return 0 or an error */
SSTM_API int sstm_map_dump(const char *path);

/** Run an evaluation now on the calling thread, as the trigger would
 * (stmap, detect): the heuristic, and for stmap the mapping and the
 * pinning. Must not be called inside a transaction. Blocks while another
 * evaluation or a registration runs and, under stmap, until the
 * background topology load (above) has ended.
 * Errors: SSTM_ESTATE (not initialised, or inside a transaction),
 * SSTM_EINVAL (a strategy without detection).
 * @return 1 when the heuristic turned mapping on, 0 off, or an error */
SSTM_API int sstm_map_evaluate(void);

/** Name of a strategy ("none", "compact", "scatter", "round-robin", "file",
 * "stmap", "detect"; "?" out of range), usable without sstm_init().
 * @param s the strategy
 * @return a static string, never NULL */
SSTM_API const char *sstm_map_strategy_name(sstm_map_strategy_t s);

/** Parse a strategy name (exact, as sstm_map_strategy_name() gives it)
 * into *out (may be NULL: a check). Errors: SSTM_EINVAL (s NULL or
 * unknown: the valid names in sstm_last_error(); *out unchanged).
 * @param s the name
 * @param[out] out receives the strategy, or NULL
 * @return 0 or SSTM_EINVAL */
SSTM_API int sstm_map_strategy_parse(const char *s, sstm_map_strategy_t *out);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_MAP_H */
