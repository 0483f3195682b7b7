/* SPDX-License-Identifier: MIT */
/* Descriptor registry: slots, thread registration, attach/detach, remote
 * abort, and the snapshot of another party for contention managers.
 *
 * Slots are allocated under reg_lock (registration only; running
 * transactions never take it). A descriptor, once published in its slot, is
 * never freed before sstm_shutdown(): lock words and policies may name it at
 * any time. A slot freed by an exiting thread is reused with its descriptor,
 * whose serial keeps growing, so stale lock words never match a new attempt.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "iface/libc_services.h"

static pthread_key_t exit_key;
static bool exit_key_made;

static void auto_exit(void *p);

int sstm__registry_init(unsigned max_threads) {
  sstm__g.descs = calloc(max_threads, sizeof *sstm__g.descs);
  if (sstm__g.descs == NULL) return SSTM_ENOMEM;
  atomic_store_explicit(&sstm__g.hiwater, 0, memory_order_relaxed);
  if (!exit_key_made) {
    if (pthread_key_create(&exit_key, auto_exit) != 0) return SSTM_ENOMEM;
    exit_key_made = true;
  }
  return 0;
}

static void desc_free(struct sstm_desc *d) {
  sstm__sets_fini(&d->rs, &d->ws, &d->ls);
  free(d->allocs.p);
  free(d->frees.p);
  free(d->retire_cur.p);
  free(d->quiesce.rec);
  free(d->actions);
  free(d->cm_state);
  free(d);
}

void sstm__registry_fini(void) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d) desc_free(d);
  }
  free(sstm__g.descs);
  sstm__g.descs = NULL;
}

/* Non-NULL if some descriptor other than `except` is in use, or `except` is
 * in a transaction or a callback: the reason, for sstm_shutdown's message.
 * Caller holds reg_lock or knows no registration runs. */
const char *sstm__registry_busy(struct sstm_desc *except) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_acquire);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = sstm__desc_at(i);
    if (d == NULL || !d->in_use) continue;
    /* a created descriptor is its creator's to destroy, attached or not
     * (config.h), even when it is the caller's current one */
    if (!d->thread_owned)
      return "a descriptor of sstm_desc_create() has not been destroyed (an executor's "
             "contexts hold some until sstm_exec_destroy)";
    if (d != except) {
      /* relaxed: a hint for the message; reg_lock orders the registry */
      if (atomic_load_explicit(&d->attached, memory_order_relaxed))
        return "another thread is still registered (sstm_thread_exit)";
      return "a thread's descriptor is detached (sstm_desc_detach) and not released";
    }
    if (d->in_callback) return "called from an action, hook or policy of the caller's transaction";
    if (d->depth != 0) return "the calling thread is inside a transaction";
  }
  return NULL;
}

static struct sstm_desc *desc_new(unsigned slot) {
  struct sstm_desc *d = aligned_alloc(SSTM_CACHELINE, sizeof *d);
  if (d == NULL) return NULL;
  memset(d, 0, sizeof *d);
  if (!sstm__sets_init(&d->rs, &d->ws, &d->ls)) {
    free(d);
    return NULL;
  }
  d->slot = slot;
  /* The serials (attempt ids, sstm_txid()) of this descriptor start at a
   * base of its slot's, so that attempt ids are unique in the process, not
   * only per descriptor: a layer that keys per-attempt state by the id alone
   * (the transactional stdio's views and kept streams, src/libc) must not
   * take the state of another descriptor's attempt on the same thread (an
   * executor's paused transaction). The slot is fixed for the descriptor's
   * life and slots are below 2^15, so the base fits the status word's 56
   * serial bits; the lock word keeps the low 48 bits next to the slot, as
   * before. */
  uint64_t serial0 = (uint64_t)slot << SSTM_SERIAL_SLOT_SHIFT;
  /* serial0's owner word; an attempt's first lock makes it current
   * (sstm__owner_ready) */
  d->owner_lw = sstm_lw_make_owner(slot, serial0);
  atomic_init(&d->variant, SSTM_V_NONE);
  d->locks = sstm__g.locks;
  d->lock_mask = sstm__g.lock_mask;
  d->stripe_shift = (uint8_t)sstm__g.stripe_shift;
  d->design = (uint8_t)sstm__g.cfg.design;
  atomic_init(&d->status, sstm_st_make(serial0, SSTM_ST_IDLE));
  d->rng =
      0x9E3779B97F4A7C15ull ^ ((uint64_t)slot * 0xD1B54A32D192ED03ull) ^ (uint64_t)(uintptr_t)d;
  if (d->rng == 0) d->rng = 1;
  return d;
}

