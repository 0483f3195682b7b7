/* SPDX-License-Identifier: MIT */
/* bench/common/bench_util.c: see bench_util.h. */
#define _GNU_SOURCE
#include "bench_util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *bench_prog = "bench";

void bench_set_prog(const char *argv0) {
  const char *slash = strrchr(argv0, '/');
  bench_prog = slash != NULL ? slash + 1 : argv0;
}

void bench_die(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", bench_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(status);
}

long bench_parse_long(const char *arg, const char *opt, long min, long max) {
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || end == arg || *end != '\0')
    bench_die(BENCH_EXIT_USAGE, "option %s: '%s' is not an integer", opt, arg);
  if (v < min || v > max)
    bench_die(BENCH_EXIT_USAGE, "option %s: %ld is out of range [%ld, %ld]", opt, v, min, max);
  return v;
}

/* splitmix64 step: decorrelates nearby seeds. */
static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void bench_rng_seed(bench_rng_t *r, uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ULL);
  r->s = splitmix64(&x);
  if (r->s == 0) r->s = 1; /* xorshift must not start at zero */
}

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_sleep_ms(long ms) {
  struct timespec req = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&req, &req) != 0 && errno == EINTR) {
  }
}

void bench_gate_init(bench_gate_t *g) {
  atomic_init(&g->arrived, 0);
  atomic_init(&g->go, false);
  atomic_init(&g->stop, false);
}

/* Workers may outnumber the CPUs: spin politely. */
void bench_gate_wait(bench_gate_t *g) {
  atomic_fetch_add_explicit(&g->arrived, 1, memory_order_release);
  while (!atomic_load_explicit(&g->go, memory_order_acquire))
    sched_yield();
}

void bench_gate_open(bench_gate_t *g, unsigned nthreads) {
  while (atomic_load_explicit(&g->arrived, memory_order_acquire) < nthreads)
    sched_yield();
  atomic_store_explicit(&g->go, true, memory_order_release);
}

void bench_gate_stop(bench_gate_t *g) {
  atomic_store_explicit(&g->stop, true, memory_order_release);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_sep(bench_json_t *j) {
  if (j->need_comma) fputc(',', j->f);
  j->need_comma = true;
}

static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void json_key(bench_json_t *j, const char *key) {
  json_sep(j);
  if (key != NULL) {
    json_string(j->f, key);
    fputc(':', j->f);
  }
}

void bench_json_begin(bench_json_t *j, FILE *f) {
  j->f = f;
  j->need_comma = false;
  fputc('{', f);
}

/* The record is the run's result: one that cannot be written (a full disk,
 * a closed pipe) fails the run instead of exiting 0 with nothing. */
void bench_json_end(bench_json_t *j) {
  fputs("}\n", j->f);
  if (fflush(j->f) != 0 || ferror(j->f))
    bench_die(BENCH_EXIT_FAIL, "cannot write the result record: %s", strerror(errno));
}

void bench_json_str(bench_json_t *j, const char *key, const char *v) {
  json_key(j, key);
  json_string(j->f, v != NULL ? v : "");
}

void bench_json_u64(bench_json_t *j, const char *key, uint64_t v) {
  json_key(j, key);
  fprintf(j->f, "%llu", (unsigned long long)v);
}

void bench_json_i64(bench_json_t *j, const char *key, int64_t v) {
  json_key(j, key);
  fprintf(j->f, "%lld", (long long)v);
}

void bench_json_dbl(bench_json_t *j, const char *key, double v) {
  json_key(j, key);
  if (isfinite(v))
    fprintf(j->f, "%.10g", v);
  else
    fputs("null", j->f);
}

void bench_json_null(bench_json_t *j, const char *key) {
  json_key(j, key);
  fputs("null", j->f);
}

void bench_json_obj_open(bench_json_t *j, const char *key) {
  json_key(j, key);
  fputc('{', j->f);
  j->need_comma = false;
}

void bench_json_obj_close(bench_json_t *j) {
  fputc('}', j->f);
  j->need_comma = true;
}

void bench_json_arr_open(bench_json_t *j, const char *key) {
  json_key(j, key);
  fputc('[', j->f);
  j->need_comma = false;
}

void bench_json_arr_close(bench_json_t *j) {
  fputc(']', j->f);
  j->need_comma = true;
}
