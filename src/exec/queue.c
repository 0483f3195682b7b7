/* SPDX-License-Identifier: MIT */
/* The executor's priority queue (queue.h). */
#include "exec/queue.h"

#include <string.h>

int sstm__xq_init(sstm_xq_t *q, unsigned levels) {
  memset(q, 0, sizeof *q);
  q->levels = levels;
  atomic_init(&q->bitmap, 0);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  /* Spin a little before sleeping: the critical sections are a few dozen
   * instructions, and a submitter that sleeps costs a futex round trip. */
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
  int e = pthread_mutex_init(&q->lock, &a);
  pthread_mutexattr_destroy(&a);
  return e;
}

void sstm__xq_destroy(sstm_xq_t *q) { pthread_mutex_destroy(&q->lock); }

void sstm__xq_lock(sstm_xq_t *q) { pthread_mutex_lock(&q->lock); }
void sstm__xq_unlock(sstm_xq_t *q) { pthread_mutex_unlock(&q->lock); }

void sstm__xq_push(sstm_xq_t *q, sstm_xq_node_t *n, unsigned level, bool hot) {
  sstm_xq_list_t *l = hot ? &q->hot[level] : &q->cold[level];
  n->next = NULL;
  if (l->tail)
    l->tail->next = n;
  else
    l->head = n;
  l->tail = n;
  q->count++;
  /* relaxed: the lock orders the writers; readers without the lock take
   * the bitmap as a hint (sstm__xq_top). */
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed);
  atomic_store_explicit(&q->bitmap, b | (1ull << level), memory_order_relaxed);
}

static sstm_xq_node_t *take(sstm_xq_list_t *l) {
  sstm_xq_node_t *n = l->head;
  l->head = n->next;
  if (!l->head) l->tail = NULL;
  n->next = NULL;
  return n;
}

sstm_xq_node_t *sstm__xq_pop(sstm_xq_t *q, unsigned *level, bool *hot) {
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed); /* under the lock */
  if (!b) return NULL;
  unsigned lv = 63u - (unsigned)__builtin_clzll(b);
  bool h = q->hot[lv].head != NULL;
  sstm_xq_node_t *n = take(h ? &q->hot[lv] : &q->cold[lv]);
  q->count--;
  if (!q->hot[lv].head && !q->cold[lv].head)
    atomic_store_explicit(&q->bitmap, b & ~(1ull << lv), memory_order_relaxed);
  if (level) *level = lv;
  if (hot) *hot = h;
  return n;
}

bool sstm__xq_remove(sstm_xq_t *q, sstm_xq_node_t *n, unsigned level, bool hot) {
  sstm_xq_list_t *l = hot ? &q->hot[level] : &q->cold[level];
  sstm_xq_node_t *prev = NULL;
  for (sstm_xq_node_t *e = l->head; e; prev = e, e = e->next) {
    if (e != n) continue;
    if (prev)
      prev->next = n->next;
    else
      l->head = n->next;
    if (l->tail == n) l->tail = prev;
    n->next = NULL;
    q->count--;
    if (!q->hot[level].head && !q->cold[level].head) {
      /* relaxed: as in the push (under the lock; readers take a hint) */
      uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed);
      atomic_store_explicit(&q->bitmap, b & ~(1ull << level), memory_order_relaxed);
    }
    return true;
  }
  return false;
}

int sstm__xq_hot_level(const sstm_xq_t *q, const sstm_xq_node_t *n) {
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed); /* under the lock */
  while (b) {
    unsigned lv = 63u - (unsigned)__builtin_clzll(b);
    b &= ~(1ull << lv);
    for (const sstm_xq_node_t *e = q->hot[lv].head; e; e = e->next)
      if (e == n) return (int)lv;
  }
  return -1;
}

int sstm__xq_top_cold(const sstm_xq_t *q) {
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed); /* under the lock */
  while (b) {
    unsigned lv = 63u - (unsigned)__builtin_clzll(b);
    if (q->cold[lv].head) return (int)lv;
    b &= ~(1ull << lv);
  }
  return -1;
}
