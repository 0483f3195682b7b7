/* Transactional allocation and quiescence-based reclamation.
 *
 * sstm_malloc inside an attempt logs the block; rollback frees it.
 * sstm_free inside an attempt logs the block; commit retires it; rollback
 * forgets it. Retired blocks gather in the descriptor's current batch; when
 * the batch is full (BATCH_BLOCKS) it is closed: after a seq_cst fence, the status word of
 * every running attempt of other descriptors is recorded. A closed batch is
 * released when each recorded attempt has ended (argument 5 in stm.c): its
 * status shows another serial, or IDLE. Suspended (detached) attempts keep
 * their ACTIVE status and so hold back the batches closed while they run.
 *
 * Batches of exiting threads move to a global orphan list, released by any
 * thread that closes a batch, by sstm_reclaim(), or at shutdown.
 */
#include <stdlib.h>

#include "core/engine.h"

/* Blocks per batch. Closing a batch costs a membarrier, which interrupts
 * every CPU running one of our threads (a few microseconds each): with
 * batches of 64, hash-set removals at 2 threads spent about a third of the
 * time there; 1024 makes it about 1 % (docs/benchmarks.md). */
#define BATCH_BLOCKS 1024

void sstm__ptrvec_push(sstm_ptrvec_t *v, void *p) {
  if (v->n == v->cap) {
    uint32_t cap = v->cap ? v->cap * 2 : 16;
    void **np = realloc(v->p, cap * sizeof *np);
    if (np == NULL) sstm__fatal("out of memory in the allocation log");
    v->p = np;
    v->cap = cap;
  }
  v->p[v->n++] = p;
}

SSTM_API void *sstm_malloc(size_t size) {
  void *p = malloc(size);
  struct sstm_desc *tx = sstm__cur;
  if (p != NULL && tx != NULL && tx->depth != 0 && sstm__kind(tx) != SSTM_V_IRREV)
    sstm__ptrvec_push(&tx->allocs, p);
  return p;
}

SSTM_API void *sstm_calloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  struct sstm_desc *tx = sstm__cur;
  if (p != NULL && tx != NULL && tx->depth != 0 && sstm__kind(tx) != SSTM_V_IRREV)
    sstm__ptrvec_push(&tx->allocs, p);
  return p;
}

static bool batch_done(const sstm_retired_batch_t *b) {
  for (uint32_t i = 0; i < b->nwait; i++) {
    /* acquire: once the attempt is seen ended, its reads are over. */
    uint64_t now = atomic_load_explicit(&b->wait[i].d->status, memory_order_acquire);
    if (sstm_st_same_attempt_running(b->wait[i].status, now)) return false;
  }
  return true;
}

static void batch_free(sstm_retired_batch_t *b) {
  for (uint32_t i = 0; i < b->blocks.n; i++) free(b->blocks.p[i]);
  free(b->blocks.p);
  free(b);
}

/* Release every finished batch of a list; returns blocks released. */
static size_t sweep(sstm_retired_batch_t **list) {
  size_t released = 0;
  while (*list) {
    sstm_retired_batch_t *b = *list;
    if (batch_done(b)) {
      *list = b->next;
      released += b->blocks.n;
      batch_free(b);
    } else {
      list = &b->next;
    }
  }
  return released;
}

/* Close the descriptor's current batch: record who may still read it. */
static void close_batch(struct sstm_desc *self) {
  if (self->retire_cur.n == 0) return;
  /* Heavy side of the begin barrier: a seq_cst fence pairing with the
   * seq_cst exchange at attempt start, or a membarrier that forces a full
   * barrier on every running thread. An attempt whose ACTIVE we do not see
   * below started after this point and sees the unlinking stores that
   * precede it (argument 5 in stm.c). */
  sstm__heavy_fence();
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  sstm_retired_batch_t *b = malloc(sizeof *b + hw * sizeof b->wait[0]);
  if (b == NULL) sstm__fatal("out of memory closing a reclamation batch");
  b->nwait = 0;
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *o = sstm__desc_at(i);
    if (o == NULL || o == self) continue;
    uint64_t st = atomic_load_explicit(&o->status, memory_order_seq_cst);
    if (sstm_st_state(st) != SSTM_ST_IDLE) {
      b->wait[b->nwait].d = o;
      b->wait[b->nwait].status = st;
      b->nwait++;
    }
  }
  b->blocks = self->retire_cur;
  self->retire_cur = (sstm_ptrvec_t){0};
  b->next = self->batches;
  self->batches = b;
}

