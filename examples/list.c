/* SPDX-License-Identifier: MIT */
/* list: a sorted linked-list integer set with transactional allocation.
 *
 * insert() allocates its node with sstm_malloc() inside the transaction (the
 * node is freed automatically if the attempt aborts); remove() unlinks a
 * node and releases it with sstm_free(), which defers the free until the
 * transaction commits and no concurrent transaction can still be reading the
 * node. At the end the list is checked (sorted, size consistent with the
 * successful operations) and the statistics are dumped.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <schedstm/schedstm.h>

#define NTHREADS 2
#define OPS 20000
#define KEY_RANGE 256

struct node {
  int64_t key;
  struct node *next;
};

static struct node head = {INT64_MIN, NULL}; /* sentinel */

static struct node *load_next(struct node *n) { return sstm_load_ptr((void *const *)&n->next); }
static void store_next(struct node *n, struct node *next) {
  sstm_store_ptr((void **)&n->next, next);
}

struct op {
  int64_t key;
  bool done; /* result, written by the transaction body */
};

/* Return the last node whose key is < key (the sentinel at worst). */
static struct node *find_prev(int64_t key) {
  struct node *prev = &head;
  for (struct node *cur = load_next(prev); cur && sstm_load_i64(&cur->key) < key;
       cur = load_next(cur))
    prev = cur;
  return prev;
}

static void insert_tx(void *arg) {
  struct op *op = arg;
  struct node *prev = find_prev(op->key);
  struct node *cur = load_next(prev);
  op->done = false;
  if (cur && sstm_load_i64(&cur->key) == op->key) return;
  struct node *n = sstm_malloc(sizeof *n);
  if (!n) sstm_cancel(); /* out of memory: give up this insert */
  sstm_store_i64(&n->key, op->key);
  store_next(n, cur);
  store_next(prev, n);
  op->done = true;
}

static void remove_tx(void *arg) {
  struct op *op = arg;
  struct node *prev = find_prev(op->key);
  struct node *cur = load_next(prev);
  op->done = false;
  if (!cur || sstm_load_i64(&cur->key) != op->key) return;
  store_next(prev, load_next(cur));
  sstm_free(cur); /* released after commit, once no reader can see it */
  op->done = true;
}

static int64_t delta[NTHREADS]; /* successful inserts - successful removes */

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  unsigned seed = 12345u + (unsigned)id;
  if (sstm_thread_init() != 0) abort();
  for (int i = 0; i < OPS; i++) {
    struct op op = {.key = rand_r(&seed) % KEY_RANGE};
    bool ins = rand_r(&seed) & 1;
    int rc = sstm_run(&(sstm_attr_t){.tag = ins ? 1 : 2}, ins ? insert_tx : remove_tx, &op);
    if (rc == 0 && op.done) delta[id] += ins ? 1 : -1;
  }
  sstm_thread_exit();
  return NULL;
}

int main(void) {
  sstm_config_t cfg;
  sstm_config_default(&cfg);
  cfg.stats = SSTM_STATS_DETAILED; /* set sizes and per-tag counters */
  if (sstm_init(&cfg) != 0) {
    fprintf(stderr, "sstm_init: %s\n", sstm_last_error());
    return 1;
  }
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++)
    pthread_join(th[i], NULL);

  /* All workers have left: plain reads are safe now. */
  int64_t size = 0, expected = 0;
  bool sorted = true;
  for (struct node *n = head.next; n; n = n->next) {
    size++;
    if (n->next && n->next->key <= n->key) sorted = false;
  }
  for (int i = 0; i < NTHREADS; i++)
    expected += delta[i];

  printf("list: %d operations, final size %" PRId64 " (expected %" PRId64 "), %s\n", NTHREADS * OPS,
         size, expected, sorted ? "sorted" : "NOT sorted");
  sstm_stats_dump(stdout);

  /* Retire the remaining nodes; sstm_shutdown() releases deferred frees. */
  for (struct node *n = head.next, *next; n; n = next) {
    next = n->next;
    sstm_free(n);
  }
  head.next = NULL;
  if (sstm_shutdown() != 0) {
    fprintf(stderr, "sstm_shutdown: %s\n", sstm_last_error());
    return 1;
  }
  bool ok = sorted && size == expected;
  printf("list: %s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
