/* SPDX-License-Identifier: MIT */
/* bench/server/server.c: sstm-server, a TCP request server on the
 * preemptive executor (schedstm/exec.h) and TPC-C (bench/tpcc/tpcc.h):
 * the socket pool and request receivers of [Silvestri17], Fig. 1.
 *
 * I/O threads, each with its own libuv loop and its own listening socket
 * on the same port (SO_REUSEPORT: the kernel spreads the connections),
 * read frames (docs/protocol.md), decode and validate them, and submit each
 * request to the executor with its priority. Admission is by priority: a
 * request the executor cannot take yet (sstm_exec_try_submit() returns
 * SSTM_EAGAIN: no context free for its priority, see
 * sstm_exec_config_t::reserve_pct) waits in its loop's parked list of its
 * priority, and a loop submits its parked requests highest priority first
 * whenever a completion frees a context. A loop never blocks in a
 * submission: a blocked loop would hold every request behind the one it
 * waits for, an urgent one included, whatever the executor's admission
 * does. The parked lists are bounded: past PARK_LIMIT requests a loop
 * stops reading the connection that sent the last one, which pushes back
 * on the clients through TCP ([Silvestri17]'s admission: no unbounded
 * queue anywhere), and reads it again below PARK_LIMIT / 2. A request is
 * *accepted* once it is parked: from then on it runs to its end whatever
 * its client does. The executor's
 * completion callback (on a worker) queues the finished request to the
 * loop that read it and wakes it (uv_async_send), which writes the reply;
 * if the client has gone the reply is dropped and counted.
 *
 * Why libuv and not a hand-written epoll loop: the loop only moves small
 * frames between sockets and the executor; libuv gives the same epoll
 * underneath with buffered writes, write-queue sizes for back-pressure and
 * a thread-safe wake-up, in a tested library the project already depends
 * on for this program.
 *
 * SIGTERM or SIGINT (taken by the main thread with sigtimedwait) drains: the
 * listeners close, frames not yet accepted get a PROTO_E_SHUTDOWN error,
 * every accepted request runs to its end and its reply is written, then the
 * connections are shut down, the executor destroyed, the statistics printed
 * as one JSON object on stdout and the process exits 0 (1 if --check found
 * the database inconsistent). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <schedstm/exec.h>
#include <schedstm/schedstm.h>

#include "bench_util.h"
#include "proto.h"
#include "tpcc.h"
#include "tpcc_wire.h"

#define MAX_IO_THREADS 64
/* A connection whose unsent replies exceed this stops being read until
 * they drain (a client that sends but does not read cannot make the server
 * buffer without bound). */
#define WRITE_QUEUE_LIMIT (1u << 20)
/* How long the drain waits for clients to take their last replies. */
#define DRAIN_WRITE_TIMEOUT_MS 5000
/* Requests a loop may hold parked before it stops reading (see above). */
#define PARK_LIMIT 4096u
/* The executor's priority-graded admission unless SCHEDSTM_EXEC_RESERVE_PCT
 * or --reserve-pct says otherwise: a server takes requests at several
 * priorities under overload, which is what the reserve is for
 * (sstm_exec_config_t::reserve_pct). */
#define SERVER_RESERVE_PCT 25u
/* A loop that could not submit all its parked requests looks again after
 * this long even if no completion wakes it: a completion is queued to the
 * loop just before its context is freed, so the loop's retry can come too
 * early, and the last completions of a run are followed by no other. */
#define PARK_RETRY_MS 1
#define INBUF_INITIAL 16384

typedef struct options {
  const char *host;
  long port, io_threads;
  bool tpcc, check;
  tpcc_scale_t scale;
  uint64_t seed;
  sstm_exec_config_t ecfg;
  /* --demand: the TPC-C profiles' extra CPU work, as a multiple of
   * [Silvestri17]'s Table I (0: none) */
  double demand;
  /* --vclock: also measure each request's turnaround on the workers' CPU
   * clocks (see vclock_now) */
  bool vclock;
  /* --ro-profiles: order-status and stock-level run as declared read-only
   * transactions (sstm_exec_req_t::read_only), as tpcc_run runs them */
  bool ro_profiles;
} options_t;

struct io_thread;

typedef struct conn {
  uv_tcp_t tcp;
  struct io_thread *io;
  uint8_t *in;
  size_t in_len, in_cap;
  unsigned refs;             /* 1 while open + 1 per accepted request not yet replied */
  bool closing;              /* uv_close called (or about to be) */
  bool read_stopped;         /* reading paused for write back-pressure */
  bool park_stopped;         /* reading paused while its loop's parked lists are full */
  struct conn *next_stalled; /* on its loop's list of park_stopped connections */
  bool ending;               /* conn_end called: shutting down after the writes */
  bool dirty;                /* out holds frames not yet written (on its loop's list) */
  uint8_t *out;              /* frames queued in this callback, written at its end */
  size_t out_len, out_cap;
  struct conn *next_dirty;
} conn_t;

/* One request, from its decoding to its reply. */
typedef struct request {
  struct request *next; /* in a parked list, then in the completion queue */
  conn_t *conn;
  uint64_t id;
  uint8_t profile, priority; /* priority as born, 1-based */
  int rc;                    /* the executor's result */
  uint32_t spin_us;          /* null */
  tpcc_input_t in;           /* TPC-C */
  tpcc_output_t out;
  uint64_t vt_submit; /* --vclock: vclock_now() at its arrival */
  uint64_t vt_exec;   /* --vclock: vclock_now() at its submission to the executor */
  uint64_t t_arrive;  /* mono_ns() at its arrival (before it was parked) */
  size_t echo_len;
  uint8_t echo[]; /* null: the payload to send back */
} request_t;

typedef struct io_thread {
  unsigned index;
  pthread_t thread;
  uv_loop_t loop;
  uv_tcp_t listener;
  uv_async_t wake; /* completions queued, or a phase change */
  uv_timer_t drain_timer;
  int listen_fd;
  /* The last phase this loop acted on: written by the loop with release
   * (after it stopped accepting), read by the main thread with acquire. */
  atomic_uint phase_seen;
  pthread_mutex_t lock; /* protects done_head/done_tail */
  request_t *done_head, *done_tail;
  conn_t *dirty; /* connections with queued frames (this loop's thread only) */
  /* Parked requests, FIFO per executor priority, and the connections not
   * read because of them (this loop's thread only). */
  request_t *park_head[SSTM_EXEC_MAX_LEVELS], *park_tail[SSTM_EXEC_MAX_LEVELS];
  unsigned nparked;
  conn_t *stalled;
  uv_timer_t park_timer;
} io_thread_t;

/* Counters, updated with relaxed atomics: the I/O threads and the workers
 * update them, the main thread reads them after the threads joined (the
 * join orders them), except in_flight, see below. */
typedef struct counters {
  atomic_uint_fast64_t connections, frames, accepted, completed, replied, dropped, rolled_back,
      failed, null_commits_cb;
  atomic_uint_fast64_t errors[16];
  atomic_uint_fast64_t accepted_by_profile[PROTO_NPROFILES];
} counters_t;

enum { PHASE_RUN = 0, PHASE_STOP_ACCEPTING = 1, PHASE_FINISH = 2 };

static options_t opt;
static sstm_exec_t *exec;
static tpcc_db_t *db;
static io_thread_t *ios;
static counters_t ctr;
/* Requests accepted and not completed. The completion callback decrements
 * it with release after queueing the request, and the main thread's drain
 * waits for 0 with acquire: once it reads 0, every completion's queueing
 * happened before, so the FINISH phase finds them all in the queues. */
static atomic_uint_fast64_t in_flight;
static atomic_uint phase; /* PHASE_*; release by main, acquire by the loops */
/* Null requests that committed, counted inside their transactions: a
 * count the engine's atomicity vouches for (an aborted attempt adds
 * nothing), compared with the completion callbacks' count at exit. */
