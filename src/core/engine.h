/* SPDX-License-Identifier: MIT */
/* Internal definitions of the engine: the process-wide state, the
 * transaction descriptor, and helpers shared by the core files.
 * Naming: public API sstm_*, internal non-static sstm__*, the rest static.
 */
#ifndef SSTM_CORE_ENGINE_H
#define SSTM_CORE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <schedstm/schedstm.h>

#include "arch/ckpt.h" /* the restart checkpoint: sstm__ckpt_restore */
#include "core/lockword.h"
#include "core/rwset.h"
#include "iface/error.h" /* sstm__set_error, SSTM_QUOTE */
#include "os/os.h"
#include "os/sched.h"

#define SSTM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SSTM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SSTM_INLINE static inline __attribute__((always_inline))
#define SSTM_NOINLINE __attribute__((noinline))
#define SSTM_COLD __attribute__((cold, noinline))
#define SSTM_CACHELINE 64

/* Compile-time tunables as constants, so that disabled code is still
 * type-checked (jemalloc style). */
#ifdef SSTM_CFG_DEBUG
static const bool sstm__debug = true;
#else
static const bool sstm__debug = false;
#endif
#ifdef SSTM_CFG_RANDOM_DELAY
static const bool sstm__random_delay = true;
#else
static const bool sstm__random_delay = false;
#endif

/* Barrier variants, chosen once per attempt (at begin) from the design and
 * the attempt's mode. The public barriers dispatch on it; each variant is a
 * specialised copy of one template, so no design test runs inside them. */
enum sstm_variant {
  SSTM_V_ETL = 0,            /* encounter-time locking, redo log */
  SSTM_V_CTL = 1,            /* commit-time locking, redo log */
  SSTM_V_RO = 2,             /* declared read-only attempt without a read set */
  SSTM_V_IRREV = 3,          /* irrevocable: direct reads, in-place locked writes */
  SSTM_V_SAMPLE = 4,         /* flag: sampling hook active */
  SSTM_V_PREEMPTFLAG = 0x20, /* flag: an executor asks the attempt to call its
                                preemption hook at its next barrier (exec.c);
                                it fails every fast-path test */
  SSTM_V_KILLFLAG = 0x40,    /* flag: a killer asks the attempt to look at its
                                status (it fails every fast-path test) */
  SSTM_V_NONE = SSTM__V_NONE /* no transaction (depth 0) */
};

/* What begin and commit have to do beyond the common case: one test of a
 * descriptor byte on each path instead of one test per feature: BEGIN is
 * alone in `slow_begin`, the others in `slow`, so that each path tests its
 * byte whole. BEGIN and COMMIT are fixed when a descriptor is registered
 * (the policy's hooks, the state table, sampling, the statistics level,
 * the begin fence, cfg.ro_log); the others are set during a transaction
 * by what its commit then has to finish, and cleared by that commit's tail
 * (txn.c, commit_tail). A set bit only sends the commit to the tail, which
 * tests each case again, so a bit left over from a cancelled transaction
 * costs one slow commit, never a wrong one. */
enum sstm_slow {
  SSTM_SLOW_BEGIN = 1,                /* sampling, policy on_begin, state table,
                                         cfg.ro_log not off, the random-delay build, an admission hook
                                         (cm_admit_fn, switched at run time) */
  SSTM_SLOW_COMMIT = 2,               /* policy on_commit, state table, detailed stats */
  SSTM_SLOW_RETRIED = 4,              /* the transaction has aborted (retries > 0), or
                                         a policy marked it to restart irrevocable: its
                                         commit clears the retry state (txn.c,
                                         retry_state_clear) */
  SSTM_SLOW_ACTIONS = 8,              /* sstm_on_commit / sstm_on_abort were called */
  SSTM_SLOW_MEM = 16,                 /* sstm_malloc / sstm_calloc / sstm_free logged a
                                         block (reclaim.c): the commit empties the
                                         allocation log and retires the frees */
  SSTM_SLOW_MARK = 32,                /* sstm__end_mark was called: the commit stores
                                         the mark (txn.c, mark_fire) */
  SSTM_SLOW_FIXED = SSTM_SLOW_COMMIT, /* the fixed bits of `slow` */
};

typedef struct sstm_ptrvec {
  void **p;
  uint32_t n, cap;
} sstm_ptrvec_t;

/* Released blocks a thread keeps for its own sstm_malloc (reclaim.c): one
 * vector per 8-byte class of malloc_usable_size, up to SSTM_BLKCACHE_CLASSES
 * classes, at most cfg.alloc_cache bytes in all. */
#define SSTM_BLKCACHE_CLASSES 64
typedef struct sstm_blkcache {
  size_t bytes; /* usable bytes held */
  sstm_ptrvec_t cls[SSTM_BLKCACHE_CLASSES];
} sstm_blkcache_t;

