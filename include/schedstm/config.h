/* SPDX-License-Identifier: MIT */
/** @file
 * Library lifetime and configuration.
 *
 * Configuration comes in three tiers: a typed sstm_config_t passed to
 * sstm_init(), environment overrides read once by sstm_init() (strict: an
 * unknown value is an error that lists the valid ones), and a description of
 * the effective configuration (sstm_describe()) that benchmarks print.
 *
 * Environment variables, each overriding one field of sstm_config_t. They
 * are read by sstm_init() when cfg->use_env is true (the default), and by
 * sstm_config_from_env(); with use_env false the environment is not read at
 * all. Every one is read in one place (src/core/config.c), strictly: a
 * malformed or unknown value is an error, whichever policy is selected.
 * @code{.unparsed}
 *   SCHEDSTM_DESIGN          etl | ctl
 *   SCHEDSTM_CM              name of a registered contention manager
 *   SCHEDSTM_LOCK_BITS       log2 of the lock-table size, 10..28
 *   SCHEDSTM_STRIPE_SHIFT    log2 of the bytes covered by one lock, 3..12
 *   SCHEDSTM_MAX_THREADS     1..32767
 *   SCHEDSTM_STATS           basic | detailed
 *   SCHEDSTM_BACKOFF_MIN_NS, SCHEDSTM_BACKOFF_MAX_NS   (backoff policy)
 *   SCHEDSTM_WAIT_MAX        max consecutive WAIT decisions per access
 *   SCHEDSTM_STATE_TABLE     0 | 1: publish the per-thread state table
 *                            (read by sstm-top)
 *   SCHEDSTM_READ_PAST       off | ro | all
 *   SCHEDSTM_RO_LOG          off | on | auto
 *   SCHEDSTM_ALLOC_CACHE     bytes of each thread's block cache (0: none)
 *   SCHEDSTM_NO_MEMBARRIER   0 | 1: 1 forces the begin fence without membarrier
 *   SCHEDSTM_STATS_AT_EXIT   0 | 1: 1 prints the statistics on stderr at exit
 *   SCHEDSTM_ITM_PRIVATIZATION  0 | 1: 1 (the default) makes an update
 *                            commit through the gcc -fgnu-tm ABI wait for a
 *                            grace period (privatization safety)
 * @endcode
 * Thread mapping (schedstm/map.h):
 * @code{.unparsed}
 *   SCHEDSTM_MAP_STRATEGY    none | compact | scatter | round-robin | file |
 *                            stmap | detect
 *   SCHEDSTM_MAP_SI          sampling interval, 0..1000000 (100; 0 = every access)
 *   SCHEDSTM_MAP_MI          accesses between evaluations, 1..2^40 (100000)
 *   SCHEDSTM_MAP_DA_THRESHOLD  distinct addresses below which mapping is
 *                            on, 0..2^31 (10000)
 *   SCHEDSTM_MAP_TABLE_BITS  log2 of the address table's entries, 10..26 (16)
 *   SCHEDSTM_MAP_GAIN        re-mapping hysteresis, percent 0..100 (10)
 *   SCHEDSTM_MAP_FILE        the matrix file of the strategy "file"
 *   SCHEDSTM_MAP_DUMP        where sstm_shutdown() writes the matrix
 *   SCHEDSTM_MAP_TOPOLOGY    an hwloc synthetic description or XML file to map
 *                            onto instead of the machine (nothing is pinned)
 *   SCHEDSTM_MAP_TOPO_CACHE  the directory of the machine's topology cache (an
 *                            absolute path), or off ($XDG_CACHE_HOME/schedstm,
 *                            ~/.cache/schedstm)
 *   SCHEDSTM_MAP_LOG         a file where every pinning is logged (read back by
 *                            bench/harness/map_affinity.py)
 * @endcode
 * The knobs a policy owns (ignored by the other policies):
 * @code{.unparsed}
 *   SCHEDSTM_SOFTSER_LEVER   softser: auto | none | nice | idle | batch | slice
 *   SCHEDSTM_EXT_MODE        P+ext: auto | none | slice (the facility; tests)
 *   SCHEDSTM_EXT_SLICE_US    P+ext: the custom slice, 100..100000 (4000)
 *   SCHEDSTM_PRIO_ESCALATE   os_prio, timestamp: lost conflicts before a
 *                            transaction restarts irrevocable, 0..1000000,
 *                            0 = never (32)
 * @endcode
 * Numbers are plain decimal digits (no sign, space or prefix), range-checked.
 *
 * Room to grow: sstm_config_t starts with its size, as the program was
 * compiled (sstm_config_default() sets it), and fields are only ever
 * appended. A program built against an older, smaller sstm_config_t keeps
 * working with a newer library: the fields it does not have take their
 * defaults. A size the library does not know (an sstm_config_t not filled
 * by sstm_config_default(), or from a newer library than the one running)
 * is refused with SSTM_EINVAL. The statistics (schedstm/stats.h) do the
 * same.
 */