static uint64_t null_commits;
static _Atomic uint64_t occupancy_samples, occupancy_sum, occupancy_busy90;
/* The same samples of the executor's own pool (contexts taken: accepted
 * by the executor and not ended, summed over the levels' statistics) and
 * of the requests parked in the loops for a context (in_flight minus the
 * executor's): the first says whether the executor had work for every
 * context, the second whether the offered load left a backlog behind. */
static _Atomic uint64_t exec_occ_sum, exec_busy90, parked_sum, parked_max;
/* CLOCK_MONOTONIC of the first acceptance and of the last completion
 * (relaxed: statistics, read after the threads joined). Their difference
 * is the time the executor had work, for completions per second that do
 * not count the idle time before the first request or after the last. */
static _Atomic uint64_t first_accept_ns, last_done_ns;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void count(atomic_uint_fast64_t *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* ---- command line --------------------------------------------------------- */

static void usage(FILE *f) {
  fprintf(f,
          "usage: sstm-server --port N [options]\n"
          "  -p, --port N          TCP port, 0 = any free one (printed) (required)\n"
          "  -H, --host ADDR       address to listen on (default 127.0.0.1)\n"
          "  -i, --io-threads N    I/O threads (default 1)\n"
          "  -t, --workers N       executor workers, 0 = one per CPU (default 0)\n"
          "  -x, --contexts N      executor contexts, NUM_CONTEXTS (default %u)\n"
          "  -l, --levels N        priority levels, requests use 1..N (default 5)\n"
          "  -P, --preempt none|signal|poll|check-only  how workers are preempted\n"
          "                        (default signal; check-only: the ticks of -T are\n"
          "                        handled but never switch)\n"
          "  -T, --tick-us N       periodic tick per worker, 0 = off (default 0)\n"
          "  -c, --c-max N         preemptions before promotion to the top level,\n"
          "                        0 = never (default %u)\n"
          "  -L, --lazy            lazy promotion (one level per preemption)\n"
          "      --paused-conflict takeover|handover|inherit  a conflict with a paused\n"
          "                        transaction: abort it and take its locks over, or\n"
          "                        (handover) give the worker to it when it has the higher\n"
          "                        priority, or (inherit) also when it has done more work\n"
          "                        (default takeover)\n"
          "      --holder-level P  a transaction preempted while it holds locks is raised\n"
          "                        to priority P: resumed before the requests at P and\n"
          "                        below that have not started, preempted only from above\n"
          "                        (sstm_exec_config_t::holder_level; 0 = off, the default)\n"
          "      --ro-profiles 0|1  run order-status and stock-level as declared read-only\n"
          "                        transactions (as tpcc_run does; default 1)\n"
          "      --waiter-first 0|1  preempt a worker whose transaction waits in its policy\n"
          "                        for another's end before one that runs\n"
          "                        (sstm_exec_config_t::waiter_first; default the library's)\n"
          "      --reserve-pct N   percent of the contexts held back from priority 1 for\n"
          "                        higher ones, graded (sstm_exec_config_t::reserve_pct;\n"
          "                        default %u; 0: admission in arrival order)\n"
          "      --demand F        each TPC-C request also spins F times its profile's CPU\n"
          "                        demand in [Silvestri17]'s Table I (delivery 5 ms,\n"
          "                        stock-level 650 us, new-order 350 us, order-status\n"
          "                        10 us, payment 5 us) inside its transaction, after the\n"
          "                        profile's accesses (default 0: the profiles alone)\n"
          "      --vclock          also measure turnarounds on the executor's clock: the\n"
          "                        CPU time its workers ran between a request's arrival\n"
          "                        and its end, over the number of workers (levels_stats'\n"
          "                        vturnaround_us_mean; from its submission to the\n"
          "                        executor: vexec_turnaround_us_mean; three clock reads\n"
          "                        per worker and request)\n"
          "  -w, --warehouses N    TPC-C warehouses (default 1)\n"
          "      --districts N     districts per warehouse (default 1, as [Silvestri17])\n"
          "      --customers N     customers per district (default 3000)\n"
          "      --items N         items (default 100000)\n"
          "      --orders N        initial orders per district (default = customers)\n"
          "      --no-tpcc         serve null requests only (no database)\n"
          "      --check           check the TPC-C database after the drain (exit 1 if not\n"
          "                        consistent)\n"
          "  -s, --seed SEED       database seed (default 1)\n"
          "  -h, --help            this help\n"
          "The SCHEDSTM_* and SCHEDSTM_EXEC_* variables apply first; options override them.\n"
          "Prints 'listening on HOST:PORT' when ready; SIGTERM drains and prints the\n"
          "statistics as JSON. Exit status: 0 ok, 1 failure or inconsistent database,\n"
          "2 bad command line.\n",
          SSTM_EXEC_CONTEXTS_DEFAULT, SSTM_EXEC_CMAX_DEFAULT, SERVER_RESERVE_PCT);
}

static void parse_options(int argc, char **argv) {
  opt = (options_t){.host = "127.0.0.1",
                    .port = -1,
                    .io_threads = 1,
                    .tpcc = true,
                    .seed = 1,
                    .ro_profiles = true};
  tpcc_scale_default(&opt.scale);
  opt.scale.districts = 1;
  bool orders_set = false;
  unsigned holder = 0; /* --holder-level, a request priority */
  sstm_exec_config_default(&opt.ecfg);
  if (sstm_exec_config_from_env(&opt.ecfg) != 0)
    bench_die(BENCH_EXIT_USAGE, "%s", sstm_last_error());
  opt.ecfg.use_env = false; /* applied above, under the options */
  if (!getenv("SCHEDSTM_EXEC_RESERVE_PCT")) opt.ecfg.reserve_pct = SERVER_RESERVE_PCT;
  opt.ecfg.levels = 5;
  if (getenv("SCHEDSTM_EXEC_LEVELS")) {
    sstm_exec_config_t env;
    sstm_exec_config_default(&env);
    (void)sstm_exec_config_from_env(&env);
    opt.ecfg.levels = env.levels;
  }
  enum {
    OPT_DISTRICTS = 256,
    OPT_CUSTOMERS,
    OPT_ITEMS,
    OPT_ORDERS,
    OPT_NO_TPCC,
    OPT_CHECK,
    OPT_PAUSED,
    OPT_DEMAND,
    OPT_VCLOCK,
    OPT_RESERVE,
    OPT_HOLDER,
    OPT_WAITER,
    OPT_RO
  };
  static const struct option longopts[] = {{"port", required_argument, NULL, 'p'},
                                           {"host", required_argument, NULL, 'H'},
                                           {"io-threads", required_argument, NULL, 'i'},
                                           {"workers", required_argument, NULL, 't'},
                                           {"contexts", required_argument, NULL, 'x'},
                                           {"levels", required_argument, NULL, 'l'},
                                           {"preempt", required_argument, NULL, 'P'},
                                           {"tick-us", required_argument, NULL, 'T'},
                                           {"c-max", required_argument, NULL, 'c'},
                                           {"lazy", no_argument, NULL, 'L'},
                                           {"warehouses", required_argument, NULL, 'w'},
                                           {"districts", required_argument, NULL, OPT_DISTRICTS},
                                           {"customers", required_argument, NULL, OPT_CUSTOMERS},
                                           {"items", required_argument, NULL, OPT_ITEMS},
                                           {"orders", required_argument, NULL, OPT_ORDERS},
                                           {"no-tpcc", no_argument, NULL, OPT_NO_TPCC},
                                           {"check", no_argument, NULL, OPT_CHECK},
                                           {"paused-conflict", required_argument, NULL, OPT_PAUSED},
                                           {"demand", required_argument, NULL, OPT_DEMAND},
                                           {"reserve-pct", required_argument, NULL, OPT_RESERVE},
                                           {"holder-level", required_argument, NULL, OPT_HOLDER},
                                           {"waiter-first", required_argument, NULL, OPT_WAITER},
                                           {"ro-profiles", required_argument, NULL, OPT_RO},
                                           {"vclock", no_argument, NULL, OPT_VCLOCK},
                                           {"seed", required_argument, NULL, 's'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "p:H:i:t:x:l:P:T:c:Lw:s:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'p': opt.port = bench_parse_long(optarg, "-p/--port", 0, 65535); break;
    case 'H': opt.host = optarg; break;
    case 'i':
      opt.io_threads = bench_parse_long(optarg, "-i/--io-threads", 1, MAX_IO_THREADS);
      break;
    case 't':
      opt.ecfg.workers =
          (unsigned)bench_parse_long(optarg, "-t/--workers", 0, SSTM_EXEC_MAX_WORKERS);
      break;
    case 'x':
      opt.ecfg.contexts =
          (unsigned)bench_parse_long(optarg, "-x/--contexts", 1, SSTM_EXEC_MAX_CONTEXTS);
      break;
    case 'l':
      opt.ecfg.levels = (unsigned)bench_parse_long(optarg, "-l/--levels", 1, SSTM_EXEC_MAX_LEVELS);
      break;
    case 'P':
      if (strcmp(optarg, "none") == 0)
        opt.ecfg.preempt = SSTM_EXEC_PREEMPT_NONE;
      else if (strcmp(optarg, "signal") == 0)
        opt.ecfg.preempt = SSTM_EXEC_PREEMPT_SIGNAL;
      else if (strcmp(optarg, "poll") == 0)
        opt.ecfg.preempt = SSTM_EXEC_PREEMPT_POLL;
      else if (strcmp(optarg, "check-only") == 0)
        opt.ecfg.preempt = SSTM_EXEC_PREEMPT_CHECK_ONLY;
      else
        bench_die(BENCH_EXIT_USAGE,
                  "option -P/--preempt: '%s' is not none, signal, poll or check-only", optarg);
      break;
    case 'T': {
      long t = bench_parse_long(optarg, "-T/--tick-us", 0, 1000000);
      if (t != 0 && t < 10)
        bench_die(BENCH_EXIT_USAGE, "option -T/--tick-us: %ld is below 10 (0 = off)", t);
      opt.ecfg.tick_us = (unsigned)t;
      break;
    }
    case 'c': opt.ecfg.c_max = (unsigned)bench_parse_long(optarg, "-c/--c-max", 0, 1000000); break;
    case 'L': opt.ecfg.lazy_promotion = true; break;
    case 'w':
      opt.scale.warehouses = (uint32_t)bench_parse_long(optarg, "-w/--warehouses", 1, 1000);
      break;
    case OPT_DISTRICTS:
      opt.scale.districts =
          (uint32_t)bench_parse_long(optarg, "--districts", 1, TPCC_MAX_DISTRICTS);
      break;
    case OPT_CUSTOMERS:
      opt.scale.customers = (uint32_t)bench_parse_long(optarg, "--customers", 1, 3000);
      break;
    case OPT_ITEMS:
      opt.scale.items = (uint32_t)bench_parse_long(optarg, "--items", 1, 100000);
      break;
    case OPT_ORDERS:
      opt.scale.orders = (uint32_t)bench_parse_long(optarg, "--orders", 1, 3000);
      orders_set = true;
      break;
    case OPT_NO_TPCC: opt.tpcc = false; break;
    case OPT_CHECK: opt.check = true; break;
    case OPT_PAUSED:
      if (strcmp(optarg, "takeover") == 0)
        opt.ecfg.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_TAKEOVER;
      else if (strcmp(optarg, "handover") == 0)
        opt.ecfg.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_HANDOVER;
      else if (strcmp(optarg, "inherit") == 0)
        opt.ecfg.paused_conflict = SSTM_EXEC_PAUSED_CONFLICT_INHERIT;
      else
        bench_die(BENCH_EXIT_USAGE,
                  "option --paused-conflict: '%s' is not takeover, handover or inherit", optarg);
      break;
    case OPT_DEMAND: {
      char *end;
      errno = 0;
      double d = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(d >= 0 && d <= 100))
        bench_die(BENCH_EXIT_USAGE, "option --demand: '%s' is not a number in 0..100", optarg);
      opt.demand = d;
      break;
    }
    case OPT_VCLOCK: opt.vclock = true; break;
    case OPT_RESERVE:
      opt.ecfg.reserve_pct =
          (unsigned)bench_parse_long(optarg, "--reserve-pct", 0, SSTM_EXEC_RESERVE_PCT_MAX);
      break;
    case OPT_HOLDER:
      holder = (unsigned)bench_parse_long(optarg, "--holder-level", 0, SSTM_EXEC_MAX_LEVELS);
      break;
    case OPT_RO: opt.ro_profiles = bench_parse_long(optarg, "--ro-profiles", 0, 1) != 0; break;
    case OPT_WAITER:
      opt.ecfg.waiter_first = bench_parse_long(optarg, "--waiter-first", 0, 1) != 0;
      break;
    case 's': opt.seed = (uint64_t)bench_parse_long(optarg, "-s/--seed", 0, 1L << 62); break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(BENCH_EXIT_USAGE);
    }
  }
  if (optind < argc) {
    usage(stderr);
    bench_die(BENCH_EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
  }
  if (opt.port < 0) {
    usage(stderr);
    bench_die(BENCH_EXIT_USAGE, "option -p/--port is required");
  }
  /* Priorities 1..levels are the executor's levels 0..levels-1. */
  if (holder > opt.ecfg.levels)
    bench_die(BENCH_EXIT_USAGE, "option --holder-level: %u is above the %u levels", holder,
              opt.ecfg.levels);
  if (holder) opt.ecfg.holder_level = holder - 1;
  if (!orders_set) opt.scale.orders = opt.scale.customers;
  char err[200];
  if (opt.tpcc && tpcc_scale_validate(&opt.scale, err, sizeof err) != 0)
    bench_die(BENCH_EXIT_USAGE, "TPC-C scale: %s", err);
  if (opt.check && !opt.tpcc)
    bench_die(BENCH_EXIT_USAGE, "--check needs the TPC-C database (not --no-tpcc)");
  if (opt.demand > 0 && !opt.tpcc)
    bench_die(BENCH_EXIT_USAGE, "--demand is for the TPC-C profiles (not --no-tpcc)");
}

/* ---- --vclock: the executor's clock ----------------------------------------- */

/* Wall-clock turnaround on a shared host counts the time the workers sat
 * runnable behind other programs' threads. The executor's clock advances
 * only while its workers run: the sum of their thread CPU clocks over the
 * number of workers. A turnaround measured on it is what the scheduling
 * decisions (order, preemption) cost a request in the executor's own time,
 * whatever the host took meanwhile. The workers are the threads that
 * sstm_exec_create() started (found by comparing /proc/self/task before and
 * after); their clocks are read by id, any thread may read them. */
#define VCLOCK_MAX_WORKERS 256
static clockid_t vclock_ids[VCLOCK_MAX_WORKERS];
static unsigned vclock_n;
static _Atomic uint64_t vclock_turn_ns[SSTM_EXEC_MAX_LEVELS], vclock_count[SSTM_EXEC_MAX_LEVELS];
/* The same from the submission to the executor (the parked time left out):
 * [Silvestri17]'s turnaround, which starts when a request enters the
 * priority queue, on the executor's clock. */
static _Atomic uint64_t vexec_turn_ns[SSTM_EXEC_MAX_LEVELS];
/* Per birth priority, the wall-clock time from a request's arrival at its
 * loop (before it was parked) to its end, summed, and the count: the
 * executor's turnaround starts at the submission and leaves the parked
 * time out. */
static _Atomic uint64_t arrive_turn_ns[SSTM_EXEC_MAX_LEVELS], arrive_count[SSTM_EXEC_MAX_LEVELS];

static unsigned list_tasks(int *tids, unsigned max) {
  unsigned n = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) && n < max;) {
    int t = atoi(e->d_name);
    if (t > 0) tids[n++] = t;
  }
  closedir(d);
  return n;
}