/* A user action (txn.c): run after a commit (SSTM_ACT_COMMIT), after a
 * rollback (SSTM_ACT_ABORT), or after either (both bits and
 * SSTM_ACT_END: sstm__on_end's, whose fn is told which one). */
enum { SSTM_ACT_COMMIT = 1, SSTM_ACT_ABORT = 2, SSTM_ACT_END = 4 };
typedef struct sstm_action {
  union {
    void (*fn)(void *);        /* SSTM_ACT_END clear */
    void (*end)(void *, bool); /* SSTM_ACT_END set: (arg, committed) */
  };
  void *arg;
  uint8_t when; /* SSTM_ACT_* */
} sstm_action_t;

/* A grace period (reclaim.c): the attempts that were running when it
 * started, each as its descriptor and the status word seen then. It is over
 * once each of them has ended. */
typedef struct sstm_grace_rec {
  struct sstm_desc *d;
  uint64_t status;
} sstm_grace_rec_t;

typedef struct sstm_grace {
  sstm_grace_rec_t *rec; /* n entries, room for cap (malloc'd, or NULL) */
  uint32_t n;            /* attempts not yet seen ended */
  uint32_t cap;
} sstm_grace_t;

/* A batch of retired blocks waiting for the attempts that were running when
 * it was closed to end. */
typedef struct sstm_retired_batch {
  struct sstm_retired_batch *next;
  sstm_ptrvec_t blocks;
  sstm_grace_t grace;
} sstm_retired_batch_t;

/* Internal counters. Written by the owner only (relaxed load + store, no
 * locked instruction), read by anyone with relaxed loads. */
typedef struct sstm_counters {
  uint64_t commits_ro, commits_update, commits_irrevocable;
  uint64_t aborts[SSTM_ABORT_REASON_COUNT];
  uint64_t retries, max_retries, cm_waits, cm_kills, locks_stolen, extensions, reads_past,
      ro_logged;
  uint64_t cm_wait_ns, cm_stats[SSTM_CM_NSTATS], cm_actions[8];
  uint64_t reads_total, writes_total, reads_max, writes_max;
  uint64_t tag_commits[SSTM_MAX_TAGS], tag_aborts[SSTM_MAX_TAGS];
} sstm_counters_t;

struct sstm_desc {
  /* ---- hot: the first cache line holds what the read fast path touches;
   * owner-only except where noted ---- */
  _Atomic uint8_t variant; /* enum sstm_variant of the current attempt; killers
                              set SSTM_V_KILLFLAG in it (fetch_or) */
  uint8_t stripe_shift;    /* copy of the lock-table geometry */
  /* Accesses a sampled attempt may still make without the sampling hook
   * looking (the fast paths take them and count down; 0 sends the next one
   * to the slow path, barrier.c, sample_due). Owner-only. */
  uint16_t sample_cd;
  /* The begin's gate: depth, in_hook and slow_begin overlay one 32-bit
   * word, `gate`, that the common begin (core/begin_x86_64.S) compares with
   * zero once: no transaction, no callback running, no begin-time feature;
   * it then stores 1 into it (depth 1, the others still 0). */
  union {
    struct {
      uint16_t depth; /* flat nesting depth, 0 = no transaction (at most
                         UINT16_MAX: a deeper begin is misuse, txn.c) */
      /* Owner-only: > 0 while a hook or a policy's callback runs on this
       * thread (in_callback counts those and the user's actions): no
       * transaction may begin there (hooks.h, cm.h), and sstm__begin
       * refuses one. Actions may run transactions and do not count here. */
      uint8_t in_hook;
      /* SSTM_SLOW_BEGIN or 0: set at registration, and again when the
       * policy switches its admission hook (sstm__cm_admit_hook).
       * Owner-only. */
      uint8_t slow_begin;
    };
    uint32_t gate;
  };
  uint64_t end;            /* snapshot upper bound: reads valid at time `end` */
  uint64_t owner_lw;       /* lock word value meaning "owned by this attempt":
                              sstm_lw_make_owner(slot, serial), made current by
                              the attempt's first lock (sstm__owner_ready);
                              until then an earlier attempt's, which no lock
                              word holds */
  _Atomic uint64_t *locks; /* copy of the lock-table geometry */
  uint64_t lock_mask;
  sstm_rset_t rs;          /* 64 bytes up to here */
  _Atomic uint64_t status; /* serial|state: read by all, CAS'd by killers */
  /* An upper bound of the versions this attempt's ETL locks displaced: its
   * `end` when it took its latest lock (each lock is taken only on a
   * version <= end, and end only grows). Written by the owner before each
   * lock CAS, read by readers that pass the lock (docs/design/core.md,
   * (8.4)). */
  _Atomic uint64_t lock_end;
  sstm_wset_t ws;
  sstm_lset_t ls;
  /* The sampling countdown beyond sample_cd: the next sampled access is
   * the one after sample_cd + sample_rest more (barrier.c, sample_arm). */
  uint64_t sample_rest;
  uint8_t design; /* sstm_design_t */
  uint8_t slow;   /* SSTM_SLOW_* but BEGIN: owner-only */
  /* The variant of a transaction's first attempt in the common begin,
   * indexed by attr.read_only: {design, SSTM_V_RO} (txn.c,
   * sstm__desc_set_slow), one load instead of a test and a choice. */
  uint8_t first_variant[2];

