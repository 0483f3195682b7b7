/* SPDX-License-Identifier: MIT */
/* bench/common/bench_report.c: see bench_report.h. */
#include "bench_report.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

double bench_run_workers(unsigned n, void *(*fn)(void *), void *args, size_t stride,
                         bench_gate_t *gate, long duration_ms) {
  pthread_t *threads = calloc(n, sizeof *threads);
  if (threads == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  for (unsigned i = 0; i < n; i++) {
    int rc = pthread_create(&threads[i], NULL, fn, (char *)args + i * stride);
    if (rc != 0) bench_die(BENCH_EXIT_FAIL, "pthread_create: %s", strerror(rc));
  }
  bench_gate_open(gate, n);
  double start = bench_now();
  bench_sleep_ms(duration_ms);
  bench_gate_stop(gate);
  for (unsigned i = 0; i < n; i++)
    pthread_join(threads[i], NULL);
  double elapsed = bench_now() - start;
  free(threads);
  return elapsed;
}

void bench_report_header(bench_json_t *j, const char *bench, unsigned threads, long duration_ms) {
  char config[1024];
  tm_describe(config, sizeof config);
  bench_json_str(j, "bench", bench);
  bench_json_str(j, "backend", tm_backend_name());
  bench_json_u64(j, "threads", threads);
  bench_json_i64(j, "duration_ms", duration_ms);
  bench_json_str(j, "design", tm_design_name());
  bench_json_str(j, "cm", tm_cm_name());
  bench_json_str(j, "config", config);
}

static const bench_thread_result_t *result_at(const bench_thread_result_t *r, size_t stride,
                                              unsigned i) {
  return (const bench_thread_result_t *)((const char *)r + i * stride);
}

static uint64_t commits_of(const tm_counts_t *c, uint64_t ops) {
  return c->commits_known ? c->commits : ops;
}

static void report_aborts(bench_json_t *j, const tm_counts_t *total, uint64_t commits,
                          double elapsed_s) {
  if (!total->aborts_known) {
    bench_json_null(j, "aborts");
    bench_json_null(j, "aborts_per_s");
    bench_json_null(j, "abort_ratio");
    bench_json_obj_open(j, "aborts_by_reason");
    bench_json_obj_close(j);
    return;
  }
  uint64_t attempts = commits + total->aborts;
  bench_json_u64(j, "aborts", total->aborts);
  bench_json_dbl(j, "aborts_per_s", (double)total->aborts / elapsed_s);
  bench_json_dbl(j, "abort_ratio", attempts != 0 ? (double)total->aborts / (double)attempts : 0.0);
  bench_json_obj_open(j, "aborts_by_reason");
  for (size_t r = 0; r < total->nreasons; r++)
    bench_json_u64(j, total->reason_name[r], total->reason_count[r]);
  bench_json_obj_close(j);
  if (total->cm_known) {
    /* seconds all threads together spent in the policy's waits (spinning,
     * sleeping, yielding, backing off), and the policy's own counters */
    bench_json_dbl(j, "cm_wait_s", (double)total->cm_wait_ns / 1e9);
    bench_json_u64(j, "reads_past", total->reads_past); /* cfg.read_past */
    bench_json_u64(j, "ro_logged", total->ro_logged);   /* cfg.ro_log */
    bench_json_u64(j, "commits_irrevocable", total->commits_irrevocable);
    bench_json_obj_open(j, "cm_stats");
    for (int i = 0; i < 8; i++)
      if (total->cm_stat_name[i] != NULL && total->cm_stat_name[i][0] != '\0')
        bench_json_u64(j, total->cm_stat_name[i], total->cm_stat[i]);
    bench_json_obj_close(j);
  }
}

static void report_per_thread(bench_json_t *j, const bench_thread_result_t *r, size_t stride,
                              unsigned n) {
  bench_json_arr_open(j, "per_thread");
  for (unsigned i = 0; i < n; i++) {
    const bench_thread_result_t *t = result_at(r, stride, i);
    bench_json_obj_open(j, NULL);
    bench_json_u64(j, "ops", t->ops);
    bench_json_u64(j, "commits", commits_of(&t->counts, t->ops));
    if (t->counts.aborts_known)
      bench_json_u64(j, "aborts", t->counts.aborts);
    else
      bench_json_null(j, "aborts");
    bench_json_obj_close(j);
  }
  bench_json_arr_close(j);
}

void bench_report_results(bench_json_t *j, const tm_counts_t *total,
                          const bench_thread_result_t *per_thread, size_t stride, unsigned n,
                          double elapsed_s) {
  uint64_t ops = 0;
  for (unsigned i = 0; i < n; i++)
    ops += result_at(per_thread, stride, i)->ops;
  uint64_t commits = commits_of(total, ops);
  bench_json_dbl(j, "elapsed_s", elapsed_s);
  bench_json_u64(j, "ops", ops);
  bench_json_u64(j, "commits", commits);
  bench_json_dbl(j, "commits_per_s", (double)commits / elapsed_s);
  report_aborts(j, total, commits, elapsed_s);
  report_per_thread(j, per_thread, stride, n);
}