/* Take a slot and a descriptor for it (reg_lock held). thread_owned is
 * set here, under the lock, because sstm__registry_busy reads it under the
 * lock for every descriptor in use (sstm_shutdown). */
static int slot_alloc(struct sstm_desc **out, bool thread_owned) {
  unsigned hw = atomic_load_explicit(&sstm__g.hiwater, memory_order_relaxed);
  for (unsigned i = 0; i < hw; i++) {
    struct sstm_desc *d = atomic_load_explicit(&sstm__g.descs[i], memory_order_relaxed);
    if (d && !d->in_use) {
      /* relaxed atomic stores of in_use: grace_start (reclaim.c) reads it
       * without the lock, as a hint */
      __atomic_store_n(&d->in_use, true, __ATOMIC_RELAXED);
      d->thread_owned = thread_owned;
      d->design = (uint8_t)sstm__g.cfg.design;
      *out = d;
      return 0;
    }
  }
  if (hw >= sstm__g.cfg.max_threads) {
    sstm__set_error("all %u descriptor slots are in use (max_threads)", sstm__g.cfg.max_threads);
    return SSTM_ELIMIT;
  }
  struct sstm_desc *d = desc_new(hw);
  if (d == NULL) return SSTM_ENOMEM;
  __atomic_store_n(&d->in_use, true, __ATOMIC_RELAXED);
  d->thread_owned = thread_owned;
  /* release: readers that find the pointer (acquire, sstm__desc_at) see an
   * initialised descriptor; hiwater is published after it for scanners. */
  atomic_store_explicit(&sstm__g.descs[hw], d, memory_order_release);
  atomic_store_explicit(&sstm__g.hiwater, hw + 1, memory_order_release);
  *out = d;
  return 0;
}

static int desc_acquire(struct sstm_desc **out, bool thread_owned) {
  if (!atomic_load_explicit(&sstm__g.initialized, memory_order_acquire)) {
    sstm__set_error("schedstm is not initialised (sstm_init)");
    return SSTM_ESTATE;
  }
  pthread_mutex_lock(&sstm__g.reg_lock);
  /* Again under reg_lock, which sstm_shutdown holds to set `closing` (see
   * there). acquire: the library may have been shut down and initialised
   * again since the check above; this pairs with sstm_init's release so
   * that the new registry (and `closing` cleared) is seen whole. */
  bool live = atomic_load_explicit(&sstm__g.initialized, memory_order_acquire) &&
              !atomic_load_explicit(&sstm__g.closing, memory_order_relaxed);
  int rc = live ? slot_alloc(out, thread_owned) : SSTM_ESTATE;
  pthread_mutex_unlock(&sstm__g.reg_lock);
  if (rc == SSTM_ESTATE) sstm__set_error("schedstm was shut down (sstm_shutdown)");
  if (rc != 0) return rc;
  struct sstm_desc *d = *out;
  d->cm = sstm__g.cm;
  d->cm_admit_fn = NULL; /* the policy's desc_init may switch one on */
  if ((rc = sstm__cm_desc_init(d)) != 0) {
    pthread_mutex_lock(&sstm__g.reg_lock);
    __atomic_store_n(&d->in_use, false, __ATOMIC_RELAXED); /* the slot goes back, as it was */
    pthread_mutex_unlock(&sstm__g.reg_lock);
    *out = NULL;
    return rc;
  }
  sstm__stt_attach(d);
  sstm__desc_set_slow(d);
  sstm__sample_init(d);
  d->ro_log = sstm__g.cfg.ro_log == SSTM_RO_LOG_ON; /* AUTO starts without (txn.c) */
  d->ro_win_n = d->ro_win_ext = 0;
  d->depth = 0;
  /* an executor's marks and requests do not outlive the descriptor's
   * previous owner */
  atomic_store_explicit(&d->pause, 0, memory_order_relaxed);
  atomic_store_explicit(&d->nopreempt, 0, memory_order_relaxed);
  atomic_store_explicit(&d->preempt_standing, false, memory_order_relaxed);
  return 0;
}