  /* ---- per attempt / per transaction ---- */
  uint64_t start; /* snapshot at attempt start */
  uint64_t birth; /* snapshot at first attempt (age for policies) */
  /* The transaction's attributes. attr.priority is also read by other
   * threads' policies as a hint (registry.c, the party snapshot;
   * conflict.c): every write of it is a relaxed atomic store, every read
   * on another thread a relaxed atomic load. */
  sstm_attr_t attr;
  bool irrev_sticky;    /* restart as irrevocable */
  bool ro_nolog_failed; /* declared RO attempt needed a read set */
  /* Declared read-only transactions (cfg.ro_log, txn.c): whether their
   * first attempt keeps a read set, and the window that decides it in
   * SSTM_RO_LOG_AUTO: transactions begun, and how many of them needed an
   * extension (each counted once: ro_ext_seen). */
  bool ro_log;
  bool ro_ext_seen;
  uint8_t ro_win_n, ro_win_ext;
  bool irrev_token; /* holds the irrevocability token */
  /* The irrevocable attempt writes with plain stores that no barrier sees
   * (the compiler ABI's uninstrumented code path, sstm__irrev_plain_writes):
   * its commit counts as an update whatever its undo log holds. Cleared
   * with the token. */
  bool irrev_plain;
  unsigned retries;   /* aborts of the current transaction */
  unsigned conflicts; /* of which conflicts (sstm_cm_ctx_t.conflicts) */
  sstm_ckpt_t ckpt;
  sstm_ptrvec_t allocs;   /* sstm_malloc'd in this attempt */
  sstm_ptrvec_t frees;    /* sstm_free'd in this attempt */
  sstm_action_t *actions; /* user on_commit/on_abort callbacks */
  uint32_t nactions, actions_cap;
  /* The attempt's end mark (sstm__end_mark, src/iface/libc_services.h):
   * the word, NULL: none; the value stored after a commit [1] or a
   * rollback [0]. Owner-only; cleared when stored. */
  _Atomic uint64_t *end_mark;
  uint64_t end_mark_v[2];
  /* The thread-local state of the layers above the engine that belongs to
   * a suspended attempt (the stdio layer's views of its streams): moved
   * here when the descriptor is detached inside a transaction and given
   * to the thread that attaches it (sstm__desc_move_hook,
   * src/iface/libc_services.h). Owner-only, as the logs. */
  void *above;
  /* Owner-only: > 0 while user or policy code runs on behalf of an attempt
   * that has ended or not yet begun (actions, hooks, a policy's on_abort /
   * on_commit), where depth may be 0: the descriptor must not be released
   * or detached under it (SSTM_EBUSY; registry.c). */
  uint32_t in_callback;
  /* The stack pointer at the outermost begin when the checkpoint is the C
   * library's _setjmp (SSTM_CKPT_USES_LIBC), whose saved one is mangled;
   * otherwise the checkpoint's own saved stack pointer is it
   * (sstm__begin_sp). */
  uintptr_t begin_sp;
  sstm_abort_info_t last_abort;
  uint64_t rng; /* per-descriptor PRNG (random delay, policies) */

  /* ---- reclamation ---- */
  sstm_ptrvec_t retire_cur;         /* committed frees, batch not yet closed */
  size_t retire_bytes;              /* their usable bytes (BATCH_BYTES) */
  sstm_retired_batch_t *batches;    /* closed batches, oldest last */
  sstm_retired_batch_t *batch_pool; /* released batches kept with their
                                       vectors, for the next closes */
  unsigned batch_pool_n;
  /* A batch closed since other descriptors were last all gone found
   * another descriptor's attempt running, and the last one found others
   * registered: the current one closes at BATCH_BLOCKS_SHARED blocks, not
   * BATCH_BLOCKS_ALONE (reclaim.c). */
  bool retire_shared;
  sstm_blkcache_t cache; /* released blocks kept for reuse */

