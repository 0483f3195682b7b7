/* SPDX-License-Identifier: MIT */
/* Integration: frees during concurrent traversal. A sorted linked list;
 * writer threads insert (sstm_malloc) and unlink + sstm_free nodes while
 * reader threads traverse it. Readers check, inside the transaction, the
 * magic word of every node they visit (glibc's free overwrites it; under
 * ASan a read of a freed node is a use-after-free report), strict ordering
 * and the list length bound. Each writer owns the keys k with
 * k % WRITERS == w, so its own sequential model predicts the result of every
 * insert/remove exactly; the final list equals the union of the models.
 *
 * usage: free_traversal DESIGN THREADS [--ops N] [--keys K]
 *   THREADS >= 2: half writers (at least 1), the rest readers.
 */
#define _GNU_SOURCE
#include "common_int.h"

#define MAGIC 0xfeedfacecafebeefull

struct lnode {
  uint64_t magic; /* first: glibc reuses the first bytes of a freed chunk */
  long key;
  struct lnode *next;
  uint64_t magic2;
};

static struct lnode head_node; /* sentinel, key -1 */
static long nkeys;
static unsigned nwriters, nreaders;
static long ops_per_thread;
static unsigned char *model; /* model[k]: k present (written by k's owner) */
static volatile int writers_running;

static void check_node(const struct lnode *n) {
  uint64_t m1 = sstm_load_u64(&n->magic);
  uint64_t m2 = sstm_load_u64(&n->magic2);
  if (m1 != MAGIC || m2 != MAGIC)
    FAIL("visited a node that is not live (freed under a reader?): %p magic %llx/%llx",
         (const void *)n, (unsigned long long)m1, (unsigned long long)m2);
}

struct op {
  long key;
  bool result;
  struct lnode *fresh;
};

/* Position: prev is the last node with key < k. */
static struct lnode *find_prev(long k) {
  struct lnode *prev = &head_node;
  struct lnode *cur = sstm_load_ptr((void *const *)&prev->next);
  long steps = 0;
  while (cur != NULL) {
    check_node(cur);
    long ck = sstm_load_i64((const int64_t *)&cur->key);
    if (ck >= k) break;
    if (++steps > nkeys) FAIL("list longer than the key range: cycle?");
    prev = cur;
    cur = sstm_load_ptr((void *const *)&cur->next);
  }
  return prev;
}

static void insert_fn(void *p) {
  struct op *o = p;
  struct lnode *prev = find_prev(o->key);
  struct lnode *cur = sstm_load_ptr((void *const *)&prev->next);
  if (cur != NULL && sstm_load_i64((const int64_t *)&cur->key) == o->key) {
    o->result = false;
    return;
  }
  struct lnode *n = sstm_malloc(sizeof *n);
  CHECK_NOT_NULL(n);
  n->magic = n->magic2 = MAGIC;
  n->key = o->key;
  n->next = cur;
  sstm_store_ptr((void **)&prev->next, n);
  o->result = true;
}

static void remove_fn(void *p) {
  struct op *o = p;
  struct lnode *prev = find_prev(o->key);
  struct lnode *cur = sstm_load_ptr((void *const *)&prev->next);
  if (cur == NULL || sstm_load_i64((const int64_t *)&cur->key) != o->key) {
    o->result = false;
    return;
  }
  sstm_store_ptr((void **)&prev->next, sstm_load_ptr((void *const *)&cur->next));
  sstm_free(cur);
  o->result = true;
}

static void traverse_fn(void *p) {
  long *count = p;
  long last = -1, n = 0;
  struct lnode *cur = sstm_load_ptr((void *const *)&head_node.next);
  while (cur != NULL) {
    check_node(cur);
    long k = sstm_load_i64((const int64_t *)&cur->key);
    if (k <= last) FAIL("list not strictly ordered: %ld after %ld", k, last);
    if (k < 0 || k >= nkeys) FAIL("key %ld out of range", k);
    last = k;
    if (++n > nkeys) FAIL("list longer than the key range: cycle?");
    cur = sstm_load_ptr((void *const *)&cur->next);
  }
  *count = n;
}

static void writer(sstm_tt_t *t) {
  unsigned w = t->idx;
  long mine = (nkeys - (long)w + (long)nwriters - 1) / (long)nwriters;
  for (long i = 0; i < ops_per_thread; i++) {
    long k = (long)w + (long)nwriters * (long)sstm_rng_below(&t->rng, (uint64_t)mine);
    struct op o = {k, false, NULL};
    bool present = model[k];
    if (sstm_rng_below(&t->rng, 2)) {
      CHECK_OK(sstm_run(NULL, insert_fn, &o));
      CHECK_MSG(o.result == !present, "insert(%ld) returned %d, model says present=%d", k, o.result,
                present);
      model[k] = 1;
    } else {
      CHECK_OK(sstm_run(NULL, remove_fn, &o));
      CHECK_MSG(o.result == present, "remove(%ld) returned %d, model says present=%d", k, o.result,
                present);
      model[k] = 0;
    }
    if (i % 256 == 0) sstm_reclaim();
  }
}

static void reader(sstm_tt_t *t) {
  sstm_attr_t ro = {.read_only = true};
  long n = 0;
  do {
    long count = 0;
    CHECK_OK(sstm_run(sstm_rng_below(&t->rng, 2) ? &ro : NULL, traverse_fn, &count));
    n++;
  } while (__atomic_load_n(&writers_running, __ATOMIC_ACQUIRE) > 0 || n < 10);
}

static void thread_main(sstm_tt_t *t) {
  if (t->idx < nwriters) {
    writer(t);
    __atomic_sub_fetch(&writers_running, 1, __ATOMIC_ACQ_REL);
  } else {
    reader(t);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DESIGN THREADS [--ops N] [--keys K]\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "free_traversal.%s.%s", argv[1], argv[2]);
  sstm_test_setup(name, argc, argv);
  sstm_design_t design = int_parse_design(argv[1]);
  unsigned threads = sstm_test_threads((unsigned)atoi(argv[2]));
  CHECK_GE_U(threads, 2);
  nwriters = threads / 2;
  nreaders = threads - nwriters;
  nkeys = int_opt(argc, argv, "--keys", 64);
  ops_per_thread =
      int_opt(argc, argv, "--ops", (long)sstm_test_scaled(500000, 2000)) / (long)nwriters;
  model = calloc((size_t)nkeys, 1);
  int_init(design, NULL);
  CHECK_OK(sstm_thread_init());
  head_node.magic = head_node.magic2 = MAGIC;
  head_node.key = -1;
  writers_running = (int)nwriters;
  sstm_test_run_threads(threads, true, thread_main, NULL);

  /* final list == union of the writers' models */
  long count = 0;
  CHECK_OK(sstm_run(NULL, traverse_fn, &count));
  long expect = 0;
  for (long k = 0; k < nkeys; k++)
    expect += model[k];
  CHECK_EQ_I(count, expect);
  for (struct lnode *n = head_node.next; n; n = n->next)
    CHECK_MSG(model[n->key], "key %ld in the list but not in its writer's model", n->key);
  /* tear down: retire every node, shutdown releases them */
  struct lnode *n = head_node.next;
  head_node.next = NULL;
  while (n) {
    struct lnode *next = n->next;
    sstm_free(n);
    n = next;
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  printf("free_traversal: %u writers, %u readers, %ld keys in the end, %llu aborts\n", nwriters,
         nreaders, count, (unsigned long long)s.aborts_total);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  free(model);
  printf("PASS %s\n", name);
  return 0;
}