static void desc_release(struct sstm_desc *d) {
  sstm__cm_desc_fini(d);
  sstm__stt_detach(d);
  sstm__reclaim_desc_exit(d);
  pthread_mutex_lock(&sstm__g.reg_lock);
  sstm__counters_fold(&sstm__g.retired_ctr, &d->ctr);
  /* relaxed atomic stores, not memset: adaptive's evaluator and
   * sstm_stats_get read these words without the lock (relaxed loads). */
  uint64_t *w = (uint64_t *)&d->ctr;
  for (size_t j = 0; j < sizeof d->ctr / sizeof(uint64_t); j++)
    __atomic_store_n(&w[j], 0, __ATOMIC_RELAXED);
  atomic_store_explicit(&d->attached, false, memory_order_relaxed);
  atomic_store_explicit(&d->tid, 0, memory_order_relaxed);
  __atomic_store_n(&d->in_use, false, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&sstm__g.reg_lock);
}

/* (src/iface/libc_services.h) The layers' hook for a descriptor's
 * moves between threads; NULL: none registered. */
_Atomic(sstm_desc_move_fn) sstm__desc_move_hook;

/* The layers above the engine move their thread-local state of the
 * transaction on d between this thread and d (d->above): `out` when d is
 * detached inside a transaction, `in` when d is attached with some there.
 * acquire: pairs with the registration's release store. */
static void move_above(struct sstm_desc *d, bool out) {
  sstm_desc_move_fn fn = atomic_load_explicit(&sstm__desc_move_hook, memory_order_acquire);
  if (fn != NULL) fn(&d->above, out);
}

/* (src/iface/libc_services.h) The layers' hook for a thread's
 * unregistration; NULL: none registered. */
_Atomic(sstm_thread_leave_fn) sstm__thread_leave_hook;

/* The layers above the engine give up what they keep for the calling
 * thread, which unregisters (thread_exit). acquire: pairs with the
 * registration's release store. */
static void leave_above(void) {
  sstm_thread_leave_fn fn = atomic_load_explicit(&sstm__thread_leave_hook, memory_order_acquire);
  if (fn != NULL) fn();
}

static void attach(struct sstm_desc *d) {
  /* A transaction suspended on d resumes: no longer paused, once a thread
   * that is taking its locks over has finished (9.5). */
  sstm__pause_clear(d, SSTM_PAUSE_DETACHED);
  atomic_store_explicit(&d->attached, true, memory_order_relaxed);
  int tid = sstm__gettid();
  /* Another thread: its OS priority is another, and the policies' caches
   * of it (os_prio's) must not wait for their quantum to see that. */
  if (atomic_exchange_explicit(&d->tid, tid, memory_order_relaxed) != tid)
    atomic_fetch_add_explicit(&d->os_prio_gen, 1, memory_order_relaxed);
  sstm__stt_tid(d); /* the table shows the thread from now on */
  sstm__set_cur(d);
  pthread_setspecific(exit_key, d);
  sstm__cm_attach(d);
  if (d->above != NULL) move_above(d, false);
}

