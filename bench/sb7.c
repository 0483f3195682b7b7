/* SPDX-License-Identifier: MIT */
/* bench/sb7.c: STMBench7-like benchmark (one binary per TM back-end:
 * sb7-schedstm, sb7-schedstm-inline, sb7-itm, sb7-seq).
 *
 * Threads run a mix of operations on the object graph of ds/sb7.h for a
 * fixed duration: long traversals, short traversals, short operations and
 * structural modifications. Each operation is one transaction. The mix
 * fixes the share of read-only operations (r: 90%, rw: 60%, w: 10%); an
 * operation is drawn by first choosing read-only or update, then a category
 * by weight (long 5, short traversal 40, short operation 45, structural 10,
 * among the categories that have operations of that kind), then an
 * operation of that kind uniformly within the category.
 *
 * Prints one JSON object on stdout. After the run the structure is checked
 * without transactions (sb7_check); exit status 1 if an invariant is
 * broken, 2 on a bad command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_report.h"
#include "bench_util.h"
#include "sb7.h"
#include "tm.h"
#include "tm_runtime.h"

#define MAX_THREADS 1024

static const unsigned category_weight[SB7_NCATS] = {
    [SB7_CAT_LONG] = 5, [SB7_CAT_SHORT_TRAV] = 40, [SB7_CAT_SHORT_OP] = 45, [SB7_CAT_STRUCT] = 10};

typedef struct mix {
  const char *name;
  long read_only_pct;
  const char *label;
} mix_t;

static const mix_t mixes[] = {
    {"r", 90, "read-dominated"},
    {"rw", 60, "read-write"},
    {"w", 10, "write-dominated"},
};

typedef struct options {
  const mix_t *mix;
  long threads, duration_ms, scale, atomic;
  bool long_traversals;
  bool enabled[SB7_NOPS];
  const char *only; /* -O list as given */
  uint64_t seed;
  const char *design, *cm;
} options_t;

/* Operation choice: cumulative weights per kind (0 read-only, 1 update). */
typedef struct chooser {
  long read_only_pct;
  int nops[2];
  sb7_op_t ops[2][SB7_NOPS];
  double cum[2][SB7_NOPS];
} chooser_t;

typedef struct op_stats {
  uint64_t ok, failed, cancelled, attempts;
  double time_s, max_s;
} op_stats_t;

/* One worker's parameters and tallies, padded against false sharing. */
typedef struct worker {
  bench_thread_result_t res; /* first: bench_report reads it by stride */
  sb7_thread_t ctx;
  bench_gate_t *gate;
  const chooser_t *chooser;
  unsigned id;
  op_stats_t ops[SB7_NOPS];
} __attribute__((aligned(64))) worker_t;

static unsigned default_atomic(void) {
  sb7_params_t p;
  sb7_params_default(&p, 1);
  return p.atomic_per_comp;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: sb7-%s [options]\n"
          "  -w, --mix r|rw|w      mix: read-dominated (90%% read-only operations),\n"
          "                        read-write (60%%), write-dominated (10%%) (default rw)\n"
          "  -n, --threads N       threads (default 1)\n"
          "  -d, --duration-ms MS  duration in milliseconds (default 1000)\n"
          "  -s, --seed SEED       random seed, 0 = time based (default 1)\n"
          "  -l, --long 0|1        long traversals off/on (default 1)\n"
          "  -z, --scale SCALE     size factor: composite parts and base assemblies (default 1)\n"
          "  -A, --atomic N        atomic parts per composite part (default %u)\n"
          "  -O, --only LIST       only these operations, comma-separated (default all)\n"
          "  -D, --design etl|ctl  design (schedstm only)\n"
          "  -C, --cm NAME         contention manager (schedstm only; --list-cms)\n"
          "      --list-cms        print the contention managers and exit (schedstm only)\n"
          "  -h, --help            this help\n"
          "Prints one JSON object on stdout. Exit status: 0 ok, 1 wrong result,\n"
          "2 bad command line.\n"
          "operations:\n",
          tm_backend_name(), default_atomic());
  for (int i = 0; i < SB7_NOPS; i++)
    fprintf(f, "  %-5s %-15s %-3s %s\n", sb7_op_info[i].name, sb7_category_name[sb7_op_info[i].cat],
            sb7_op_info[i].read_only ? "ro" : "upd", sb7_op_info[i].what);
}