  /* ---- identity and registry ---- */
  unsigned slot;
  _Atomic int tid;
  _Atomic bool attached;
  bool in_use;       /* slot allocated (registry mutex; written with relaxed atomic stores,
                        read without the lock by reclaim.c's grace_start) */
  bool thread_owned; /* made by sstm_thread_init (not sstm_desc_create) */
  const sstm_cm_ops_t *cm;
  /* An admission hook the policy switched on at run time for this
   * descriptor (sstm__cm_admit_hook): called at the start of every attempt,
   * before anything of it is published (txn.c, attempt_start), where the
   * thread may sleep. NULL: none, and SSTM_SLOW_BEGIN leaves it out, so
   * that begins keep the frameless path. Owner-only; cleared at
   * registration, before the policy's desc_init. */
  void (*cm_admit_fn)(sstm_cm_ctx_t *ctx);
  sstm_cm_ctx_t cm_ctx;
  void *cm_state;
  struct sstm_stt_entry *stt;   /* state-table entry, NULL when the table is off */
  _Atomic uint32_t os_prio_gen; /* bumped by sstm_sched_set and by an attach
                                   to another thread (policy caches) */
  _Atomic uint64_t killed_by;   /* who killed which attempt (sstm__kill) */
  /* Threads sleeping until this descriptor's COMMITTING attempt ends
   * (sstm_party_wait, cm_api.c): incremented and decremented by them, read
   * by the owner after the status store that ends a commit, which wakes
   * them only when it is not 0 ((4.8) in docs/design/core.md). Apart from
   * the hot lines: only waiters write it. */
  _Atomic uint32_t commit_sleepers;

  /* ---- executors (exec.c, src/iface/exec_services.h; (9) in
   * docs/design/core.md) ---- */
  /* SSTM_PAUSE_*: whether the attempt is paused (its descriptor detached
   * inside a transaction, or marked by an executor), and whether a thread
   * is taking its locks over. CAS'd by the owner side (detach, attach, the
   * mark) and by the reaper (9.3). */
  _Atomic uint32_t pause;
  /* Non-preemptible depth (user regions, executor's own), and a request
   * that arrived meanwhile (replayed when the depth drops to zero).
   * Owner-only, and read by a signal handler on the owner's thread:
   * relaxed atomics with compiler-only fences (exec.c). */
  _Atomic uint32_t nopreempt;
  _Atomic bool preempt_standing;
  /* SSTM_CM_WAIT_*: whether the owner thread is inside sstm_party_wait
   * (a policy's wait for another transaction's end, after its own attempt
   * rolled back: it holds no lock and runs no attempt), and whether an
   * executor asked it to stop waiting. The owner stores WAITING and NONE
   * around the wait; an executor's submitter reads it as a hint for whom
   * to preempt and CASes WAITING -> LEAVE (sstm__exec_end_cm_wait), which
   * the wait's loop looks at. Relaxed throughout: it orders nothing, the
   * preemption that follows has its own (the request flag). */
  _Atomic uint8_t cm_wait;

  sstm_counters_t ctr;
  /* sstm_quiesce's record of the running attempts, its room kept from one
   * call to the next (owner-only; freed with the descriptor). */
  sstm_grace_t quiesce;
} __attribute__((aligned(SSTM_CACHELINE)));

/* sstm_desc::cm_wait */
enum { SSTM_CM_WAIT_NONE = 0, SSTM_CM_WAIT_WAITING = 1, SSTM_CM_WAIT_LEAVE = 2 };

/* Process-wide state. */
typedef struct sstm_global {
  /* Global version clock, alone on its cache line: every update commit
   * increments it. */
  _Alignas(SSTM_CACHELINE) _Atomic uint64_t clock;
  _Alignas(SSTM_CACHELINE) _Atomic uint64_t *locks; /* read-mostly below */
  uint64_t lock_mask;
  unsigned stripe_shift;
  sstm_config_t cfg;
  const sstm_cm_ops_t *cm;
  _Atomic bool initialized;
  _Atomic bool closing; /* sstm_shutdown under way: no new registration */
  /* Registered hooks with a transaction event (tx_begin, tx_commit,
   * tx_abort), the transactions' fast check, and with a thread event
   * (thread_init, thread_exit), registration's: hooks of thread events
   * alone cost the transactions nothing. */
  _Atomic unsigned nhooks;
  _Atomic unsigned nthread_hooks;
  bool membarrier;                    /* asymmetric fence available (reclamation) */
  _Atomic(struct sstm_desc *) *descs; /* slot -> descriptor, never freed while init */
  _Atomic unsigned hiwater;           /* slots in [0, hiwater) may be in use */
  pthread_mutex_t reg_lock;           /* registry changes, hooks table */
  _Alignas(SSTM_CACHELINE) _Atomic unsigned irrev_owner; /* slot+1 holding the token, 0 = free */
  pthread_mutex_t orphan_lock;
  sstm_retired_batch_t *orphans; /* batches of exited threads */
  sstm_counters_t retired_ctr;   /* counters of exited threads (reg_lock) */
  uint64_t stats_resets;         /* sstm_stats_reset calls since sstm_init (reg_lock) */
} sstm_global_t;

