/* SPDX-License-Identifier: MIT */
/* Integration: privatization with sstm_quiesce(). NODES nodes, each an
 * owner word and WORDS data words. Transactional workers honour the
 * privatization protocol: they read a node's owner first and touch its data
 * only while the owner is 0. Writers set every data word of the node to one
 * new value; readers check that all data words are equal, inside the
 * transaction (no transaction ever sees a mix: the writers keep them equal,
 * opacity gives consistent snapshots). The privatizer thread, round after
 * round, sets a node's owner in a transaction, calls sstm_quiesce(), and
 * then writes a distinct pattern into the data with plain stores, lets the
 * other threads run, and checks with plain loads that the pattern is
 * intact; then it publishes the node again (uniform data, owner 0) in a
 * transaction.
 *
 * Without the barrier both checks fail: a doomed reader that read owner 0
 * before the privatizing commit goes on reading the data while the plain
 * stores change it (a mixed node, and a data race that TSan reports), and a
 * writer serialised before the privatizing commit may still be writing back
 * after it returns (a pattern word overwritten). --no-quiesce runs that
 * broken protocol and counts what it sees instead of failing, for checking
 * that this test can fail; with --expect-races it ignores --rounds and
 * runs rounds until it has seen both races (a mixed read and an
 * overwritten private word), however many rounds that takes: the runner's
 * watchdog (SSTM_TEST_WATCHDOG) fails a run that never sees them, so
 * whether the control passes does not depend on the scheduling of a fixed
 * number of rounds (on a loaded machine the workers may not run at all
 * during the first rounds).
 *
 * --expect-fence NAME checks the begin protocol in use (sstm_describe's
 * begin-fence=): "fence" (the fallback, forced by SCHEDSTM_NO_MEMBARRIER=1),
 * "membarrier", or "kernel": membarrier where this kernel offers private
 * expedited membarrier (MEMBARRIER_CMD_QUERY), fence otherwise.
 *
 * usage: privatize DESIGN THREADS [--rounds N] [--words W] [--no-quiesce]
 *                  [--expect-races] [--expect-fence fence|membarrier|kernel]
 *   THREADS >= 2: one privatizer, the rest workers. Without the barrier a
 *   few hundred rounds at 4 threads show mixed reads and overwritten words
 *   when the threads really run at once, and none at all under heavy load
 *   (docs/benchmarks.md, "Figures behind the design"), hence
 *   --expect-races runs until it sees them.
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common_int.h"

#define NODES 4
#define PRIV_TAG 0x5a5a000000000000ull /* private pattern; workers' values stay below */

struct node {
  _Alignas(64) uint64_t owner; /* a stripe of its own: 0 shared, 1 private */
  _Alignas(64) uint64_t *data; /* words, in their own stripes */
};

static struct node nodes[NODES];
static long nwords, rounds;
static bool use_quiesce = true;
static bool expect_races; /* --expect-races: rounds until both races are seen */
static _Atomic int stop;
/* --no-quiesce: what the broken protocol let through */
static _Atomic long mixed_reads, overwritten_words;

static void report_mixed(long n, uint64_t a, uint64_t b, long j) {
  if (use_quiesce)
    FAIL("node %ld: a transaction that read owner 0 sees data word 0 = 0x%llx but word %ld = "
         "0x%llx (private stores or a write-back visible to it)",
         n, (unsigned long long)a, j, (unsigned long long)b);
  atomic_fetch_add_explicit(&mixed_reads, 1, memory_order_relaxed);
}

struct op {
  long node;
  uint64_t val;
};

static void read_fn(void *p) {
  struct op *o = p;
  struct node *nd = &nodes[o->node];
  if (sstm_load_u64(&nd->owner) != 0) return;
  uint64_t v0 = sstm_load_u64(&nd->data[0]);
  for (long j = 1; j < nwords; j++) {
    uint64_t v = sstm_load_u64(&nd->data[j]);
    if (v != v0) {
      report_mixed(o->node, v0, v, j);
      return;
    }
  }
}

static void write_fn(void *p) {
  struct op *o = p;
  struct node *nd = &nodes[o->node];
  if (sstm_load_u64(&nd->owner) != 0) return;
  uint64_t v = sstm_load_u64(&nd->data[0]) + 1;
  for (long j = 0; j < nwords; j++)
    sstm_store_u64(&nd->data[j], v);
}

static void privatize_fn(void *p) {
  struct op *o = p;
  uint64_t *owner = &nodes[o->node].owner;
  CHECK_EQ_U(sstm_load_u64(owner), 0); /* only this thread privatizes */
  sstm_store_u64(owner, 1);
}

static void publish_fn(void *p) {
  struct op *o = p;
  struct node *nd = &nodes[o->node];
  for (long j = 0; j < nwords; j++)
    sstm_store_u64(&nd->data[j], o->val);
  sstm_store_u64(&nd->owner, 0);
}

/* --expect-races: both kinds of race have been seen. */
static bool races_seen(void) {
  return atomic_load_explicit(&mixed_reads, memory_order_relaxed) > 0 &&
         atomic_load_explicit(&overwritten_words, memory_order_relaxed) > 0;
}

