/* SPDX-License-Identifier: MIT */
/* The executor's priority queue (src/exec/queue.h) against a sequential
 * reference: per level a hot and a cold FIFO, hot before cold, highest
 * level first, and a bitmap that has bit L set exactly when level L has an
 * entry. `sequential` drives one thread through random pushes and pops;
 * `concurrent` has producers and consumers race, records every operation
 * in the order they took the lock (the order the queue saw them), then
 * replays that log on the reference: every pop must have returned what the
 * reference returns at that point. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec/queue.h"
#include "runner.h"

#define LEVELS 8
#define MAXN 200000

typedef struct item {
  sstm_xq_node_t node; /* first: the queue hands back &node */
  unsigned id, level;
  bool hot;
} item_t;

/* The reference: per level and list an array used as a FIFO. */
typedef struct ref {
  unsigned *q[LEVELS][2];
  size_t head[LEVELS][2], tail[LEVELS][2];
} ref_t;

static void ref_init(ref_t *r, size_t cap) {
  memset(r, 0, sizeof *r);
  for (int l = 0; l < LEVELS; l++)
    for (int h = 0; h < 2; h++)
      CHECK_NOT_NULL(r->q[l][h] = malloc(cap * sizeof(unsigned)));
}
static void ref_free(ref_t *r) {
  for (int l = 0; l < LEVELS; l++)
    for (int h = 0; h < 2; h++)
      free(r->q[l][h]);
}
static void ref_push(ref_t *r, unsigned id, unsigned l, bool hot) {
  r->q[l][hot][r->tail[l][hot]++] = id;
}
/* The id popped, or UINT32_MAX for empty. */
static unsigned ref_pop(ref_t *r) {
  for (int l = LEVELS - 1; l >= 0; l--)
    for (int h = 1; h >= 0; h--)
      if (r->head[l][h] < r->tail[l][h]) return r->q[l][h][r->head[l][h]++];
  return UINT32_MAX;
}

/* Under the lock: the bitmap, top() and top_cold() agree with the lists. */
static void check_bitmap(sstm_xq_t *q) {
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed);
  int top = -1, top_cold = -1;
  uint64_t n = 0;
  for (unsigned l = 0; l < q->levels; l++) {
    bool ne = q->hot[l].head || q->cold[l].head;
    CHECK_EQ_U((b >> l) & 1, ne);
    if (ne) top = (int)l;
    if (q->cold[l].head) top_cold = (int)l;
    for (sstm_xq_node_t *x = q->hot[l].head; x; x = x->next)
      n++;
    for (sstm_xq_node_t *x = q->cold[l].head; x; x = x->next)
      n++;
    CHECK_EQ_U(q->hot[l].head == NULL, q->hot[l].tail == NULL);
    CHECK_EQ_U(q->cold[l].head == NULL, q->cold[l].tail == NULL);
  }
  CHECK_EQ_U(b >> q->levels, 0);
  CHECK_EQ_I(sstm__xq_top(q), top);
  CHECK_EQ_I(sstm__xq_top_cold(q), top_cold);
  CHECK_EQ_U(q->count, n);
}

TEST(sequential) {
  static item_t items[20000];
  sstm_xq_t q;
  CHECK_EQ_I(sstm__xq_init(&q, LEVELS), 0);
  ref_t r;
  ref_init(&r, 20000);
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  unsigned next = 0;
  for (int step = 0; step < 60000; step++) {
    sstm__xq_lock(&q);
    if (next < 20000 && sstm_rng_below(&rng, 100) < 55) {
      item_t *it = &items[next];
      it->id = next++;
      it->level = (unsigned)sstm_rng_below(&rng, LEVELS);
      it->hot = sstm_rng_below(&rng, 3) == 0;
      sstm__xq_push(&q, &it->node, it->level, it->hot);
      ref_push(&r, it->id, it->level, it->hot);
    } else {
      unsigned lv;
      bool hot;
      sstm_xq_node_t *n = sstm__xq_pop(&q, &lv, &hot);
      unsigned want = ref_pop(&r);
      if (want == UINT32_MAX) {
        CHECK_NULL(n);
      } else {
        CHECK_NOT_NULL(n);
        item_t *it = (item_t *)n;
        CHECK_EQ_U(it->id, want);
        CHECK_EQ_U(lv, it->level);
        CHECK_EQ_U(hot, it->hot);
      }
    }
    check_bitmap(&q);
    sstm__xq_unlock(&q);
  }
  ref_free(&r);
  sstm__xq_destroy(&q);
}