/* Hidden at the declaration too, not only at the definition: the engine's
 * position-independent code then reaches it relative to the instruction
 * pointer, one instruction per access, instead of through the global
 * offset table (the clock load of every begin, the fetch_add of every
 * update commit, the hook counts). */
extern sstm_global_t sstm__g __attribute__((visibility("hidden")));
extern __thread struct sstm_desc *sstm__cur __attribute__((tls_model("initial-exec")));
/* Attach d (NULL: none) to the calling thread: sstm__cur and the inline
 * fast path's prefix pointer (core/barrier.c). */
void sstm__set_cur(struct sstm_desc *d);
/* Arms d's sampling countdown for a full period (cfg.sample_period; barrier.c). */
void sstm__sample_init(struct sstm_desc *d);

SSTM_INLINE _Atomic uint64_t *sstm__lock_for(const struct sstm_desc *d, const void *addr) {
  return &d->locks[((uintptr_t)addr >> d->stripe_shift) & d->lock_mask];
}

SSTM_INLINE struct sstm_desc *sstm__desc_at(unsigned slot) {
  /* acquire: pairs with the release store that publishes a new descriptor
   * in the registry, so its fields are initialised when seen. */
  return atomic_load_explicit(&sstm__g.descs[slot], memory_order_acquire);
}

/* The variant byte is written by its owner and fetch_or'ed by killers:
 * relaxed atomics, plain moves on x86. */
SSTM_INLINE unsigned sstm__variant(struct sstm_desc *d) {
  return atomic_load_explicit(&d->variant, memory_order_relaxed);
}
SSTM_INLINE void sstm__set_variant(struct sstm_desc *d, unsigned v) {
  atomic_store_explicit(&d->variant, (uint8_t)v, memory_order_relaxed);
}
SSTM_INLINE unsigned sstm__kind(struct sstm_desc *d) { return sstm__variant(d) & 3; }

/* The serial of d's current (or last) attempt: the status word's. The
 * descriptor keeps no other copy, so that a begin makes the next serial
 * with one add to the status word it stores anyway (txn.c,
 * attempt_start_fast). relaxed: for the owner (only the owner changes the
 * serial part), or a reader that synchronised with the owner's last
 * change (the pause word's acquire, (9.2)). */
SSTM_INLINE uint64_t sstm__serial(const struct sstm_desc *d) {
  return sstm_st_serial(
      atomic_load_explicit(&((struct sstm_desc *)(uintptr_t)d)->status, memory_order_relaxed));
}

/* The attempt's owner word (owner_lw), made current before it takes its
 * first lock. The common begin does not renew it (txn.c,
 * attempt_start_fast): until the attempt holds a lock it may still name an
 * earlier attempt of this descriptor, and no lock word holds that value any
 * more (every end of an attempt releases its locks or has lost them to a
 * take-over: (4.6), (6.4), (6.5) in docs/design/core.md), so no comparison
 * of a lock word with it succeeds and no access takes a stripe for its
 * own. Every lock CAS of an attempt calls this first; while the lock log is
 * not empty the word is current (the serial changes only between
 * attempts). */
SSTM_INLINE void sstm__owner_ready(struct sstm_desc *d) {
  if (d->ls.n == 0) d->owner_lw = sstm_lw_make_owner(d->slot, sstm__serial(d));
}

/* The stack pointer at d's outermost begin: the restart checkpoint's frame
 * is on that stack. A thread that ends with a created descriptor whose
 * transaction began on its own stack cancels it (registry.c). The
 * assembly begin does not store it apart: its checkpoint holds it. */
SSTM_INLINE uintptr_t sstm__begin_sp(const struct sstm_desc *d) {
#if defined(SSTM_CKPT_USES_LIBC)
  return d->begin_sp;
#else
  return (uintptr_t)d->ckpt.regs[SSTM_CKPT_RSP / 8];
#endif
}

/* Counter helpers: owner-only increments, tear-free for readers (relaxed
 * loads of the whole word on other threads). The increment is the relaxed
 * load and store of the same word: no locked instruction, since only the
 * owner writes. On x86-64 it is one add to memory, which is that load and
 * store as one instruction (an aligned 8-byte store is never torn), and
 * which the compiler does not form from two atomic accesses by itself:
 * one instruction instead of three on every commit. Under
 * ThreadSanitizer, which sees no inline assembly, it is the two atomic
 * accesses (SSTM__TSAN: <schedstm/tx.h>). */