/* The new threads in `after` that are not in `before`: the workers. */
static void vclock_setup(const int *before, unsigned nb, const int *after, unsigned na) {
  for (unsigned i = 0; i < na && vclock_n < VCLOCK_MAX_WORKERS; i++) {
    bool old = false;
    for (unsigned j = 0; j < nb; j++)
      old |= after[i] == before[j];
    /* Linux's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) */
    if (!old) vclock_ids[vclock_n++] = (clockid_t)((~(unsigned)after[i] << 3) | 6);
  }
  if (vclock_n == 0) bench_die(BENCH_EXIT_FAIL, "--vclock: cannot find the executor's workers");
}

static uint64_t vclock_now(void) {
  uint64_t sum = 0;
  for (unsigned i = 0; i < vclock_n; i++) {
    struct timespec t;
    if (clock_gettime(vclock_ids[i], &t) == 0)
      sum += (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
  }
  return sum / vclock_n;
}

/* ---- the transaction body and its completion ------------------------------ */

/* A null request's "spin_us" is an amount of CPU work, not of wall-clock
 * time: a loop of a calibrated number of iterations, so that a request that
 * is paused (preempted) or descheduled by the OS still needs its whole
 * demand when it resumes. (A loop on the clock would count the pause as
 * work done and make preemption look like it shrinks the work.) */
static uint64_t spin_iters_per_ms;

static void spin_iters(uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    __asm__ __volatile__("" ::: "memory");
}

static uint64_t thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Iterations per millisecond of this thread's CPU time, the best of five
 * rounds of 5 ms (a round the OS interrupted counts fewer). A chunk of
 * 100 000 iterations (tens of microseconds) keeps the clock reads, which
 * are system calls for this clock, out of the figure. */
static void spin_calibrate(void) {
  const uint64_t chunk = 100000;
  uint64_t best = 0;
  for (int round = 0; round < 5; round++) {
    uint64_t t0 = thread_cpu_ns(), iters = 0, el;
    do {
      spin_iters(chunk);
      iters += chunk;
    } while ((el = thread_cpu_ns() - t0) < 5000000u);
    uint64_t per_ms = iters * 1000000u / el;
    if (per_ms > best) best = per_ms;
  }
  spin_iters_per_ms = best ? best : 1;
}

static void spin_us(uint32_t us) { spin_iters(spin_iters_per_ms * us / 1000u); }

/* --demand: microseconds of CPU work per profile (Table I of [Silvestri17]
 * times opt.demand), set once the options are read. */
static uint32_t table1_us[PROTO_NPROFILES];

static void set_demand(void) {
  static const struct {
    proto_profile_t p;
    double us;
  } t1[] = {{PROTO_DELIVERY, 5000},
            {PROTO_STOCK_LEVEL, 650},
            {PROTO_NEW_ORDER, 350},
            {PROTO_ORDER_STATUS, 10},
            {PROTO_PAYMENT, 5}};
  for (size_t i = 0; i < sizeof t1 / sizeof t1[0]; i++)
    table1_us[t1[i].p] = (uint32_t)(t1[i].us * opt.demand + 0.5);
}

/* Runs inside the transaction the executor started; may run several times
 * (a restart), so it changes nothing outside the transaction but *r's
 * output, which the last (committed) attempt writes. */
static void request_body(void *arg) {
  request_t *r = arg;
  if (r->profile == PROTO_NULL) {
    if (r->spin_us) spin_us(r->spin_us);
    sstm_store_u64(&null_commits, sstm_load_u64(&null_commits) + 1);
  } else {
    tpcc_tx_body(db, &r->in, &r->out);
    /* The demand after the accesses: the transaction holds its footprint
     * (locks, read set) for its whole CPU demand, as a longer profile
     * would, which is what a preemption then pauses. */
    if (opt.demand > 0) spin_us(table1_us[r->profile]);
  }
}

/* On a worker, outside any transaction: hand the request back to its
 * loop. */
static void request_done(void *arg, int rc) {
  request_t *r = arg;
  r->rc = rc;
  {
    uint64_t t = mono_ns();
    unsigned l = r->priority - 1u;
    atomic_fetch_add_explicit(&arrive_turn_ns[l], t > r->t_arrive ? t - r->t_arrive : 0,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&arrive_count[l], 1, memory_order_relaxed);
  }
  if (opt.vclock) {
    uint64_t v = vclock_now();
    unsigned l = r->priority - 1u;
    atomic_fetch_add_explicit(&vclock_turn_ns[l], v > r->vt_submit ? v - r->vt_submit : 0,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&vexec_turn_ns[l], v > r->vt_exec ? v - r->vt_exec : 0,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&vclock_count[l], 1, memory_order_relaxed);
  }
  io_thread_t *io = r->conn->io;
  r->next = NULL;
  pthread_mutex_lock(&io->lock);
  if (io->done_tail)
    io->done_tail->next = r;
  else
    io->done_head = r;
  io->done_tail = r;
  pthread_mutex_unlock(&io->lock);
  count(&ctr.completed);
  atomic_store_explicit(&last_done_ns, mono_ns(), memory_order_relaxed);
  uv_async_send(&io->wake);
  /* Release: pairs with the drain's acquire load (see in_flight). */
  atomic_fetch_sub_explicit(&in_flight, 1, memory_order_release);
}

/* ---- connections ------------------------------------------------------------ */

typedef struct write_req {
  uv_write_t w;
  conn_t *conn;
  size_t len;
  uint8_t data[];
} write_req_t;

static void conn_unref(conn_t *c) {
  if (--c->refs == 0) {
    free(c->in);
    free(c->out);
    free(c);
  }
}

static void on_closed(uv_handle_t *h) { conn_unref((conn_t *)h->data); }

static void conn_close(conn_t *c) {
  if (c->closing) return;
  c->closing = true;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);

static void on_written(uv_write_t *w, int status) {
  write_req_t *wr = (write_req_t *)w;
  conn_t *c = wr->conn;
  (void)status; /* a failed write: the read side sees the error and closes */
  if (c->read_stopped && !c->park_stopped && !c->closing &&
      uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) < WRITE_QUEUE_LIMIT / 2 &&
      atomic_load_explicit(&phase, memory_order_acquire) == PHASE_RUN) {
    c->read_stopped = false;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  }
  conn_unref(c);
  free(wr);
}

