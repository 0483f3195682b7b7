/* SPDX-License-Identifier: MIT */
/* The executor's priority queue ([Silvestri17], Fig. 5): per priority
 * level a hot list (transactions started, then preempted) and a cold list
 * (submitted, not started), FIFO each; a pop takes the first of the
 * highest non-empty level, hot before cold. A bitmap has bit L set exactly
 * when level L has an entry (hot or cold), so the highest non-empty level
 * is one bit scan away, for a pop and for a lock-free peek.
 *
 * Concurrency: one short mutex (sstm__xq_lock) guards the lists and the
 * bitmap's writes; the executor also guards its context pool with it, so
 * that taking a context and queueing it is one critical section. Pushes
 * and pops hold it for a few dozen instructions (no allocation: the
 * entries are intrusive). sstm__xq_top() reads the bitmap without the
 * lock (a signal handler does, to decide whether to preempt).
 */
#ifndef SSTM_EXEC_QUEUE_H
#define SSTM_EXEC_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SSTM_XQ_MAX_LEVELS 64

/* An entry: embedded in what is queued (an executor's context). */
typedef struct sstm_xq_node {
  struct sstm_xq_node *next;
} sstm_xq_node_t;

typedef struct sstm_xq_list {
  sstm_xq_node_t *head, *tail;
} sstm_xq_list_t;

typedef struct sstm_xq {
  pthread_mutex_t lock;
  /* Bit L: level L's hot or cold list is not empty. Written under the
   * lock; read without it by sstm__xq_top(). */
  _Atomic uint64_t bitmap;
  unsigned levels;
  uint64_t count; /* entries, all levels (under the lock) */
  sstm_xq_list_t hot[SSTM_XQ_MAX_LEVELS], cold[SSTM_XQ_MAX_LEVELS];
} sstm_xq_t;

/* Set up an empty queue of `levels` levels (1..SSTM_XQ_MAX_LEVELS).
 * Returns 0, or an errno of pthread_mutex_init. */
int sstm__xq_init(sstm_xq_t *q, unsigned levels);
void sstm__xq_destroy(sstm_xq_t *q);

void sstm__xq_lock(sstm_xq_t *q);
void sstm__xq_unlock(sstm_xq_t *q);

/* With the lock held: append n to level's hot (hot true) or cold list.
 * level < q->levels. */
void sstm__xq_push(sstm_xq_t *q, sstm_xq_node_t *n, unsigned level, bool hot);
/* With the lock held: remove and return the first entry of the highest
 * non-empty level, hot before cold, with its level and list in *level and
 * *hot (either may be NULL); NULL if the queue is empty. */
sstm_xq_node_t *sstm__xq_pop(sstm_xq_t *q, unsigned *level, bool *hot);

/* With the lock held: remove n from level's hot (hot true) or cold list,
 * wherever it is in it. False, nothing changed, if it is not there. A
 * walk of that list (short: the paused transactions of one level). */
bool sstm__xq_remove(sstm_xq_t *q, sstm_xq_node_t *n, unsigned level, bool hot);
/* With the lock held: the level whose hot list holds n, or -1. A walk of
 * the hot lists of the non-empty levels. */
int sstm__xq_hot_level(const sstm_xq_t *q, const sstm_xq_node_t *n);
/* With the lock held: the highest level whose cold list (submitted, not
 * started) has an entry, or -1. A walk down the non-empty levels. */
int sstm__xq_top_cold(const sstm_xq_t *q);
/* With the lock held: whether level's hot list has an entry. */
static inline bool sstm__xq_has_hot(const sstm_xq_t *q, unsigned level) {
  return q->hot[level].head != NULL;
}

/* The highest non-empty level, or -1: callable without the lock and from a
 * signal handler (one relaxed load and a bit scan). Without the lock the
 * answer is a hint that may be stale by the time it is used; whoever acts
 * on it re-checks under the lock or tolerates a needless switch. */
static inline int sstm__xq_top(const sstm_xq_t *q) {
  /* relaxed: a hint (see above); nothing is read through it. */
  uint64_t b = atomic_load_explicit(&q->bitmap, memory_order_relaxed);
  return b ? 63 - __builtin_clzll(b) : -1;
}

#endif /* SSTM_EXEC_QUEUE_H */
