/* SPDX-License-Identifier: MIT */
/* Global hooks on thread and transaction events.
 *
 * The table may change at any time (hooks.h): sstm_hooks_add/remove write a
 * slot under reg_lock, while every thread reads the slots at its events
 * without a lock. Each slot is a seqlock (Boehm, "Can seqlocks get along
 * with programming language memory models?", MSPC 2012) over the pair
 * (hooks, arg), so that a reader never calls one registration's functions
 * with another's argument when a slot is freed and taken again under it.
 * A reader does not wait for a writer: a slot that is being written, or
 * was written while it read it, is skipped, which orders the event before
 * an add or after a remove that ran at the same time, as the contract
 * allows. */
#include "core/engine.h"

static struct hook_slot {
  _Atomic unsigned seq; /* even: stable; odd: being written */
  _Atomic(const sstm_hooks_t *) h;
  _Atomic(void *) arg;
  unsigned kinds; /* reg_lock: the events counted at the add (count_kinds) */
} hooks[SSTM_MAX_HOOKS];

/* Writer side, under reg_lock (one writer at a time). */
static void slot_write(struct hook_slot *s, const sstm_hooks_t *h, void *arg) {
  unsigned q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
  /* release fence: a reader that sees either store below also sees the odd
   * count (its acquire fence pairs with this one), so it discards the pair. */
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&s->h, h, memory_order_relaxed);
  atomic_store_explicit(&s->arg, arg, memory_order_relaxed);
  /* release: a reader whose first load sees the even count q + 2 sees the
   * pair stored before it. */
  atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

/* Reader side: the slot's pair if it was stable while read, else NULL. */
static const sstm_hooks_t *slot_read(struct hook_slot *s, void **arg) {
  /* acquire: pairs with the release store of the even count. */
  unsigned q = atomic_load_explicit(&s->seq, memory_order_acquire);
  if (q & 1) return NULL;
  const sstm_hooks_t *h = atomic_load_explicit(&s->h, memory_order_relaxed);
  *arg = atomic_load_explicit(&s->arg, memory_order_relaxed);
  /* acquire fence: the loads of the pair happen before the count's second
   * load; with the writer's release fence, a pair touched by a writer shows
   * a changed count here. A relaxed load without the fence could be
   * satisfied before the pair's loads and miss the change. */
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->seq, memory_order_relaxed) != q) return NULL;
  return h;
}

/* The fast checks a hook set counts in (engine.h: nhooks for transaction
 * events, nthread_hooks for thread events), fixed at its registration. */
enum { KIND_TX = 1, KIND_THREAD = 2 };
static unsigned kinds_of(const sstm_hooks_t *h) {
  return (h->tx_begin || h->tx_commit || h->tx_abort ? KIND_TX : 0) |
         (h->thread_init || h->thread_exit ? KIND_THREAD : 0);
}

/* Count a registration (+1) or its removal (-1) of a set with `kinds`;
 * under reg_lock. relaxed: see sstm_hooks_add. */
static void count_kinds(unsigned kinds, int by) {
  if (kinds & KIND_TX)
    atomic_fetch_add_explicit(&sstm__g.nhooks, (unsigned)by, memory_order_relaxed);
  if (kinds & KIND_THREAD)
    atomic_fetch_add_explicit(&sstm__g.nthread_hooks, (unsigned)by, memory_order_relaxed);
}

SSTM_API int sstm_hooks_add(const sstm_hooks_t *h, void *arg) {
  if (h == NULL) {
    sstm__set_error("sstm_hooks_add: hooks is NULL");
    return SSTM_EINVAL;
  }
  pthread_mutex_lock(&sstm__g.reg_lock);
  int handle = SSTM_ELIMIT;
  for (int i = 0; i < SSTM_MAX_HOOKS; i++) {
    if (atomic_load_explicit(&hooks[i].h, memory_order_relaxed) == NULL) {
      slot_write(&hooks[i], h, arg);
      hooks[i].kinds = kinds_of(h);
      handle = i;
      break;
    }
  }
  /* relaxed: the counts are only the events' fast-path tests; the slot's
   * count orders the pair. An event that reads 0 here ran before the add. */
  if (handle >= 0) count_kinds(hooks[handle].kinds, 1);
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (handle < 0) sstm__set_error("sstm_hooks_add: all %d hook slots are used", SSTM_MAX_HOOKS);
  return handle;
}

SSTM_API int sstm_hooks_remove(int handle) {
  if (handle < 0 || handle >= SSTM_MAX_HOOKS) {
    sstm__set_error("sstm_hooks_remove: handle %d out of range [0, %d)", handle, SSTM_MAX_HOOKS);
    return SSTM_EINVAL;
  }
  pthread_mutex_lock(&sstm__g.reg_lock);
  int rc = SSTM_EINVAL;
  if (atomic_load_explicit(&hooks[handle].h, memory_order_relaxed) != NULL) {
    slot_write(&hooks[handle], NULL, NULL);
    count_kinds(hooks[handle].kinds, -1);
    rc = 0;
  }
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (rc != 0) sstm__set_error("sstm_hooks_remove: handle %d is not registered", handle);
  return rc;
}

#define FOR_HOOKS(member, ...)                                                                     \
  for (int i = 0; i < SSTM_MAX_HOOKS; i++) {                                                       \
    void *arg_;                                                                                    \
    const sstm_hooks_t *h_ = slot_read(&hooks[i], &arg_);                                          \
    if (h_ && h_->member) h_->member(arg_, ##__VA_ARGS__);                                         \
  }

void sstm__hooks_thread_init(void) { FOR_HOOKS(thread_init); }
void sstm__hooks_thread_exit(void) { FOR_HOOKS(thread_exit); }
void sstm__hooks_begin(uint64_t txid) { FOR_HOOKS(tx_begin, txid); }
void sstm__hooks_commit(uint64_t txid) { FOR_HOOKS(tx_commit, txid); }
void sstm__hooks_abort(uint64_t txid, sstm_abort_reason_t r) { FOR_HOOKS(tx_abort, txid, r); }

/* At sstm_shutdown, once no thread is registered. */
void sstm__hooks_clear(void) {
  pthread_mutex_lock(&sstm__g.reg_lock);
  for (int i = 0; i < SSTM_MAX_HOOKS; i++)
    if (atomic_load_explicit(&hooks[i].h, memory_order_relaxed) != NULL)
      slot_write(&hooks[i], NULL, NULL);
  atomic_store_explicit(&sstm__g.nhooks, 0, memory_order_relaxed);
  atomic_store_explicit(&sstm__g.nthread_hooks, 0, memory_order_relaxed);
  pthread_mutex_unlock(&sstm__g.reg_lock);
}
