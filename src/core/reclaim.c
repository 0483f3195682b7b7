/* SPDX-License-Identifier: MIT */
/* Transactional allocation, quiescence-based reclamation and the
 * privatization barrier.
 *
 * sstm_malloc inside an attempt logs the block; rollback frees it (after
 * the attempt's abort actions, if it registered any: txn.c).
 * sstm_free inside an attempt logs the block; commit retires it; rollback
 * forgets it. Retired blocks gather in the descriptor's current batch; when
 * the batch is full (BATCH_BLOCKS_ALONE or BATCH_BLOCKS_SHARED blocks, or
 * BATCH_BYTES of memory) it is closed and starts a grace period.
 * A closed batch is released once its grace period is over.
 *
 * Grace period (docs/design/core.md (5.2), (5.3)): after a heavy fence, the status word
 * of every running attempt is recorded (the caller's own too, which runs
 * only when a hook inside it retires a block); the period is
 * over when each recorded attempt has ended: its status shows another serial,
 * or IDLE. Suspended (detached) attempts keep their status and so hold back
 * the periods that started while they run. sstm_quiesce() starts a grace
 * period and waits for it to be over.
 *
 * Batches of exiting threads move to a global orphan list, released by any
 * thread that closes a batch, by sstm_reclaim(), or at shutdown.
 *
 * Released blocks go to free() or, when small, to the releasing thread's
 * block cache (cfg.alloc_cache bytes), from which its sstm_malloc and
 * sstm_calloc serve first. A block enters the cache exactly where it would
 * otherwise be freed: its grace period is over, or an aborted attempt
 * allocated it and no other attempt could reach it. Handing it out again
 * is then as safe as malloc returning the same address. Why a cache: at 64
 * threads glibc's arenas (8 per CPU) are shared, a thread preempted inside
 * malloc or free holds its arena's lock, and every released block is cold,
 * written by free() and then again by malloc(); the cache reuses the block
 * with neither (docs/benchmarks-history.md, "The block cache").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

/* Blocks per batch. Closing a batch costs a membarrier, which interrupts
 * every CPU running one of our threads: with small batches, hash-set
 * removals spent much of their time there (docs/benchmarks.md, "Figures
 * behind the design"). With no other thread of ours running transactions
 * the fence is cheap (it interrupts only the CPUs running the process's
 * threads); 1024 blocks then keep the reuse close behind their free (a
 * block waits for its batch's close, about half a batch of frees, and is
 * cold when reused after more). With other threads running transactions
 * each fence interrupts their CPUs, which costs far more (an
 * inter-processor interrupt to each, on a virtual machine an exit to the
 * hypervisor), and 8192 blocks amortise it eight times more. The batch of
 * the next close is chosen by what the last close's scan saw: 8192 once a
 * scan has recorded another descriptor's attempt running, for as long as
 * other descriptors stay registered; a registered thread that runs nothing
 * (a main thread waiting for its one worker) does not count, since the
 * longer batch costs a lone thread its warm reuse (docs/benchmarks.md,
 * "Synchrobench, as written", its hash table at two threads, and "The
 * headline figures at `a1e0a4b`"). */
#define BATCH_BLOCKS_ALONE 1024
#define BATCH_BLOCKS_SHARED 8192
/* Bytes per batch (malloc_usable_size of its blocks): a batch also closes
 * when it holds this much, so that what a thread keeps waiting for grace
 * periods is bounded in memory too, not only in blocks. 1024 blocks of the
 * transactional stdio's buffers (4 KiB on a pipe, 64 KiB on a file) would
 * hold 4 or 64 MiB per thread, 1024 blocks of 1 MiB 1 GiB. Small blocks (a
 * tree's nodes) fill 1024 first, so their batches, and what they cost, do
 * not change (docs/benchmarks.md, "Memory held for grace periods"). */
#define BATCH_BYTES ((size_t)256 * 1024)

/* Double v's capacity; false (v unchanged) when it is at 2^30 entries or
 * memory is short. */
static bool ptrvec_grow(sstm_ptrvec_t *v) {
  if (v->cap >= (1u << 30)) return false;
  uint32_t cap = v->cap ? v->cap * 2 : 16;
  void **np = realloc(v->p, (size_t)cap * sizeof *np);
  if (np == NULL) return false;
  v->p = np;
  v->cap = cap;
  return true;
}