static void parse_only(options_t *o, const char *list) {
  char *copy = strdup(list);
  if (copy == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  memset(o->enabled, 0, sizeof o->enabled);
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    int op = sb7_op_parse(tok);
    if (op < 0)
      bench_die(BENCH_EXIT_USAGE, "option -O/--only: unknown operation '%s' (see --help)", tok);
    o->enabled[op] = true;
  }
  free(copy);
  o->only = list;
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.mix = &mixes[1],
                   .threads = 1,
                   .duration_ms = 1000,
                   .scale = 1,
                   .long_traversals = true,
                   .seed = 1};
  for (int i = 0; i < SB7_NOPS; i++)
    o->enabled[i] = true;
  static const struct option longopts[] = {{"mix", required_argument, NULL, 'w'},
                                           {"threads", required_argument, NULL, 'n'},
                                           {"duration-ms", required_argument, NULL, 'd'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"long", required_argument, NULL, 'l'},
                                           {"scale", required_argument, NULL, 'z'},
                                           {"atomic", required_argument, NULL, 'A'},
                                           {"only", required_argument, NULL, 'O'},
                                           {"design", required_argument, NULL, 'D'},
                                           {"cm", required_argument, NULL, 'C'},
                                           {"list-cms", no_argument, NULL, TM_OPT_LIST_CMS},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "w:n:d:s:l:z:A:O:D:C:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'w': {
      o->mix = NULL;
      for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++)
        if (strcmp(optarg, mixes[i].name) == 0) o->mix = &mixes[i];
      if (o->mix == NULL)
        bench_die(BENCH_EXIT_USAGE, "option -w/--mix: unknown mix '%s' (valid: r, rw, w)", optarg);
      break;
    }
    case 'n': o->threads = bench_parse_long(optarg, "-n/--threads", 1, MAX_THREADS); break;
    case 'd': o->duration_ms = bench_parse_long(optarg, "-d/--duration-ms", 1, 86400000L); break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, __LONG_MAX__); break;
    case 'l': o->long_traversals = bench_parse_long(optarg, "-l/--long", 0, 1) != 0; break;
    case 'z': o->scale = bench_parse_long(optarg, "-z/--scale", 1, 1000); break;
    case 'A': o->atomic = bench_parse_long(optarg, "-A/--atomic", 1, SB7_MAX_ATOMIC); break;
    case 'O': parse_only(o, optarg); break;
    case 'D': o->design = optarg; break;
    case 'C': o->cm = optarg; break;
    case TM_OPT_LIST_CMS: tm_list_cms_and_exit();
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  tm_bench_check_options(argc, argv, optind, o->threads, &o->seed);
}

static void chooser_init(chooser_t *ch, const options_t *o) {
  memset(ch, 0, sizeof *ch);
  ch->read_only_pct = o->mix->read_only_pct;
  for (int kind = 0; kind < 2; kind++) {
    int per_cat[SB7_NCATS] = {0};
    for (int i = 0; i < SB7_NOPS; i++) {
      const sb7_op_info_t *in = &sb7_op_info[i];
      bool usable = o->enabled[i] && (o->long_traversals || in->cat != SB7_CAT_LONG);
      if (usable && in->read_only == (kind == 0)) per_cat[in->cat]++;
    }
    double sum = 0;
    for (int i = 0; i < SB7_NOPS; i++) {
      const sb7_op_info_t *in = &sb7_op_info[i];
      bool usable = o->enabled[i] && (o->long_traversals || in->cat != SB7_CAT_LONG);
      if (!usable || in->read_only != (kind == 0)) continue;
      sum += (double)category_weight[in->cat] / per_cat[in->cat];
      ch->ops[kind][ch->nops[kind]] = (sb7_op_t)i;
      ch->cum[kind][ch->nops[kind]++] = sum;
    }
    for (int k = 0; k < ch->nops[kind]; k++)
      ch->cum[kind][k] /= sum;
  }
  if (ch->nops[0] + ch->nops[1] == 0)
    bench_die(BENCH_EXIT_USAGE, "no operation left to run (-O / -l 0)");
  if (ch->nops[0] == 0) ch->read_only_pct = 0;
  if (ch->nops[1] == 0) ch->read_only_pct = 100;
}