#ifndef SCHEDSTM_CONFIG_H
#define SCHEDSTM_CONFIG_H

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

/** Write strategy. Both keep a redo log (write-back): memory is only written
 * at commit. They differ in when the ownership record of a written word is
 * acquired. */
typedef enum sstm_design {
  SSTM_DESIGN_ETL = 0, /**< encounter-time locking: lock at first write (default) */
  SSTM_DESIGN_CTL = 1, /**< commit-time locking: lock the write set at commit */
} sstm_design_t;

/** How much the statistics count (sstm_config_t::stats, SCHEDSTM_STATS). */
typedef enum sstm_stats_level {
  SSTM_STATS_BASIC = 0,    /**< commits, aborts by reason, retries: always on */
  SSTM_STATS_DETAILED = 1, /**< + read/write set sizes and per-tag profiles */
} sstm_stats_level_t;

/** Called every sample_period transactional accesses of a thread when
 * sampling is on (period > 0), on the accessing thread, during the access,
 * as a hook is called (hooks.h). It must not start, restart, cancel or
 * commit a transaction: a begin, sstm_restart, sstm_cancel and sstm_commit
 * are reported as misuse (sstm_set_misuse_handler; sstm_run and
 * sstm_commit return SSTM_ESTATE). It should
 * not access transactional data: nothing detects it, the access joins the
 * interrupted attempt (and is not sampled), and a conflict there aborts
 * that attempt. sstm_malloc() and sstm_free() in it act as outside a
 * transaction, so the block it allocates is its own whether the
 * interrupted attempt commits or aborts (alloc.h).
 * @param arg sstm_config_t::sample_arg
 * @param addr the address accessed
 * @param is_write true for a store */
typedef void (*sstm_sample_fn)(void *arg, const void *addr, bool is_write);

/** Which attempts read past the lock of a writer that has not started to
 * commit (docs/design/core.md, (8)). */
typedef enum {
  SSTM_READ_PAST_OFF = 0, /**< every locked stripe goes to the policy */
  SSTM_READ_PAST_RO = 1,  /**< attempts of declared read-only transactions,
                             until they write (the default): they hold no
                             locks, so passing one never prolongs anybody's
                             lock holding */
  SSTM_READ_PAST_ALL = 2, /**< every attempt, and validation accepts a running
                             writer's lock; under oversubscription with
                             suicide, update attempts then go on to take
                             locks they abort with (docs/benchmarks-history.md,
                             "Reads past running writers") */
} sstm_read_past_t;

/** Default of sstm_config_t::alloc_cache, 1 MiB (except in AddressSanitizer
 * builds, whose default is 0). */
#define SSTM_ALLOC_CACHE_DEFAULT ((size_t)1 << 20)
/** Largest sstm_config_t::alloc_cache (and SCHEDSTM_ALLOC_CACHE), 1 GiB. */
#define SSTM_ALLOC_CACHE_MAX ((size_t)1 << 30)