/* Queues frame[0..len) for writing (copied). */
static void conn_send(conn_t *c, const uint8_t *frame, size_t len) {
  if (c->closing || len == 0) return;
  write_req_t *wr = malloc(sizeof *wr + len);
  if (!wr) {
    fprintf(stderr, "sstm-server: out of memory for a reply: closing the connection\n");
    conn_close(c);
    return;
  }
  wr->conn = c;
  wr->len = len;
  memcpy(wr->data, frame, len);
  uv_buf_t b = uv_buf_init((char *)wr->data, (unsigned)len);
  c->refs++;
  if (uv_write(&wr->w, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0) {
    c->refs--;
    free(wr);
    conn_close(c);
    return;
  }
  if (!c->read_stopped &&
      uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > WRITE_QUEUE_LIMIT) {
    c->read_stopped = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
  }
}

/* Appends a frame to the connection's output, written by flush_dirty()
 * at the end of the callback: the replies and errors one wake-up or one
 * read produces leave in one write per connection, not one each. */
static void conn_queue(conn_t *c, const uint8_t *frame, size_t len) {
  if (c->closing || len == 0) return;
  if (c->out_len + len > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + len)
      cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (!p) {
      fprintf(stderr, "sstm-server: out of memory for a reply: closing the connection\n");
      conn_close(c);
      return;
    }
    c->out = p;
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, frame, len);
  c->out_len += len;
  if (!c->dirty) {
    c->dirty = true;
    c->next_dirty = c->io->dirty;
    c->io->dirty = c;
  }
}

static void flush_dirty(io_thread_t *io) {
  while (io->dirty) {
    conn_t *c = io->dirty;
    io->dirty = c->next_dirty;
    c->dirty = false;
    conn_send(c, c->out, c->out_len);
    c->out_len = 0;
  }
}