void sstm__ptrvec_push(sstm_ptrvec_t *v, void *p) {
  if (v->n == v->cap && !ptrvec_grow(v))
    sstm__fatal(v->cap >= (1u << 30) ? "the allocation log is full (2^30 blocks)"
                                     : "out of memory in the allocation log");
  v->p[v->n++] = p;
}

/* sstm__ptrvec_push with the common case (room left) in the caller. */
static inline void ptrvec_push_inline(sstm_ptrvec_t *v, void *p) {
  if (SSTM_LIKELY(v->n < v->cap))
    v->p[v->n++] = p;
  else
    sstm__ptrvec_push(v, p);
}

/* Retire p into d's current batch; true when the batch is now full. */
static inline bool retire(struct sstm_desc *d, void *p) {
  ptrvec_push_inline(&d->retire_cur, p);
  d->retire_bytes += malloc_usable_size(p);
  return d->retire_cur.n >= (d->retire_shared ? BATCH_BLOCKS_SHARED : BATCH_BLOCKS_ALONE) ||
         d->retire_bytes >= BATCH_BYTES;
}

/* ------------------------------------------------------------------------ */
/* The block cache (owner-only, like the rest of the descriptor).
 *
 * Class c holds blocks whose malloc_usable_size is in [8c, 8c + 8). A
 * request of n bytes looks in class ceil(n / 8) and the one above it, so a
 * block served has at least n usable bytes; with glibc's usable sizes, 8
 * mod 16, one of the two is where blocks of that request land. `bytes`
 * counts 8c per block held. */

#define CACHE_LIMIT (8 * (size_t)SSTM_BLKCACHE_CLASSES)

static SSTM_NOINLINE void *blkcache_take(struct sstm_desc *d, size_t n) {
  if (n >= CACHE_LIMIT) return NULL;
  size_t c = n <= 8 ? 1 : (n + 7) / 8;
  size_t e = c + 2 < SSTM_BLKCACHE_CLASSES ? c + 2 : SSTM_BLKCACHE_CLASSES;
  for (; c < e; c++) {
    sstm_ptrvec_t *v = &d->cache.cls[c];
    if (v->n != 0) {
      d->cache.bytes -= 8 * c;
      /* The next block of the class will be written by its user: start
       * bringing it in now (released blocks are cold). */
      if (v->n >= 2) __builtin_prefetch(v->p[v->n - 2], 1);
      return v->p[--v->n];
    }
  }
  return NULL;
}

/* A block of at least n usable bytes from d's cache (d may be NULL), or
 * NULL. The test of an empty cache, the common case of a thread that
 * frees little, is made in the caller. */
static inline void *blkcache_get(struct sstm_desc *d, size_t n) {
  return d != NULL && d->cache.bytes != 0 ? blkcache_take(d, n) : NULL;
}

/* Release p: into d's cache if it fits, else free(). d may be NULL. */
static void blk_release(struct sstm_desc *d, void *p) {
  size_t limit = sstm__g.cfg.alloc_cache;
  if (d != NULL && limit != 0) {
    size_t c = malloc_usable_size(p) / 8;
    if (c != 0 && c < SSTM_BLKCACHE_CLASSES && d->cache.bytes + 8 * c <= limit) {
      sstm_ptrvec_t *v = &d->cache.cls[c];
      if (v->n < v->cap || ptrvec_grow(v)) {
        v->p[v->n++] = p;
        d->cache.bytes += 8 * c;
        return;
      }
    }
  }
  free(p);
}

static void blkcache_drain(struct sstm_desc *d) {
  for (unsigned c = 0; c < SSTM_BLKCACHE_CLASSES; c++) {
    sstm_ptrvec_t *v = &d->cache.cls[c];
    for (uint32_t i = 0; i < v->n; i++)
      free(v->p[i]);
    free(v->p);
    *v = (sstm_ptrvec_t){0};
  }
  d->cache.bytes = 0;
}