/** Whether the first attempt of a declared read-only transaction keeps a
 * read set. Without one it is cheaper (no log, no validation) but cannot
 * extend its snapshot: the first stripe it meets that changed after its
 * start aborts it (reason ro-extend), and the retry keeps a read set. */
typedef enum {
  SSTM_RO_LOG_OFF = 0,  /**< never (the default): every first attempt runs
                           without; the fastest on our benchmarks */
  SSTM_RO_LOG_AUTO = 1, /**< learned per thread: keep one while at least 2
                           of a window of 64 read-only transactions needed
                           an extension, drop it after a window where none
                           did. Fewer aborts under contention, for about the
                           same throughput on our benchmarks
                           (docs/benchmarks-history.md, "Read sets in
                           read-only transactions") */
  SSTM_RO_LOG_ON = 2,   /**< always */
} sstm_ro_log_t;

/** softser's priority lever: how a thread that lost a conflict is lowered
 * (sstm_config_t::softser_lever, SCHEDSTM_SOFTSER_LEVER). */
typedef enum sstm_softser_lever {
  SSTM_SOFTSER_LEVER_AUTO = 0, /**< the first of nice, idle, batch, slice that
                                    can be applied and undone here (default) */
  SSTM_SOFTSER_LEVER_NONE,     /**< none: softser only serialises */
  SSTM_SOFTSER_LEVER_NICE,     /**< nice 19, and back */
  SSTM_SOFTSER_LEVER_IDLE,     /**< SCHED_IDLE, and back */
  SSTM_SOFTSER_LEVER_BATCH,    /**< SCHED_BATCH, and back */
  SSTM_SOFTSER_LEVER_SLICE,    /**< the shortest EEVDF custom slice, and back */
} sstm_softser_lever_t;

/** The facility of the time-slice extension modifier "P+ext"
 * (sstm_config_t::ext_mode, SCHEDSTM_EXT_MODE). */
typedef enum sstm_ext_facility {
  SSTM_EXT_FACILITY_AUTO = 0, /**< the probe decides: the rseq slice extension,
                                   else a custom slice, else none (default) */
  SSTM_EXT_FACILITY_NONE,     /**< none (for tests) */
  SSTM_EXT_FACILITY_SLICE,    /**< the custom slice, if the kernel has it (for tests) */
} sstm_ext_facility_t;

/** Range and default of sstm_config_t::ext_slice_us (SCHEDSTM_EXT_SLICE_US). */
#define SSTM_EXT_SLICE_US_MIN 100u
/** @copydoc SSTM_EXT_SLICE_US_MIN */
#define SSTM_EXT_SLICE_US_MAX 100000u
/** @copydoc SSTM_EXT_SLICE_US_MIN */
#define SSTM_EXT_SLICE_US_DEFAULT 4000u
/** Maximum and default of sstm_config_t::prio_escalate (SCHEDSTM_PRIO_ESCALATE). */
#define SSTM_PRIO_ESCALATE_MAX 1000000u
/** @copydoc SSTM_PRIO_ESCALATE_MAX */
#define SSTM_PRIO_ESCALATE_DEFAULT 32u

/** Where threads run (sstm_config_t::map, SCHEDSTM_MAP_STRATEGY;
 * schedstm/map.h says what each does and what it reports). */
typedef enum sstm_map_strategy {
  SSTM_MAP_STRATEGY_NONE = 0,        /**< the OS places the threads (default) */
  SSTM_MAP_STRATEGY_COMPACT = 1,     /**< each thread pinned next to the previous one,
                               sharing every cache level */
  SSTM_MAP_STRATEGY_SCATTER = 2,     /**< threads spread over packages and NUMA nodes */
  SSTM_MAP_STRATEGY_ROUND_ROBIN = 3, /**< threads share the last-level cache only */
  SSTM_MAP_STRATEGY_FILE = 4,        /**< static sharing-aware: a mapping computed at
                               sstm_init() from a matrix an earlier run
                               dumped (sstm_config_t::map_file) */
  SSTM_MAP_STRATEGY_STMAP = 5,       /**< online detection and mapping [Pasqualin20] */
  SSTM_MAP_STRATEGY_DETECT = 6,      /**< online detection and heuristic only, no
                               pinning (to record matrices, to measure the
                               detection's cost apart from the mapping's) */
} sstm_map_strategy_t;