/* The calling thread gives up d (still its current descriptor). */
static void detach(struct sstm_desc *d) {
  if (d->depth != 0) move_above(d, true); /* before anything else changes */
  sstm__cm_detach(d);
  /* (9.1) Detached inside a transaction: its attempt is paused, and a
   * conflict with it is decided against it whatever the policy. release:
   * a reaper that sees the bit (acquire CAS) sees the attempt's lock set
   * as this thread left it. */
  if (d->depth != 0) atomic_fetch_or_explicit(&d->pause, SSTM_PAUSE_DETACHED, memory_order_release);
  /* release: pairs with the acq_rel CAS of the next sstm_desc_attach, so
   * the thread that takes d over sees everything this one wrote to it (a
   * suspended attempt's logs, the policy's state); relaxed would let that
   * thread run on stale descriptor contents. */
  atomic_store_explicit(&d->attached, false, memory_order_release);
  sstm__set_cur(NULL);
  pthread_setspecific(exit_key, NULL);
}

SSTM_API int sstm_thread_init(void) {
  if (sstm__cur != NULL) return 0;
  struct sstm_desc *d;
  int rc = desc_acquire(&d, true);
  if (rc != 0) return rc;
  attach(d);
  if (atomic_load_explicit(&sstm__g.nthread_hooks, memory_order_relaxed)) {
    d->in_callback++;
    d->in_hook++;
    sstm__hooks_thread_init();
    d->in_hook--;
    d->in_callback--;
  }
  return 0;
}

static int thread_exit(struct sstm_desc *d) {
  if (d->depth != 0) {
    sstm__set_error("sstm_thread_exit: a transaction is active");
    return SSTM_EBUSY;
  }
  if (d->in_callback) {
    sstm__set_error("sstm_thread_exit: called from a callback, hook or policy of this thread's "
                    "transaction or registration");
    return SSTM_EBUSY;
  }
  if (!d->thread_owned) {
    /* A descriptor of sstm_desc_create(): its creator's, only detached
     * (releasing it would leave the creator a handle to a slot that the
     * next registering thread gets). */
    leave_above();
    detach(d);
    return 0;
  }
  if (atomic_load_explicit(&sstm__g.nthread_hooks, memory_order_relaxed)) {
    d->in_callback++;
    d->in_hook++;
    sstm__hooks_thread_exit();
    d->in_hook--;
    d->in_callback--;
  }
  leave_above(); /* the streams it keeps for a batch (docs/design/tm-libc.md (S11)) */
  detach(d);
  desc_release(d);
  return 0;
}

SSTM_API int sstm_thread_exit(void) {
  struct sstm_desc *d = sstm__cur;
  if (d == NULL) {
    sstm__set_error("sstm_thread_exit: calling thread is not registered");
    return SSTM_ENOTHREAD;
  }
  return thread_exit(d);
}

/* Whether address a lies on the calling thread's stack. */
static bool on_own_stack(uintptr_t a) {
  pthread_attr_t attr;
  void *lo;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return false;
  bool known = pthread_attr_getstack(&attr, &lo, &size) == 0;
  pthread_attr_destroy(&attr);
  return known && a >= (uintptr_t)lo && a - (uintptr_t)lo < size;
}

/* The thread-exit destructor: a thread that ends with a descriptor attached
 * (thread.h). Its own descriptor (sstm_thread_init) is released as by
 * sstm_thread_exit(), after its transaction, if it ended inside one, is
 * ended (txn.c, sstm__abandon). A descriptor of sstm_desc_create() is
 * only detached: it belongs to its creator. Its transaction, if any, stays
 * suspended for whoever attaches it next when it began on another stack (a
 * user-level context that outlives the thread); one that began on the
 * ending thread's own stack is ended as above first, since its restart
 * checkpoint is in that stack, which goes with the thread. A thread that
 * ends inside a callback, hook or policy of its transaction leaves its
 * descriptor as it is. */