static sb7_op_t choose(const chooser_t *ch, bench_rng_t *rng) {
  int kind = (long)bench_rng_below(rng, 100) < ch->read_only_pct ? 0 : 1;
  double u = (double)(bench_rng_next(rng) >> 11) * 0x1.0p-53;
  for (int k = 0; k < ch->nops[kind] - 1; k++)
    if (u < ch->cum[kind][k]) return ch->ops[kind][k];
  return ch->ops[kind][ch->nops[kind] - 1];
}

static void run_one(worker_t *w, sb7_op_t op) {
  double t0 = bench_now();
  sb7_status_t st = sb7_run(&w->ctx, op);
  double dt = bench_now() - t0;
  op_stats_t *s = &w->ops[op];
  s->attempts += w->ctx.attempts;
  if (st == SB7_CANCELLED) {
    s->cancelled++;
    return;
  }
  if (st == SB7_OK)
    s->ok++;
  else
    s->failed++;
  s->time_s += dt;
  if (dt > s->max_s) s->max_s = dt;
  w->res.ops++;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bench_rng_t rng;
  bench_rng_seed(&rng, w->ctx.rng, w->id + 1);
  TM_THREAD_ENTER();
  bench_gate_wait(w->gate);
  while (!bench_gate_stopped(w->gate))
    run_one(w, choose(w->chooser, &rng));
  tm_thread_counts(&w->res.counts);
  TM_THREAD_EXIT();
  return NULL;
}

static void shape_json(bench_json_t *j, const char *key, const sb7_shape_t *s) {
  bench_json_obj_open(j, key);
  bench_json_i64(j, "complex_assemblies", s->complex_assemblies);
  bench_json_i64(j, "base_assemblies", s->base_assemblies);
  bench_json_i64(j, "composite_parts", s->composites);
  bench_json_i64(j, "atomic_parts", s->atomic_parts);
  bench_json_i64(j, "links", s->links);
  if (s->bytes != 0) bench_json_dbl(j, "mbytes", (double)s->bytes / (1024.0 * 1024.0));
  bench_json_obj_close(j);
}