/** Defaults and bounds of the mapping knobs (sstm_config_t::map_si, ...). */
#define SSTM_MAP_SI_DEFAULT 100u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_SI_MAX 1000000u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_MI_DEFAULT 100000u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_MI_MAX ((uint64_t)1 << 40)
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_DA_THRESHOLD_DEFAULT 10000u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_DA_THRESHOLD_MAX (1u << 31)
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_TABLE_BITS_DEFAULT 16u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_TABLE_BITS_MIN 10u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_TABLE_BITS_MAX 26u
/** @copydoc SSTM_MAP_SI_DEFAULT */
#define SSTM_MAP_GAIN_DEFAULT 10u

/** The library's configuration (sstm_init()); sstm_config_default() fills
 * in the defaults, the SCHEDSTM_* variables override them. Fields are only
 * ever appended (see the top of this header). */
typedef struct sstm_config {
  /** The size of this struct as the program was compiled,
   * sizeof(sstm_config_t): set by sstm_config_default(), not by hand. */
  size_t size;
  sstm_design_t design;     /**< default SSTM_DESIGN_ETL */
  const char *cm;           /**< contention manager name, default "adaptive" */
  unsigned lock_bits;       /**< lock table has 2^lock_bits entries (default 20) */
  unsigned stripe_shift;    /**< one lock covers 2^stripe_shift bytes (default 5) */
  unsigned max_threads;     /**< descriptors at once: registered threads plus
                               sstm_desc_create's (default 1024) */
  sstm_stats_level_t stats; /**< default SSTM_STATS_BASIC */
  uint64_t backoff_min_ns;  /**< backoff policy: base of the delay bound, the
                               first wait is below twice this (default 256) */
  uint64_t backoff_max_ns;  /**< backoff policy: delay cap (default 1 ms) */
  unsigned wait_max;        /**< max consecutive WAIT decisions for one access
                               before the engine forces ABORT_SELF (default 64) */
  unsigned sample_period;   /**< 0 = sampling off (default) */
  sstm_sample_fn sample_fn; /**< required when sample_period > 0 */
  /** passed to sample_fn */
  void *sample_arg;
  sstm_read_past_t read_past; /**< reads past running writers' locks
                                 (default SSTM_READ_PAST_RO) */
  sstm_ro_log_t ro_log;       /**< read sets in declared read-only first
                                 attempts (default SSTM_RO_LOG_OFF) */
  bool state_table;           /**< publish the per-thread state table, read by
                                 sstm-top (default false) */
  size_t alloc_cache;         /**< bytes of released small blocks each thread
                                 keeps for its own sstm_malloc, at most
                                 SSTM_ALLOC_CACHE_MAX; 0 = every release goes
                                 to free() (default SSTM_ALLOC_CACHE_DEFAULT,
                                 0 in AddressSanitizer builds, which could
                                 not see a use after release otherwise;
                                 <schedstm/alloc.h>) */
  bool use_env;               /**< read the SCHEDSTM_* variables (default true);
                                 false: the environment is not read at all */
  /* The knobs a policy owns; the other policies ignore them. */
  sstm_softser_lever_t softser_lever; /**< softser: the lever (default
                                         SSTM_SOFTSER_LEVER_AUTO); a forced
                                         one that cannot be undone here makes
                                         sstm_init fail with SSTM_EPERM */
  sstm_ext_facility_t ext_mode;       /**< P+ext: the facility (default
                                         SSTM_EXT_FACILITY_AUTO) */
  unsigned ext_slice_us;              /**< P+ext: the EEVDF custom slice where
                                         the rseq slice extension is absent,
                                         SSTM_EXT_SLICE_US_MIN..MAX us (default
                                         SSTM_EXT_SLICE_US_DEFAULT) */
  unsigned prio_escalate;             /**< os_prio, timestamp: lost conflicts
                                         (not the user's own restarts) after
                                         which a transaction restarts
                                         irrevocable, 0..SSTM_PRIO_ESCALATE_MAX,
                                         0 = never (default
                                         SSTM_PRIO_ESCALATE_DEFAULT) */
  bool no_membarrier;                 /**< begin uses a store and a full fence
                                         instead of relying on membarrier() in
                                         the reclaimer (default false; for
                                         testing both paths). The gcc -fgnu-tm
                                         ABI, when it initialises the library
                                         itself with itm_privatization, sets
                                         it unless SCHEDSTM_NO_MEMBARRIER=0:
                                         each update commit then starts a
                                         grace period, whose heavy fence is a
                                         plain fence in this mode */
  /* Thread mapping (schedstm/map.h). */
  sstm_map_strategy_t map;   /**< the strategy (default SSTM_MAP_STRATEGY_NONE) */
  unsigned map_si;           /**< stmap, detect: one access in map_si is
                                sampled (0 = every access), at most
                                SSTM_MAP_SI_MAX (default SSTM_MAP_SI_DEFAULT) */
  uint64_t map_mi;           /**< stmap, detect: accesses of all threads before
                                the first evaluation of the heuristic and the
                                mapping, 1..SSTM_MAP_MI_MAX (default
                                SSTM_MAP_MI_DEFAULT) */
  unsigned map_da_threshold; /**< stmap, detect: fewer distinct sampled
                                addresses than this turn mapping on, else
                                more aborts than commits do, at most
                                SSTM_MAP_DA_THRESHOLD_MAX (default
                                SSTM_MAP_DA_THRESHOLD_DEFAULT) */
  unsigned map_table_bits;   /**< stmap, detect: the address table has
                                2^map_table_bits entries,
                                SSTM_MAP_TABLE_BITS_MIN..MAX (default
                                SSTM_MAP_TABLE_BITS_DEFAULT) */
  unsigned map_gain_pct;     /**< stmap: a new placement replaces the one in
                                force only when the cost model predicts a
                                cost lower by more than this percentage,
                                0..100 (default SSTM_MAP_GAIN_DEFAULT) */
  const char *map_file;      /**< SSTM_MAP_STRATEGY_FILE: the matrix file to
                                map from (required then, ignored otherwise) */
  const char *map_dump;      /**< stmap, detect: where sstm_shutdown() writes
                                the communication matrix (NULL: nowhere); a
                                path that cannot be opened for writing fails
                                sstm_init() with SSTM_EINVAL (an existing
                                file is not truncated then, a missing one
                                not left behind) */
  const char *map_topology;  /**< an hwloc synthetic description, or an hwloc
                                XML file, to map onto instead of the
                                machine's topology: placements are then
                                computed and reported, never applied (NULL:
                                the machine); one of more than 65536
                                processing units fails sstm_init() with
                                SSTM_EINVAL */

  /* Thread mapping, appended in 0.2.0's development (schedstm/map.h). */
  /** The directory of the topology cache: the machine's topology as the
   * mapping uses it, saved after hwloc discovers it and read back by the
   * next sstm_init() of the same machine (same kernel, boot and CPUs),
   * which then skips hwloc (docs/design/mapping.md). An absolute path
   * (another fails sstm_init() with SSTM_EINVAL); NULL: the default,
   * $XDG_CACHE_HOME/schedstm, else $HOME/.cache/schedstm, none when neither
   * is set; "": no cache. */
  const char *map_topo_cache;
  /** A pinning strategy: a file where each change of a thread's affinity
   * is logged with its thread id and time, for an outside check that the
   * threads run where the mapping decided (NULL: no log). */
  const char *map_log;

  /* Appended in 0.2.0's development, with the gcc -fgnu-tm ABI. */
  /** Print the statistics (sstm_stats_dump()) on stderr when the process
   * exits, if the library is still initialised then: for programs that do
   * not call the API themselves, such as code compiled with gcc -fgnu-tm
   * and linked with libschedstm-itm (docs/design/itm.md). Default false. */
  bool stats_at_exit;

  /* Appended in 0.2.0's development, with the ABI's privatization safety. */
  /** The gcc -fgnu-tm ABI (libschedstm-itm, docs/design/itm.md): true
   * makes the outermost commit of a transaction that wrote wait, before
   * its commit actions and before it returns to the compiled code, until
   * every transaction running at the commit has ended, as sstm_quiesce()
   * does, so that data the transaction privatized is the program's when
   * the block ends (what libitm guarantees, and code written for it
   * expects). Read-only commits do not wait. false leaves it to the
   * program (sstm_quiesce()). The native API never waits: the field only
   * applies to transactions begun through the ABI, which reads it when it
   * initialises (the first transaction of the process); when the ABI
   * initialises the library itself, true also makes it set no_membarrier
   * unless SCHEDSTM_NO_MEMBARRIER=0 (a program that initialises the
   * library should set both: each grace period's heavy fence is otherwise
   * a membarrier system call). Default true. The
   * field lies in what was the struct's tail padding (the size did not
   * change): a program built against the header before it gets what this
   * library's sstm_config_default() put there, true. */
  bool itm_privatization;
} sstm_config_t;

