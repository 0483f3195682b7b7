/* SPDX-License-Identifier: MIT */
/* bench/bank.c: bank-transfer benchmark (bank-schedstm, bank-itm,
 * bank-seq).
 *
 * Accounts hold balances that transfers move between two random accounts
 * (balances may go negative); a percentage of operations are read-only
 * audits that sum every account inside one transaction and check that the
 * total never changes, i.e. that the back-end gives them a consistent
 * snapshot. Prints one JSON object on stdout.
 * Exit status: 0 ok, 1 inconsistent total, 2 bad command line. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_report.h"
#include "bench_util.h"
#include "tm.h"
#include "tm_runtime.h"

#define MAX_THREADS 1024
#define INITIAL_BALANCE 1000

typedef struct options {
  long accounts, audit, max_amount, threads, duration_ms;
  uint64_t seed;
  const char *design, *cm;
} options_t;

typedef struct worker {
  bench_thread_result_t res; /* first: bench_report reads it by stride */
  long *bank;
  bench_gate_t *gate;
  const options_t *opt;
  unsigned id;
  uint64_t transfers, audits;
} __attribute__((aligned(64))) worker_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: bank-%s [options]\n"
          "  -a, --accounts N      accounts (default 1024)\n"
          "  -p, --audit P         percentage of read-only audit transactions (default 10)\n"
          "  -x, --max-amount N    largest amount moved by a transfer (default 10)\n"
          "  -n, --threads N       threads (default 1)\n"
          "  -d, --duration-ms MS  duration in milliseconds (default 1000)\n"
          "  -s, --seed SEED       random seed, 0 = time based (default 1)\n"
          "  -D, --design etl|ctl  design (schedstm only)\n"
          "  -C, --cm NAME         contention manager (schedstm only; --list-cms)\n"
          "      --list-cms        print the contention managers and exit (schedstm only)\n"
          "  -h, --help            this help\n"
          "Prints one JSON object on stdout. Exit status: 0 ok, 1 wrong result,\n"
          "2 bad command line.\n",
          tm_backend_name());
}

static void parse_options(int argc, char **argv, options_t *o) {
  *o = (options_t){.accounts = 1024,
                   .audit = 10,
                   .max_amount = 10,
                   .threads = 1,
                   .duration_ms = 1000,
                   .seed = 1};
  static const struct option longopts[] = {{"accounts", required_argument, NULL, 'a'},
                                           {"audit", required_argument, NULL, 'p'},
                                           {"max-amount", required_argument, NULL, 'x'},
                                           {"threads", required_argument, NULL, 'n'},
                                           {"duration-ms", required_argument, NULL, 'd'},
                                           {"seed", required_argument, NULL, 's'},
                                           {"design", required_argument, NULL, 'D'},
                                           {"cm", required_argument, NULL, 'C'},
                                           {"list-cms", no_argument, NULL, TM_OPT_LIST_CMS},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "a:p:x:n:d:s:D:C:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'a': o->accounts = bench_parse_long(optarg, "-a/--accounts", 2, 1L << 30); break;
    case 'p': o->audit = bench_parse_long(optarg, "-p/--audit", 0, 100); break;
    case 'x': o->max_amount = bench_parse_long(optarg, "-x/--max-amount", 1, 1L << 30); break;
    case 'n': o->threads = bench_parse_long(optarg, "-n/--threads", 1, MAX_THREADS); break;
    case 'd': o->duration_ms = bench_parse_long(optarg, "-d/--duration-ms", 1, 86400000L); break;
    case 's': o->seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, __LONG_MAX__); break;
    case 'D': o->design = optarg; break;
    case 'C': o->cm = optarg; break;
    case TM_OPT_LIST_CMS: tm_list_cms_and_exit();
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  tm_bench_check_options(argc, argv, optind, o->threads, &o->seed);
}

/* Move amount from account src to account dst in one transaction. */
static void transfer(long *bank, long src, long dst, long amount) {
  TM_ATOMIC_BEGIN(0)
  long s = TM_LOAD_LONG(&bank[src]);
  long d = TM_LOAD_LONG(&bank[dst]);
  TM_STORE_LONG(&bank[src], s - amount);
  TM_STORE_LONG(&bank[dst], d + amount);
  TM_ATOMIC_END();
}