/* ---- concurrent ---- */

typedef struct logent {
  unsigned id; /* pushed or popped id; UINT32_MAX: a pop found nothing */
  bool push;
} logent_t;

static sstm_xq_t cq;
static item_t *citems;
static logent_t *clog;
static size_t nlog;
static unsigned per_producer;
static _Atomic unsigned producers_left;
static _Atomic unsigned long popped;

static void *producer(void *p) {
  unsigned t = (unsigned)(uintptr_t)p;
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed() + t);
  for (unsigned i = 0; i < per_producer; i++) {
    item_t *it = &citems[t * per_producer + i];
    it->id = t * per_producer + i;
    it->level = (unsigned)sstm_rng_below(&rng, LEVELS);
    it->hot = sstm_rng_below(&rng, 3) == 0;
    sstm__xq_lock(&cq);
    sstm__xq_push(&cq, &it->node, it->level, it->hot);
    clog[nlog++] = (logent_t){it->id, true};
    if ((i & 63) == 0) check_bitmap(&cq);
    sstm__xq_unlock(&cq);
  }
  atomic_fetch_sub_explicit(&producers_left, 1, memory_order_seq_cst);
  return NULL;
}

static void *consumer(void *p) {
  (void)p;
  for (;;) {
    bool last = atomic_load_explicit(&producers_left, memory_order_seq_cst) == 0;
    sstm__xq_lock(&cq);
    sstm_xq_node_t *n = sstm__xq_pop(&cq, NULL, NULL);
    clog[nlog++] = (logent_t){n ? ((item_t *)n)->id : UINT32_MAX, false};
    sstm__xq_unlock(&cq);
    if (n) atomic_fetch_add_explicit(&popped, 1, memory_order_seq_cst);
    if (!n && last) break;
    if (!n) sched_yield();
  }
  return NULL;
}

TEST(concurrent) {
  enum { P = 4, C = 2 };
  per_producer = (unsigned)sstm_test_scaled(20000, 2000);
  size_t total = (size_t)P * per_producer;
  CHECK_NOT_NULL(citems = calloc(total, sizeof *citems));
  /* every push, every successful pop, and the empty pops (bounded by the
   * consumers' yields; generous room) */
  size_t cap = total * 8 + 1000000;
  CHECK_NOT_NULL(clog = malloc(cap * sizeof *clog));
  CHECK_EQ_I(sstm__xq_init(&cq, LEVELS), 0);
  atomic_store_explicit(&producers_left, P, memory_order_seq_cst);
  pthread_t th[P + C];
  for (unsigned i = 0; i < P; i++)
    CHECK_EQ_I(pthread_create(&th[i], NULL, producer, (void *)(uintptr_t)i), 0);
  for (unsigned i = 0; i < C; i++)
    CHECK_EQ_I(pthread_create(&th[P + i], NULL, consumer, NULL), 0);
  for (unsigned i = 0; i < P + C; i++)
    CHECK_EQ_I(pthread_join(th[i], NULL), 0);
  CHECK_LE_U(nlog, cap);
  CHECK_EQ_U(atomic_load_explicit(&popped, memory_order_seq_cst), total);
  CHECK_EQ_I(sstm__xq_top(&cq), -1);
  /* replay */
  ref_t r;
  ref_init(&r, total);
  size_t pops = 0;
  for (size_t i = 0; i < nlog; i++) {
    if (clog[i].push) {
      item_t *it = &citems[clog[i].id];
      ref_push(&r, it->id, it->level, it->hot);
    } else {
      unsigned want = ref_pop(&r);
      CHECK_MSG(want == clog[i].id, "operation %zu: the queue popped %u, the reference %u", i,
                clog[i].id, want);
      pops += want != UINT32_MAX;
    }
  }
  CHECK_EQ_U(pops, total);
  ref_free(&r);
  sstm__xq_destroy(&cq);
  free(clog);
  free(citems);
}

SSTM_TEST_MAIN()
