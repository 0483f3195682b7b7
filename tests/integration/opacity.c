/* SPDX-License-Identifier: MIT */
/* Integration: opacity torture. Transactions that would crash or loop
 * forever if they ever observed an inconsistent snapshot, including
 * attempts that are doomed to abort:
 *   pairs  two slots always point to the same node; a reader dereferences
 *          the node it read (freed and replaced by writers via sstm_free):
 *          disagreeing slots or a freed node are failures (ASan: poison);
 *   div    c1 == c2 + 1 always; readers divide by (c1 - c2) (SIGFPE on an
 *          inconsistent snapshot where they are equal);
 *   cycle  a linked list whose adjacent nodes writers swap; a mix of two
 *          states can contain a cycle: the walk would never end (bounded
 *          here, and every node must be visited exactly once);
 *   bytes  {a, b, a+b} written with sstm_store_bytes at an odd offset.
 *
 * usage: opacity DESIGN THREADS [--ops N | --scaled-ops N] [--seconds S] [--policy NAME]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "common_int.h"

#define MAGIC 0x0bad5eed0bad5eedull
#define NPAIRS 4
#define NCYCLE 6

struct node {
  uint64_t magic;
  uint64_t value;
  uint64_t check; /* value ^ MAGIC */
};

/* Each field in a lock stripe of its own (4 KiB apart). */
struct page {
  _Alignas(4096) union {
    void *ptr;
    uint64_t u;
    unsigned char bytes[64];
  };
};

static struct page slot1[NPAIRS], slot2[NPAIRS];
static struct page c1, c2;
static struct page head;
static struct page cyc_next[NCYCLE]; /* next pointer of node i */
static struct page cyc_id[NCYCLE];   /* id of node i, constant */
static struct page bytes_area;       /* {a, b, a+b} at offset 3 */

static long ops_per_thread;
static double seconds;
static volatile int stop;

static struct node *new_node(uint64_t v) {
  struct node *n = sstm_malloc(sizeof *n);
  CHECK_NOT_NULL(n);
  /* private until published: plain initialisation */
  n->magic = MAGIC;
  n->value = v;
  n->check = v ^ MAGIC;
  return n;
}

/* ---- pairs ---------------------------------------------------------------- */

static void pair_read(void *arg) {
  unsigned i = *(unsigned *)arg;
  struct node *a = sstm_load_ptr(&slot1[i].ptr);
  struct node *b = sstm_load_ptr(&slot2[i].ptr);
  if (a != b) FAIL("opacity: pair %u slots disagree (%p vs %p)", i, (void *)a, (void *)b);
  uint64_t m = sstm_load_u64(&a->magic);
  uint64_t v = sstm_load_u64(&a->value);
  uint64_t c = sstm_load_u64(&a->check);
  CHECK_EQ_X(m, MAGIC);
  CHECK_EQ_X(c, v ^ MAGIC);
}

struct pair_w {
  unsigned i;
  uint64_t v;
};
static void pair_write(void *arg) {
  struct pair_w *w = arg;
  struct node *old = sstm_load_ptr(&slot1[w->i].ptr);
  CHECK_EQ_PTR(sstm_load_ptr(&slot2[w->i].ptr), old);
  CHECK_EQ_X(sstm_load_u64(&old->magic), MAGIC);
  struct node *n = new_node(w->v);
  sstm_store_ptr(&slot1[w->i].ptr, n);
  sstm_store_ptr(&slot2[w->i].ptr, n);
  sstm_free(old);
}

/* ---- div ------------------------------------------------------------------ */

static void div_read(void *arg) {
  (void)arg;
  uint64_t a = sstm_load_u64(&c1.u);
  uint64_t b = sstm_load_u64(&c2.u);
  volatile uint64_t d = a - b;
  uint64_t q = 1000000u / d; /* SIGFPE if a == b */
  CHECK_EQ_U(q, 1000000u);
}
static void div_write(void *arg) {
  uint64_t k = *(uint64_t *)arg;
  uint64_t b = sstm_load_u64(&c2.u);
  sstm_store_u64(&c2.u, b + k);
  sstm_store_u64(&c1.u, b + k + 1);
}

/* ---- cycle ------------------------------------------------------------------ */

static uint64_t cycle_walk(void) {
  uint64_t seen = 0;
  void *p = sstm_load_ptr(&head.ptr);
  int steps = 0;
  while (p != NULL) {
    if (++steps > NCYCLE)
      FAIL("opacity: the list has a cycle in this snapshot (walk would never end)");
    unsigned idx = (unsigned)((struct page *)p - cyc_next);
    CHECK_LT_U(idx, NCYCLE);
    CHECK_EQ_U(sstm_load_u64(&cyc_id[idx].u), idx);
    if (seen & (1ull << idx)) FAIL("opacity: node %u visited twice", idx);
    seen |= 1ull << idx;
    p = sstm_load_ptr(&cyc_next[idx].ptr);
  }
  CHECK_EQ_X(seen, (1ull << NCYCLE) - 1);
  return seen;
}
static void cycle_read(void *arg) {
  (void)arg;
  cycle_walk();
}
/* Swap the nodes at positions pos and pos+1 (pos 0 = first). */
static void cycle_swap(void *arg) {
  unsigned pos = *(unsigned *)arg;
  cycle_walk(); /* writers must see consistent snapshots too */
  void **link = &head.ptr;
  for (unsigned i = 0; i < pos; i++) {
    struct page *n = sstm_load_ptr(link);
    link = &n->ptr;
  }
  struct page *a = sstm_load_ptr(link);
  struct page *b = sstm_load_ptr(&a->ptr);
  if (b == NULL) return;
  void *after = sstm_load_ptr(&b->ptr);
  sstm_store_ptr(link, b);
  sstm_store_ptr(&b->ptr, a);
  sstm_store_ptr(&a->ptr, after);
}