/* Sum of every balance, read in one read-only transaction. */
static long audit_total(long *bank, long n) {
  TM_VOLATILE long total;
  TM_ATOMIC_BEGIN(1)
  long sum = 0;
  for (long i = 0; i < n; i++)
    sum += TM_LOAD_LONG(&bank[i]);
  total = sum;
  TM_ATOMIC_END();
  return total;
}

/* Non-transactional sum, once every worker has stopped. */
static long plain_total(const long *bank, long n) {
  long sum = 0;
  for (long i = 0; i < n; i++)
    sum += bank[i];
  return sum;
}

/* One operation: an audit with probability audit %, else a transfer. */
static void do_operation(worker_t *w, bench_rng_t *rng) {
  const options_t *o = w->opt;
  if ((long)bench_rng_below(rng, 100) < o->audit) {
    long total = audit_total(w->bank, o->accounts);
    if (total != o->accounts * INITIAL_BALANCE)
      bench_die(BENCH_EXIT_FAIL, "audit saw total %ld, expected %ld: inconsistent snapshot", total,
                o->accounts * INITIAL_BALANCE);
    w->audits++;
  } else {
    long src = (long)bench_rng_below(rng, (uint64_t)o->accounts);
    long dst = (long)bench_rng_below(rng, (uint64_t)o->accounts - 1);
    dst += dst >= src; /* distinct from src, uniform over the others */
    long amount = 1 + (long)bench_rng_below(rng, (uint64_t)o->max_amount);
    transfer(w->bank, src, dst, amount);
    w->transfers++;
  }
  w->res.ops++;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bench_rng_t rng;
  bench_rng_seed(&rng, w->opt->seed, w->id + 1);
  TM_THREAD_ENTER();
  bench_gate_wait(w->gate);
  while (!bench_gate_stopped(w->gate))
    do_operation(w, &rng);
  tm_thread_counts(&w->res.counts);
  TM_THREAD_EXIT();
  return NULL;
}

static void report(const options_t *o, const worker_t *w, double elapsed, long final_total) {
  tm_counts_t total;
  tm_total_counts(&total);
  uint64_t transfers = 0, audits = 0;
  for (long i = 0; i < o->threads; i++) {
    transfers += w[i].transfers;
    audits += w[i].audits;
  }
  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_report_header(&j, "bank", (unsigned)o->threads, o->duration_ms);
  bench_json_str(&j, "structure", "bank");
  bench_json_i64(&j, "accounts", o->accounts);
  bench_json_i64(&j, "audit", o->audit);
  bench_json_i64(&j, "update", 100 - o->audit);
  bench_json_i64(&j, "max_amount", o->max_amount);
  bench_json_u64(&j, "seed", o->seed);
  bench_report_results(&j, &total, &w[0].res, sizeof *w, (unsigned)o->threads, elapsed);
  bench_json_u64(&j, "transfers", transfers);
  bench_json_u64(&j, "audits", audits);
  bench_json_i64(&j, "final_total", final_total);
  bench_json_i64(&j, "expected_total", o->accounts * INITIAL_BALANCE);
  bench_json_end(&j);
}

int main(int argc, char **argv) {
  options_t o;
  bench_set_prog(argv[0]);
  parse_options(argc, argv, &o);

  tm_bench_start(o.design, o.cm, (unsigned)o.threads);

  long *bank = malloc(sizeof *bank * (size_t)o.accounts);
  worker_t *w = aligned_alloc(64, sizeof *w * (size_t)o.threads);
  if (bank == NULL || w == NULL) bench_die(BENCH_EXIT_FAIL, "out of memory");
  for (long i = 0; i < o.accounts; i++)
    bank[i] = INITIAL_BALANCE;
  tm_stats_reset();

  bench_gate_t gate;
  bench_gate_init(&gate);
  for (long i = 0; i < o.threads; i++)
    w[i] = (worker_t){.bank = bank, .gate = &gate, .opt = &o, .id = (unsigned)i};
  double elapsed =
      bench_run_workers((unsigned)o.threads, worker_main, w, sizeof *w, &gate, o.duration_ms);

  long final_total = plain_total(bank, o.accounts);
  report(&o, w, elapsed, final_total);
  if (final_total != o.accounts * INITIAL_BALANCE)
    bench_die(BENCH_EXIT_FAIL, "final total %ld != %ld", final_total, o.accounts * INITIAL_BALANCE);
  free(bank);
  free(w);
  tm_thread_exit();
  tm_sys_fini();
  return 0;
}
