/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc_bench.c: the in-process TPC-C driver (tpcc-schedstm).
 *
 * Threads are terminals: thread i has home warehouse i % warehouses + 1
 * and runs profiles drawn from a mix (equal weights by default, as
 * [Silvestri17] ran them), each in its own transaction with the profile's
 * priority ([Silvestri17]'s mapping unless --priorities says otherwise),
 * for a duration or a count of transactions per thread, with no think or
 * keying time. Prints one JSON object on stdout: the run's configuration,
 * the engine's counters and, per profile, its priority, commits,
 * rollbacks, aborted attempts, throughput and mean and largest latency.
 * --check runs the consistency checks (tpcc_check) after the run.
 * Exit status: 0 ok, 1 failed run or check, 2 bad command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <schedstm/schedstm.h>

#include "bench_report.h"
#include "bench_util.h"
#include "tm_runtime.h"
#include "tpcc.h"

#define MAX_THREADS 1024

typedef struct options {
  tpcc_scale_t scale;
  long threads, duration_ms, count;
  uint64_t seed;
  unsigned weights[TPCC_NPROFILES];
  int priorities[TPCC_NPROFILES];
  bool check;
  const char *corrupt;
  const char *design, *cm;
} options_t;

/* One profile's tallies on one thread. */
typedef struct pstats {
  uint64_t committed, rolled_back, attempts;
  uint64_t ns_total, ns_max;
} pstats_t;

typedef struct worker {
  bench_thread_result_t res; /* first: bench_report reads it by stride */
  tpcc_db_t *db;
  bench_gate_t *gate;
  const options_t *opt;
  unsigned id;
  pstats_t p[TPCC_NPROFILES];
  int failed; /* an unexpected result: the run fails */
  char why[160];
} __attribute__((aligned(64))) worker_t;

enum {
  OPT_LIST_CMS = TM_OPT_LIST_CMS,
  OPT_DISTRICTS = 0x200,
  OPT_CUSTOMERS,
  OPT_ITEMS,
  OPT_ORDERS,
  OPT_SMALL,
  OPT_CORRUPT,
  OPT_PRIORITIES
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: tpcc-schedstm [options]\n"
          "  -n, --threads N       terminal threads (default 1)\n"
          "  -d, --duration-ms MS  run for MS milliseconds (default 1000)\n"
          "  -N, --count N         run N transactions per thread instead of a duration\n"
          "  -w, --warehouses N    warehouses (default 1)\n"
          "      --districts N     districts per warehouse, 1..10 (default 10)\n"
          "      --customers N     customers per district (default 3000)\n"
          "      --items N         items (default 100000)\n"
          "      --orders N        initial orders per district, <= customers (default:\n"
          "                        customers)\n"
          "      --small           test scale: 2 warehouses, 3 districts, 60 customers\n"
          "                        and orders, 200 items (the options above override it)\n"
          "  -m, --mix A,B,C,D,E   weights of new-order, payment, order-status, delivery,\n"
          "                        stock-level (default 1,1,1,1,1; the specification's\n"
          "                        minimum mix is about 45,43,4,4,4)\n"
          "      --priorities A,B,C,D,E  priorities of the same profiles (default\n"
          "                        3,5,4,1,2: delivery 1 ... payment 5)\n"
          "  -s, --seed SEED       random seed, 0 = time based (default 1)\n"
          "  -c, --check           check the consistency conditions after the run\n"
          "      --corrupt NAME    break one invariant after the run, then check (tests of\n"
          "                        --check; NAME: %s)\n"
          "  -D, --design etl|ctl  design\n"
          "  -C, --cm NAME         contention manager (--list-cms)\n"
          "      --list-cms        print the contention managers and exit\n"
          "  -h, --help            this help\n"
          "Prints one JSON object on stdout. Exit status: 0 ok, 1 failed run or check,\n"
          "2 bad command line.\n",
          tpcc_corruptions);
}

/* "a,b,c,d,e": five integers in [min, max] into out. */
static void parse_five(const char *arg, const char *opt, long min, long max, long out[5]) {
  char buf[256];
  if (strlen(arg) >= sizeof buf) bench_die(BENCH_EXIT_USAGE, "option %s: value too long", opt);
  strcpy(buf, arg);
  char *save = NULL, *tok = strtok_r(buf, ",", &save);
  int k = 0;
  for (; tok != NULL; tok = strtok_r(NULL, ",", &save)) {
    if (k == TPCC_NPROFILES)
      bench_die(BENCH_EXIT_USAGE, "option %s: '%s' has more than 5 values", opt, arg);
    out[k++] = bench_parse_long(tok, opt, min, max);
  }
  if (k != TPCC_NPROFILES)
    bench_die(BENCH_EXIT_USAGE, "option %s: '%s' needs 5 comma-separated values", opt, arg);
}