static void send_error(conn_t *c, uint64_t id, unsigned profile, unsigned code, const char *msg) {
  uint8_t f[PROTO_LEN_BYTES + PROTO_HEADER_BYTES + 256];
  count(&ctr.errors[code < 16 ? code : 0]);
  conn_queue(c, f, proto_encode_error(id, profile, code, msg, f, sizeof f));
}

/* ---- priority admission ---------------------------------------------------- */

/* Reads every connection that stopped for the parked lists again. */
static void unstall(io_thread_t *io) {
  conn_t *c = io->stalled;
  io->stalled = NULL;
  while (c) {
    conn_t *next = c->next_stalled;
    c->park_stopped = false;
    if (!c->closing && !c->ending && !c->read_stopped &&
        atomic_load_explicit(&phase, memory_order_acquire) == PHASE_RUN)
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    conn_unref(c); /* the stalled list's reference */
    c = next;
  }
}

/* Appends r to its loop's parked list of its priority; past PARK_LIMIT,
 * stops reading c (the frames already in its buffer are still handled). */
static void park(conn_t *c, request_t *r) {
  io_thread_t *io = c->io;
  unsigned l = r->priority - 1u;
  r->next = NULL;
  if (io->park_tail[l])
    io->park_tail[l]->next = r;
  else
    io->park_head[l] = r;
  io->park_tail[l] = r;
  io->nparked++;
  if (io->nparked >= PARK_LIMIT && !c->park_stopped && !c->closing) {
    c->park_stopped = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->refs++;
    c->next_stalled = io->stalled;
    io->stalled = c;
  }
}

static void on_park_timer(uv_timer_t *t);

/* Submits the loop's parked requests, highest priority first, FIFO within
 * a priority, until the executor has no context for the next one. The
 * executor's graded admission needs more free contexts for a lower
 * priority, so a refusal at one level means a refusal at every level
 * below: the pass stops there. */
static void admit_parked(io_thread_t *io) {
  for (unsigned l = opt.ecfg.levels; l-- > 0;) {
    request_t *r;
    while ((r = io->park_head[l]) != NULL) {
      sstm_exec_req_t er = {.fn = request_body,
                            .arg = r,
                            .priority = l,
                            .tag = r->profile,
                            .read_only = opt.ro_profiles && (r->profile == PROTO_ORDER_STATUS ||
                                                             r->profile == PROTO_STOCK_LEVEL),
                            .done = request_done,
                            .done_arg = r};
      /* The request may end on a worker before the call returns: take it
       * off the list first. */
      io->park_head[l] = r->next;
      if (!r->next) io->park_tail[l] = NULL;
      /* Before the call (the request may end before it returns); the
       * submission orders this store before the worker's read. */
      if (opt.vclock) r->vt_exec = vclock_now();
      int rc = sstm_exec_try_submit(exec, &er);
      if (rc == SSTM_EAGAIN) {
        r->next = io->park_head[l];
        io->park_head[l] = r;
        if (!io->park_tail[l]) io->park_tail[l] = r;
        goto full;
      }
      io->nparked--;
      if (rc != 0) {
        /* SSTM_ESTATE cannot happen (the executor outlives the drain,
         * which waits for the parked requests); anything else is a bug. */
        conn_t *c = r->conn;
        count(&ctr.failed);
        send_error(c, r->id, r->profile, PROTO_E_INTERNAL, sstm_strerror(rc));
        free(r);
        conn_unref(c);
        atomic_fetch_sub_explicit(&in_flight, 1, memory_order_release);
        continue;
      }
      uint64_t zero = 0;
      atomic_compare_exchange_strong_explicit(&first_accept_ns, &zero, mono_ns(),
                                              memory_order_relaxed, memory_order_relaxed);
    }
  }
full:
  if (io->nparked < PARK_LIMIT / 2 && io->stalled) unstall(io);
  if (io->nparked && !uv_is_active((uv_handle_t *)&io->park_timer))
    uv_timer_start(&io->park_timer, on_park_timer, PARK_RETRY_MS, 0);
}

static void on_park_timer(uv_timer_t *t) {
  io_thread_t *io = t->data;
  admit_parked(io);
  flush_dirty(io);
}

/* Decodes and submits one whole frame. */
static void handle_frame(conn_t *c, const uint8_t *frame, size_t len) {
  count(&ctr.frames);
  proto_request_t q;
  const char *detail;
  int code = proto_decode_request(frame, len, &q, &detail);
  if (code != 0) {
    send_error(c, q.id, q.profile, (unsigned)code, detail);
    return;
  }
  if (atomic_load_explicit(&phase, memory_order_acquire) != PHASE_RUN) {
    send_error(c, q.id, q.profile, PROTO_E_SHUTDOWN, "the server is shutting down");
    return;
  }
  unsigned prio = q.priority ? q.priority : proto_default_priority(q.profile);
  if (prio > opt.ecfg.levels) {
    char m[96];
    snprintf(m, sizeof m, "priority %u above this server's %u levels", prio, opt.ecfg.levels);
    send_error(c, q.id, q.profile, PROTO_E_PRIORITY, m);
    return;
  }
  if (q.profile != PROTO_NULL && !db) {
    send_error(c, q.id, q.profile, PROTO_E_UNSUPPORTED,
               "this server runs without TPC-C (--no-tpcc)");
    return;
  }
  size_t echo = q.profile == PROTO_NULL ? q.p.null.len : 0;
  request_t *r = malloc(sizeof *r + echo);
  if (!r) {
    send_error(c, q.id, q.profile, PROTO_E_INTERNAL, "out of memory");
    return;
  }
  memset(r, 0, sizeof *r);
  r->conn = c;
  r->id = q.id;
  r->profile = q.profile;
  r->priority = (uint8_t)prio;
  if (q.profile == PROTO_NULL) {
    r->spin_us = q.p.null.spin_us;
    r->echo_len = echo;
    if (echo) memcpy(r->echo, q.p.null.data, echo);
  } else {
    char err[160];
    tpcc_wire_to_input(&q, (int64_t)time(NULL), &r->in);
    if (tpcc_input_validate(db, &r->in, err, sizeof err) != 0) {
      free(r);
      send_error(c, q.id, q.profile, PROTO_E_PARAMS, err);
      return;
    }
  }
  c->refs++;
  /* Counted from here: the drain waits for parked requests too. */
  atomic_fetch_add_explicit(&in_flight, 1, memory_order_relaxed);
  count(&ctr.accepted);
  count(&ctr.accepted_by_profile[q.profile]);
  r->t_arrive = mono_ns();
  if (opt.vclock) r->vt_submit = vclock_now();
  park(c, r);
  admit_parked(c->io);
}

static void on_shutdown(uv_shutdown_t *s, int status) {
  (void)status;
  conn_close((conn_t *)s->handle->data);
  free(s);
}

/* Stops reading, writes what is queued, then closes: uv_shutdown waits for
 * the pending writes (uv_close would cancel them), so an error reply goes
 * out before the connection ends. */