/* Whether sstm_malloc/sstm_free on this thread act for a running attempt.
 * Not in a hook or a policy callback (in_hook), even one that runs inside
 * an attempt (tx_begin, on_begin, on_conflict): what they allocate belongs
 * to them, not to the attempt, whose rollback would free it under them;
 * and what they free must not wait for a commit that may never come. */
static inline bool in_attempt(const struct sstm_desc *tx) {
  return tx != NULL && tx->depth != 0 && tx->in_hook == 0;
}

/* A block allocated by a running attempt: forgotten (released) if it aborts,
 * kept if it commits, whose tail empties the log (SSTM_SLOW_MEM sends it
 * there: the common commit does not look at the logs). */
static void alloc_logged(struct sstm_desc *tx, void *p) {
  ptrvec_push_inline(&tx->allocs, p);
  tx->slow |= SSTM_SLOW_MEM;
}

SSTM_API void *sstm_malloc(size_t size) {
  struct sstm_desc *tx = sstm__cur;
  void *p = blkcache_get(tx, size);
  if (p == NULL) p = malloc(size);
  if (p != NULL && in_attempt(tx)) alloc_logged(tx, p);
  return p;
}

SSTM_API void *sstm_calloc(size_t n, size_t size) {
  struct sstm_desc *tx = sstm__cur;
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM; /* as calloc (ASan's would abort instead) */
    return NULL;
  }
  void *p = blkcache_get(tx, bytes);
  if (p != NULL)
    memset(p, 0, bytes);
  else
    p = calloc(n, size);
  if (p != NULL && in_attempt(tx)) alloc_logged(tx, p);
  return p;
}

/* ------------------------------------------------------------------------ */
/* Grace periods: reclamation and sstm_quiesce share them. */

/* Start a grace period: record every running attempt, self's own included
 * ((5.2)): self is the caller's descriptor (NULL: none), whose attempt runs
 * here only when a hook or callback inside it (a tx_begin hook, a policy's
 * on_conflict, the sampling callback) retires a block with sstm_free, and
 * that attempt may still read the block, as any other running one may.
 * Every other caller runs between attempts (a commit's tail, a free outside
 * a transaction, sstm_reclaim, sstm_quiesce, a thread's exit), where
 * self's status is IDLE and nothing of it is recorded. *others (when not
 * NULL): how many descriptors in use (registered or created) other than
 * self the scan found, running or not. False if out of memory. */
static bool grace_start(const struct sstm_desc *self, sstm_grace_t *g, unsigned *others) {
  /* Heavy side of the begin barrier: a seq_cst fence pairing with the
   * seq_cst fence after the ACTIVE store at attempt start, or a membarrier that forces a full
   * barrier on every running thread. Our earlier stores (the unlinking or
   * privatizing commit: its lock releases and clock increment) are ordered
   * before the status loads below, and a beginning attempt's ACTIVE store
   * before its loads of the clock and of shared data: store buffering is
   * excluded, so an attempt whose ACTIVE we do not see below started after
   * this point and sees those stores (docs/design/core.md (5)). */
  sstm__heavy_fence();
  /* acquire: pairs with the release store publishing a new slot; a slot
   * published after this load belongs to an attempt that starts after the
   * fence (its publication precedes its own begin barrier). */
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  g->n = 0;
  if (g->cap < (hw ? hw : 1)) { /* a recycled batch keeps its room (close_batch) */
    sstm_grace_rec_t *r = realloc(g->rec, (hw ? hw : 1) * sizeof *g->rec);
    if (r == NULL) return false;
    g->rec = r;
    g->cap = hw ? hw : 1;
  }
  unsigned seen = 0;
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *o = sstm__desc_at(i);
    if (o == NULL) continue;
    /* relaxed: a hint for the next batch's length; a slot whose descriptor
     * was destroyed or whose thread unregistered is no other thread (its
     * status is IDLE, so the record below is unaffected). The registry
     * writes in_use under its lock, with relaxed atomic stores. */
    if (o != self && __atomic_load_n(&o->in_use, __ATOMIC_RELAXED)) seen++;
    /* The heavy fence above already orders this load against a beginning
     * attempt's ACTIVE store (fence against fence in C11, or the barrier
     * membarrier runs on that thread), so it needs no seq_cst of its own.
     * acquire: a status that shows the attempt ended (IDLE, or a later
     * serial) pairs with the release that ended it, as in grace_over, so
     * that attempt's reads happen before our caller frees; relaxed would
     * lose that. Any state but IDLE is running: ACTIVE, KILLED (not rolled
     * back yet), COMMITTING (maybe writing back), IRREVOCABLE (writing in
     * place). Self's own status is its owner's word (acquire is
     * harmless there). */
    uint64_t st = atomic_load_explicit(&o->status, memory_order_acquire);
    if (sstm_st_state(st) != SSTM_ST_IDLE) g->rec[g->n++] = (sstm_grace_rec_t){o, st};
  }
  if (others != NULL) *others = seen;
  return true;
}