/** Fill the first `size` bytes of *cfg with the defaults and set cfg->size
 * to `size`: the size of sstm_config_t as the caller was compiled, which
 * sstm_config_default() passes. Fields the caller's struct does not have
 * are left alone.
 * @param[out] cfg the configuration to fill
 * @param size sizeof(sstm_config_t) as the caller sees it
 * @return 0, or SSTM_EINVAL (cfg NULL, or a size this library does not
 *         know: from an older sstm_config_t than the first with a size,
 *         or a newer one than the library's; sstm_last_error() says
 *         which) */
SSTM_API int sstm_config_default_sized(sstm_config_t *cfg, size_t size);

/** Fill *cfg with the defaults, cfg->size included. Never fails; NULL:
 * nothing.
 * @param[out] cfg the configuration to fill */
static inline void sstm_config_default(sstm_config_t *cfg) {
  if (cfg) (void)sstm_config_default_sized(cfg, sizeof *cfg);
}

/** Apply the SCHEDSTM_* environment variables to *cfg, whatever
 * cfg->use_env says. Returns SSTM_EINVAL on the first malformed or unknown
 * value (sstm_last_error() says which and lists the valid values), a NULL
 * cfg or a cfg->size this library does not know (see
 * sstm_config_default_sized()); *cfg is then unchanged.
 * @param[in,out] cfg the configuration to override
 * @return 0 or SSTM_EINVAL */