static void report(const options_t *o, const sb7_params_t *p, const worker_t *w,
                   const sb7_tally_t *tally, const sb7_shape_t *initial, const sb7_shape_t *final,
                   double elapsed, double t1_ms, const char *check, long read_only_pct) {
  tm_counts_t total;
  tm_total_counts(&total);
  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_report_header(&j, "sb7", (unsigned)o->threads, o->duration_ms);
  bench_json_str(&j, "mix", o->mix->name);
  bench_json_str(&j, "mix_label", o->mix->label);
  /* what ran: -O can leave one kind of operation only (chooser_init) */
  bench_json_i64(&j, "read_only_pct", read_only_pct);
  bench_json_u64(&j, "long_traversals", o->long_traversals);
  if (o->only != NULL) bench_json_str(&j, "only", o->only);
  bench_json_i64(&j, "scale", o->scale);
  bench_json_u64(&j, "seed", o->seed);
  bench_json_obj_open(&j, "params");
  bench_json_u64(&j, "levels", p->levels);
  bench_json_u64(&j, "fanout", p->fanout);
  bench_json_u64(&j, "base_fanout", p->base_fanout);
  bench_json_u64(&j, "comps_per_base", p->comps_per_base);
  bench_json_u64(&j, "composites", p->composites);
  bench_json_u64(&j, "id_range", p->id_range);
  bench_json_u64(&j, "atomic_per_comp", p->atomic_per_comp);
  bench_json_u64(&j, "connections", SB7_CONN);
  bench_json_u64(&j, "doc_words", p->doc_words);
  bench_json_obj_close(&j);
  shape_json(&j, "initial", initial);
  bench_json_dbl(&j, "t1_uncontended_ms", t1_ms);
  bench_report_results(&j, &total, &w[0].res, sizeof *w, (unsigned)o->threads, elapsed);

  op_stats_t sum[SB7_NOPS] = {0};
  uint64_t cat_ops[SB7_NCATS] = {0}, ro_ops = 0, upd_ops = 0, cancelled = 0;
  for (long t = 0; t < o->threads; t++) {
    for (int i = 0; i < SB7_NOPS; i++) {
      const op_stats_t *s = &w[t].ops[i];
      sum[i].ok += s->ok;
      sum[i].failed += s->failed;
      sum[i].cancelled += s->cancelled;
      sum[i].attempts += s->attempts;
      sum[i].time_s += s->time_s;
      if (s->max_s > sum[i].max_s) sum[i].max_s = s->max_s;
    }
  }
  for (int i = 0; i < SB7_NOPS; i++) {
    uint64_t n = sum[i].ok + sum[i].failed;
    cat_ops[sb7_op_info[i].cat] += n;
    if (sb7_op_info[i].read_only)
      ro_ops += n;
    else
      upd_ops += n;
    cancelled += sum[i].cancelled;
  }
  /* Attempts are counted by the benchmark (the body of an operation runs
   * once per attempt), so this ratio exists for libitm too. */
  uint64_t attempts = 0;
  for (int i = 0; i < SB7_NOPS; i++)
    attempts += sum[i].attempts;
  bench_json_u64(&j, "op_attempts", attempts);
  uint64_t ended = ro_ops + upd_ops + cancelled;
  bench_json_dbl(&j, "op_abort_ratio",
                 attempts != 0 ? (double)(attempts - ended) / (double)attempts : 0.0);
  bench_json_u64(&j, "read_only_ops", ro_ops);
  bench_json_u64(&j, "update_ops", upd_ops);
  bench_json_u64(&j, "cancelled_at_stop", cancelled);
  bench_json_obj_open(&j, "ops_by_category");
  for (int c = 0; c < SB7_NCATS; c++)
    bench_json_u64(&j, sb7_category_name[c], cat_ops[c]);
  bench_json_obj_close(&j);
  /* Per operation type: completed (ok + failed), attempts (restarts
   * included, counted by the benchmark on every back-end) and latency of
   * completed operations, retries included. */
  bench_json_obj_open(&j, "ops_by_type");
  for (int i = 0; i < SB7_NOPS; i++) {
    const op_stats_t *s = &sum[i];
    uint64_t n = s->ok + s->failed;
    if (n == 0 && s->cancelled == 0) continue;
    bench_json_obj_open(&j, sb7_op_info[i].name);
    bench_json_u64(&j, "count", n);
    bench_json_u64(&j, "failed", s->failed);
    if (s->cancelled != 0) bench_json_u64(&j, "cancelled", s->cancelled);
    bench_json_u64(&j, "attempts", s->attempts);
    bench_json_dbl(&j, "mean_us", n != 0 ? s->time_s / (double)n * 1e6 : 0.0);
    bench_json_dbl(&j, "max_us", s->max_s * 1e6);
    bench_json_obj_close(&j);
  }
  bench_json_obj_close(&j);
  bench_json_obj_open(&j, "tally");
  bench_json_u64(&j, "visited", tally->visited);
  bench_json_u64(&j, "swaps", tally->swaps);
  bench_json_u64(&j, "toggles", tally->toggles);
  bench_json_u64(&j, "date_moves", tally->moves);
  bench_json_u64(&j, "created", tally->created);
  bench_json_u64(&j, "deleted", tally->deleted);
  bench_json_u64(&j, "linked", tally->linked);
  bench_json_u64(&j, "unlinked", tally->unlinked);
  bench_json_obj_close(&j);
  shape_json(&j, "final", final);
  bench_json_str(&j, "check", check);
  bench_json_end(&j);
}

