/* SPDX-License-Identifier: MIT */
/* bench/intset.c: integer-set throughput benchmark (one binary per TM
 * back-end: intset-schedstm, intset-itm, intset-seq).
 *
 * Threads run a mix of contains / add / remove on a shared set for a fixed
 * duration. Updates alternate per thread: an add of a random key, then the
 * removal of the key that add inserted (TinySTM's "alternate" mode), so the
 * size stays near its initial value. Prints one JSON object on stdout.
 * Exit status: 0 ok, 1 wrong result, 2 bad command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"
#include "bench_util.h"
#include "intset.h"
#include "tm.h"
#include "tm_runtime.h"

#define MAX_THREADS 1024

typedef struct options {
  intset_kind_t kind;
  long initial, range, update, threads, duration_ms, buckets, ops;
  uint64_t seed;
  const char *design, *cm;
} options_t;

/* One worker's parameters and tallies, padded against false sharing. */
typedef struct worker {
  bench_thread_result_t res; /* first: bench_report reads it by stride */
  intset_t *set;
  bench_gate_t *gate;
  const options_t *opt;
  unsigned id;
  uint64_t adds, added, removes, removed, lookups, found;
} __attribute__((aligned(64))) worker_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: intset-%s [options]\n"
          "  -S, --structure ll|sl|rb|hs|rb-aw|sl-aw  structure (default ll;\n"
          "                  -aw: the search as a user writes it, see bench/README.md)\n"
          "  -i, --initial N       initial size (default 256)\n"
          "  -r, --range N         key range, keys in [1, N] (default 2 * initial)\n"
          "  -u, --update P        update percentage 0..100 (default 20)\n"
          "  -n, --threads N       threads (default 1)\n"
          "  -d, --duration-ms MS  duration in milliseconds (default 1000)\n"
          "  -N, --ops N           each thread runs exactly N operations instead, and the run\n"
          "                        lasts until they are done (repeatable instruction counts)\n"
          "  -s, --seed SEED       random seed, 0 = time based (default 1)\n"
          "  -b, --buckets N       hash set buckets (default %lu)\n"
          "  -D, --design etl|ctl  design (schedstm only)\n"
          "  -C, --cm NAME         contention manager (schedstm only; --list-cms)\n"
          "      --list-cms        print the contention managers and exit (schedstm only)\n"
          "  -h, --help            this help\n"
          "Prints one JSON object on stdout. Exit status: 0 ok, 1 wrong result,\n"
          "2 bad command line.\n",
          tm_backend_name(), INTSET_DEFAULT_BUCKETS);
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.kind = INTSET_LL,
                   .initial = 256,
                   .range = 0,
                   .update = 20,
                   .threads = 1,
                   .duration_ms = 1000,
                   .buckets = 0,
                   .seed = 1};
  static const struct option longopts[] = {{"structure", required_argument, NULL, 'S'},
                                           {"initial", required_argument, NULL, 'i'},
                                           {"range", required_argument, NULL, 'r'},
                                           {"update", required_argument, NULL, 'u'},
                                           {"threads", required_argument, NULL, 'n'},
                                           {"duration-ms", required_argument, NULL, 'd'},
                                           {"ops", required_argument, NULL, 'N'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"buckets", required_argument, NULL, 'b'},
                                           {"design", required_argument, NULL, 'D'},
                                           {"cm", required_argument, NULL, 'C'},
                                           {"list-cms", no_argument, NULL, TM_OPT_LIST_CMS},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "S:i:r:u:n:d:N:s:b:D:C:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'S':
      if (intset_kind_parse(optarg, &o->kind) != 0)
        bench_die(
            BENCH_EXIT_USAGE,
            "option -S/--structure: unknown structure '%s' (valid: ll, sl, rb, hs, rb-aw, sl-aw)",
            optarg);
      break;
    case 'i': o->initial = bench_parse_long(optarg, "-i/--initial", 0, 1L << 40); break;
    case 'r': o->range = bench_parse_long(optarg, "-r/--range", 1, 1L << 50); break;
    case 'u': o->update = bench_parse_long(optarg, "-u/--update", 0, 100); break;
    case 'n': o->threads = bench_parse_long(optarg, "-n/--threads", 1, MAX_THREADS); break;
    case 'd': o->duration_ms = bench_parse_long(optarg, "-d/--duration-ms", 1, 86400000L); break;
    case 'N': o->ops = bench_parse_long(optarg, "-N/--ops", 1, 1L << 40); break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, __LONG_MAX__); break;
    case 'b': o->buckets = bench_parse_long(optarg, "-b/--buckets", 1, 1L << 32); break;
    case 'D': o->design = optarg; break;
    case 'C': o->cm = optarg; break;
    case TM_OPT_LIST_CMS: tm_list_cms_and_exit();
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  if (o->range == 0) o->range = o->initial > 0 ? 2 * o->initial : 2;
  if (o->initial > o->range)
    bench_die(BENCH_EXIT_USAGE, "initial size %ld exceeds the key range %ld", o->initial, o->range);
  tm_bench_check_options(argc, argv, optind, o->threads, &o->seed);
}

static long random_key(bench_rng_t *rng, long range) {
  return 1 + (long)bench_rng_below(rng, (uint64_t)range);
}

/* Insert distinct random keys until the set holds o->initial of them. */
static void populate(intset_t *set, const options_t *o) {
  bench_rng_t rng;
  bench_rng_seed(&rng, o->seed, 0);
  long have = 0;
  while (have < o->initial) {
    if (intset_add(set, random_key(&rng, o->range))) have++;
  }
}