static void privatizer(sstm_tt_t *t) {
  long r;
  for (r = 0; expect_races ? !races_seen() : r < rounds; r++) {
    struct op o = {r % NODES, 0};
    uint64_t *data = nodes[o.node].data;
    CHECK_OK(sstm_run(NULL, privatize_fn, &o));
    if (use_quiesce) CHECK_OK(sstm_quiesce());
    /* private from here on: plain accesses */
    for (long j = 0; j < nwords; j++)
      data[j] = PRIV_TAG | ((uint64_t)r << 20) | (uint64_t)j;
    /* let preempted attempts run: a late write-back would land now */
    for (int k = 0; k < 2; k++)
      sched_yield();
    if (sstm_rng_below(&t->rng, 8) == 0) sstm_spin_ns(20000);
    for (long j = 0; j < nwords; j++) {
      uint64_t want = PRIV_TAG | ((uint64_t)r << 20) | (uint64_t)j;
      if (data[j] == want) continue;
      if (use_quiesce)
        FAIL("round %ld, node %ld: private word %ld is 0x%llx, not 0x%llx: a transaction "
             "wrote it after sstm_quiesce returned",
             r, o.node, j, (unsigned long long)data[j], (unsigned long long)want);
      atomic_fetch_add_explicit(&overwritten_words, 1, memory_order_relaxed);
    }
    o.val = (uint64_t)r + 1; /* shared again: uniform data */
    CHECK_OK(sstm_run(NULL, publish_fn, &o));
  }
  rounds = r; /* the rounds run (--expect-races: until both races were seen) */
}

static void worker(sstm_tt_t *t) {
  sstm_attr_t ro = {.read_only = true};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    struct op o = {(long)sstm_rng_below(&t->rng, NODES), 0};
    switch (sstm_rng_below(&t->rng, 4)) {
    case 0: CHECK_OK(sstm_run(NULL, write_fn, &o)); break;
    case 1: CHECK_OK(sstm_run(&ro, read_fn, &o)); break;
    default: CHECK_OK(sstm_run(NULL, read_fn, &o)); break;
    }
  }
}

static void thread_main(sstm_tt_t *t) {
  if (t->idx == 0) {
    privatizer(t);
    atomic_store_explicit(&stop, 1, memory_order_relaxed);
  } else {
    worker(t);
  }
}

/* The begin-fence= value that --expect-fence NAME asks for. */
static const char *expected_fence(const char *name) {
  if (strcmp(name, "fence") == 0 || strcmp(name, "membarrier") == 0) return name;
  if (strcmp(name, "kernel") != 0) {
    fprintf(stderr, "--expect-fence: fence, membarrier or kernel, not \"%s\"\n", name);
    exit(2);
  }
  /* what the library needs (src/os/membarrier.c): private expedited
   * membarrier and its registration */
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  bool have = cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
              (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
  return have ? "membarrier" : "fence";
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s DESIGN THREADS [--rounds N] [--words W] [--no-quiesce] [--expect-races]\n"
            "       [--expect-fence fence|membarrier|kernel]\n",
            argv[0]);
    return 2;
  }
  use_quiesce = !int_flag(argc, argv, "--no-quiesce");
  expect_races = int_flag(argc, argv, "--expect-races");
  if (expect_races && use_quiesce) {
    fprintf(stderr, "--expect-races needs --no-quiesce (it runs until it sees races)\n");
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "privatize.%s.%s%s", argv[1], argv[2],
           use_quiesce ? "" : ".no_quiesce");
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[2]));
  if (threads < 2) threads = 2;
  /* A round takes longer with more threads on the 2 CPUs (the barrier
   * waits for descheduled attempts): about the same run time at any count. */
  rounds = int_opt(argc, argv, "--rounds", (long)sstm_test_scaled(600 / threads, 50));
  nwords = int_opt(argc, argv, "--words", 256);
  CHECK_GE_I(nwords, 2);
  for (int n = 0; n < NODES; n++) {
    nodes[n].data = aligned_alloc(64, (size_t)nwords * sizeof(uint64_t));
    CHECK_NOT_NULL(nodes[n].data);
    memset(nodes[n].data, 0, (size_t)nwords * sizeof(uint64_t));
  }
  int_init(design, NULL);
  const char *fence_opt = int_opt_str(argc, argv, "--expect-fence", NULL);
  if (fence_opt) {
    char desc[512], want[64];
    CHECK_GT_I(sstm_describe(desc, sizeof desc), 0);
    snprintf(want, sizeof want, "begin-fence=%s ", expected_fence(fence_opt));
    CHECK_MSG(strstr(desc, want) != NULL, "--expect-fence %s: want \"%s\" in sstm_describe: %s",
              fence_opt, want, desc);
    printf("privatize: %s\n", desc);
  }
  sstm_test_run_threads(threads, true, thread_main, NULL);

  /* every node is shared again, with uniform data */
  CHECK_OK(sstm_thread_init());
  for (long n = 0; n < NODES; n++) {
    struct op o = {n, 0};
    CHECK_EQ_U(nodes[n].owner, 0);
    CHECK_OK(sstm_run(NULL, read_fn, &o));
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  long mixed = atomic_load_explicit(&mixed_reads, memory_order_seq_cst),
       over = atomic_load_explicit(&overwritten_words, memory_order_seq_cst);
  printf("privatize: %u threads, %ld rounds, %ld words, %s: %llu commits, %llu aborts; "
         "mixed reads %ld, overwritten private words %ld\n",
         threads, rounds, nwords, use_quiesce ? "sstm_quiesce" : "NO barrier",
         (unsigned long long)(s.commits_update + s.commits_ro), (unsigned long long)s.aborts_total,
         mixed, over);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  for (int n = 0; n < NODES; n++)
    free(nodes[n].data);
  if (expect_races) /* the loop ran until both were seen */
    CHECK_MSG(mixed > 0 && over > 0, "--no-quiesce: %ld mixed reads, %ld overwritten words", mixed,
              over);
  printf("PASS %s\n", name);
  return 0;
}
