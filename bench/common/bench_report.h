/* SPDX-License-Identifier: MIT */
/* bench/common/bench_report.h: thread running and the JSON fields that
 * every benchmark binary reports (back-end, configuration, commits,
 * aborts). Back-end independent: the TM counters come in as tm_counts_t. */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdint.h>

#include "bench_util.h"
#include "tm_runtime.h"

/* What one worker reports. */
typedef struct bench_thread_result {
  uint64_t ops;       /* operations completed (one transaction each) */
  tm_counts_t counts; /* the back-end's counters for this thread */
} bench_thread_result_t;

/* Start n threads running fn(args + i * stride), open the gate once they
 * are all waiting at it, let them run for duration_ms, stop them and join
 * (duration_ms 0: stop at once, for workers that end by a count of their
 * own and ignore the stop). Returns the elapsed seconds from the opening of the gate to the last
 * join. Exits with a message if a thread cannot be created. */
double bench_run_workers(unsigned n, void *(*fn)(void *), void *args, size_t stride,
                         bench_gate_t *gate, long duration_ms);

/* Write the fields common to every benchmark:
 *   "bench", "backend", "threads", "duration_ms", "design", "cm", "config".
 * Call right after bench_json_begin; add benchmark-specific fields after. */
void bench_report_header(bench_json_t *j, const char *bench, unsigned threads, long duration_ms);

/* Write the result fields: "elapsed_s", "ops", "commits", "commits_per_s",
 * "aborts", "aborts_per_s", "abort_ratio", "aborts_by_reason", "per_thread".
 * total comes from tm_total_counts(); when a count is unknown to the
 * back-end, commits fall back to operations and aborts are null. */
void bench_report_results(bench_json_t *j, const tm_counts_t *total,
                          const bench_thread_result_t *per_thread, size_t stride, unsigned n,
                          double elapsed_s);

#endif /* BENCH_REPORT_H */