/* Uncontended duration of a long read-only traversal (best of 3), on the
 * main thread before the run. */
static double measure_t1(sb7_t *db, uint64_t seed, sb7_tally_t *tally) {
  sb7_thread_t ctx;
  if (sb7_thread_init(&ctx, db, seed, 0, NULL) != 0) bench_die(BENCH_EXIT_FAIL, "out of memory");
  double best = 0;
  for (int i = 0; i < 3; i++) {
    double t0 = bench_now();
    sb7_run(&ctx, SB7_T1);
    double dt = bench_now() - t0;
    if (i == 0 || dt < best) best = dt;
  }
  *tally = ctx.total;
  sb7_thread_fini(&ctx);
  return best * 1e3;
}

static void tally_sum(sb7_tally_t *to, const sb7_tally_t *f) {
  to->visited += f->visited;
  to->swaps += f->swaps;
  to->toggles += f->toggles;
  to->moves += f->moves;
  to->created += f->created;
  to->deleted += f->deleted;
  to->linked += f->linked;
  to->unlinked += f->unlinked;
  to->del_swaps += f->del_swaps;
  to->del_toggles += f->del_toggles;
}

int main(int argc, char **argv) {
  options_t o;
  bench_set_prog(argv[0]);
  parse_options(argc, argv, &o);
  chooser_t chooser;
  chooser_init(&chooser, &o);

  tm_bench_start(o.design, o.cm, (unsigned)o.threads);
  char err[512];

  sb7_params_t p;
  sb7_params_default(&p, (unsigned)o.scale);
  p.seed = o.seed;
  if (o.atomic != 0) p.atomic_per_comp = (unsigned)o.atomic;
  sb7_t *db = sb7_create(&p, err, sizeof err);
  if (db == NULL) bench_die(BENCH_EXIT_FAIL, "cannot build the structure: %s", err);
  sb7_shape_t initial;
  if (sb7_check(db, NULL, &initial, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_FAIL, "invariant violated after construction: %s", err);
  sb7_tally_t tally = {0};
  double t1_ms = measure_t1(db, o.seed, &tally);
  tm_stats_reset();

  worker_t *w = aligned_alloc(64, sizeof *w * (size_t)o.threads);
  if (w == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  bench_gate_t gate;
  bench_gate_init(&gate);
  for (long i = 0; i < o.threads; i++) {
    w[i] = (worker_t){.gate = &gate, .chooser = &chooser, .id = (unsigned)i};
    if (sb7_thread_init(&w[i].ctx, db, o.seed, (uint64_t)i + 1, &gate.stop) != 0)
      bench_die(BENCH_EXIT_FAIL, "out of memory");
  }
  double elapsed =
      bench_run_workers((unsigned)o.threads, worker_main, w, sizeof *w, &gate, o.duration_ms);

  for (long i = 0; i < o.threads; i++)
    tally_sum(&tally, &w[i].ctx.total);
  sb7_shape_t final = {0};
  int bad = sb7_check(db, &tally, &final, err, sizeof err);
  report(&o, &p, w, &tally, &initial, &final, elapsed, t1_ms, bad ? err : "ok",
         chooser.read_only_pct);
  if (bad) bench_die(BENCH_EXIT_FAIL, "invariant violated: %s", err);

  for (long i = 0; i < o.threads; i++)
    sb7_thread_fini(&w[i].ctx);
  free(w);
  sb7_destroy(db);
  tm_thread_exit();
  tm_sys_fini();
  return 0;
}