/* Forget the recorded attempts that have ended; true once none is left. */
static bool grace_over(sstm_grace_t *g) {
  for (uint32_t i = 0; i < g->n;) {
    /* acquire: pairs with the release that ended the attempt (the IDLE
     * store after write-back, the acq_rel exchange of rollback and of the
     * irrevocable commit) or with the release store that began a later
     * attempt of the same descriptor, sequenced after that end. Either way
     * the ended attempt's reads and write-back happen before our caller's
     * later accesses. */
    uint64_t now = atomic_load_explicit(&g->rec[i].d->status, memory_order_acquire);
    if (sstm_st_same_attempt_running(g->rec[i].status, now))
      i++;
    else
      g->rec[i] = g->rec[--g->n];
  }
  return g->n == 0;
}

static void grace_fini(sstm_grace_t *g) {
  free(g->rec);
  g->rec = NULL;
  g->n = g->cap = 0;
}

/* How long sstm_quiesce polls before it sleeps. A conflict-free attempt
 * lasts about a microsecond, and with as many threads as CPUs nearly every
 * wait ends within a few of them, so a poll of a few microseconds saves
 * nearly every futex sleep and wake-up (tens of microseconds across CPUs:
 * docs/benchmarks.md, "Figures behind the design"). Longer polls save
 * few more, and with more threads than CPUs they keep the CPU from the
 * attempts we wait for, which may be descheduled: the compiler ABI's
 * grace period per update commit measured faster at 64 threads on 2 CPUs
 * with this bound than with ten times it, and no slower at 2 threads
 * (docs/benchmarks.md, "Privatization safety in the compiler ABI"). */
#define QUIESCE_SPIN_NS 2000

/* Wait until the grace period is over: poll with exponential backoff for
 * up to QUIESCE_SPIN_NS, then wait for each remaining attempt through
 * sstm_party_wait, which sleeps on the futex of its status word (and spins
 * while it is committing). That wait compares serials, so an attempt that
 * ended and was followed by a new one counts as ended, and it never misses
 * an end (the futex compare covers the word's low bits, which every
 * transition changes). */
static void grace_wait(sstm_grace_t *g) {
  if (g->n == 0) return; /* nothing was running: no clock to read */
  uint64_t t0 = sstm__now_ns();
  for (unsigned pause = 1; !grace_over(g); pause = pause < 1024 ? pause * 2 : pause) {
    if (sstm__now_ns() - t0 >= QUIESCE_SPIN_NS) break;
    for (unsigned i = 0; i < pause; i++)
      sstm__cpu_relax();
  }
  /* Wait for the first attempt left, then forget those that have ended,
   * until none is left. No timeout: sstm_party_wait returns once the
   * attempt has ended, or earlier when an executor asks this thread to
   * leave its wait (cm_wait, which the wait sets on a thread between two
   * attempts: a policy's wait, whose retry then switches), which does not
   * end the grace period: grace_over looks again, with its acquire loads. */
  while (!grace_over(g)) {
    sstm_party_t p = {.desc = g->rec[0].d, .txid = sstm_st_serial(g->rec[0].status)};
    (void)sstm_party_wait(&p, SSTM_WAIT_BLOCK, 0);
  }
}