/* ---- bytes ------------------------------------------------------------------ */

static void bytes_read(void *arg) {
  (void)arg;
  uint64_t v[3];
  sstm_load_bytes(v, &bytes_area.bytes[3], sizeof v);
  CHECK_EQ_U(v[0] + v[1], v[2]);
}
static void bytes_write(void *arg) {
  uint64_t r = *(uint64_t *)arg;
  uint64_t v[3];
  sstm_load_bytes(v, &bytes_area.bytes[3], sizeof v);
  v[0] += r & 0xffff;
  v[1] += r >> 48;
  v[2] = v[0] + v[1];
  sstm_store_bytes(&bytes_area.bytes[3], v, sizeof v);
}

/* A long reader over everything: more time for writers to interfere. */
static void everything_read(void *arg) {
  (void)arg;
  for (unsigned i = 0; i < NPAIRS; i++)
    pair_read(&i);
  div_read(NULL);
  cycle_walk();
  bytes_read(NULL);
  for (unsigned i = 0; i < NPAIRS; i++)
    pair_read(&i);
  div_read(NULL);
}

static void worker(sstm_tt_t *t) {
  sstm_attr_t ro = {.read_only = true};
  long done = 0;
  for (;;) {
    if (seconds > 0) {
      if (__atomic_load_n(&stop, __ATOMIC_RELAXED)) break;
    } else if (done >= ops_per_thread) {
      break;
    }
    done++;
    uint64_t r = sstm_rng_next(&t->rng);
    const sstm_attr_t *ra = (r >> 60) & 1 ? &ro : NULL;
    bool write = (r % 100) < 40;
    switch ((r >> 8) % 5) {
    case 0: {
      unsigned i = (unsigned)((r >> 16) % NPAIRS);
      if (write) {
        struct pair_w w = {i, r >> 20};
        CHECK_OK(sstm_run(NULL, pair_write, &w));
      } else {
        CHECK_OK(sstm_run(ra, pair_read, &i));
      }
      break;
    }
    case 1: {
      uint64_t k = (r >> 16) % 1000 + 1;
      CHECK_OK(sstm_run(write ? NULL : ra, write ? div_write : div_read, &k));
      break;
    }
    case 2: {
      unsigned pos = (unsigned)((r >> 16) % (NCYCLE - 1));
      CHECK_OK(sstm_run(write ? NULL : ra, write ? cycle_swap : cycle_read, &pos));
      break;
    }
    case 3: CHECK_OK(sstm_run(write ? NULL : ra, write ? bytes_write : bytes_read, &r)); break;
    default: CHECK_OK(sstm_run(ra, everything_read, NULL)); break;
    }
  }
}

static void *timer(void *p) {
  (void)p;
  double end = int_now() + seconds;
  while (int_now() < end)
    usleep(100000);
  __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: %s DESIGN THREADS [--ops N | --scaled-ops N] [--seconds S] [--policy NAME]\n",
            argv[0]);
    return 2;
  }
  const char *policy = int_opt_str(argc, argv, "--policy", NULL);
  char name[128];
  snprintf(name, sizeof name, "opacity.%s.%s", argv[1], argv[2]);
  int_name_policy(name, sizeof name, policy);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[2]));
  CHECK_GT_U(threads, 0);
  long total = int_opt_ops(argc, argv, (long)sstm_test_scaled(1000000, 2000), 2000);
  ops_per_thread = total / (long)threads;
  seconds = (double)int_opt(argc, argv, "--seconds", 0);

  int_init(design, policy);
  CHECK_OK(sstm_thread_init());
  for (unsigned i = 0; i < NPAIRS; i++) {
    struct node *n = new_node(i);
    slot1[i].ptr = slot2[i].ptr = n;
  }
  c1.u = 1;
  c2.u = 0;
  head.ptr = &cyc_next[0];
  for (unsigned i = 0; i < NCYCLE; i++) {
    cyc_id[i].u = i;
    cyc_next[i].ptr = i + 1 < NCYCLE ? &cyc_next[i + 1] : NULL;
  }
  uint64_t v0[3] = {5, 7, 12};
  memcpy(&bytes_area.bytes[3], v0, sizeof v0);

  pthread_t tm;
  if (seconds > 0) CHECK_EQ_I(pthread_create(&tm, NULL, timer, NULL), 0);
  sstm_test_run_threads(threads, true, worker, NULL);
  if (seconds > 0) CHECK_EQ_I(pthread_join(tm, NULL), 0);

  /* final state satisfies every invariant */
  CHECK_EQ_U(c1.u, c2.u + 1);
  for (unsigned i = 0; i < NPAIRS; i++) {
    CHECK_EQ_PTR(slot1[i].ptr, slot2[i].ptr);
    sstm_free(slot1[i].ptr);
  }
  CHECK_OK(sstm_run(NULL, cycle_read, NULL));
  CHECK_OK(sstm_run(NULL, bytes_read, NULL));
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  printf("opacity: %llu update + %llu read-only commits, %llu aborts\n",
         (unsigned long long)s.commits_update, (unsigned long long)s.commits_ro,
         (unsigned long long)s.aborts_total);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