SSTM_API int sstm_config_from_env(sstm_config_t *cfg);

/** Initialise the library. cfg may be NULL for the defaults (plus the
 * environment); else it comes from sstm_config_default(), then changed.
 * Not thread-safe against a concurrent sstm_init/shutdown.
 * Errors: SSTM_ESTATE (already initialised), SSTM_EINVAL (bad value, see
 * sstm_last_error(); a cfg->size this library does not know, see
 * sstm_config_default_sized(); also "P+ext" for a P that +ext cannot wrap, see
 * schedstm/cm.h; and an unknown SCHEDSTM_CM), SSTM_ENOENT (unknown
 * cfg.cm), SSTM_ENOMEM. With state_table, a table (a sealed memfd,
 * schedstm/statetab.h) that cannot be created for want of file
 * descriptors or memory, or cannot be allocated (RLIMIT_FSIZE, memory) or
 * mapped, gives SSTM_ENOMEM; a kernel without sealed memfds (before Linux
 * 3.17) SSTM_EPERM; sstm_last_error() gives the system's reason. No file
 * name is involved: nothing another user creates can make it fail. softser
 * with a softser_lever (SCHEDSTM_SOFTSER_LEVER) that cannot be undone here
 * gives SSTM_EPERM.
 * On error nothing is initialised. *cfg and its strings are copied: they
 * need not outlive the call.
 * @param cfg the configuration, NULL for the defaults
 * @return 0, SSTM_ESTATE, SSTM_EINVAL, SSTM_ENOENT, SSTM_ENOMEM or SSTM_EPERM,
 *         or what a policy's init hook returned */