static size_t sweep_orphans(bool wait) {
  if (wait)
    pthread_mutex_lock(&sstm__g.orphan_lock);
  else if (pthread_mutex_trylock(&sstm__g.orphan_lock) != 0)
    return 0;
  /* The head is written with relaxed atomics under the lock, for the
   * unlocked peek in sstm__reclaim_commit. */
  sstm_retired_batch_t *list = __atomic_load_n(&sstm__g.orphans, __ATOMIC_RELAXED);
  size_t n = sweep(&list);
  __atomic_store_n(&sstm__g.orphans, list, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&sstm__g.orphan_lock);
  return n;
}

void sstm__reclaim_commit(struct sstm_desc *d) {
  for (uint32_t i = 0; i < d->frees.n; i++) sstm__ptrvec_push(&d->retire_cur, d->frees.p[i]);
  d->frees.n = 0;
  if (d->retire_cur.n >= BATCH_BLOCKS) {
    close_batch(d);
    sweep(&d->batches);
    /* relaxed peek: a stale answer only delays the orphans' release. */
    if (__atomic_load_n(&sstm__g.orphans, __ATOMIC_RELAXED)) sweep_orphans(false);
  }
}

void sstm__reclaim_abort(struct sstm_desc *d) {
  for (uint32_t i = 0; i < d->allocs.n; i++) free(d->allocs.p[i]);
  d->allocs.n = 0;
  d->frees.n = 0;
}

void sstm__reclaim_desc_exit(struct sstm_desc *d) {
  close_batch(d);
  sweep(&d->batches);
  if (d->batches == NULL) return;
  sstm_retired_batch_t *last = d->batches;
  while (last->next) last = last->next;
  pthread_mutex_lock(&sstm__g.orphan_lock);
  last->next = sstm__g.orphans;
  __atomic_store_n(&sstm__g.orphans, d->batches, __ATOMIC_RELAXED); /* see the peek */
  pthread_mutex_unlock(&sstm__g.orphan_lock);
  d->batches = NULL;
}

SSTM_API void sstm_free(void *p) {
  if (p == NULL) return;
  struct sstm_desc *tx = sstm__cur;
  if (tx != NULL && tx->depth != 0) {
    if (sstm__kind(tx) == SSTM_V_IRREV)
      sstm__ptrvec_push(&tx->retire_cur, p); /* never aborts: retire now */
    else
      sstm__ptrvec_push(&tx->frees, p);
    return;
  }
  if (tx != NULL) {
    sstm__ptrvec_push(&tx->retire_cur, p);
    if (tx->retire_cur.n >= BATCH_BLOCKS) {
      close_batch(tx);
      sweep(&tx->batches);
    }
    return;
  }
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    free(p); /* no transactions can exist */
    return;
  }
  /* Unregistered thread: a one-block orphan batch. */
  struct sstm_desc tmp = {0};
  sstm__ptrvec_push(&tmp.retire_cur, p);
  close_batch(&tmp);
  pthread_mutex_lock(&sstm__g.orphan_lock);
  tmp.batches->next = sstm__g.orphans;
  __atomic_store_n(&sstm__g.orphans, tmp.batches, __ATOMIC_RELAXED); /* see the peek */
  pthread_mutex_unlock(&sstm__g.orphan_lock);
}

SSTM_API size_t sstm_reclaim(void) {
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) return 0;
  size_t n = 0;
  struct sstm_desc *d = sstm__cur;
  if (d != NULL && d->depth == 0) {
    close_batch(d);
    n += sweep(&d->batches);
  }
  return n + sweep_orphans(true);
}

/* Shutdown: no transaction runs any more; release everything. */
void sstm__reclaim_fini(void) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d == NULL) continue;
    for (uint32_t j = 0; j < d->retire_cur.n; j++) free(d->retire_cur.p[j]);
    d->retire_cur.n = 0;
    while (d->batches) {
      sstm_retired_batch_t *b = d->batches;
      d->batches = b->next;
      batch_free(b);
    }
  }
  while (sstm__g.orphans) {
    sstm_retired_batch_t *b = sstm__g.orphans;
    sstm__g.orphans = b->next;
    batch_free(b);
  }
}