SSTM_API int sstm_quiesce(void) {
  struct sstm_desc *self = sstm__cur;
  if (SSTM_UNLIKELY(self != NULL && self->depth != 0)) {
    if (sstm__debug) sstm__misuse("sstm_quiesce inside a transaction (it would wait for itself)");
    sstm__set_error("sstm_quiesce: called inside a transaction, which it would wait for");
    return SSTM_EBUSY;
  }
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    sstm__set_error("sstm_quiesce: schedstm is not initialised (sstm_init)");
    return SSTM_ESTATE;
  }
  /* A registered thread records into its descriptor's room, which stays
   * for its next call: an update commit that waits for a grace period
   * (the compiler ABI's privatization safety) then calls no allocator. */
  sstm_grace_t local = {0};
  sstm_grace_t *g = self != NULL ? &self->quiesce : &local;
  if (!grace_start(self, g, NULL)) {
    sstm__set_error("sstm_quiesce: out of memory recording the running transactions");
    return SSTM_ENOMEM;
  }
  grace_wait(g);
  grace_fini(&local);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Retired blocks. */

/* Batches a descriptor keeps after their release, with their block vector
 * and grace record room, so that a thread that frees steadily closes its
 * batches without calling malloc (owner-only, like the block cache). */
#define BATCH_POOL_MAX 4

static void batch_destroy(sstm_retired_batch_t *b) {
  free(b->blocks.p);
  grace_fini(&b->grace);
  free(b);
}

static void batch_pool_drain(struct sstm_desc *d) {
  while (d->batch_pool) {
    sstm_retired_batch_t *b = d->batch_pool;
    d->batch_pool = b->next;
    batch_destroy(b);
  }
  d->batch_pool_n = 0;
}

/* Release a batch's blocks (into to's cache where they fit; to may be
 * NULL), then the batch: into to's pool while it has room, else free(). */
static void batch_free(sstm_retired_batch_t *b, struct sstm_desc *to) {
  /* Each release reads the block's allocator header, a cache miss after a
   * grace period: fetch a few blocks ahead so that the misses overlap. */
  enum { AHEAD = 8 };
  for (uint32_t i = 0; i < b->blocks.n; i++) {
    if (i + AHEAD < b->blocks.n) __builtin_prefetch((char *)b->blocks.p[i + AHEAD] - 16, 1);
    blk_release(to, b->blocks.p[i]);
  }
  if (to != NULL && to->batch_pool_n < BATCH_POOL_MAX) {
    b->blocks.n = 0;
    b->grace.n = 0;
    b->next = to->batch_pool;
    to->batch_pool = b;
    to->batch_pool_n++;
    return;
  }
  batch_destroy(b);
}

/* Release every finished batch of a list (into to's cache, or to free()
 * when to is NULL); returns blocks released. */
static size_t sweep(sstm_retired_batch_t **list, struct sstm_desc *to) {
  size_t released = 0;
  while (*list) {
    sstm_retired_batch_t *b = *list;
    if (grace_over(&b->grace)) {
      *list = b->next;
      released += b->blocks.n;
      batch_free(b, to);
    } else {
      list = &b->next;
    }
  }
  return released;
}

/* Close the descriptor's current batch: record who may still read it. */
static void close_batch(struct sstm_desc *self) {
  if (self->retire_cur.n == 0) return;
  sstm_retired_batch_t *b = self->batch_pool;
  sstm_ptrvec_t spare = {0};
  if (b != NULL) {
    self->batch_pool = b->next;
    self->batch_pool_n--;
    spare = b->blocks; /* empty, with its room: the next batch fills it */
  } else {
    b = calloc(1, sizeof *b);
  }
  unsigned others = 0;
  if (b == NULL || !grace_start(self, &b->grace, &others))
    sstm__fatal("out of memory closing a reclamation batch");
  /* The next batch's length, by the rule at BATCH_BLOCKS_SHARED: another
   * descriptor's attempt recorded running turns it on, and it stays on
   * while other descriptors are registered. */
  bool running = false;
  for (uint32_t i = 0; i < b->grace.n; i++)
    running |= b->grace.rec[i].d != self;
  self->retire_shared = others != 0 && (running || self->retire_shared);
  b->blocks = self->retire_cur;
  self->retire_cur = spare;
  self->retire_bytes = 0;
  b->next = self->batches;
  self->batches = b;
}