/* One operation: an update (alternating add / remove of the last added
 * key) with probability update %, otherwise a lookup. */
static void do_operation(worker_t *w, bench_rng_t *rng, long *last) {
  if ((long)bench_rng_below(rng, 100) < w->opt->update) {
    if (*last == 0) {
      long key = random_key(rng, w->opt->range);
      w->adds++;
      if (intset_add(w->set, key)) {
        w->added++;
        *last = key;
      }
    } else {
      w->removes++;
      w->removed += intset_remove(w->set, *last);
      *last = 0;
    }
  } else {
    w->lookups++;
    w->found += intset_contains(w->set, random_key(rng, w->opt->range));
  }
  w->res.ops++;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bench_rng_t rng;
  long last = 0; /* key added by this thread and not yet removed; 0 none */
  bench_rng_seed(&rng, w->opt->seed, w->id + 1);
  TM_THREAD_ENTER();
  bench_gate_wait(w->gate);
  if (w->opt->ops > 0) {
    while (w->res.ops < (uint64_t)w->opt->ops) /* the gate's stop is ignored */
      do_operation(w, &rng, &last);
  } else {
    while (!bench_gate_stopped(w->gate))
      do_operation(w, &rng, &last);
  }
  tm_thread_counts(&w->res.counts);
  TM_THREAD_EXIT();
  return NULL;
}

typedef struct totals {
  uint64_t adds, added, removes, removed, lookups, found;
} totals_t;

static totals_t sum_workers(const worker_t *w, long n) {
  totals_t t = {0};
  for (long i = 0; i < n; i++) {
    t.adds += w[i].adds;
    t.added += w[i].added;
    t.removes += w[i].removes;
    t.removed += w[i].removed;
    t.lookups += w[i].lookups;
    t.found += w[i].found;
  }
  return t;
}

static void report(const options_t *o, const worker_t *w, const totals_t *t, double elapsed,
                   long final_size, long expected, const char *check) {
  tm_counts_t total;
  tm_total_counts(&total);
  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_report_header(&j, "intset", (unsigned)o->threads, o->ops > 0 ? 0 : o->duration_ms);
  bench_json_i64(&j, "ops_per_thread", o->ops);
  bench_json_str(&j, "structure", intset_kind_name(o->kind));
  bench_json_i64(&j, "initial", o->initial);
  bench_json_i64(&j, "range", o->range);
  bench_json_i64(&j, "update", o->update);
  bench_json_u64(&j, "seed", o->seed);
  if (o->kind == INTSET_HS)
    bench_json_i64(&j, "buckets", o->buckets != 0 ? o->buckets : (long)INTSET_DEFAULT_BUCKETS);
  bench_report_results(&j, &total, &w[0].res, sizeof *w, (unsigned)o->threads, elapsed);
  uint64_t ops = t->adds + t->removes + t->lookups;
  bench_json_dbl(&j, "effective_update",
                 ops != 0 ? 100.0 * (double)(t->added + t->removed) / (double)ops : 0.0);
  bench_json_u64(&j, "adds", t->adds);
  bench_json_u64(&j, "added", t->added);
  bench_json_u64(&j, "removes", t->removes);
  bench_json_u64(&j, "removed", t->removed);
  bench_json_u64(&j, "lookups", t->lookups);
  bench_json_u64(&j, "found", t->found);
  bench_json_i64(&j, "final_size", final_size);
  bench_json_i64(&j, "expected_size", expected);
  bench_json_str(&j, "check", check);
  bench_json_end(&j);
}

int main(int argc, char **argv) {
  options_t o;
  bench_set_prog(argv[0]);
  parse_options(argc, argv, &o);

  tm_bench_start(o.design, o.cm, (unsigned)o.threads);

  intset_params_t p = {.buckets = (size_t)o.buckets, .range_hint = o.range};
  intset_t *set = intset_create(o.kind, &p);
  if (set == NULL) bench_die(BENCH_EXIT_FAIL, "cannot create the set");
  populate(set, &o);
  tm_stats_reset();

  worker_t *w = aligned_alloc(64, sizeof *w * (size_t)o.threads);
  if (w == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  bench_gate_t gate;
  bench_gate_init(&gate);
  for (long i = 0; i < o.threads; i++)
    w[i] = (worker_t){.set = set, .gate = &gate, .opt = &o, .id = (unsigned)i};
  /* With -N the workers ignore the gate's stop: no duration to wait, the
   * run lasts until each has done its operations (elapsed is that time). */
  double elapsed = bench_run_workers((unsigned)o.threads, worker_main, w, sizeof *w, &gate,
                                     o.ops > 0 ? 0 : o.duration_ms);

  totals_t t = sum_workers(w, o.threads);
  long final_size = (long)intset_size(set);
  long expected = o.initial + (long)t.added - (long)t.removed;
  char err[512];
  int bad_structure = intset_check(set, err, sizeof err);
  report(&o, w, &t, elapsed, final_size, expected, bad_structure ? err : "ok");

  if (bad_structure)
    bench_die(BENCH_EXIT_FAIL, "%s invariant violated: %s", intset_kind_name(o.kind), err);
  if (final_size != expected)
    bench_die(BENCH_EXIT_FAIL,
              "final size %ld != expected %ld (initial %ld + added %llu - removed %llu)",
              final_size, expected, o.initial, (unsigned long long)t.added,
              (unsigned long long)t.removed);
  intset_destroy(set);
  free(w);
  tm_thread_exit();
  tm_sys_fini();
  return 0;
}