/* Is name one of tpcc_corruptions' comma-separated names? */
static bool corruption_known(const char *name) {
  size_t n = strlen(name);
  for (const char *p = tpcc_corruptions; n > 0 && *p != '\0';) {
    size_t k = strcspn(p, ",");
    if (k == n && strncmp(p, name, n) == 0) return true;
    p += k;
    p += strspn(p, ", ");
  }
  return false;
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.threads = 1, .duration_ms = 1000, .seed = 1};
  for (int p = 0; p < TPCC_NPROFILES; p++) {
    o->weights[p] = 1;
    o->priorities[p] = tpcc_default_priority((tpcc_profile_t)p);
  }
  bool small = false;
  long w = -1, dists = -1, cust = -1, items = -1, orders = -1;
  static const struct option longopts[] = {{"threads", required_argument, NULL, 'n'},
                                           {"duration-ms", required_argument, NULL, 'd'},
                                           {"count", required_argument, NULL, 'N'},
                                           {"warehouses", required_argument, NULL, 'w'},
                                           {"districts", required_argument, NULL, OPT_DISTRICTS},
                                           {"customers", required_argument, NULL, OPT_CUSTOMERS},
                                           {"items", required_argument, NULL, OPT_ITEMS},
                                           {"orders", required_argument, NULL, OPT_ORDERS},
                                           {"small", no_argument, NULL, OPT_SMALL},
                                           {"mix", required_argument, NULL, 'm'},
                                           {"priorities", required_argument, NULL, OPT_PRIORITIES},
                                           {"seed", required_argument, NULL, 's'},
                                           {"check", no_argument, NULL, 'c'},
                                           {"corrupt", required_argument, NULL, OPT_CORRUPT},
                                           {"design", required_argument, NULL, 'D'},
                                           {"cm", required_argument, NULL, 'C'},
                                           {"list-cms", no_argument, NULL, OPT_LIST_CMS},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  long five[TPCC_NPROFILES];
  int c;
  while ((c = getopt_long(argc, argv, "n:d:N:w:m:s:cD:C:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'n': o->threads = bench_parse_long(optarg, "-n/--threads", 1, MAX_THREADS); break;
    case 'd': o->duration_ms = bench_parse_long(optarg, "-d/--duration-ms", 1, 86400000L); break;
    case 'N': o->count = bench_parse_long(optarg, "-N/--count", 1, 1L << 40); break;
    case 'w': w = bench_parse_long(optarg, "-w/--warehouses", 1, 1000); break;
    case OPT_DISTRICTS:
      dists = bench_parse_long(optarg, "--districts", 1, TPCC_MAX_DISTRICTS);
      break;
    case OPT_CUSTOMERS: cust = bench_parse_long(optarg, "--customers", 1, 1000000); break;
    case OPT_ITEMS: items = bench_parse_long(optarg, "--items", 1, 10000000); break;
    case OPT_ORDERS: orders = bench_parse_long(optarg, "--orders", 1, 1000000); break;
    case OPT_SMALL: small = true; break;
    case 'm':
      parse_five(optarg, "-m/--mix", 0, 1000000, five);
      long total = 0;
      for (int p = 0; p < TPCC_NPROFILES; p++) {
        o->weights[p] = (unsigned)five[p];
        total += five[p];
      }
      if (total == 0) bench_die(BENCH_EXIT_USAGE, "option -m/--mix: every weight is 0");
      break;
    case OPT_PRIORITIES:
      parse_five(optarg, "--priorities", -1000000, 1000000, five);
      for (int p = 0; p < TPCC_NPROFILES; p++)
        o->priorities[p] = (int)five[p];
      break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, __LONG_MAX__); break;
    case 'c': o->check = true; break;
    case OPT_CORRUPT:
      if (!corruption_known(optarg))
        bench_die(BENCH_EXIT_USAGE, "option --corrupt: unknown corruption '%s' (valid: %s)", optarg,
                  tpcc_corruptions);
      o->corrupt = optarg;
      o->check = true;
      break;
    case 'D': o->design = optarg; break;
    case 'C': o->cm = optarg; break;
    case OPT_LIST_CMS: tm_list_cms_and_exit();
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  if (small)
    tpcc_scale_small(&o->scale);
  else
    tpcc_scale_default(&o->scale);
  if (w >= 0) o->scale.warehouses = (uint32_t)w;
  if (dists >= 0) o->scale.districts = (uint32_t)dists;
  if (cust >= 0) o->scale.customers = (uint32_t)cust;
  if (items >= 0) o->scale.items = (uint32_t)items;
  if (orders >= 0)
    o->scale.orders = (uint32_t)orders;
  else if (o->scale.orders > o->scale.customers)
    o->scale.orders = o->scale.customers;
  char err[256];
  if (tpcc_scale_validate(&o->scale, err, sizeof err) != 0) bench_die(BENCH_EXIT_USAGE, "%s", err);
  tm_bench_check_options(argc, argv, optind, o->threads, &o->seed);
}

static tpcc_profile_t pick_profile(tpcc_rng_t *r, const unsigned *weights, uint64_t total) {
  uint64_t x = tpcc_rng_next(r) % total;
  for (int p = 0; p < TPCC_NPROFILES; p++) {
    if (x < weights[p]) return (tpcc_profile_t)p;
    x -= weights[p];
  }
  return TPCC_NEW_ORDER; /* unreachable: x < total */
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The transaction's body: tpcc_tx_body, counting the attempts (a tally of
 * the driver's, on purpose outside the transaction). */
typedef struct attempt {
  tpcc_db_t *db;
  const tpcc_input_t *in;
  tpcc_output_t *out;
  uint64_t *attempts;
} attempt_t;

static void attempt_body(void *arg) {
  attempt_t *a = arg;
  (*a->attempts)++;
  tpcc_tx_body(a->db, a->in, a->out);
}

static void one_transaction(worker_t *wk, tpcc_rng_t *rng, uint64_t total_weight) {
  const options_t *o = wk->opt;
  tpcc_profile_t p = pick_profile(rng, o->weights, total_weight);
  uint32_t home = wk->id % o->scale.warehouses + 1;
  tpcc_input_t in;
  tpcc_output_t out;
  tpcc_input_generate(wk->db, rng, p, home, (int64_t)time(NULL), &in);
  pstats_t *ps = &wk->p[p];
  sstm_attr_t attr = {.read_only = tpcc_profile_read_only(p) != 0,
                      .priority = o->priorities[p],
                      .tag = (uint32_t)p};
  attempt_t a = {wk->db, &in, &out, &ps->attempts};
  uint64_t t0 = now_ns();
  int rc = sstm_run(&attr, attempt_body, &a);
  uint64_t dt = now_ns() - t0;
  ps->ns_total += dt;
  if (dt > ps->ns_max) ps->ns_max = dt;
  if (rc == 0 && out.status == TPCC_OK) {
    ps->committed++;
  } else if (rc == SSTM_ECANCELED && out.status == TPCC_ROLLED_BACK && p == TPCC_NEW_ORDER) {
    ps->rolled_back++;
  } else if (!wk->failed) {
    wk->failed = 1;
    snprintf(wk->why, sizeof wk->why, "%s: sstm_run %s, status %d", tpcc_profile_name(p),
             sstm_strerror(rc), out.status);
  }
  wk->res.ops++;
}

static void *worker_main(void *arg) {
  worker_t *wk = arg;
  const options_t *o = wk->opt;
  tpcc_rng_t rng;
  tpcc_rng_seed(&rng, o->seed, wk->id + 1);
  uint64_t total = 0;
  for (int p = 0; p < TPCC_NPROFILES; p++)
    total += o->weights[p];
  tm_thread_enter();
  bench_gate_wait(wk->gate);
  if (o->count > 0) {
    for (long i = 0; i < o->count && !wk->failed; i++)
      one_transaction(wk, &rng, total);
  } else {
    while (!bench_gate_stopped(wk->gate) && !wk->failed)
      one_transaction(wk, &rng, total);
  }
  tm_thread_counts(&wk->res.counts);
  tm_thread_exit();
  return NULL;
}

/* Run the workers: for the duration, or until each has run its count. */
static double run_workers(worker_t *wk, const options_t *o, bench_gate_t *gate) {
  if (o->count == 0)
    return bench_run_workers((unsigned)o->threads, worker_main, wk, sizeof *wk, gate,
                             o->duration_ms);
  pthread_t *th = calloc((size_t)o->threads, sizeof *th);
  if (th == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  for (long i = 0; i < o->threads; i++) {
    int rc = pthread_create(&th[i], NULL, worker_main, &wk[i]);
    if (rc != 0) bench_die(BENCH_EXIT_FAIL, "pthread_create: %s", strerror(rc));
  }
  bench_gate_open(gate, (unsigned)o->threads);
  double start = bench_now();
  for (long i = 0; i < o->threads; i++)
    pthread_join(th[i], NULL);
  free(th);
  return bench_now() - start;
}

static void report(const options_t *o, const worker_t *wk, double elapsed, double populate_s,
                   const char *check) {
  tm_counts_t total;
  tm_total_counts(&total);
  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_report_header(&j, "tpcc", (unsigned)o->threads, o->count > 0 ? 0 : o->duration_ms);
  bench_json_i64(&j, "count_per_thread", o->count);
  bench_json_u64(&j, "warehouses", o->scale.warehouses);
  bench_json_u64(&j, "districts", o->scale.districts);
  bench_json_u64(&j, "customers", o->scale.customers);
  bench_json_u64(&j, "items", o->scale.items);
  bench_json_u64(&j, "orders", o->scale.orders);
  bench_json_u64(&j, "seed", o->seed);
  bench_json_dbl(&j, "populate_s", populate_s);
  bench_report_results(&j, &total, &wk[0].res, sizeof *wk, (unsigned)o->threads, elapsed);
  bench_json_arr_open(&j, "profiles");
  for (int p = 0; p < TPCC_NPROFILES; p++) {
    pstats_t s = {0};
    for (long i = 0; i < o->threads; i++) {
      const pstats_t *x = &wk[i].p[p];
      s.committed += x->committed;
      s.rolled_back += x->rolled_back;
      s.attempts += x->attempts;
      s.ns_total += x->ns_total;
      if (x->ns_max > s.ns_max) s.ns_max = x->ns_max;
    }
    uint64_t done = s.committed + s.rolled_back;
    bench_json_obj_open(&j, NULL);
    bench_json_str(&j, "profile", tpcc_profile_name((tpcc_profile_t)p));
    bench_json_i64(&j, "priority", o->priorities[p]);
    bench_json_u64(&j, "weight", o->weights[p]);
    bench_json_u64(&j, "committed", s.committed);
    bench_json_u64(&j, "rolled_back", s.rolled_back);
    bench_json_u64(&j, "aborted_attempts", s.attempts - done);
    bench_json_dbl(&j, "per_s", elapsed > 0 ? (double)done / elapsed : 0.0);
    bench_json_dbl(&j, "mean_us", done > 0 ? (double)s.ns_total / (double)done / 1e3 : 0.0);
    bench_json_dbl(&j, "max_us", (double)s.ns_max / 1e3);
    bench_json_obj_close(&j);
  }
  bench_json_arr_close(&j);
  bench_json_str(&j, "check", check);
  bench_json_end(&j);
}

int main(int argc, char **argv) {
  options_t o;
  bench_set_prog(argv[0]);
  parse_options(argc, argv, &o);
  tm_bench_start(o.design, o.cm, (unsigned)o.threads);

  char err[1024];
  tpcc_db_t *db;
  double t0 = bench_now();
  if (tpcc_db_create(&o.scale, o.seed, &db, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_FAIL, "%s", err);
  double populate_s = bench_now() - t0;
  tm_stats_reset();

  worker_t *wk = aligned_alloc(64, sizeof *wk * (size_t)o.threads);
  if (wk == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  bench_gate_t gate;
  bench_gate_init(&gate);
  for (long i = 0; i < o.threads; i++)
    wk[i] = (worker_t){.db = db, .gate = &gate, .opt = &o, .id = (unsigned)i};
  double elapsed = run_workers(wk, &o, &gate);

  const char *check = "skipped";
  long violations = 0;
  if (o.corrupt != NULL && tpcc_corrupt(db, o.corrupt, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_FAIL, "--corrupt: %s", err);
  if (o.check) {
    violations = tpcc_check(db, err, sizeof err);
    check = err;
  }
  report(&o, wk, elapsed, populate_s, check);
  if (fflush(stdout) != 0 || ferror(stdout)) bench_die(BENCH_EXIT_FAIL, "cannot write the result");
  for (long i = 0; i < o.threads; i++)
    if (wk[i].failed) bench_die(BENCH_EXIT_FAIL, "thread %ld: %s", i, wk[i].why);
  if (violations != 0)
    bench_die(BENCH_EXIT_FAIL, "consistency check failed (%ld violations): %s", violations, err);
  tpcc_db_destroy(db);
  free(wk);
  tm_thread_exit();
  tm_sys_fini();
  return 0;
}