static size_t sweep_orphans(bool wait, struct sstm_desc *to) {
  if (wait)
    pthread_mutex_lock(&sstm__g.orphan_lock);
  else if (pthread_mutex_trylock(&sstm__g.orphan_lock) != 0)
    return 0;
  /* The head is written with relaxed atomics under the lock, for the
   * unlocked peek in sstm__reclaim_commit. */
  sstm_retired_batch_t *list = __atomic_load_n(&sstm__g.orphans, __ATOMIC_RELAXED);
  size_t n = sweep(&list, to);
  __atomic_store_n(&sstm__g.orphans, list, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&sstm__g.orphan_lock);
  return n;
}

void sstm__reclaim_commit(struct sstm_desc *d) {
  bool full = false;
  for (uint32_t i = 0; i < d->frees.n; i++)
    full |= retire(d, d->frees.p[i]);
  d->frees.n = 0;
  if (full) {
    close_batch(d);
    sweep(&d->batches, d);
    /* relaxed peek: a stale answer only delays the orphans' release. */
    if (__atomic_load_n(&sstm__g.orphans, __ATOMIC_RELAXED)) sweep_orphans(false, d);
  }
}

void sstm__reclaim_abort(struct sstm_desc *d) {
  for (uint32_t i = 0; i < d->allocs.n; i++)
    blk_release(d, d->allocs.p[i]);
  d->allocs.n = 0;
  d->frees.n = 0;
}

void sstm__reclaim_desc_exit(struct sstm_desc *d) {
  blkcache_drain(d);
  close_batch(d);
  sweep(&d->batches, NULL);
  batch_pool_drain(d);
  if (d->batches == NULL) return;
  sstm_retired_batch_t *last = d->batches;
  while (last->next)
    last = last->next;
  pthread_mutex_lock(&sstm__g.orphan_lock);
  last->next = sstm__g.orphans;
  __atomic_store_n(&sstm__g.orphans, d->batches, __ATOMIC_RELAXED); /* see the peek */
  pthread_mutex_unlock(&sstm__g.orphan_lock);
  d->batches = NULL;
}

/* ------------------------------------------------------------------------ */
/* Debug builds: frees that cannot be right, caught at the call. A release
 * build hands the pointer to free() (or the block cache) only after the
 * grace period, where the error surfaces far from its cause (alloc.h). */

/* The calling thread's stack, [lo, hi), looked up once per thread. */
static __thread uintptr_t stack_lo, stack_hi;

static bool on_thread_stack(uintptr_t a) {
  if (stack_hi == 0) {
    pthread_attr_t at;
    void *base;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &at) != 0) return false;
    int rc = pthread_attr_getstack(&at, &base, &size);
    pthread_attr_destroy(&at);
    if (rc != 0) return false;
    stack_lo = (uintptr_t)base;
    stack_hi = stack_lo + size;
  }
  return a >= stack_lo && a < stack_hi;
}

/* dl_iterate_phdr callback: whether the address in *data lies in a
 * loadable segment (code, static data, bss) of an object. */
static int in_segment(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t a = *(const uintptr_t *)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz) return 1;
  }
  return 0;
}

/* Why p cannot be a block of malloc (sstm_malloc, sstm_calloc, malloc),
 * or NULL if it may be one. Not a proof that it is: only what can be told
 * without the allocator's help. */
static const char *not_a_heap_block(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (a % sizeof(void *) != 0) return "is not aligned as malloc aligns its blocks";
  if (on_thread_stack(a)) return "is on the calling thread's stack";
  if (dl_iterate_phdr(in_segment, &a) != 0) return "is in the static data or code of the program";
  return NULL;
}

/* A misuse of sstm_free found by the debug build: reported, and the free is
 * ignored (true). tx is the caller's descriptor, or NULL. */
static bool free_misuse(const struct sstm_desc *tx, void *p) {
  const char *why = not_a_heap_block(p);
  if (why != NULL) {
    sstm__misuse("sstm_free(%p): the pointer %s; it is not a block of sstm_malloc, sstm_calloc "
                 "or malloc (the free is ignored)",
                 p, why);
    return true;
  }
  if (in_attempt(tx)) {
    for (uint32_t i = 0; i < tx->frees.n; i++)
      if (tx->frees.p[i] == p) {
        sstm__misuse("sstm_free(%p): the block was already freed in this transaction (the "
                     "second free is ignored)",
                     p);
        return true;
      }
  }
  return false;
}

