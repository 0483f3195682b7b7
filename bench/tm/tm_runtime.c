/* SPDX-License-Identifier: MIT */
/* bench/tm/tm_runtime.c: back-end set-up and statistics (see tm_runtime.h).
 * Compiled once per back-end with its TM_BACKEND_* definition. */
#define _GNU_SOURCE
#include "tm_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tm.h"
#if defined(TM_ITM_SCHEDSTM)
/* The compiler-instrumented code runs on schedstm through the gcc -fgnu-tm
 * ABI (libschedstm-itm); the run's set-up and counters are the schedstm
 * back-end's. */
#include <schedstm/schedstm.h>
#endif

const char *tm_backend_name(void) { return TM_BACKEND_NAME; }

bool tm_multi_threaded(void) { return TM_MULTI_THREADED != 0; }

static void counts_clear(tm_counts_t *out) { memset(out, 0, sizeof *out); }

#if defined(TM_BACKEND_SCHEDSTM) || defined(TM_ITM_SCHEDSTM)

/* Build the configuration: defaults, then SCHEDSTM_* environment, then the
 * explicit options (which win over the environment). */
static int sstm_build_config(const tm_sys_options_t *o, sstm_config_t *cfg, char *err,
                             size_t errlen) {
  sstm_config_default(cfg);
  int rc = sstm_config_from_env(cfg);
  if (rc != 0) {
    snprintf(err, errlen, "bad SCHEDSTM_* environment: %s", sstm_last_error());
    return -1;
  }
  if (o != NULL && o->design != NULL && sstm_design_parse(o->design, &cfg->design) != 0) {
    snprintf(err, errlen, "unknown design '%s' (valid: etl, ctl)", o->design);
    return -1;
  }
  if (o != NULL && o->cm != NULL) {
    if (sstm_cm_find(o->cm) == NULL) {
      char names[512] = "";
      sstm_cm_list(names, sizeof names);
      snprintf(err, errlen, "unknown contention manager '%s' (valid: %s)", o->cm, names);
      return -1;
    }
    cfg->cm = o->cm;
  }
  /* The registry must hold every thread of the run: the workers and the
   * main thread. SCHEDSTM_MAX_THREADS, if given, is the user's bound. */
  if (o != NULL && o->threads > cfg->max_threads) {
    if (getenv("SCHEDSTM_MAX_THREADS") != NULL) {
      snprintf(err, errlen,
               "SCHEDSTM_MAX_THREADS=%u is below the %u threads this run registers "
               "(the workers and the main thread)",
               cfg->max_threads, o->threads);
      return -1;
    }
    cfg->max_threads = o->threads;
  }
#if defined(TM_ITM_SCHEDSTM)
  /* As libschedstm-itm does when it initialises the library itself
   * (docs/design/itm.md (I8)): with privatization safety on, the begins
   * fence unless SCHEDSTM_NO_MEMBARRIER says otherwise. */
  if (cfg->itm_privatization && !cfg->no_membarrier) {
    sstm_config_t f;
    sstm_config_default(&f);
    f.no_membarrier = true;
    if (sstm_config_from_env(&f) == 0) cfg->no_membarrier = f.no_membarrier;
  }
#endif
  cfg->use_env = false;
  return 0;
}

int tm_sys_init(const tm_sys_options_t *o, char *err, size_t errlen) {
  sstm_config_t cfg;
  if (sstm_build_config(o, &cfg, err, errlen) != 0) return -1;
  int rc = sstm_init(&cfg);
  if (rc != 0) {
    snprintf(err, errlen, "sstm_init failed: %s: %s", sstm_strerror(rc), sstm_last_error());
    return -1;
  }
  return 0;
}

void tm_sys_fini(void) {
  int rc = sstm_shutdown();
  if (rc != 0) fprintf(stderr, "warning: sstm_shutdown: %s\n", sstm_strerror(rc));
}

void tm_thread_enter(void) {
  int rc = sstm_thread_init();
  if (rc != 0)
    bench_die(BENCH_EXIT_FAIL, "sstm_thread_init: %s: %s", sstm_strerror(rc), sstm_last_error());
}

#if defined(TM_ALLOC_GLIBC_LOCK)
/* The allocator of a TM without a TM-aware one (tm.h, TM_ALLOC_GLIBC_LOCK):
 * glibc's malloc and free, each call under one process-wide mutex, as the
 * lock-based allocator of a C library [Smiljkovic13] (Fig. 2a/2b, left).
 * What an attempt allocated is freed by an abort action; what it freed is
 * retired by a commit action. A retired block may still be read by
 * transactions that were running at the unlinking commit, so it is freed
 * only after a grace period; such a TM exposes none but its privatization
 * barrier, so a thread's retired blocks wait in batches of GLOCK_BATCH (the
 * batch of the library's own reclamation) and a full batch is freed after
 * sstm_quiesce(), which waits for every running attempt to end. */