SSTM_INLINE void sstm__ctr_add(uint64_t *c, uint64_t v) {
#if defined(__x86_64__) && !defined(SSTM__TSAN)
  __asm__("addq %1, %0" : "+m"(*c) : "er"(v) : "cc");
#else
  __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
#endif
}
SSTM_INLINE void sstm__ctr_max(uint64_t *c, uint64_t v) {
  if (v > __atomic_load_n(c, __ATOMIC_RELAXED)) __atomic_store_n(c, v, __ATOMIC_RELAXED);
}
SSTM_INLINE uint64_t sstm__ctr_get(const uint64_t *c) {
  return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* error.c: sstm__set_error and SSTM_QUOTE are in iface/error.h. */
SSTM_COLD void sstm__misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
SSTM_COLD __attribute__((noreturn)) void sstm__fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* The pause word's bits ((9), exec.c). DETACHED: set by a detach inside a
 * transaction, cleared by the attach; MARKED: set and cleared by the
 * executor; REAPING: a thread is taking the paused attempt's locks over and
 * neither of the first two may be cleared until it is done. */
enum {
  SSTM_PAUSE_DETACHED = 1u,
  SSTM_PAUSE_MARKED = 2u,
  SSTM_PAUSE_REAPING = 4u,
  /* the attempt was switched out by the executor's hook at a polled
   * preemption point (exec.c): it resumes there, where the kill is checked
   * before anything else, so a reaper may put the old versions back (9.4) */
  SSTM_PAUSE_POLLED = 8u,
  /* the attempt waits outside the barriers (a byte stream's data or room,
   * src/iface/libc_services.h) holding locks; set and cleared by its own
   * thread, which checks the kill before anything else when the wait ends,
   * so a reaper puts the old versions back, as for POLLED (9.7) */
  SSTM_PAUSE_WAITING = 16u,
  /* the bits of an attempt an executor paused (9.1) */
  SSTM_PAUSE_BY_EXEC = SSTM_PAUSE_DETACHED | SSTM_PAUSE_MARKED,
  /* the bits of an attempt that a conflict is decided against whatever the
   * policy, and that is never named as a party: paused, or waiting (9.7) */
  SSTM_PAUSE_HELD = SSTM_PAUSE_BY_EXEC | SSTM_PAUSE_WAITING,
};

/* registry.c */
void sstm__party_snapshot(struct sstm_desc *d, uint64_t lw, sstm_party_t *out);
bool sstm__kill(struct sstm_desc *d, uint64_t serial, const struct sstm_desc *killer);
/* The killer of victim's current attempt, when recorded (sstm__kill): fills
 * *out and returns true. Consumes the record. Called by the victim on its
 * own thread. */
bool sstm__killer_of(struct sstm_desc *victim, sstm_party_t *out);
int sstm__registry_init(unsigned max_threads);
void sstm__registry_fini(void);
/* stats.c: the process's commits and aborts and the sstm_stats_reset
 * calls before them, read together under reg_lock (so the counts are
 * those since the resets-th reset); 0, or SSTM_ESTATE when not
 * initialised. For the mapping's windows (map_services.c). */
int sstm__stats_window(uint64_t *commits, uint64_t *aborts, uint64_t *resets);
/* registry.c: why sstm_shutdown must refuse, or NULL. */
const char *sstm__registry_busy(struct sstm_desc *except);

/* exec.c: the executor's services (src/iface/exec_services.h) that the
 * engine calls. */
/* The preemption flag was seen (a barrier, a commit or a restart): call the
 * executor's hook if the attempt may be switched out here, else keep the
 * request standing. True if the hook ran (and returned, on whatever thread
 * attached tx again). `blocker`: the paused attempt that blocks tx, for
 * SSTM_EXEC_AT_BLOCKED, else NULL. */
bool sstm__exec_point(struct sstm_desc *tx, int where, struct sstm_desc *blocker);
/* Clear the pause bit `bit` (DETACHED or MARKED), waiting while a reaper
 * takes the locks over (9.5). acquire: the caller then sees the reaper's
 * lock releases and the KILLED status before them. */
void sstm__pause_clear(struct sstm_desc *d, uint32_t bit);
/* The rule for a conflict with a paused attempt (exec_services.h). */
int sstm__exec_paused_rule(void);

/* txn.c */
/* End the transaction of a thread that ends inside it. */
void sstm__abandon(struct sstm_desc *tx);
void sstm__desc_set_slow(struct sstm_desc *d); /* after policy and state table */
/* Whether d's begins need begin_outer_slow for a fixed reason
 * (SSTM_SLOW_BEGIN): sampling, the policy's on_begin, an admission hook
 * it switched on (cm_admit_fn), the state table, cfg.ro_log, the
 * random-delay build. */
bool sstm__desc_slow_begin(const struct sstm_desc *d);

/* stats.c */
void sstm__counters_fold(sstm_counters_t *dst, const sstm_counters_t *src);

/* reclaim.c */
void sstm__reclaim_commit(struct sstm_desc *d); /* after a commit with frees */
void sstm__reclaim_abort(struct sstm_desc *d);  /* after rollback */
void sstm__reclaim_desc_exit(struct sstm_desc *d);
void sstm__reclaim_fini(void);
void sstm__ptrvec_push(sstm_ptrvec_t *v, void *p);

/* cm_api.c: the configured policy, through the policy layer's catalogue
 * (iface/cm_catalog.h), and the policy's hooks of each descriptor */
int sstm__cm_select(const char *name, const sstm_cm_ops_t **out);
int sstm__cm_list(char *buf, size_t len);    /* sstm_cm_list() */
int sstm__cm_desc_init(struct sstm_desc *d); /* 0 or SSTM_ENOMEM */
void sstm__cm_desc_fini(struct sstm_desc *d);
/* The policy's on_attach / on_detach, on the thread concerned. */
void sstm__cm_attach(struct sstm_desc *d);
void sstm__cm_detach(struct sstm_desc *d);

/* hooks.c */
void sstm__hooks_thread_init(void);
void sstm__hooks_thread_exit(void);
void sstm__hooks_begin(uint64_t txid);
void sstm__hooks_commit(uint64_t txid);
void sstm__hooks_abort(uint64_t txid, sstm_abort_reason_t r);
void sstm__hooks_clear(void);

/* Test seams, debug builds only (SCHEDSTM_DEBUG; sstm__debug is a
 * compile-time constant, so other builds have neither the load nor the
 * call). A test points sstm__test_seam at a function that the engine then
 * calls at the points below, to run another descriptor's commit inside a
 * window that concurrent tests cannot hit on purpose
 * (tests/internal/seams.c). Rule for tests: set and clear it only while no
 * other thread runs transactions (every thread of a debug build loads it); a
 * multi-threaded test would have to publish its seam's state with
 * release/acquire. */
typedef enum {
  /* load_slow: the lock word was read unlocked, the data is not loaded yet.
   * A commit here must be caught by the re-check (1.4). */
  SSTM_SEAM_SLOW_READ_DATA,
  /* load_stripe (bulk reads): the same point for a whole stripe. */
  SSTM_SEAM_STRIPE_READ_DATA,
  /* load_own: a stripe this attempt has locked, before its memory bytes are
   * loaded. A take-over here must be caught by the re-check (3). */
  SSTM_SEAM_OWN_READ_DATA,
  /* load_slow: the data is loaded, the lock word not re-checked yet. A
   * writer that locked the stripe, wrote it and released it in between
   * must be caught by the re-check: an escalated irrevocable attempt undone
   * here releases with a fresh version, not the old one (irrev_undo). */
  SSTM_SEAM_SLOW_READ_RECHECK,
  /* read_past: the lock word was read locked by a running writer, its
   * status ACTIVE; the data is not loaded yet. A commit (or a kill and
   * take-over) of that writer here must be caught by the status and lock
   * re-checks (8.3). */
  SSTM_SEAM_PAST_READ_DATA,
  /* commit_update: the write-back is done, the locks are not released yet
   * (addr NULL). A reader that passed one of these locks and loads the
   * data now must refuse it on the status re-check (8.3). */
  SSTM_SEAM_COMMIT_WRITTEN_BACK,
  /* rollback: the locks are released (old versions back), the status is
   * still ACTIVE (addr NULL). A reader that passed one of these locks and
   * loads data another writer committed since must refuse it on the
   * lock-word re-check (8.3). */
  SSTM_SEAM_ROLLBACK_LOCKS_RELEASED,
  /* flags_seen (barrier.c): a flag was seen in the variant byte and the
   * kill checked (addr NULL). A kill here must be noticed at the next
   * barrier at the latest: its flag must not be lost ((6.3)). */
  SSTM_SEAM_FLAGS_CHECKED,
  /* softser (src/cm/softser.c): a loser is about to lower its own thread
   * (addr: its descriptor). It holds no lock here, so a winner's end runs
   * to completion meanwhile (tests/internal/softser_lower.c). */
  SSTM_SEAM_SOFTSER_LOWER,
} sstm_seam_t;
extern _Atomic(void (*)(sstm_seam_t where, const void *addr)) sstm__test_seam;
static inline void sstm__seam(sstm_seam_t where, const void *addr) {
  if (sstm__debug) {
    /* relaxed: set while no other thread runs transactions (the rule above). */
    void (*fn)(sstm_seam_t, const void *) =
        atomic_load_explicit(&sstm__test_seam, memory_order_relaxed);
    if (fn) fn(where, addr);
  }
}

/* os/os.h: time, thread ids, futexes, membarrier */
static inline void sstm__cpu_relax(void) { __builtin_ia32_pause(); }

/* A full barrier: a store before it is visible to every thread before any
 * load after it. It stands for atomic_thread_fence(memory_order_seq_cst) in
 * the correctness argument (docs/design/core.md, (5.1)). On x86-64 it is a
 * locked RMW of the stack top, the instruction GCC itself emits for that fence (Linux's
 * smp_mb() is the same kind, on -4(%rsp)): x86 orders every load and store
 * against a locked instruction. Clang emits an mfence instead, which is far
 * slower on some x86-64 CPUs (docs/benchmarks.md, "Figures behind the
 * design"). Under
 * ThreadSanitizer, which sees nothing of inline assembly, it is the C11
 * fence, which TSan at least instruments (SSTM__TSAN: <schedstm/tx.h>). */
static inline void sstm__full_fence(void) {
#if defined(__x86_64__) && !defined(SSTM__TSAN)
  __asm__ volatile("lock orq $0, (%%rsp)" ::: "memory", "cc");
#else
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* Store v into *w, then a full barrier: a release store followed by
 * sstm__full_fence, which the correctness argument reads it as ((5.1): a
 * begin publishing ACTIVE without membarrier). On x86-64 it is one xchg
 * with memory, whose implicit lock makes it a locked instruction: the
 * store and the full barrier in one, where the store and the locked OR
 * after it wait for the memory system twice (docs/benchmarks.md, "The
 * begin's store and fence in one instruction"). Under ThreadSanitizer the
 * C11 store and fence, as in sstm__full_fence. */
static inline void sstm__store_full_fence(_Atomic uint64_t *w, uint64_t v) {
#if defined(__x86_64__) && !defined(SSTM__TSAN)
  __asm__ volatile("xchgq %0, %1" : "+r"(v), "+m"(*(uint64_t *)w) : : "memory");
#else
  atomic_store_explicit(w, v, memory_order_release);
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

/* The calling function's stack pointer (approximately: the frame it runs
 * in), without forcing a frame pointer. */
SSTM_INLINE uintptr_t sstm__stack_pointer(void) {
  uintptr_t sp;
  __asm__("mov %%rsp, %0" : "=r"(sp));
  return sp;
}
/* A delay point of the race-widening build (SCHEDSTM_RANDOM_DELAY), drawn
 * from the descriptor's generator; only called under sstm__random_delay. */
static inline void sstm__random_delay_point(struct sstm_desc *d, unsigned shift) {
  sstm__os_random_delay(sstm__rand(&d->rng), shift);
}

/* Longest single futex sleep of sstm_party_wait(SSTM_WAIT_BLOCK), 1 ms; 0
 * means unsliced (sleep until woken or the caller's timeout). Only the
 * internal tests change it: unsliced, a lost wake-up hangs the sleeper
 * instead of costing it one slice, so tests/internal/cm_wait.c can show that
 * none is lost. */
extern _Atomic uint64_t sstm__wait_slice_ns;

/* core/statetab.c: the per-thread state table shared with other processes
 * (layout: include/schedstm/statetab.h). The names and arguments are
 * stable: the engine, the policies (the state-table note: action, OS
 * priority) and sstm_sched_set call them. */
struct sstm_stt_entry;
int sstm__stt_init(void);
void sstm__stt_fini(void);
/* line: sstm_describe()'s whole line (its cm-info part is left out). */
void sstm__stt_describe(const char *line);
void sstm__stt_attach(struct sstm_desc *d);
/* d was attached to the calling thread: publish its tid and OS priority. */
void sstm__stt_tid(struct sstm_desc *d);
/* Publish d's thread's policy and nice as the kernel has them now (one
 * system call; nothing when the table is off). */
void sstm__stt_prio_refresh(struct sstm_desc *d);
void sstm__stt_detach(struct sstm_desc *d);
void sstm__stt_begin(struct sstm_desc *d);
void sstm__stt_commit(struct sstm_desc *d);
void sstm__stt_abort(struct sstm_desc *d, sstm_abort_reason_t r, const sstm_party_t *other);
void sstm__stt_action(struct sstm_desc *d, sstm_cm_act_t act);
void sstm__stt_prio(struct sstm_desc *d, int policy, int nice);
/* The thread mapping's CPU columns of d's entry (d may be NULL). */
void sstm__stt_cpu(struct sstm_desc *d, int seen, int pinned);
/* The table's executor area (version 6), NULL when no table is published.
 * Who writes it is the executor's business (core/exec.c hands it to one
 * executor at a time). */
struct sstm_stt_exec;
struct sstm_stt_exec *sstm__stt_exec_area(void);

/* os_glue.c: the engine's side of the OS facilities (src/os) */
/* Whether begin may rely on the reclaimer's asymmetric fence: registers
 * for membarrier unless `disable` (SCHEDSTM_NO_MEMBARRIER). */
bool sstm__membarrier_init(bool disable);
/* The reclaimer's fence (docs/design/core.md, (5.1), (5.2)): membarrier
 * when begin relies on it, else a full fence of this thread. */
void sstm__heavy_fence(void);

#endif /* SSTM_CORE_ENGINE_H */