/* A hook or callback inside an attempt (in_hook) frees p, which may be a
 * block that attempt allocated: the free retires it at once, so the
 * attempt's rollback must not release it too. Rare (hooks seldom free),
 * hence the linear search, newest first. */
static void hook_takes_alloc(struct sstm_desc *tx, void *p) {
  for (uint32_t i = tx->allocs.n; i-- > 0;)
    if (tx->allocs.p[i] == p) {
      tx->allocs.p[i] = tx->allocs.p[--tx->allocs.n];
      return;
    }
}

SSTM_API void sstm_free(void *p) {
  if (p == NULL) return;
  struct sstm_desc *tx = sstm__cur;
  if (sstm__debug && free_misuse(tx, p)) return;
  if (in_attempt(tx)) {
    /* After commit, irrevocable attempts included: a policy's escalation
     * to irrevocability can still be rolled back (sstm_restart). */
    ptrvec_push_inline(&tx->frees, p);
    tx->slow |= SSTM_SLOW_MEM; /* the commit retires it (commit_tail) */
    return;
  }
  if (tx != NULL) {
    if (tx->depth != 0) hook_takes_alloc(tx, p);
    if (retire(tx, p)) {
      close_batch(tx);
      sweep(&tx->batches, tx);
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

/* realloc as a transaction needs it (<schedstm/alloc.h>): never in place
 * beyond the block's usable size, because the old bytes may still be read
 * by transactions that began before this one commits; a new block instead,
 * logged like sstm_malloc's, the old contents copied through the
 * transaction's reads (its own earlier writes included, and validated like
 * any read), the old block freed as sstm_free frees it: at commit, after
 * the grace period. */
SSTM_API void *sstm_realloc(void *p, size_t n) {
  if (p == NULL) return sstm_malloc(n);
  struct sstm_desc *tx = sstm__cur;
  if (sstm__debug) {
    const char *why = not_a_heap_block(p);
    if (why != NULL) {
      sstm__misuse("sstm_realloc(%p): the pointer %s; it is not a block of sstm_malloc, "
                   "sstm_calloc or malloc (NULL returned, errno EINVAL)",
                   p, why);
      errno = EINVAL;
      return NULL;
    }
  }
  if (n == 0) {
    sstm_free(p);
    return NULL;
  }
  size_t old = malloc_usable_size(p);
  /* The block already holds n bytes and would not waste more than half of
   * itself: keep it, as realloc may. Nothing is written, so nothing needs
   * undoing on abort. */
  if (n <= old && n >= old / 2) return p;
  void *q = sstm_malloc(n);
  if (q == NULL) return NULL; /* errno ENOMEM from malloc; p untouched */
  size_t keep = n < old ? n : old;
  if (in_attempt(tx))
    sstm_load_bytes(q, p, keep); /* q is private until this attempt commits */
  else
    memcpy(q, p, keep);
  sstm_free(p);
  return q;
}

SSTM_API size_t sstm_reclaim(void) {
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) return 0;
  size_t n = 0;
  struct sstm_desc *d = sstm__cur;
  if (d != NULL && d->depth == 0) {
    close_batch(d);
    n += sweep(&d->batches, NULL);
    blkcache_drain(d);
    batch_pool_drain(d);
  }
  return n + sweep_orphans(true, NULL);
}

/* Shutdown: no transaction runs any more; release everything. */
void sstm__reclaim_fini(void) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d == NULL) continue;
    blkcache_drain(d);
    batch_pool_drain(d);
    for (uint32_t j = 0; j < d->retire_cur.n; j++)
      free(d->retire_cur.p[j]);
    d->retire_cur.n = 0;
    d->retire_bytes = 0;
    while (d->batches) {
      sstm_retired_batch_t *b = d->batches;
      d->batches = b->next;
      batch_free(b, NULL);
    }
  }
  while (sstm__g.orphans) {
    sstm_retired_batch_t *b = sstm__g.orphans;
    sstm__g.orphans = b->next;
    batch_free(b, NULL);
  }
}