enum { GLOCK_BATCH = 1024 };
static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;
static __thread void *glock_retired[GLOCK_BATCH];
static __thread unsigned glock_nretired;

static void glock_free_now(void *p) {
  pthread_mutex_lock(&glock);
  free(p);
  pthread_mutex_unlock(&glock);
}

/* Free the calling thread's retired blocks once no attempt that may still
 * read them runs. Outside a transaction only (commit actions and thread
 * exit are). */
static void glock_flush(void) {
  if (glock_nretired == 0) return;
  int rc = sstm_quiesce();
  if (rc != 0)
    bench_die(BENCH_EXIT_FAIL, "sstm_quiesce: %s: %s", sstm_strerror(rc), sstm_last_error());
  for (unsigned i = 0; i < glock_nretired; i++)
    glock_free_now(glock_retired[i]);
  glock_nretired = 0;
}

static void glock_retire(void *p) {
  glock_retired[glock_nretired++] = p;
  if (glock_nretired == GLOCK_BATCH) glock_flush();
}

void *tm_glock_malloc(size_t size) {
  pthread_mutex_lock(&glock);
  void *p = malloc(size);
  pthread_mutex_unlock(&glock);
  /* Nothing but this attempt can reach the block: an abort frees it at once. */
  if (p != NULL && sstm_in_tx() && sstm_on_abort(glock_free_now, p) != 0)
    bench_die(BENCH_EXIT_FAIL, "sstm_on_abort: %s", sstm_last_error());
  return p;
}

void tm_glock_free(void *p) {
  if (p == NULL) return;
  if (!sstm_in_tx())
    glock_retire(p);
  else if (sstm_on_commit(glock_retire, p) != 0)
    bench_die(BENCH_EXIT_FAIL, "sstm_on_commit: %s", sstm_last_error());
}
#endif

void tm_thread_exit(void) {
#if defined(TM_ALLOC_GLIBC_LOCK)
  glock_flush();
#endif
  int rc = sstm_thread_exit();
  if (rc != 0) fprintf(stderr, "warning: sstm_thread_exit: %s\n", sstm_strerror(rc));
}

/* Convert engine counters into the back-end-neutral form. */
static void counts_from_sstm(const sstm_stats_t *s, tm_counts_t *out) {
  counts_clear(out);
  out->commits_known = true;
  out->commits = s->commits_ro + s->commits_update;
  out->aborts_known = true;
  out->aborts = s->aborts_total;
  for (int r = 0; r < SSTM_ABORT_REASON_COUNT && r < TM_MAX_REASONS; r++) {
    out->reason_name[r] = sstm_abort_reason_name((sstm_abort_reason_t)r);
    out->reason_count[r] = s->aborts[r];
    out->nreasons = (size_t)r + 1;
  }
  const sstm_cm_ops_t *cm = sstm_cm_current();
  out->cm_known = true;
  out->cm_wait_ns = s->cm_wait_ns;
  out->reads_past = s->reads_past;
  out->ro_logged = s->ro_logged;
  out->commits_irrevocable = s->commits_irrevocable;
  for (int i = 0; i < SSTM_CM_NSTATS; i++) {
    out->cm_stat_name[i] = cm != NULL ? cm->stat_names[i] : NULL;
    out->cm_stat[i] = s->cm_stats[i];
  }
}

void tm_thread_counts(tm_counts_t *out) {
  sstm_stats_t s;
  if (sstm_stats_get(sstm_self(), &s) != 0) {
    counts_clear(out);
    return;
  }
  counts_from_sstm(&s, out);
}

void tm_total_counts(tm_counts_t *out) {
  sstm_stats_t s;
  if (sstm_stats_aggregate(&s) != 0) {
    counts_clear(out);
    return;
  }
  counts_from_sstm(&s, out);
}

void tm_stats_reset(void) { sstm_stats_reset(); }

const char *tm_design_name(void) {
  sstm_config_t cfg;
  if (sstm_config_get(&cfg) != 0) return "-";
  return sstm_design_name(cfg.design);
}

const char *tm_cm_name(void) {
  const sstm_cm_ops_t *cm = sstm_cm_current();
  return cm != NULL && cm->name != NULL ? cm->name : "-";
}

void tm_describe(char *buf, size_t len) {
  if (sstm_describe(buf, len) < 0) snprintf(buf, len, "schedstm (not initialised)");
}