SSTM_API int sstm_init(const sstm_config_t *cfg);

/** Tear the library down and release every resource, including memory whose
 * reclamation was deferred. Errors: SSTM_ESTATE (not initialised),
 * SSTM_EBUSY (a registered thread other than the caller still exists, a
 * descriptor made by sstm_desc_create() has not been destroyed, attached or
 * not, a transaction is active, or the call comes from an action, hook or
 * policy running for the caller's transaction; nothing is released then). No
 * other thread may be inside any schedstm function meanwhile, registered
 * or not (sstm_quiesce and sstm_free included; the statistics calls are
 * safe). A calling thread that is
 * still registered is unregistered first. Before it tears down, a
 * shutdown that will succeed writes out the transactional streams'
 * buffered bytes (<schedstm/stdio.h>), which may wait for transactions
 * that hold a stream.
 * @return 0, SSTM_ESTATE or SSTM_EBUSY */
SSTM_API int sstm_shutdown(void);

/** True between a successful sstm_init() and sstm_shutdown().
 * @return whether the library is initialised */
SSTM_API bool sstm_initialized(void);

/** The effective configuration (after environment overrides), into the
 * first `size` bytes of *out (sizeof(sstm_config_t) as the caller was
 * compiled, which sstm_config_get() passes); out->size is set to what the
 * library filled, at most `size`, and the bytes after it are zeroed. The
 * string fields point to the library's copies, made by sstm_init() (not
 * to the caller's strings nor the environment's), valid until
 * sstm_shutdown().
 * Errors: SSTM_EINVAL (out is NULL, or size smaller than any sstm_config_t
 * this library knows), SSTM_ESTATE if not initialised.
 * @param[out] out receives the configuration
 * @param size sizeof(sstm_config_t) as the caller sees it
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
SSTM_API int sstm_config_get_sized(sstm_config_t *out, size_t size);

/** The effective configuration (after environment overrides).
 * Errors: SSTM_EINVAL (out is NULL), SSTM_ESTATE if not initialised.
 * @param[out] out receives the configuration
 * @return 0, SSTM_EINVAL or SSTM_ESTATE */
static inline int sstm_config_get(sstm_config_t *out) {
  return sstm_config_get_sized(out, sizeof *out);
}

/** One-line description of the effective configuration: version, design,
 * contention manager, lock table, stripe, limits, OS facilities in use.
 * Writes at most len bytes (NUL-terminated; buf NULL: nothing, whatever
 * len) and returns the length it needed (like snprintf); SSTM_ESTATE if not
 * initialised.
 * @param buf where to write, or NULL
 * @param len the size of buf
 * @return the length of the description, or SSTM_ESTATE */
SSTM_API int sstm_describe(char *buf, size_t len);

/** Parse helper, exposed for tools and tests; usable without sstm_init():
 * "etl" or "ctl" (exact, lower case) into *out; 0 (out
 * may be NULL: a check only), or SSTM_EINVAL (s NULL or another string,
 * with a message in sstm_last_error(); *out unchanged).
 * @param s the string
 * @param[out] out receives the design, or NULL
 * @return 0 or SSTM_EINVAL */
SSTM_API int sstm_design_parse(const char *s, sstm_design_t *out);
/** Name of a design, for tools and tests; usable without sstm_init():
 * "etl", "ctl", or "?" for a value out of range; a static string.
 * @param d the design
 * @return the name; never NULL */
SSTM_API const char *sstm_design_name(sstm_design_t d);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_CONFIG_H */