static void auto_exit(void *p) {
  struct sstm_desc *d = p;
  if (!d || sstm__cur != d || d->in_callback ||
      !atomic_load_explicit(&sstm__g.initialized, memory_order_acquire))
    return;
  if (d->depth != 0 && (d->thread_owned || on_own_stack(sstm__begin_sp(d)))) sstm__abandon(d);
  if (d->thread_owned)
    thread_exit(d);
  else
    detach(d); /* its transaction, if any, stays suspended */
}

SSTM_API sstm_desc_t *sstm_self(void) { return sstm__cur; }

SSTM_API sstm_desc_t *sstm_desc_detach(void) {
  struct sstm_desc *d = sstm__cur;
  if (d == NULL) {
    sstm__set_error("sstm_desc_detach: the calling thread has no descriptor");
    return NULL;
  }
  /* in_hook: the callbacks that run within an attempt (a tx_begin hook,
   * the policy's on_begin and on_conflict, the sampling callback), which
   * do not count in in_callback since depth covers them elsewhere */
  if (d->in_callback || d->in_hook) {
    sstm__set_error("sstm_desc_detach: called from a callback, hook or policy of the descriptor's "
                    "transaction");
    return NULL;
  }
  detach(d);
  return d;
}

SSTM_API int sstm_desc_attach(sstm_desc_t *d) {
  if (d == NULL || !d->in_use) {
    sstm__set_error("sstm_desc_attach: NULL or released descriptor");
    return SSTM_EINVAL;
  }
  if (sstm__cur != NULL) {
    sstm__set_error("sstm_desc_attach: the calling thread already has a descriptor");
    return SSTM_EBUSY;
  }
  bool was = false;
  /* acq_rel: the previous thread's writes to the descriptor (it detached
   * before handing it over) are visible to us; two attaching threads can't
   * both win. */
  if (!atomic_compare_exchange_strong_explicit(&d->attached, &was, true, memory_order_acq_rel,
                                               memory_order_relaxed)) {
    sstm__set_error("sstm_desc_attach: descriptor is attached to another thread");
    return SSTM_EINVAL;
  }
  attach(d);
  return 0;
}

SSTM_API int sstm_desc_create(sstm_desc_t **out) {
  if (out == NULL) {
    sstm__set_error("sstm_desc_create: out is NULL");
    return SSTM_EINVAL;
  }
  if (sstm_in_tx()) {
    /* The body may run again, and an abort would not undo the creation:
     * every attempt would leave a descriptor behind (a slot of max_threads
     * that only its lost handle could free; sstm_shutdown refuses while it
     * exists). */
    sstm__set_error("sstm_desc_create: called inside a transaction, whose attempts would each "
                    "leave a descriptor behind (create it before the transaction)");
    return SSTM_EBUSY;
  }
  return desc_acquire(out, false);
}

SSTM_API int sstm_desc_destroy(sstm_desc_t *d) {
  if (d == NULL || !d->in_use) {
    sstm__set_error("sstm_desc_destroy: NULL or released descriptor");
    return SSTM_EINVAL;
  }
  if (sstm_in_tx()) {
    /* An abort would not undo the destruction, and the body's next attempt
     * would destroy the handle again: by then a released one, or another
     * owner's descriptor in the same slot. */
    sstm__set_error("sstm_desc_destroy: called inside a transaction, whose next attempt would "
                    "destroy the handle again (destroy it after the transaction)");
    return SSTM_EBUSY;
  }
  if (atomic_load_explicit(&d->attached, memory_order_relaxed) || d->depth != 0) {
    sstm__set_error("sstm_desc_destroy: descriptor is attached or in a transaction");
    return SSTM_EBUSY;
  }
  desc_release(d);
  return 0;
}

SSTM_API unsigned sstm_desc_slot(const sstm_desc_t *d) { return d ? d->slot : 0; }
SSTM_API int sstm_desc_tid(const sstm_desc_t *d) {
  return d ? atomic_load_explicit(&((sstm_desc_t *)d)->tid, memory_order_relaxed) : 0;
}
SSTM_API uint64_t sstm_desc_txid(const sstm_desc_t *d) {
  if (d == NULL) return 0;
  return sstm_st_serial(atomic_load_explicit(&((sstm_desc_t *)d)->status, memory_order_relaxed));
}

