/* SPDX-License-Identifier: MIT */
/* bench/tm/tm_runtime.h: process and thread set-up of the selected TM
 * back-end, and its statistics, behind one interface (tm_runtime.c is
 * compiled once per back-end with the same TM_BACKEND_* definition).
 */
#ifndef BENCH_TM_RUNTIME_H
#define BENCH_TM_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TM_MAX_REASONS 32

typedef struct tm_sys_options {
  const char *design; /* "etl" | "ctl" | NULL (default); schedstm only */
  const char *cm;     /* contention manager name or NULL; schedstm only */
  unsigned threads;   /* threads that will register, the caller included (0:
                         unknown); schedstm sizes its registry for them */
} tm_sys_options_t;

/* Counters of one thread, or of the whole run. Fields a back-end cannot
 * observe are marked unknown (libitm keeps no public abort counters). */
typedef struct tm_counts {
  bool commits_known;
  uint64_t commits;
  bool aborts_known;
  uint64_t aborts;
  size_t nreasons; /* entries in reason_name/reason_count */
  const char *reason_name[TM_MAX_REASONS];
  uint64_t reason_count[TM_MAX_REASONS];
  bool cm_known;       /* contention-manager figures (schedstm only) */
  uint64_t cm_wait_ns; /* time spent in the policy's waits */
  uint64_t reads_past; /* reads that passed a running writer's lock */
  uint64_t ro_logged;  /* read-only transactions whose first attempt kept a read set */
  const char *cm_stat_name[8];
  uint64_t cm_stat[8];          /* the policy's counters (priority changes, ...) */
  uint64_t commits_irrevocable; /* commits in irrevocable mode (schedstm only: cm_known) */
} tm_counts_t;

/* Back-end name: "schedstm", "itm" or "seq". */
const char *tm_backend_name(void);

/* True if the back-end may run several threads. */
bool tm_multi_threaded(void);

/* Initialise the back-end. Options that the back-end does not support must
 * be NULL. Returns 0, or -1 with a message in err. */
int tm_sys_init(const tm_sys_options_t *o, char *err, size_t errlen);

/* Tear the back-end down (after every worker thread has left). */
void tm_sys_fini(void);

/* Register / unregister the calling thread. Enter exits the process with a
 * message if the back-end refuses the thread. */
void tm_thread_enter(void);
void tm_thread_exit(void);

/* Counters of the calling (registered) thread since it entered or since the
 * last tm_stats_reset(). */
void tm_thread_counts(tm_counts_t *out);

/* Counters summed over every thread, exited ones included. */
void tm_total_counts(tm_counts_t *out);

/* Zero every counter (call while no transaction runs). */
void tm_stats_reset(void);

/* Effective design / contention manager names ("-" when not applicable)
 * and a one-line description of the configuration. */
const char *tm_design_name(void);
const char *tm_cm_name(void);
void tm_describe(char *buf, size_t len);

/* Checks every benchmark binary makes once its options are parsed: no stray
 * argument is left, a single-threaded back-end gets -n 1, and seed 0 becomes
 * a time-based seed. Exits with a usage error otherwise. */
void tm_bench_check_options(int argc, char **argv, int optind_, long threads, uint64_t *seed);

/* Initialise the back-end with the -D/-C options (NULL: defaults) for
 * `workers` worker threads besides the caller, and register the calling
 * thread; exits with a usage error on failure. */
void tm_bench_start(const char *design, const char *cm, unsigned workers);

/* getopt_long value of the benchmarks' --list-cms option (no short form). */
#define TM_OPT_LIST_CMS 0x100

/* --list-cms: print the names the back-end accepts for -C/--cm on one line
 * of stdout (schedstm: sstm_cm_list()'s text) and exit 0; a back-end without
 * contention managers exits with a usage error. */
void tm_list_cms_and_exit(void) __attribute__((noreturn));

#endif /* BENCH_TM_RUNTIME_H */