#else /* libitm and sequential */

#define TM_DEFAULT_ITM_METHOD "ml_wt"

/* Reject the schedstm-only options on the other back-ends. */
static int reject_sstm_options(const tm_sys_options_t *o, char *err, size_t errlen) {
  if (o != NULL && o->design != NULL) {
    snprintf(err, errlen, "-D (design) is only supported by the schedstm back-end");
    return -1;
  }
  if (o != NULL && o->cm != NULL) {
    snprintf(err, errlen, "-C (contention manager) is only supported by the schedstm back-end");
    return -1;
  }
  return 0;
}

int tm_sys_init(const tm_sys_options_t *o, char *err, size_t errlen) {
  if (reject_sstm_options(o, err, errlen) != 0) return -1;
#if defined(TM_BACKEND_TINYSTM)
  /* mod_mem registers its commit/abort callbacks, so it must be set up
   * after stm_init and before the first thread registers. */
  stm_init();
  mod_mem_init(0);
#endif
#if defined(TM_BACKEND_ITM)
  /* With one thread and no explicit method libitm runs transactions in
   * serial-irrevocable mode; pin an instrumented method unless the user
   * chose one. Read by libitm when the first thread registers. */
  setenv("ITM_DEFAULT_METHOD", TM_DEFAULT_ITM_METHOD, 0);
#endif
  return 0;
}

#if defined(TM_BACKEND_TINYSTM)
void tm_sys_fini(void) { stm_exit(); }
void tm_thread_enter(void) {
  if (stm_init_thread() == NULL) bench_die(BENCH_EXIT_FAIL, "TinySTM refused the thread");
}
void tm_thread_exit(void) { stm_exit_thread(); }
#else
void tm_sys_fini(void) {}
void tm_thread_enter(void) {}
void tm_thread_exit(void) {}
#endif

/* Commits are counted by the caller (one per operation); aborts are zero
 * for the sequential back-end and not reported for libitm and TinySTM (its
 * counters depend on how the user's tree was configured). */
void tm_thread_counts(tm_counts_t *out) {
  counts_clear(out);
  out->aborts_known = !TM_MULTI_THREADED;
}

void tm_total_counts(tm_counts_t *out) { tm_thread_counts(out); }

void tm_stats_reset(void) {}

const char *tm_design_name(void) { return "-"; }
const char *tm_cm_name(void) { return "-"; }

void tm_describe(char *buf, size_t len) {
#if defined(TM_BACKEND_TINYSTM)
  snprintf(buf, len, "TinySTM (user tree, same benchmark source) (gcc %d.%d)", __GNUC__,
           __GNUC_MINOR__);
#elif defined(TM_BACKEND_ITM)
  const char *m = getenv("ITM_DEFAULT_METHOD");
  snprintf(buf, len, "libitm (gcc %d.%d) ITM_DEFAULT_METHOD=%s", __GNUC__, __GNUC_MINOR__,
           m != NULL ? m : "(default)");
#else
  snprintf(buf, len, "sequential, uninstrumented (gcc %d.%d)", __GNUC__, __GNUC_MINOR__);
#endif
}

#endif

void tm_bench_check_options(int argc, char **argv, int optind_, long threads, uint64_t *seed) {
  if (optind_ < argc) bench_die(BENCH_EXIT_USAGE, "unexpected argument '%s'", argv[optind_]);
  if (threads > 1 && !tm_multi_threaded())
    bench_die(BENCH_EXIT_USAGE, "the %s back-end is single-threaded: -n must be 1 (got %ld)",
              tm_backend_name(), threads);
  if (*seed == 0) *seed = (uint64_t)(bench_now() * 1e9);
}

void tm_list_cms_and_exit(void) {
#if defined(TM_BACKEND_SCHEDSTM) || defined(TM_ITM_SCHEDSTM)
  int n = sstm_cm_list(NULL, 0);
  char *names = malloc((size_t)n + 1);
  if (names == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  sstm_cm_list(names, (size_t)n + 1);
  printf("%s\n", names);
  free(names);
  exit(fflush(stdout) == 0 && !ferror(stdout) ? 0 : BENCH_EXIT_FAIL);
#else
  bench_die(BENCH_EXIT_USAGE, "--list-cms: the %s back-end has no contention managers",
            tm_backend_name());
#endif
}

void tm_bench_start(const char *design, const char *cm, unsigned workers) {
  char err[512];
  tm_sys_options_t so = {.design = design, .cm = cm, .threads = workers + 1};
  if (tm_sys_init(&so, err, sizeof err) != 0) bench_die(BENCH_EXIT_USAGE, "%s", err);
  tm_thread_enter();
}