/* The kill record, one word so that it is read whole: the killer's slot+1
 * (bits 0-15, 0 = nobody recorded), the low 24 bits of the victim's attempt
 * serial (16-39, so that a record left from an earlier attempt, by a killer
 * delayed after its CAS, is not taken for the current one's) and the low 24
 * bits of the killer's attempt serial (40-63). */
#define KREC_BITS 24
#define KREC_MASK ((1ull << KREC_BITS) - 1)
static uint64_t krec_make(const struct sstm_desc *killer, uint64_t victim_serial) {
  return (uint64_t)(killer->slot + 1) | (victim_serial & KREC_MASK) << 16 |
         (sstm__serial(killer) & KREC_MASK) << (16 + KREC_BITS);
}

/* ACTIVE -> KILLED for the given attempt; killer (the caller's own
 * descriptor, NULL if it has none) is recorded for the victim's policy,
 * unless it is the victim itself. */
bool sstm__kill(struct sstm_desc *d, uint64_t serial, const struct sstm_desc *killer) {
  uint64_t st = atomic_load_explicit(&d->status, memory_order_relaxed);
  /* acq_rel: the release half is what a thief's later clock fetch_add
   * carries to the victim (docs/design/core.md (6.1), (6.4)). Loops only while watchers
   * change the flags. */
  do {
    if (sstm_st_serial(st) != serial || sstm_st_state(st) != SSTM_ST_ACTIVE) return false;
  } while (!atomic_compare_exchange_weak_explicit(&d->status, &st,
                                                  sstm_st_with_state(st, SSTM_ST_KILLED),
                                                  memory_order_acq_rel, memory_order_relaxed));
  /* Only the CAS that succeeded writes the record of this attempt, after
   * it: a record never names a killer that lost the race. relaxed: the word
   * carries no other data; the fetch_or below (release) makes it visible to
   * a victim that notices the kill through its variant flag (acquire fence
   * in flags_seen, barrier.c). A victim that notices through its status first may
   * miss it and reports the killer as unknown. */
  atomic_store_explicit(&d->killed_by, killer && killer != d ? krec_make(killer, serial) : 0,
                        memory_order_relaxed);
  /* Make every fast-path test of the victim fail, so that it looks at its
   * status at its next barrier. release: the victim's acquire fence after
   * seeing the flag makes the KILLED status above visible. The victim sets
   * its variant before publishing ACTIVE (release), so this flag cannot be
   * overwritten by the start of the attempt it targets; a flag that lands
   * on a later attempt is cleared at that attempt's first slow path. */
  atomic_fetch_or_explicit(&d->variant, SSTM_V_KILLFLAG, memory_order_release);
  return true;
}

static int kill_result(int rc, uint64_t serial) {
  if (rc == SSTM_ENOTX)
    sstm__set_error("sstm_desc_kill: attempt %" PRIu64 " is not running (ended or never begun)",
                    serial);
  else if (rc == SSTM_EBUSY)
    sstm__set_error("sstm_desc_kill: attempt %" PRIu64 " is committing or irrevocable", serial);
  return rc;
}

