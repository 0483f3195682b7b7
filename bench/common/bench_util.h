/* SPDX-License-Identifier: MIT */
/* bench/common/bench_util.h: helpers shared by the benchmark binaries:
 * errors, option parsing, random numbers, time, a start/stop gate for
 * worker threads and a minimal JSON writer. Back-end independent. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit status for a bad command line (usage errors). */
#define BENCH_EXIT_USAGE 2
/* Exit status for a failed run (wrong result, inconsistent structure). */
#define BENCH_EXIT_FAIL 1

/* Print "<prog>: error: <message>" on stderr and exit with status. */
void bench_die(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

/* Set the program name used by bench_die (argv[0]'s basename). */
void bench_set_prog(const char *argv0);

/* Parse a whole decimal integer in [min, max] given to the option named opt
 * (as the user may write it, e.g. "-n/--threads"), or exit with a usage
 * error naming the option. */
long bench_parse_long(const char *arg, const char *opt, long min, long max);

/* ---- random numbers: splitmix64 seeding, xorshift64* stream ------------ */

typedef struct bench_rng {
  uint64_t s;
} bench_rng_t;

/* Seed a stream from a seed and a stream index (e.g. the thread id). */
void bench_rng_seed(bench_rng_t *r, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
static inline uint64_t bench_rng_next(bench_rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform value in [0, n), n > 0 (multiply-shift, negligible bias). */
static inline uint64_t bench_rng_below(bench_rng_t *r, uint64_t n) {
  return (uint64_t)(((unsigned __int128)bench_rng_next(r) * n) >> 64);
}

/* ---- time --------------------------------------------------------------- */

/* CLOCK_MONOTONIC in seconds. */
double bench_now(void);

/* Sleep for ms milliseconds (restarted on EINTR). */
void bench_sleep_ms(long ms);

/* ---- start/stop gate ----------------------------------------------------
 * Workers call bench_gate_wait() once ready; the main thread calls
 * bench_gate_open() which returns once every worker has arrived and lets
 * them all go at once; bench_gate_stop() asks them to finish. */

typedef struct bench_gate {
  atomic_uint arrived;
  atomic_bool go;
  atomic_bool stop;
} bench_gate_t;

void bench_gate_init(bench_gate_t *g);
void bench_gate_wait(bench_gate_t *g);
void bench_gate_open(bench_gate_t *g, unsigned nthreads);
void bench_gate_stop(bench_gate_t *g);

/* True once bench_gate_stop() was called (cheap, for the worker loop). */
static inline bool bench_gate_stopped(bench_gate_t *g) {
  return atomic_load_explicit(&g->stop, memory_order_relaxed);
}

/* ---- JSON writer (one object, written as it goes) ---------------------- */

typedef struct bench_json {
  FILE *f;
  bool need_comma;
} bench_json_t;

void bench_json_begin(bench_json_t *j, FILE *f); /* "{" */
void bench_json_end(bench_json_t *j);            /* "}\n" */
void bench_json_str(bench_json_t *j, const char *key, const char *v);
void bench_json_u64(bench_json_t *j, const char *key, uint64_t v);
void bench_json_i64(bench_json_t *j, const char *key, int64_t v);
void bench_json_dbl(bench_json_t *j, const char *key, double v);
void bench_json_null(bench_json_t *j, const char *key);
/* Nested object/array: key may be NULL inside an array. */
void bench_json_obj_open(bench_json_t *j, const char *key);
void bench_json_obj_close(bench_json_t *j);
void bench_json_arr_open(bench_json_t *j, const char *key);
void bench_json_arr_close(bench_json_t *j);

#endif /* BENCH_UTIL_H */