static void conn_end(conn_t *c) {
  flush_dirty(c->io);
  if (c->closing || c->ending) return;
  c->ending = true;
  uv_read_stop((uv_stream_t *)&c->tcp);
  uv_shutdown_t *s = malloc(sizeof *s);
  if (!s || uv_shutdown(s, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
    free(s);
    conn_close(c);
  }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  conn_t *c = h->data;
  (void)hint;
  if (c->in_cap - c->in_len < 4096 && c->in_cap < PROTO_MAX_FRAME) {
    size_t cap = c->in_cap * 2 > PROTO_MAX_FRAME ? PROTO_MAX_FRAME : c->in_cap * 2;
    uint8_t *p = realloc(c->in, cap);
    if (p) {
      c->in = p;
      c->in_cap = cap;
    }
  }
  *buf = uv_buf_init((char *)c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  conn_t *c = s->data;
  (void)buf;
  if (n < 0) {
    /* EOF or an error: requests already accepted still run; their replies
     * are dropped. A partial frame left in the buffer was never accepted. */
    conn_close(c);
    return;
  }
  c->in_len += (size_t)n;
  size_t off = 0, flen;
  while (!c->closing) {
    proto_peek_t pk = proto_frame_peek(c->in + off, c->in_len - off, &flen);
    if (pk == PROTO_PEEK_MORE) break;
    if (pk == PROTO_PEEK_TOO_LARGE) {
      char m[96];
      snprintf(m, sizeof m, "frame length %u above the maximum %u: closing",
               (unsigned)proto_get32(c->in + off), (unsigned)PROTO_MAX_BODY);
      send_error(c, 0, 0, PROTO_E_TOO_LARGE, m);
      conn_end(c);
      return;
    }
    /* A frame longer than the buffer: grow it to the frame's size. */
    if (flen > c->in_cap) {
      break;
    }
    handle_frame(c, c->in + off, flen);
    off += flen;
  }
  if (off) memmove(c->in, c->in + off, c->in_len - off);
  c->in_len -= off;
  if (c->in_len >= PROTO_LEN_BYTES && !c->closing) {
    size_t need = PROTO_LEN_BYTES + proto_get32(c->in);
    if (need > c->in_cap && need <= PROTO_MAX_FRAME) {
      uint8_t *p = realloc(c->in, need);
      if (!p) {
        send_error(c, 0, 0, PROTO_E_INTERNAL, "out of memory for the frame: closing");
        conn_end(c);
        return;
      }
      c->in = p;
      c->in_cap = need;
    }
  }
  flush_dirty(c->io);
}

static void on_connection(uv_stream_t *listener, int status) {
  io_thread_t *io = listener->data;
  if (status < 0) return;
  conn_t *c = calloc(1, sizeof *c);
  if (!c) return;
  c->io = io;
  c->refs = 1;
  c->in_cap = INBUF_INITIAL;
  c->in = malloc(c->in_cap);
  uv_tcp_init(&io->loop, &c->tcp);
  c->tcp.data = c;
  if (!c->in || uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
    conn_close(c);
    return;
  }
  count(&ctr.connections);
  uv_tcp_nodelay(&c->tcp, 1);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- completions and phases ------------------------------------------------- */

static void reply(request_t *r) {
  conn_t *c = r->conn;
  if (r->rc == 0 && r->profile != PROTO_NULL && r->out.status == TPCC_EINPUT)
    r->rc = SSTM_EINVAL; /* validated before submission: cannot happen */
  if (c->closing) {
    count(&ctr.dropped);
  } else if (r->profile == PROTO_NULL) {
    if (r->rc != 0) {
      count(&ctr.failed);
      send_error(c, r->id, r->profile, PROTO_E_INTERNAL, sstm_strerror(r->rc));
    } else {
      uint8_t *f = malloc(PROTO_LEN_BYTES + PROTO_HEADER_BYTES + r->echo_len);
      size_t len = f ? proto_encode_reply(r->id, r->priority, r->profile, r->echo, r->echo_len, f,
                                          PROTO_LEN_BYTES + PROTO_HEADER_BYTES + r->echo_len)
                     : 0;
      conn_queue(c, f, len);
      free(f);
      count(&ctr.replied);
    }
  } else {
    uint8_t payload[PROTO_TPCC_REPLY_BYTES];
    bool rolled_back = r->rc == SSTM_ECANCELED && r->out.status == TPCC_ROLLED_BACK;
    if (r->rc != 0 && !rolled_back) {
      count(&ctr.failed);
      send_error(c, r->id, r->profile, PROTO_E_INTERNAL, sstm_strerror(r->rc));
    } else {
      if (rolled_back) count(&ctr.rolled_back);
      tpcc_wire_reply(&r->out, rolled_back, payload);
      uint8_t f[PROTO_LEN_BYTES + PROTO_HEADER_BYTES + PROTO_TPCC_REPLY_BYTES];
      conn_queue(
          c, f,
          proto_encode_reply(r->id, r->priority, r->profile, payload, sizeof payload, f, sizeof f));
      count(&ctr.replied);
    }
  }
  conn_unref(c);
  free(r);
}

static void drain_completions(io_thread_t *io) {
  pthread_mutex_lock(&io->lock);
  request_t *r = io->done_head;
  io->done_head = io->done_tail = NULL;
  pthread_mutex_unlock(&io->lock);
  while (r) {
    request_t *next = r->next;
    reply(r);
    r = next;
  }
  flush_dirty(io);
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (uv_is_closing(h)) return;
  io_thread_t *io = arg;
  if (h->type == UV_TCP && (uv_tcp_t *)h != &io->listener) {
    conn_close((conn_t *)h->data);
    return;
  }
  uv_close(h, NULL);
}

/* The drain's clients had their time: close whatever is left. */
static void on_drain_timeout(uv_timer_t *t) {
  io_thread_t *io = t->data;
  uv_walk(&io->loop, close_walk, io);
}

static void shutdown_walk(uv_handle_t *h, void *arg) {
  io_thread_t *io = arg;
  if (h->type != UV_TCP || (uv_tcp_t *)h == &io->listener || uv_is_closing(h)) return;
  conn_end((conn_t *)h->data);
}

static void on_wake(uv_async_t *a) {
  io_thread_t *io = a->data;
  drain_completions(io);
  /* The completions freed contexts: admit what waits. */
  admit_parked(io);
  flush_dirty(io);
  unsigned ph = atomic_load_explicit(&phase, memory_order_acquire);
  unsigned seen = atomic_load_explicit(&io->phase_seen, memory_order_relaxed);
  if (ph == seen) return;
  if (seen < PHASE_STOP_ACCEPTING && !uv_is_closing((uv_handle_t *)&io->listener))
    uv_close((uv_handle_t *)&io->listener, NULL);
  if (ph == PHASE_FINISH) {
    /* Every accepted request has completed and was queued before main saw
     * in_flight reach 0: the drain above wrote every reply. Shut the
     * connections down (after their queued writes), then let the loop end. */
    uv_walk(&io->loop, shutdown_walk, io);
    uv_close((uv_handle_t *)&io->wake, NULL);
    uv_timer_start(&io->drain_timer, on_drain_timeout, DRAIN_WRITE_TIMEOUT_MS, 0);
    uv_unref((uv_handle_t *)&io->drain_timer);
  }
  atomic_store_explicit(&io->phase_seen, ph, memory_order_release);
}

static void *io_main(void *arg) {
  io_thread_t *io = arg;
  uv_run(&io->loop, UV_RUN_DEFAULT);
  /* The loop ended with only an unreferenced timer left (the drain's):
   * close it so that uv_loop_close() succeeds. */
  uv_walk(&io->loop, close_walk, io);
  uv_run(&io->loop, UV_RUN_DEFAULT);
  return NULL;
}

/* ---- start-up --------------------------------------------------------------- */

/* A listening socket on host:port with SO_REUSEPORT, so that every I/O
 * thread has its own and the kernel spreads the connections. */
static int listen_socket(const char *host, long port, long *bound_port) {
  struct sockaddr_storage ss;
  int family;
  struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
  memset(&ss, 0, sizeof ss);
  if (uv_ip4_addr(host, (int)port, a4) == 0) {
    family = AF_INET;
  } else if (uv_ip6_addr(host, (int)port, a6) == 0) {
    family = AF_INET6;
  } else {
    bench_die(BENCH_EXIT_USAGE, "option -H/--host: '%s' is not an IPv4 or IPv6 address", host);
  }
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) bench_die(BENCH_EXIT_FAIL, "socket: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
    bench_die(BENCH_EXIT_FAIL, "SO_REUSEPORT: %s", strerror(errno));
  socklen_t sl = family == AF_INET ? sizeof *a4 : sizeof *a6;
  if (bind(fd, (struct sockaddr *)&ss, sl) != 0)
    bench_die(BENCH_EXIT_FAIL, "bind %s port %ld: %s", host, port, strerror(errno));
  if (listen(fd, 1024) != 0) bench_die(BENCH_EXIT_FAIL, "listen: %s", strerror(errno));
  sl = sizeof ss;
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  *bound_port = ntohs(family == AF_INET ? a4->sin_port : a6->sin6_port);
  return fd;
}

/* Occupancy of the context pool, sampled every millisecond by the main
 * thread while it waits for SIGTERM (not by a loop: a loop blocked in a
 * submission, which is when the pool is full, would miss those samples).
 * Counted from the first accepted request on. */
static void sample_occupancy(void) {
  uint64_t n = atomic_load_explicit(&in_flight, memory_order_relaxed);
  if (n == 0 && atomic_load_explicit(&ctr.accepted, memory_order_relaxed) == 0)
    return; /* not started yet */
  atomic_fetch_add_explicit(&occupancy_samples, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&occupancy_sum, n, memory_order_relaxed);
  if (n * 10 >= (uint64_t)opt.ecfg.contexts * 9)
    atomic_fetch_add_explicit(&occupancy_busy90, 1, memory_order_relaxed);
  /* A request's end is counted in `completed` after its context is free
   * (sstm_exec_stats()), so this may count a context that was just
   * released: at most one per worker, within one sample. */
  uint64_t taken = 0;
  for (unsigned l = 0; l < opt.ecfg.levels; l++) {
    sstm_exec_level_stats_t st;
    if (sstm_exec_stats(exec, l, &st) == 0 && st.submitted > st.completed)
      taken += st.submitted - st.completed;
  }
  uint64_t parked = n > taken ? n - taken : 0;
  atomic_fetch_add_explicit(&exec_occ_sum, taken, memory_order_relaxed);
  if (taken * 10 >= (uint64_t)opt.ecfg.contexts * 9)
    atomic_fetch_add_explicit(&exec_busy90, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&parked_sum, parked, memory_order_relaxed);
  if (parked > atomic_load_explicit(&parked_max, memory_order_relaxed))
    atomic_store_explicit(&parked_max, parked, memory_order_relaxed); /* one writer */
}

static void io_setup(io_thread_t *io, unsigned index, long *port) {
  io->index = index;
  pthread_mutex_init(&io->lock, NULL);
  if (uv_loop_init(&io->loop) != 0) bench_die(BENCH_EXIT_FAIL, "uv_loop_init failed");
  io->listen_fd = listen_socket(opt.host, *port, port);
  uv_tcp_init(&io->loop, &io->listener);
  io->listener.data = io;
  if (uv_tcp_open(&io->listener, io->listen_fd) != 0)
    bench_die(BENCH_EXIT_FAIL, "uv_tcp_open failed");
  int rc = uv_listen((uv_stream_t *)&io->listener, 1024, on_connection);
  if (rc != 0) bench_die(BENCH_EXIT_FAIL, "listen: %s", uv_strerror(rc));
  uv_async_init(&io->loop, &io->wake, on_wake);
  io->wake.data = io;
  uv_timer_init(&io->loop, &io->drain_timer);
  io->drain_timer.data = io;
  uv_timer_init(&io->loop, &io->park_timer);
  io->park_timer.data = io;
}

/* ---- statistics ------------------------------------------------------------- */

static uint64_t ld(atomic_uint_fast64_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

static void print_stats(double elapsed_s, long check_violations, const char *check_msg) {
  bench_json_t j;
  bench_json_begin(&j, stdout);
  bench_json_str(&j, "bench", "server");
  char desc[1024];
  sstm_describe(desc, sizeof desc);
  bench_json_str(&j, "config", desc);
  if (exec && sstm_exec_describe(exec, desc, sizeof desc) >= 0) bench_json_str(&j, "exec", desc);
  bench_json_str(&j, "preempt", sstm_exec_preempt_name(opt.ecfg.preempt));
  bench_json_u64(&j, "tick_us", opt.ecfg.tick_us);
  bench_json_u64(&j, "c_max", opt.ecfg.c_max);
  bench_json_u64(&j, "lazy", opt.ecfg.lazy_promotion);
  bench_json_str(&j, "paused_conflict",
                 opt.ecfg.paused_conflict == SSTM_EXEC_PAUSED_CONFLICT_HANDOVER  ? "handover"
                 : opt.ecfg.paused_conflict == SSTM_EXEC_PAUSED_CONFLICT_INHERIT ? "inherit"
                                                                                 : "takeover");
  bench_json_dbl(&j, "demand", opt.demand);
  bench_json_u64(&j, "reserve_pct", opt.ecfg.reserve_pct);
  bench_json_u64(&j, "vclock_workers", vclock_n);
  /* --vclock: the CPU time the workers used in all (what the scheduling
   * cost in work, against the wall-clock times below, which also count
   * the time the host kept them off their CPUs). */
  if (vclock_n) bench_json_dbl(&j, "workers_cpu_s", (double)vclock_now() * vclock_n / 1e9);
  bench_json_u64(&j, "contexts", opt.ecfg.contexts);
  bench_json_u64(&j, "levels", opt.ecfg.levels);
  bench_json_u64(&j, "io_threads", (uint64_t)opt.io_threads);
  bench_json_u64(&j, "spin_iters_per_ms", spin_iters_per_ms);
  bench_json_dbl(&j, "elapsed_s", elapsed_s);
  uint64_t a = atomic_load_explicit(&first_accept_ns, memory_order_relaxed),
           d = atomic_load_explicit(&last_done_ns, memory_order_relaxed);
  bench_json_dbl(&j, "active_s", a && d > a ? (double)(d - a) / 1e9 : 0.0);
  bench_json_u64(&j, "connections", ld(&ctr.connections));
  bench_json_u64(&j, "frames", ld(&ctr.frames));
  bench_json_u64(&j, "accepted", ld(&ctr.accepted));
  bench_json_u64(&j, "completed", ld(&ctr.completed));
  bench_json_u64(&j, "replied", ld(&ctr.replied));
  bench_json_u64(&j, "replies_dropped", ld(&ctr.dropped));
  bench_json_u64(&j, "rolled_back", ld(&ctr.rolled_back));
  bench_json_u64(&j, "failed", ld(&ctr.failed));
  bench_json_u64(&j, "null_commits", null_commits);
  bench_json_obj_open(&j, "accepted_by_profile");
  for (unsigned p = 0; p < PROTO_NPROFILES; p++)
    bench_json_u64(&j, proto_profile_name(p), ld(&ctr.accepted_by_profile[p]));
  bench_json_obj_close(&j);
  bench_json_obj_open(&j, "errors");
  for (unsigned e = 1; e < 16; e++)
    if (ld(&ctr.errors[e])) bench_json_u64(&j, proto_error_name(e), ld(&ctr.errors[e]));
  bench_json_obj_close(&j);
  uint64_t ns = atomic_load_explicit(&occupancy_samples, memory_order_relaxed);
  bench_json_dbl(&j, "context_occupancy_mean",
                 ns ? (double)atomic_load_explicit(&occupancy_sum, memory_order_relaxed) /
                          (double)ns / opt.ecfg.contexts
                    : 0.0);
  bench_json_dbl(&j, "context_busy90_share",
                 ns ? (double)atomic_load_explicit(&occupancy_busy90, memory_order_relaxed) /
                          (double)ns
                    : 0.0);
  bench_json_dbl(&j, "exec_occupancy_mean",
                 ns ? (double)atomic_load_explicit(&exec_occ_sum, memory_order_relaxed) /
                          (double)ns / opt.ecfg.contexts
                    : 0.0);
  bench_json_dbl(&j, "exec_busy90_share",
                 ns ? (double)atomic_load_explicit(&exec_busy90, memory_order_relaxed) / (double)ns
                    : 0.0);
  bench_json_dbl(&j, "parked_mean",
                 ns ? (double)atomic_load_explicit(&parked_sum, memory_order_relaxed) / (double)ns
                    : 0.0);
  bench_json_u64(&j, "parked_max", atomic_load_explicit(&parked_max, memory_order_relaxed));
  bench_json_arr_open(&j, "levels_stats");
  for (unsigned l = 0; exec && l < opt.ecfg.levels; l++) {
    sstm_exec_level_stats_t st;
    if (sstm_exec_stats(exec, l, &st) != 0) continue;
    bench_json_obj_open(&j, NULL);
    bench_json_u64(&j, "priority", l + 1);
    bench_json_u64(&j, "submitted", st.submitted);
    bench_json_u64(&j, "completed", st.completed);
    bench_json_u64(&j, "preemptions", st.preemptions);
    bench_json_u64(&j, "promotions", st.promotions);
    bench_json_u64(&j, "aborts", st.aborts);
    double n = st.completed ? (double)st.completed : 1.0;
    bench_json_dbl(&j, "queue_us_mean", (double)st.queue_ns / n / 1e3);
    bench_json_dbl(&j, "run_us_mean", (double)st.run_ns / n / 1e3);
    bench_json_dbl(&j, "paused_us_mean", (double)st.paused_ns / n / 1e3);
    bench_json_dbl(&j, "turnaround_us_mean", (double)st.turnaround_ns / n / 1e3);
    bench_json_dbl(&j, "turnaround_us_max", (double)st.turnaround_max_ns / 1e3);
    /* Abort probability per attempt, as [Silvestri17] Fig. 9. */
    double attempts = (double)st.aborts + (double)st.completed;
    bench_json_dbl(&j, "abort_probability", attempts > 0 ? (double)st.aborts / attempts : 0.0);
    /* From the arrival at the server: the parked time included. */
    uint64_t an = atomic_load_explicit(&arrive_count[l], memory_order_relaxed);
    bench_json_dbl(&j, "server_turnaround_us_mean",
                   an ? (double)atomic_load_explicit(&arrive_turn_ns[l], memory_order_relaxed) /
                            (double)an / 1e3
                      : 0.0);
    uint64_t vn = atomic_load_explicit(&vclock_count[l], memory_order_relaxed);
    if (opt.vclock && vn)
      bench_json_dbl(&j, "vturnaround_us_mean",
                     (double)atomic_load_explicit(&vclock_turn_ns[l], memory_order_relaxed) /
                         (double)vn / 1e3);
    if (opt.vclock && vn)
      bench_json_dbl(&j, "vexec_turnaround_us_mean",
                     (double)atomic_load_explicit(&vexec_turn_ns[l], memory_order_relaxed) /
                         (double)vn / 1e3);
    bench_json_obj_close(&j);
  }
  bench_json_arr_close(&j);
  /* Aborted attempts by reason, over every descriptor (the contexts' are
   * live: the executor is destroyed after this), and the policy's waits:
   * what the aborts per level above come from. */
  sstm_stats_t ag;
  if (sstm_stats_aggregate(&ag) == 0) {
    bench_json_obj_open(&j, "aborts_by_reason");
    for (int r = 0; r < SSTM_ABORT_REASON_COUNT; r++)
      if (ag.aborts[r])
        bench_json_u64(&j, sstm_abort_reason_name((sstm_abort_reason_t)r), ag.aborts[r]);
    bench_json_obj_close(&j);
    bench_json_u64(&j, "cm_waits", ag.cm_waits);
    bench_json_u64(&j, "cm_kills", ag.cm_kills);
    bench_json_u64(&j, "locks_stolen", ag.locks_stolen);
  }
  if (check_msg) {
    bench_json_i64(&j, "check_violations", check_violations);
    bench_json_str(&j, "check", check_msg);
  }
  bench_json_end(&j);
  fflush(stdout);
}

int main(int argc, char **argv) {
  bench_set_prog(argv[0]);
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  /* Blocked in every thread created from here on; main takes them with
   * sigtimedwait. */
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  if (sstm_init(NULL) != 0) bench_die(BENCH_EXIT_USAGE, "sstm_init: %s", sstm_last_error());
  parse_options(argc, argv);
  set_demand();
  if (opt.tpcc) {
    char err[200];
    if (tpcc_db_create(&opt.scale, opt.seed, &db, err, sizeof err) != 0)
      bench_die(BENCH_EXIT_FAIL, "TPC-C database: %s", err);
  }
  spin_calibrate();
  static int tids_before[VCLOCK_MAX_WORKERS + 64], tids_after[2 * VCLOCK_MAX_WORKERS + 64];
  unsigned nbefore = opt.vclock ? list_tasks(tids_before, VCLOCK_MAX_WORKERS + 64) : 0;
  int rc = sstm_exec_create(&opt.ecfg, &exec);
  if (rc != 0)
    bench_die(rc == SSTM_EINVAL ? BENCH_EXIT_USAGE : BENCH_EXIT_FAIL, "executor: %s",
              sstm_last_error());
  if (opt.vclock)
    vclock_setup(tids_before, nbefore, tids_after,
                 list_tasks(tids_after, 2 * VCLOCK_MAX_WORKERS + 64));

  ios = calloc((size_t)opt.io_threads, sizeof *ios);
  if (!ios) bench_die(BENCH_EXIT_FAIL, "out of memory");
  long port = opt.port;
  for (long i = 0; i < opt.io_threads; i++)
    io_setup(&ios[i], (unsigned)i, &port);
  for (long i = 0; i < opt.io_threads; i++)
    if (pthread_create(&ios[i].thread, NULL, io_main, &ios[i]) != 0)
      bench_die(BENCH_EXIT_FAIL, "cannot create I/O thread %ld", i);
  printf("listening on %s:%ld\n", opt.host, port);
  fflush(stdout);
  double t0 = bench_now();

  int sig;
  const struct timespec ms = {0, 1000000};
  while ((sig = sigtimedwait(&stop, NULL, &ms)) < 0)
    if (errno == EAGAIN) sample_occupancy();
  fprintf(stderr, "sstm-server: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  /* Release: the loops' acquire load of the phase sees it. */
  atomic_store_explicit(&phase, PHASE_STOP_ACCEPTING, memory_order_release);
  for (long i = 0; i < opt.io_threads; i++)
    uv_async_send(&ios[i].wake);
  /* A loop that is inside sstm_exec_submit() may still add one request
   * each; wait until no request is in flight and the phase was seen by
   * every loop (it then submits nothing more). */
  for (;;) {
    bool seen = true;
    for (long i = 0; i < opt.io_threads; i++)
      seen &=
          atomic_load_explicit(&ios[i].phase_seen, memory_order_acquire) >= PHASE_STOP_ACCEPTING;
    if (seen && atomic_load_explicit(&in_flight, memory_order_acquire) == 0) break;
    bench_sleep_ms(1);
  }
  double elapsed = bench_now() - t0;
  atomic_store_explicit(&phase, PHASE_FINISH, memory_order_release);
  for (long i = 0; i < opt.io_threads; i++)
    uv_async_send(&ios[i].wake);
  for (long i = 0; i < opt.io_threads; i++) {
    pthread_join(ios[i].thread, NULL);
    if (uv_loop_close(&ios[i].loop) != 0)
      fprintf(stderr, "sstm-server: warning: I/O loop %ld still had handles\n", i);
    pthread_mutex_destroy(&ios[i].lock);
  }

  long violations = 0;
  char check_msg[1024] = "";
  if (opt.check) violations = tpcc_check(db, check_msg, sizeof check_msg);
  print_stats(elapsed, violations, opt.check ? check_msg : NULL);
  rc = sstm_exec_destroy(exec);
  exec = NULL;
  tpcc_db_destroy(db);
  free(ios);
  if (rc != 0) bench_die(BENCH_EXIT_FAIL, "sstm_exec_destroy: %s", sstm_strerror(rc));
  if (sstm_shutdown() != 0) bench_die(BENCH_EXIT_FAIL, "sstm_shutdown: %s", sstm_last_error());
  uint64_t accepted = ld(&ctr.accepted), completed = ld(&ctr.completed);
  if (accepted != completed) {
    fprintf(stderr, "sstm-server: error: %llu requests accepted, %llu completed\n",
            (unsigned long long)accepted, (unsigned long long)completed);
    return 1;
  }
  if (violations) {
    fprintf(stderr, "sstm-server: error: TPC-C consistency: %s\n", check_msg);
    return 1;
  }
  return 0;
}