SSTM_API int sstm_desc_kill(sstm_desc_t *d, uint64_t txid) {
  if (d == NULL) {
    sstm__set_error("sstm_desc_kill: the descriptor is NULL");
    return SSTM_EINVAL;
  }
  uint64_t st = atomic_load_explicit(&d->status, memory_order_acquire);
  uint64_t serial = txid ? txid : sstm_st_serial(st);
  if (sstm_st_serial(st) != serial) return kill_result(SSTM_ENOTX, serial);
  switch (sstm_st_state(st)) {
  case SSTM_ST_IDLE: return kill_result(SSTM_ENOTX, serial);
  case SSTM_ST_KILLED: return 0;
  case SSTM_ST_COMMITTING:
  case SSTM_ST_IRREVOCABLE: return kill_result(SSTM_EBUSY, serial);
  case SSTM_ST_ACTIVE: break;
  }
  if (sstm__kill(d, serial, sstm__cur)) {
    /* counted as the caller's, like a policy's kill (stats.h) */
    if (sstm__cur != NULL && sstm__cur != d) sstm__ctr_add(&sstm__cur->ctr.cm_kills, 1);
    return 0;
  }
  st = atomic_load_explicit(&d->status, memory_order_acquire);
  if (sstm_st_serial(st) == serial && sstm_st_state(st) == SSTM_ST_KILLED) return 0;
  if (sstm_st_serial(st) == serial && sstm_st_state(st) != SSTM_ST_IDLE)
    return kill_result(SSTM_EBUSY, serial);
  return kill_result(SSTM_ENOTX, serial);
}

/* The party that owns lock word lw: its attempt is the one lw names (the
 * owner may have moved on to a newer attempt since; policies must wait for,
 * watch or kill the attempt that held the lock, not its successor). The full
 * serial is rebuilt from the owner's current one and lw's low 48 bits. */
/* Party for attempt txid of d, st being d's status just read (relaxed
 * loads: a snapshot for a decision, see cm.h). */
static void party_fill(struct sstm_desc *d, uint64_t txid, uint64_t st, sstm_party_t *out) {
  enum sstm_state s = txid == sstm_st_serial(st) ? sstm_st_state(st) : SSTM_ST_IDLE;
  *out = (sstm_party_t){
      .desc = d,
      .slot = d->slot,
      .tid = atomic_load_explicit(&d->tid, memory_order_relaxed),
      .txid = txid,
      .start = __atomic_load_n(&d->start, __ATOMIC_RELAXED),
      .birth = __atomic_load_n(&d->birth, __ATOMIC_RELAXED),
      .reads = sstm_rset_count_remote(&d->rs),
      .writes = __atomic_load_n(&d->ws.n, __ATOMIC_RELAXED),
      .priority = __atomic_load_n(&d->attr.priority, __ATOMIC_RELAXED),
      .committing = s == SSTM_ST_COMMITTING || s == SSTM_ST_IRREVOCABLE,
  };
}

void sstm__party_snapshot(struct sstm_desc *d, uint64_t lw, sstm_party_t *out) {
  uint64_t st = atomic_load_explicit(&d->status, memory_order_relaxed);
  uint64_t now = sstm_st_serial(st);
  party_fill(d, now - ((now - sstm_lw_serial(lw)) & SSTM_LW_SERIAL_MASK), st, out);
}

bool sstm__killer_of(struct sstm_desc *victim, sstm_party_t *out) {
  /* relaxed: see sstm__kill. Consumed (exchanged for 0), and the tag check
   * rejects a record of an earlier attempt written late by a killer
   * delayed after its CAS. */
  uint64_t rec = atomic_exchange_explicit(&victim->killed_by, 0, memory_order_relaxed);
  unsigned slot1 = (unsigned)(rec & 0xffff);
  if (slot1 == 0 || ((rec >> 16) & KREC_MASK) != (sstm__serial(victim) & KREC_MASK)) return false;
  struct sstm_desc *k = sstm__desc_at(slot1 - 1);
  if (k == NULL) return false;
  /* A paused killer is not named (9): a policy would serialise the retry
   * behind an attempt that only a resume can end; nor one that waits
   * outside the barriers (9.7), for something outside the memory that the
   * retry may be the one to send. relaxed: a hint, as the rest of the
   * party's snapshot. */
  if (atomic_load_explicit(&k->pause, memory_order_relaxed) & SSTM_PAUSE_HELD) return false;
  uint64_t st = atomic_load_explicit(&k->status, memory_order_relaxed);
  uint64_t now = sstm_st_serial(st);
  party_fill(k, now - ((now - (rec >> (16 + KREC_BITS))) & KREC_MASK), st, out);
  return true;
}
