/* SPDX-License-Identifier: MIT */
/* The transactional-memory ABI of `gcc -fgnu-tm` ([IntelTMABI]) on the
 * engine: a program compiled with -fgnu-tm and linked with libschedstm-itm
 * instead of libitm runs its __transaction_atomic and __transaction_relaxed
 * blocks as schedstm transactions, under the policy that SCHEDSTM_CM
 * names. The design, its steps (I1)-(I8) and its limits are in
 * docs/design/itm.md; the steps are cited below.
 *
 * Only the library's public API is used (schedstm/schedstm.h, with the
 * inline read fast path and the descriptor prefix it reads, I8), plus
 * the restart checkpoint's layout (arch/ckpt.h) in the assembly half,
 * abi/itm_x86_64.S; of the internal entry points of schedstm/tx.h,
 * sstm__begin, and sstm__irrev_plain_writes for a serial block (I3). */
#define _GNU_SOURCE
#define SSTM_INLINE_BARRIERS 1
#include <errno.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include <schedstm/schedstm.h>

#include "abi/itm_abi.h"

#define ITM_API __attribute__((visibility("default")))
#define ITM_TLS __thread __attribute__((tls_model("initial-exec")))
#define ITM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The assembly half (abi/itm_x86_64.S) reads this bit of the action that
 * the C half returns: the attempt must leave before it runs the body (I3). */
#define ITM_BACK_OUT 0x80000000u

/* The value with which a closed scope's cancel resumes its begin (I5),
 * beside the engine's SSTM__CKPT_RESTART and SSTM__CKPT_CANCEL. */
#define ITM_CKPT_INNER 3

/* ---- per thread ---------------------------------------------------------- */

enum { MODE_NONE, MODE_REVOCABLE, MODE_SERIAL };

/* (I7) A C++ exception object allocated by the current attempt: the thrown
 * object's bytes, [obj, obj + size), written in place. */
typedef struct itm_exc {
  unsigned char *obj;
  size_t size;
  bool caught; /* between __cxa_begin_catch and the __cxa_end_catch that ends it */
} itm_exc_t;

/* A user action: fn(arg), run at the commit (on_commit) or at a rollback. */
typedef struct itm_action {
  void (*fn)(void *);
  void *arg;
  bool on_commit;
} itm_action_t;

/* (I5) A closed scope: a nested transaction that may cancel itself alone
 * (its begin did not say pr_hasNoAbort), and the lengths of the attempt's
 * logs and lists at its begin, which its cancel goes back to. */
typedef struct itm_scope {
  sstm_ckpt_t ckpt; /* the nested begin's registers (the assembly saves them) */
  void *ret;        /* where that begin returns */
  uintptr_t sp;     /* its caller's stack pointer after that return */
  uint32_t depth;   /* the ABI's depth inside it */
  size_t clog_len;  /* the old bytes of the writes (clog) */
  size_t undo_len;  /* the _ITM_L* log */
  uint32_t nuact;   /* the user actions */
  uint32_t nalloc;  /* the blocks allocated, the frees put off */
  uint32_t nfree;
  uint32_t nexc; /* (I7) the exception records and catches */
  uint32_t catches;
} itm_scope_t;

/* One thread's transaction as the ABI sees it. Owner-only. */
typedef struct itm_thread {
  bool ready;          /* the thread is registered with the engine (I1) */
  uint8_t mode;        /* MODE_*: the outermost transaction's */
  bool want_serial;    /* leaving to restart in serial mode (I4) */
  bool priv_wait;      /* the outermost commit under way waits for a grace period (I8) */
  bool backing_out;    /* leaving to wait for a serial transaction (I3) */
  bool exit_again;     /* thread_exit put off until the engine's destructor has run */
  uint32_t depth;      /* nesting depth of the ABI's begins (flat, I5) */
  uint32_t props;      /* the outermost transaction's properties */
  void *ret;           /* where the outermost _ITM_beginTransaction returns */
  uintptr_t begin_sp;  /* its caller's stack pointer after that return (I6) */
  sstm_ckpt_t *ckpt;   /* the engine's checkpoint for it */
  bool rb_armed;       /* this attempt registered rollback_run (I6, I7, user actions) */
  unsigned char *undo; /* _ITM_L* log: records of (addr, len, bytes) */
  size_t undo_len, undo_cap;
  /* (I7) C++ exceptions of this attempt. eh_armed: the fields below are
   * in use (and rollback_run registered); all are cleared when the
   * transaction commits or rolls back. */
  bool eh_armed;
  uint32_t nexc;
  size_t exc_cap;
  itm_exc_t *exc;    /* the exception objects it allocated and that live */
  uint32_t catches;  /* its __cxa_begin_catch calls not yet ended */
  unsigned uncaught; /* the C++ runtime's uncaught exceptions when it armed */
  /* The attempt's user actions, in registration order; cact_armed: it
   * registered commit_actions_run (the commit actions in order; the undo
   * actions run newest first from rollback_run). */
  bool cact_armed;
  uint32_t nuact;
  size_t uact_cap;
  itm_action_t *uact;
  /* (I5) The attempt's open closed scopes, innermost last; while there is
   * one, the old bytes of every write (clog: records of addr, len | the
   * in-place bit, bytes, len), the blocks allocated and the frees put off
   * until no scope is open. */
  uint32_t nscope;
  size_t scope_cap;
  itm_scope_t *scope;
  unsigned char *clog;
  size_t clog_len, clog_cap;
  void **alloc;
  uint32_t nalloc;
  size_t alloc_cap;
  void **frees;
  uint32_t nfree;
  size_t free_cap;
  void *inner_ret; /* where a cancelled scope's begin returns (its resume) */
  /* The states of the transactions whose user actions are running, newest
   * last (action_enter, action_leave). */
  struct itm_thread *saved;
  uint32_t nsaved;
  size_t saved_cap;
} itm_thread_t;

static ITM_TLS itm_thread_t itm;

/* The C halves' answer to the assembly: the checkpoint to save (NULL: a
 * nested begin, nothing to save) and the action code (rax:rdx). */
typedef struct itm_ret {
  sstm_ckpt_t *ckpt;
  uint64_t action;
} itm_ret_t;

__attribute__((noreturn, format(printf, 1, 2))) static void itm_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("schedstm-itm: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* Room for need elements of elem bytes in arr, whose capacity *cap (in
 * elements) doubles from first: the array, perhaps moved (realloc). Ends
 * the process with a message naming what when out of memory: the
 * compiled code has no way to receive an error. */
static void *grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first,
                  const char *what) {
  if (need <= *cap) return arr;
  size_t c = *cap ? *cap : first;
  while (c < need)
    c *= 2;
  void *p = realloc(arr, c * elem);
  if (p == NULL) itm_fatal("out of memory for %s", what);
  *cap = c;
  return p;
}

/* ---- (I1) initialisation on first use --------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err;

static void serial_exit(void);
/* (I3) This thread holds serial_mu (from serial_enter to serial_exit). */
static ITM_TLS bool serial_mine;
static void eh_clear(itm_thread_t *t);
static sstm_ckpt_t *scope_open(itm_thread_t *t, void *ret, uintptr_t sp);
static void scope_close(itm_thread_t *t);
static void scopes_clear(itm_thread_t *t);
static void closed_note(itm_thread_t *t, const void *p, size_t n, bool in_place);
static __attribute__((noreturn)) void closed_cancel(itm_thread_t *t);
static void rollback_arm(itm_thread_t *t, const char *what);

/* (I7, I5) How many exception records (itm_thread_t.exc) and open closed
 * scopes all threads hold. A write barrier looks at its own thread's
 * records and scopes only while this is not zero: one load of a global,
 * where the thread's count would take the thread-local block's address
 * first. Relaxed: a thread's own changes are in its program order, which
 * is all its barriers need; another thread's only send a barrier to the
 * slow path (its own records) for nothing. */
static _Alignas(64) _Atomic uint32_t slow_live; /* its own line: read by every write */

/* For the tests of internals (tests/internal/itm_exit.c, linked with the
 * static library): slow_live now. Hidden, so not in the shared library's
 * interface. Relaxed, as every access to it. */
__attribute__((visibility("hidden"))) uint32_t sstm__itm_slow_live(void);
uint32_t sstm__itm_slow_live(void) {
  return atomic_load_explicit(&slow_live, memory_order_relaxed);
}

/* (I1) When a thread exits, the destructor of this key (whose value is the
 * thread's state) gives back its share of slow_live, frees its buffers
 * (the log of private memory, the saved states of user actions) and ends
 * its serial mode if it exits in a serial transaction. */
static pthread_key_t exit_key;
static bool exit_key_ok;

/* The thread ends, and nothing will drop its open closed scopes and
 * exception records any more, nor those of the transactions whose user
 * actions it was running (saved): they leave slow_live, which would
 * otherwise send every write of the process to the slow path for good. */
static void exit_counts_drop(itm_thread_t *t) {
  uint32_t n = t->nscope + t->nexc;
  t->nscope = t->nexc = 0;
  for (uint32_t i = 0; i < t->nsaved; i++) {
    n += t->saved[i].nscope + t->saved[i].nexc;
    t->saved[i].nscope = t->saved[i].nexc = 0;
  }
  if (n != 0) atomic_fetch_sub_explicit(&slow_live, n, memory_order_relaxed);
}

/* The buffers one state owns: the thread's current one, or a saved one
 * (action_enter) whose transaction's user actions run. */
static void state_bufs_free(itm_thread_t *s) {
  free(s->undo);
  free(s->exc);
  free(s->uact);
  free(s->scope);
  free(s->clog);
  free(s->alloc);
  free(s->frees);
}

static void thread_exit(void *arg) {
  itm_thread_t *t = arg;
  if (t->depth != 0) {
    /* The thread ends inside a transaction. The engine's own destructor
     * ends it: it cancels a revocable one, whose rollback may still read
     * the log (rollback_run), so the buffers stay until it has run; it
     * commits one that asked to be irrevocable. A serial one lets the others in, as its
     * commit would (before the engine's commit is fine: the body will run
     * no more), or every later transaction would wait for it. */
    if (t->mode == MODE_SERIAL) {
      t->mode = MODE_NONE;
      if (serial_mine) serial_exit(); /* unless the engine's commit did (serial_release) */
    }
    /* (I1.2) The engine's destructor runs first when its key has the
     * lower slot (glibc calls them in the slots' order, and the engine's
     * key is made first; POSIX leaves the order open, and a slot freed
     * below it goes to the key made next). If the thread still has its
     * descriptor, that destructor has not run: this one runs again in the
     * next round of destructors, after it, so that the rollback to come
     * (rollback_run) finds the exception records it drops and frees. A
     * thread that ends inside a user action keeps its descriptor for good
     * (the engine leaves it): the second round goes on. */
    if (sstm_self() != NULL && !t->exit_again) {
      t->exit_again = true;
      if (pthread_setspecific(exit_key, t) == 0) return;
      /* Without the second round the engine's rollback, still to come,
       * reads the buffers: they stay (a leak), and the counts go now. */
      exit_counts_drop(t);
      return;
    }
    /* (I1.3, I1.4) The engine's destructor has ended the transaction, or left
     * it for good (the thread ends inside a user action): nothing reads
     * the buffers any more, and they go as below, with the closed scopes,
     * which only the resume point drops (I5), and the exception records
     * that no rollback dropped (the engine committed the transaction, or
     * ended none, I7). */
  }
  /* and those of the saved states, if it ends in a user action */
  exit_counts_drop(t);
  /* A thread that ends in a user action leaves the saved states of the
   * transactions whose actions it ran, which nothing will put back
   * (action_leave): their buffers go with the thread's own. */
  for (uint32_t i = 0; i < t->nsaved; i++)
    state_bufs_free(&t->saved[i]);
  state_bufs_free(t);
  t->undo = NULL;
  t->undo_len = t->undo_cap = 0;
  free(t->saved);
  t->saved = NULL;
  t->nsaved = t->saved_cap = 0;
  t->exc = NULL;
  t->nexc = t->exc_cap = 0;
  t->uact = NULL;
  t->nuact = t->uact_cap = 0;
  t->scope = NULL;
  t->clog = NULL;
  t->alloc = t->frees = NULL;
  t->scope_cap = t->clog_cap = t->alloc_cap = t->free_cap = 0;
}

/* (I8) cfg.itm_privatization of the library as the first transaction of
 * the process found it (SCHEDSTM_ITM_PRIVATIZATION). Written once, under
 * init_once, before any thread of this layer begins a transaction. */
static bool priv_on;

/* The configuration this layer initialises the library with: sstm_init's
 * own (defaults, then the SCHEDSTM_* variables), except that with
 * privatization safety on (I8) the begins fence (no_membarrier) unless
 * SCHEDSTM_NO_MEMBARRIER says otherwise. Every update commit then starts a
 * grace period, whose heavy fence is a membarrier(2) system call that
 * interrupts every CPU running a thread of the process when the begins do
 * not fence, and a plain fence when they do (docs/benchmarks.md,
 * "Privatization safety in the compiler ABI: what the grace period
 * costs"). The variable's own value is found by reading the environment a
 * second time, from defaults with the field set: only
 * sstm_config_from_env reads it. */
static int abi_config(sstm_config_t *c) {
  sstm_config_default(c);
  int rc = sstm_config_from_env(c);
  if (rc != 0) return rc;
  if (c->itm_privatization && !c->no_membarrier) {
    sstm_config_t f;
    sstm_config_default(&f);
    f.no_membarrier = true;
    if ((rc = sstm_config_from_env(&f)) != 0) return rc;
    c->no_membarrier = f.no_membarrier; /* true unless SCHEDSTM_NO_MEMBARRIER=0 */
  }
  c->use_env = false; /* read here already */
  return 0;
}

static void init_library(void) {
  sstm_config_t c;
  if (!sstm_initialized() && (init_err = abi_config(&c)) == 0) init_err = sstm_init(&c);
  /* The program's own configuration if it initialised the library. */
  if (sstm_initialized() && sstm_config_get(&c) == 0) priv_on = c.itm_privatization;
  /* After the engine's key (sstm_init), so that its destructor, which
   * cancels a transaction the thread ends in, runs first. */
  exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* First transaction of a thread: the library initialised (once per
 * process) and the thread registered; the engine unregisters it when it
 * exits (its thread-specific-data destructor). */
static __attribute__((noinline)) void thread_setup(itm_thread_t *t) {
  pthread_once(&init_once, init_library);
  if (init_err != 0 && !sstm_initialized())
    itm_fatal("sstm_init failed: %s (%s)", sstm_strerror(init_err), sstm_last_error());
  int rc = sstm_thread_init();
  if (rc != 0)
    itm_fatal("registering the thread failed: %s (%s)", sstm_strerror(rc), sstm_last_error());
  t->ready = true;
  /* Without the key (out of keys or memory) the buffers outlive the
   * thread: a leak, not an error (and a serial transaction that a thread
   * exits in holds the others back). */
  if (exit_key_ok) (void)pthread_setspecific(exit_key, t);
}

/* ---- (I3) serial transactions ------------------------------------------------- */

/* A transaction that runs uninstrumented code, or that calls code the
 * compiler could not instrument, writes shared memory with plain stores;
 * no other transaction begun through this ABI may run meanwhile. The
 * serial transaction holds serial_mu from before it raises serial_on until
 * after it lowers it, so the ones that see the flag wait on the mutex. */
static pthread_mutex_t serial_mu = PTHREAD_MUTEX_INITIALIZER;
/* Raised relaxed: the ordering against other attempts is the heavy fence
 * inside sstm_quiesce() on the serial side, paired with the fence after an
 * attempt's ACTIVE store in the engine's begin on the other
 * (docs/design/itm.md (I3), docs/design/core.md (5.1)). Lowered with
 * release, loaded with acquire: an attempt that finds it lowered again
 * (it loaded the clock before the serial transaction's irrevocable begin
 * set the flag there, and serial_on after serial_exit) reads after the
 * serial body's plain stores, which are then no data race, and never
 * before them, which is why the serial commit needs no grace period
 * (I8.4). Both are plain moves on x86-64. The mutex orders the rest. */
static _Atomic uint32_t serial_on;

static void serial_enter(void) {
  pthread_mutex_lock(&serial_mu);
  serial_mine = true;
  atomic_store_explicit(&serial_on, 1, memory_order_relaxed);
  /* (I3.2) Every attempt running now ends before this returns (its heavy
   * fence orders the store above before the scan of the running attempts);
   * an attempt that the scan missed began after the fence, and its own
   * load of serial_on (outer_begin, itm_resumed) sees 1, or the 0 of
   * serial_exit or a later value (I8.4). */
  int rc = sstm_quiesce();
  if (rc != 0) itm_fatal("waiting for the running transactions failed: %s", sstm_strerror(rc));
}

static void serial_exit(void) {
  serial_mine = false;
  atomic_store_explicit(&serial_on, 0, memory_order_release); /* (I8.4) */
  pthread_mutex_unlock(&serial_mu);
}

/* (I1.1, I3) An engine commit action, registered before the ABI's commit
 * actions of a serial transaction: the others are let in before those
 * run, which may run transactions of their own on this thread (they would
 * wait for serial_mu, held by this thread, for ever). _ITM_commitTransaction
 * has done so already; this is for the engine's own commit of the
 * transaction, when its thread ends inside it and the engine's destructor
 * runs before the ABI's. */
static void serial_release(void *arg) {
  (void)arg;
  if (serial_mine) serial_exit();
}

/* (I3.3) Wait, outside any transaction, until no serial transaction runs. */
static void serial_wait(void) {
  pthread_mutex_lock(&serial_mu);
  pthread_mutex_unlock(&serial_mu);
}

static bool needs_serial(uint32_t props) {
  return !(props & itm_pr_instrumentedCode) || (props & itm_pr_doesGoIrrevocable);
}

/* The code path to run: uninstrumented only in serial mode (where plain
 * accesses are safe) or when it is the only one. */
static uint64_t code_path(uint32_t props, bool serial) {
  if ((props & itm_pr_uninstrumentedCode) && (serial || !(props & itm_pr_instrumentedCode)))
    return itm_a_runUninstrumentedCode;
  return itm_a_runInstrumentedCode;
}

/* ---- begin, commit, abort -------------------------------------------------- */

/* The rest of an outermost begin once the engine's has returned c: the
 * thread's state, and the back-out of a revocable attempt that a serial
 * transaction excludes. */
static inline itm_ret_t begun(itm_thread_t *t, sstm_ckpt_t *c, bool serial, uint64_t act) {
  if (ITM_UNLIKELY(c == NULL)) itm_fatal("the engine refused the transaction's begin");
  t->ckpt = c;
  t->depth = 1;
  t->mode = serial ? MODE_SERIAL : MODE_REVOCABLE;
  t->rb_armed = false;
  t->undo_len = 0;
  t->cact_armed = false;
  t->nuact = 0;
  /* (I3.1) The engine's begin stored ACTIVE and fenced before this load
   * (a call, so the compiler keeps the order too). acquire: pairs with
   * serial_exit's release (I8.4). */
  if (!serial && ITM_UNLIKELY(atomic_load_explicit(&serial_on, memory_order_acquire)))
    act |= ITM_BACK_OUT;
  return (itm_ret_t){c, act};
}

/* An outermost begin (I2): serial first if needed, then the engine's. */
static itm_ret_t outer_begin(itm_thread_t *t, uint64_t live) {
  if (ITM_UNLIKELY(!t->ready)) thread_setup(t);
  bool serial = t->want_serial || needs_serial(t->props);
  t->want_serial = false;
  if (serial) serial_enter();
  sstm_attr_t a = {0};
  a.irrevocable = serial;
  /* A hint: an attempt declared read-only that writes restarts as an
   * update (schedstm/tx.h), so a wrong hint costs an attempt, not safety. */
  a.read_only = !serial && (t->props & itm_pr_readOnly);
  sstm_ckpt_t *c = sstm__begin(&a);
  uint64_t path = code_path(t->props, serial);
  /* The uninstrumented path writes with plain stores, which the engine's
   * statistics would otherwise count as a read-only commit. */
  if (serial && path == itm_a_runUninstrumentedCode && c != NULL) sstm__irrev_plain_writes();
  return begun(t, c, serial, path | live);
}

/* The C half of _ITM_beginTransaction (abi/itm_x86_64.S). */
__attribute__((visibility("hidden"))) itm_ret_t sstm__itm_begin(uint32_t props, void *ret,
                                                                uintptr_t sp) {
  itm_thread_t *t = &itm;
  if (t->depth == 0) {
    t->props = props;
    t->ret = ret;
    t->begin_sp = sp;
    if (ITM_UNLIKELY(!t->ready) || needs_serial(props))
      return outer_begin(t, itm_a_saveLiveVariables);
    /* The common begin, as outer_begin does it for a revocable
     * transaction with an instrumented path, with a constant attribute. */
    static const sstm_attr_t ro = {.read_only = true};
    return begun(t, sstm__begin(props & itm_pr_readOnly ? &ro : NULL), false,
                 itm_a_runInstrumentedCode | itm_a_saveLiveVariables);
  }
  if (ITM_UNLIKELY(!t->ready)) thread_setup(t);
  /* (I5) Nested: flat. The engine only counts the depth. */
  if (sstm__begin(NULL) != NULL) itm_fatal("nested begin without an outer transaction");
  t->depth++;
  if (t->mode != MODE_SERIAL && needs_serial(props)) {
    /* (I4) It needs serial mode: restart the outermost one serial. */
    t->want_serial = true;
    sstm_cancel();
  }
  uint64_t act = code_path(props, t->mode == MODE_SERIAL) | itm_a_saveLiveVariables;
  /* (I5) A block that may cancel itself alone: a closed scope, whose
   * checkpoint the assembly half saves. Not in serial mode, whose plain
   * stores cannot be undone (such a cancel ends the process). */
  if (!(props & itm_pr_hasNoAbort) && t->mode != MODE_SERIAL)
    return (itm_ret_t){scope_open(t, ret, sp), act};
  return (itm_ret_t){NULL, act};
}

/* The C half of the resume point: the engine restored the checkpoint with
 * `val` (a restart: a new attempt has begun; a cancel: the transaction has
 * ended). *ret_slot receives where the compiled code resumes. */
__attribute__((visibility("hidden"))) itm_ret_t sstm__itm_resumed(int val, void **ret_slot) {
  itm_thread_t *t = &itm;
  if (val == ITM_CKPT_INNER) {
    /* (I5) A closed scope was cancelled (closed_cancel): its begin
     * returns again, to skip its block. */
    *ret_slot = t->inner_ret;
    return (itm_ret_t){NULL, itm_a_abortTransaction | itm_a_restoreLiveVariables};
  }
  *ret_slot = t->ret;
  /* The attempt rolled back: its closed scopes with it (I5). */
  if (ITM_UNLIKELY(t->nscope != 0)) scopes_clear(t);
  t->clog_len = 0;
  t->nalloc = t->nfree = 0;
  if (val == SSTM__CKPT_RESTART) {
    t->depth = 1;
    t->rb_armed = false;
    t->undo_len = 0;
    t->cact_armed = false;
    t->nuact = 0;
    uint64_t act = code_path(t->props, t->mode == MODE_SERIAL) | itm_a_restoreLiveVariables;
    /* (I3.1) as in outer_begin: the restart began a new attempt (ACTIVE,
     * fenced) before it jumped here. An attempt a policy made irrevocable
     * needs not leave: the serial transaction's own begin waits for it. */
    if (ITM_UNLIKELY(atomic_load_explicit(&serial_on, memory_order_acquire)) &&
        t->mode != MODE_SERIAL && !sstm_is_irrevocable())
      act |= ITM_BACK_OUT;
    return (itm_ret_t){t->ckpt, act};
  }
  /* Cancelled: by the user, or by this layer to leave (I3, I4). The
   * checkpoint's frame, and so begin_sp, stay those of the transaction. */
  t->depth = 0;
  t->mode = MODE_NONE;
  if (t->backing_out) {
    t->backing_out = false;
    serial_wait();
    return outer_begin(t, itm_a_restoreLiveVariables);
  }
  if (t->want_serial) return outer_begin(t, itm_a_restoreLiveVariables);
  t->begin_sp = 0;
  return (itm_ret_t){NULL, itm_a_abortTransaction | itm_a_restoreLiveVariables};
}

/* (I3.3) Called by the assembly half, after it saved the checkpoint, when
 * the action carries ITM_BACK_OUT: leave the attempt (it has run nothing)
 * and wait at the resume point. */
__attribute__((visibility("hidden"), noreturn)) void sstm__itm_back_out(void) {
  itm.backing_out = true;
  sstm_cancel();
}

/* ---- (I8) privatization safety --------------------------------------------- */

/* The attempt about to commit wrote shared memory: its redo log holds an
 * entry, or it is irrevocable (its writes went in place, with no log). A
 * read-only attempt answers false with two loads, the thread's descriptor
 * prefix and the log's length (schedstm/fastpath.h, through the inline
 * barriers' pointer). The variant byte: relaxed, as every reader of it
 * outside the engine; the irrevocable variant is set by the owner. */
static inline bool attempt_wrote(void) {
  const sstm__fast_t *f = sstm__fast_cur;
  if (f->ws.n != 0) return true;
  uint8_t v = __atomic_load_n(&f->variant, __ATOMIC_RELAXED);
  return (v & (SSTM__V_NONE | 3u)) == 3u; /* 3: irrevocable, in a transaction */
}

/* Wait until every transaction running now has ended (sstm_quiesce): none
 * of them can still read, or write back over, the data that the commit
 * just made private. Outside any transaction (after the engine's commit,
 * or in its commit actions). */
static __attribute__((noinline)) void grace_wait(void) {
  int rc = sstm_quiesce();
  if (rc != 0)
    itm_fatal("waiting for a grace period after a commit failed: %s (%s)", sstm_strerror(rc),
              sstm_last_error());
}

ITM_API void _ITM_commitTransaction(void) {
  itm_thread_t *t = &itm;
  if (ITM_UNLIKELY(t->depth == 0)) itm_fatal("_ITM_commitTransaction outside a transaction");
  /* (I3) A serial transaction lets the others in before the engine's
   * commit, which runs the commit actions: a transaction of one of them,
   * on this thread, would otherwise wait for serial_mu held by this
   * thread. Its body, the plain accesses, is over; it is irrevocable until
   * that commit and cannot abort, so a transaction begun meanwhile waits in
   * the engine's begin (core.md (7)) until the commit is visible, and a
   * serial transaction entering meanwhile waits for it in sstm_quiesce. */
  if (ITM_UNLIKELY(t->mode == MODE_SERIAL) && t->depth == 1) serial_exit();
  /* (I5) The innermost closed scope's transaction commits into the
   * enclosing one. */
  if (ITM_UNLIKELY(t->nscope != 0) && t->scope[t->nscope - 1].depth == t->depth) scope_close(t);
  /* (I8) An outermost commit of an attempt that wrote waits, after it, for
   * the transactions that may still see what it privatized. Decided here,
   * while the attempt's redo log is there to look at. Not a serial one
   * (I8.4): its begin's wait left no attempt that can see the data as it
   * was before the body. */
  if (priv_on && t->depth == 1) t->priv_wait = t->mode != MODE_SERIAL && attempt_wrote();
  /* A conflict restarts the outermost transaction from inside the commit:
   * it then resumes at its begin, with depth 1 again (and decides again
   * at its next commit). */
  sstm_commit();
  if (--t->depth > 0) return;
  /* (I7) An exception that leaves the transaction (_ITM_commitTransactionEH)
   * is the program's from here: no longer the attempt's, not private. */
  if (ITM_UNLIKELY(t->eh_armed)) eh_clear(t);
  t->undo_len = 0;
  t->rb_armed = t->cact_armed = false;
  t->nuact = 0;
  t->begin_sp = 0;
  t->mode = MODE_NONE;
  /* (I8) Unless the commit actions already waited (commit_actions_run). */
  if (ITM_UNLIKELY(t->priv_wait)) {
    t->priv_wait = false;
    grace_wait();
  }
}

/* Exceptions thrown out of a transaction commit it ([IntelTMABI]): GCC
 * calls this from the catch-all around the block, then rethrows (I7). */
ITM_API void _ITM_commitTransactionEH(void *exc) {
  (void)exc;
  _ITM_commitTransaction();
}

ITM_API void _ITM_abortTransaction(uint32_t reason) {
  itm_thread_t *t = &itm;
  if (t->depth == 0) itm_fatal("_ITM_abortTransaction outside a transaction");
  if (!(reason & itm_userAbort)) itm_fatal("_ITM_abortTransaction with reason %#x", reason);
  /* (I5) A nested transaction cancels alone when its begin opened a closed
   * scope (it did not say pr_hasNoAbort); in serial mode none is open. */
  if (t->depth > 1 && !(reason & itm_outerAbort)) {
    if (t->nscope != 0 && t->scope[t->nscope - 1].depth == t->depth) closed_cancel(t);
    itm_fatal("__transaction_cancel of a nested transaction in a serial (irrevocable) "
              "transaction: its plain stores cannot be undone; only __transaction_cancel "
              "[[outer]] or a cancel of the outermost transaction is supported there");
  }
  if (t->mode == MODE_SERIAL)
    itm_fatal("__transaction_cancel in a serial (irrevocable) transaction");
  sstm_cancel();
}

/* (I4) Called by compiled code before an operation it could not
 * instrument (a __transaction_relaxed block calling unsafe code). */
ITM_API void _ITM_changeTransactionMode(uint32_t mode) {
  itm_thread_t *t = &itm;
  if (mode != itm_modeSerialIrrevocable) itm_fatal("_ITM_changeTransactionMode(%u)", mode);
  if (t->depth == 0) itm_fatal("_ITM_changeTransactionMode outside a transaction");
  if (t->mode == MODE_SERIAL) return;
  t->want_serial = true;
  sstm_cancel();
}

ITM_API uint32_t _ITM_inTransaction(void) {
  itm_thread_t *t = &itm;
  if (t->depth == 0) return itm_outsideTransaction;
  return t->mode == MODE_SERIAL || sstm_is_irrevocable() ? itm_inIrrevocableTransaction
                                                         : itm_inRetryableTransaction;
}

/* Inside a transaction: its attempt's id (unique in the process, growing
 * with every attempt) plus one. The engine's ids start at 1, which is
 * _ITM_noTransactionId, the answer outside: the first transaction of the
 * first thread would otherwise look like none. */
ITM_API uint64_t _ITM_getTransactionId(void) {
  return itm.depth ? sstm_txid() + 1 : ITM_NO_TRANSACTION_ID;
}

/* Version checks of the ABI ([IntelTMABI]), which a program may call
 * itself: compatible with the ABI version that GCC's code generation
 * follows, and this library's name and version. */
ITM_API int _ITM_versionCompatible(int version) { return version == ITM_VERSION_NO; }

ITM_API const char *_ITM_libraryVersion(void) {
  return "schedstm-itm " SSTM_VERSION_STRING " (TM ABI 0.90)";
}

/* A fatal error reported by compiled code: the process ends, with the
 * code and the source location when there is one. */
ITM_API __attribute__((noreturn)) void _ITM_error(const itm_src_location_t *loc, int code) {
  const char *where = loc && loc->psource ? loc->psource : "an unknown location";
  itm_fatal("_ITM_error: error %d at %s", code, where);
}

/* "Forget the references the runtime holds to [p, p + n)": the ABI does
 * not say when the dropped writes or reads take effect relative to the
 * rest of the transaction, and the engine cannot take entries out of an
 * attempt's read and write sets (nor could it tell what a later rollback
 * or commit then means for them). So inside a transaction it is refused,
 * as by libitm, with a message rather than a silent no-op
 * (docs/design/itm.md, "Limits"). */
ITM_API void _ITM_dropReferences(void *p, size_t n) {
  if (itm.depth == 0) return; /* outside a transaction there are none */
  itm_fatal("_ITM_dropReferences(%p, %zu) is not supported: the engine cannot drop an "
            "attempt's references to memory",
            p, n);
}

/* The engine runs user actions outside the transaction, after its commit
 * or rollback, and they may run transactions of their own (schedstm/tx.h).
 * Through the ABI those are outermost transactions, but this thread's
 * state is still the ending transaction's (its depth, mode, log of private
 * memory; its return address and stack pointer, which a restart after the
 * undo actions needs). So the user actions run between action_enter,
 * which saves that state and leaves a clean one (no transaction), and
 * action_leave, which puts it back: the commit actions as three engine
 * actions, which the engine runs in registration order, all of them or
 * none; the undo actions from rollback_run, which calls the three. */
static void action_enter(void *arg) {
  itm_thread_t *t = arg;
  t->saved =
      grow(t->saved, &t->saved_cap, (size_t)t->nsaved + 1, sizeof *t->saved, 2, "a user action");
  t->saved[t->nsaved++] = *t;
  t->depth = 0;
  t->mode = MODE_NONE;
  t->want_serial = false;
  t->backing_out = false;
  t->priv_wait = false;
  t->begin_sp = 0;
  t->rb_armed = false;
  t->undo = NULL; /* the saved log stays as it is */
  t->undo_len = t->undo_cap = 0;
  t->eh_armed = false; /* the same for the exception records (I7) */
  t->exc = NULL;
  t->nexc = t->exc_cap = t->catches = 0;
  t->cact_armed = false; /* and for the user actions */
  t->uact = NULL;
  t->nuact = 0;
  t->uact_cap = 0;
  t->nscope = 0; /* and for the closed scopes (I5) */
  t->scope = NULL;
  t->clog = NULL;
  t->alloc = t->frees = NULL;
  t->clog_len = t->nalloc = t->nfree = 0;
  t->scope_cap = t->clog_cap = t->alloc_cap = t->free_cap = 0;
}

static void action_leave(void *arg) {
  itm_thread_t *t = arg;
  state_bufs_free(t); /* the actions' transactions' */
  itm_thread_t *s = t->saved;
  uint32_t n = t->nsaved - 1;
  size_t cap = t->saved_cap;
  *t = s[n];
  t->saved = s;
  t->nsaved = n;
  t->saved_cap = cap;
}

static void add_action(int (*add)(void (*)(void *), void *), void (*fn)(void *), void *arg,
                       const char *what) {
  itm_thread_t *t = &itm;
  int rc = add(action_enter, t);
  if (rc == 0) rc = add(fn, arg);
  if (rc == 0) rc = add(action_leave, t);
  if (rc != 0) itm_fatal("%s: %s", what, sstm_strerror(rc));
}

/* The attempt's user actions are a list of the ABI's: the undo actions
 * run newest first (the undo order of the ABI, and libitm's), where the
 * engine runs its abort actions in registration order, and a closed
 * scope's cancel (I5) takes its own actions out of the list. The undo
 * actions run from rollback_run, the commit actions from one commit action
 * of the engine registered at the first of them, both between
 * action_enter and action_leave; the ending transaction's state, and so
 * its list, is then the newest saved one. It is read again after each
 * action, whose own transactions may grow the saved states' array (the
 * list itself stays where it is). */
static void undo_actions_run(itm_thread_t *t) {
  uint32_t k = t->nsaved - 1;
  for (uint32_t i = t->saved[k].nuact; i-- > 0;) {
    itm_action_t a = t->saved[k].uact[i];
    if (!a.on_commit) a.fn(a.arg);
  }
}

static void commit_actions_run(void *arg) {
  itm_thread_t *t = arg;
  uint32_t k = t->nsaved - 1;
  /* (I8) The actions run once privatization safety holds, as libitm runs
   * them: the wait comes first, and the commit's own is then done. */
  if (t->saved[k].priv_wait) {
    t->saved[k].priv_wait = false;
    grace_wait();
  }
  for (uint32_t i = 0; i < t->saved[k].nuact; i++) {
    itm_action_t a = t->saved[k].uact[i];
    if (a.on_commit) a.fn(a.arg);
  }
}

static void user_action(void (*fn)(void *), void *arg, bool on_commit, const char *what) {
  itm_thread_t *t = &itm;
  if (t->depth == 0) itm_fatal("%s outside a transaction", what);
  if (!on_commit && !t->rb_armed) {
    rollback_arm(t, what);
  } else if (on_commit && !t->cact_armed) {
    if (t->mode == MODE_SERIAL) {
      int rc = sstm_on_commit(serial_release, NULL);
      if (rc != 0) itm_fatal("%s: %s", what, sstm_strerror(rc));
    }
    add_action(sstm_on_commit, commit_actions_run, t, what);
    t->cact_armed = true;
  }
  t->uact =
      grow(t->uact, &t->uact_cap, (size_t)t->nuact + 1, sizeof *t->uact, 4, "the user actions");
  t->uact[t->nuact++] = (itm_action_t){fn, arg, on_commit};
}

ITM_API void _ITM_addUserCommitAction(void (*fn)(void *), uint64_t tid, void *arg) {
  (void)tid; /* the current transaction's: it runs at the outermost commit */
  user_action(fn, arg, true, "_ITM_addUserCommitAction");
}

ITM_API void _ITM_addUserUndoAction(void (*fn)(void *), void *arg) {
  user_action(fn, arg, false, "_ITM_addUserUndoAction");
}

/* ---- (I6) logging of private memory (_ITM_L*) ---------------------------- */

/* (I6) Stack frames made after the outermost begin, between the barrier's
 * own stack pointer and begin_sp, belong to the attempt alone: nothing outside it
 * can reach them, and a restart discards them. The compiler writes such
 * memory through a barrier in one place and reads it with plain loads in
 * another (a callee's local array filled by _ITM_WU8 and copied by a plain
 * memcpy), which a write into the redo log would make read stale bytes; so
 * writes there go in place, unlogged. Outside a transaction begin_sp is 0
 * and nothing matches. */
static inline __attribute__((always_inline)) bool attempt_stack(const void *p, size_t n) {
  /* The barrier's own stack pointer as the lower bound: every frame of the
   * attempt lies above it (__builtin_frame_address would make each barrier
   * set up a frame pointer). x86-64, as the library. */
  uintptr_t sp;
  __asm__("mov %%rsp, %0" : "=r"(sp));
  uintptr_t a = (uintptr_t)p;
  return a >= sp && a + n <= itm.begin_sp;
}

/* (I7) Inside an exception object that the attempt allocated and that
 * lives. */
static __attribute__((noinline, cold)) bool exc_private(const void *p, size_t n) {
  itm_thread_t *t = &itm;
  const unsigned char *a = p;
  for (uint32_t i = 0; i < t->nexc; i++)
    if (a >= t->exc[i].obj && n <= t->exc[i].size &&
        (size_t)(a - t->exc[i].obj) <= t->exc[i].size - n)
      return true;
  return false;
}

/* Memory that only the attempt can reach and that a rollback discards, so
 * written in place, unlogged: its own stack frames (I6) and the exception
 * objects it allocated (I7). */
static inline __attribute__((always_inline)) bool attempt_private(const void *p, size_t n) {
  return attempt_stack(p, n) ||
         (ITM_UNLIKELY(atomic_load_explicit(&slow_live, memory_order_relaxed) != 0) &&
          exc_private(p, n));
}

/* The compiler logs memory that is private to the thread but written in
 * the transaction with plain stores; a rollback puts the old bytes back,
 * newest first, so each byte gets its value from before the attempt. */
static void undo_restore_to(itm_thread_t *t, size_t mark) {
  size_t end = t->undo_len;
  while (end > mark) {
    size_t n;
    void *addr;
    memcpy(&n, t->undo + end - sizeof n, sizeof n);
    size_t rec = n + sizeof addr + 2 * sizeof n;
    memcpy(&addr, t->undo + end - rec, sizeof addr);
    memcpy(addr, t->undo + end - rec + sizeof addr + sizeof n, n);
    end -= rec;
  }
  t->undo_len = mark;
}

ITM_API void _ITM_LB(const void *addr, size_t n) {
  itm_thread_t *t = &itm;
  /* Outside a transaction (the compiler elides a transaction that makes
   * no shared access, and calls its transaction_pure functions plainly)
   * nothing can be rolled back: nothing to log. */
  if (t->depth == 0) return;
  /* Frames made by the attempt need no log: a restart discards them, and
   * the rollback, whose own frames may lie where they were, must not write
   * there (I6). A closed scope's cancel, which discards only its own
   * frames, puts back the others (I5). */
  if (attempt_private(addr, n)) {
    if (ITM_UNLIKELY(t->nscope != 0)) closed_note(t, addr, n, true);
    return;
  }
  size_t rec = n + sizeof addr + 2 * sizeof n;
  if (t->undo_len + rec > t->undo_cap)
    t->undo = grow(t->undo, &t->undo_cap, t->undo_len + rec, 1, 256, "the log of private memory");
  if (!t->rb_armed) rollback_arm(t, "logging private memory");
  unsigned char *r = t->undo + t->undo_len;
  memcpy(r, &addr, sizeof addr);
  memcpy(r + sizeof addr, &n, sizeof n);
  memcpy(r + sizeof addr + sizeof n, addr, n);
  memcpy(r + sizeof addr + sizeof n + n, &n, sizeof n);
  t->undo_len += rec;
}

/* ---- (I5) closed scopes: a nested transaction that cancels alone ---------- */

/* The flags in a clog record's length. CLOG_IN_PLACE: its bytes were
 * written in place (the attempt's frames, its exception objects, memory
 * written plainly), so they go back in place; otherwise through the
 * transaction. CLOG_FRAME: they lie in a frame of the attempt (I6), which
 * a scope's cancel skips when the frame was made inside that scope. */
#define CLOG_IN_PLACE ((size_t)1 << 63)
#define CLOG_FRAME ((size_t)1 << 62)
#define CLOG_FLAGS (CLOG_IN_PLACE | CLOG_FRAME)

/* Before a write of [p, p + n) while a closed scope is open: note the
 * bytes there, read through the transaction unless in_place, so that the
 * scope's cancel can put them back. Frames made inside the innermost
 * scope need nothing: its cancel discards them, and must not write where
 * its own frames may lie. */
static __attribute__((noinline, cold)) void closed_note(itm_thread_t *t, const void *p, size_t n,
                                                        bool in_place) {
  if (t->nscope == 0 || n == 0) return;
  bool frame = in_place && attempt_stack(p, n);
  if (frame && (uintptr_t)p < t->scope[t->nscope - 1].sp) return;
  size_t rec = n + sizeof p + 2 * sizeof n;
  if (t->clog_len + rec > t->clog_cap)
    t->clog = grow(t->clog, &t->clog_cap, t->clog_len + rec, 1, 256, "a nested transaction's log");
  unsigned char *r = t->clog + t->clog_len;
  size_t tag = n | (in_place ? CLOG_IN_PLACE : 0) | (frame ? CLOG_FRAME : 0);
  memcpy(r, &p, sizeof p);
  memcpy(r + sizeof p, &tag, sizeof tag);
  if (in_place)
    memcpy(r + sizeof p + sizeof n, p, n);
  else
    sstm_load_bytes(r + sizeof p + sizeof n, p, n);
  memcpy(r + sizeof p + sizeof n + n, &tag, sizeof tag);
  t->clog_len += rec;
}

/* The bytes noted since mark, the begin of the scope whose stack pointer
 * after its begin is sp, go back, newest first: each byte gets its value
 * from the scope's begin. Through the transaction for shared memory, whose
 * old bytes the notes read through it (so its read set validates them at
 * the commit). Not those in frames made inside the scope (below sp), noted
 * while an inner scope was the innermost (that inner scope's cancel would
 * have needed them; it committed instead): the jump to the scope's begin
 * discards those frames, and the cancel's own frames may lie there now. */
static void clog_restore_to(itm_thread_t *t, size_t mark, uintptr_t sp) {
  size_t end = t->clog_len;
  while (end > mark) {
    size_t tag;
    void *addr;
    memcpy(&tag, t->clog + end - sizeof tag, sizeof tag);
    size_t n = tag & ~CLOG_FLAGS;
    size_t rec = n + sizeof addr + 2 * sizeof n;
    memcpy(&addr, t->clog + end - rec, sizeof addr);
    const unsigned char *old = t->clog + end - rec + sizeof addr + sizeof n;
    if ((tag & CLOG_FRAME) && (uintptr_t)addr < sp) {
      /* a frame the scope made: gone with it */
    } else if (tag & CLOG_IN_PLACE)
      memcpy(addr, old, n);
    else
      sstm_store_bytes(addr, old, n);
    end -= rec;
  }
  t->clog_len = mark;
}

/* A nested begin that may cancel alone: a scope, whose checkpoint the
 * assembly half fills in (its registers, the resume point). */
static sstm_ckpt_t *scope_open(itm_thread_t *t, void *ret, uintptr_t sp) {
  t->scope =
      grow(t->scope, &t->scope_cap, (size_t)t->nscope + 1, sizeof *t->scope, 2, "nested scopes");
  itm_scope_t *s = &t->scope[t->nscope++];
  s->ret = ret;
  s->sp = sp;
  s->depth = t->depth;
  s->clog_len = t->clog_len;
  s->undo_len = t->undo_len;
  s->nuact = t->nuact;
  s->nalloc = t->nalloc;
  s->nfree = t->nfree;
  s->nexc = t->nexc;
  s->catches = t->catches;
  atomic_fetch_add_explicit(&slow_live, 1, memory_order_relaxed);
  return &s->ckpt;
}

/* The innermost scope ends (its transaction commits, or its cancel is
 * done): its writes, actions and blocks are the enclosing scope's now, or,
 * with no scope left, the attempt's as any other (the frees put off are
 * done, through the transaction: at its commit). */
static void scope_close(itm_thread_t *t) {
  t->nscope--;
  atomic_fetch_sub_explicit(&slow_live, 1, memory_order_relaxed);
  if (t->nscope != 0) return;
  t->clog_len = 0;
  t->nalloc = 0;
  uint32_t n = t->nfree;
  t->nfree = 0;
  for (uint32_t i = 0; i < n; i++)
    sstm_free(t->frees[i]);
}

static void scopes_clear(itm_thread_t *t) {
  atomic_fetch_sub_explicit(&slow_live, t->nscope, memory_order_relaxed);
  t->nscope = 0;
}

/* _ITM_malloc and the others while a scope is open: a cancel of the scope
 * gives the block back. */
static void *scope_alloc(void *p) {
  itm_thread_t *t = &itm;
  if (p == NULL || t->nscope == 0) return p;
  t->alloc = grow(t->alloc, &t->alloc_cap, (size_t)t->nalloc + 1, sizeof *t->alloc, 8,
                  "a nested transaction's blocks");
  t->alloc[t->nalloc++] = p;
  return p;
}

/* _ITM_free and the others: while a scope is open the free waits for the
 * last scope's commit, since a cancel undoes it. */
static void scope_free(void *p) {
  itm_thread_t *t = &itm;
  if (p == NULL || t->nscope == 0) {
    sstm_free(p);
    return;
  }
  t->frees = grow(t->frees, &t->free_cap, (size_t)t->nfree + 1, sizeof *t->frees, 8,
                  "a nested transaction's frees");
  t->frees[t->nfree++] = p;
}

/* The assembly half: restore a scope's checkpoint, returning val to its
 * resume point (abi/itm_x86_64.S). */
__attribute__((visibility("hidden"), noreturn)) void sstm__itm_jump(sstm_ckpt_t *c, int val);

/* __transaction_cancel of the innermost scope's transaction: everything it
 * did is undone (its writes, its _ITM_L* log, its allocations and frees,
 * its user actions, the undo ones run newest first, as libitm runs them)
 * and its begin returns again with a_abortTransaction, inside the
 * enclosing transaction, which goes on. */
static __attribute__((noreturn)) void closed_cancel(itm_thread_t *t) {
  itm_scope_t *s = &t->scope[t->nscope - 1];
  if (t->nexc != s->nexc || t->catches != s->catches)
    itm_fatal("__transaction_cancel of a nested transaction that allocated or is handling a C++ "
              "exception: not supported (the runtime's exception state cannot be rolled back "
              "to the nested begin)");
  clog_restore_to(t, s->clog_len, s->sp);
  undo_restore_to(t, s->undo_len);
  for (uint32_t i = t->nalloc; i-- > s->nalloc;)
    sstm_free(t->alloc[i]);
  t->nalloc = s->nalloc;
  t->nfree = s->nfree;
  /* The undo actions run inside the enclosing transaction, as libitm runs
   * them; an action that runs a transaction nests it there. */
  uint32_t mark = s->nuact;
  while (t->nuact > mark) {
    itm_action_t a = t->uact[--t->nuact];
    if (!a.on_commit) a.fn(a.arg);
  }
  s = &t->scope[t->nscope - 1]; /* an action's transaction may have grown the array */
  /* The engine's depth goes back too (its nested commits only count). */
  while (t->depth >= s->depth) {
    sstm_commit();
    t->depth--;
  }
  t->inner_ret = s->ret;
  /* What the undo actions wrote is the enclosing transaction's now. The
   * entry stays in the array, which nothing changes before the jump reads
   * the checkpoint from it. */
  scope_close(t);
  sstm__itm_jump(&t->scope[t->nscope].ckpt, ITM_CKPT_INNER);
}

/* ---- loads and stores -------------------------------------------------------- */

/* Every read entry point of a type: plain (R), after a read (RaR), after a
 * write (RaW) and for a write (RfW) are one function here, the engine's
 * barrier serving all four; the same for the writes (W, WaR, WaW). */
#define ITM_ALIASES(suf, T, ...)                                                                   \
  __VA_ARGS__ ITM_API T _ITM_RaR##suf(const T *) __attribute__((alias("_ITM_R" #suf)));            \
  __VA_ARGS__ ITM_API T _ITM_RaW##suf(const T *) __attribute__((alias("_ITM_R" #suf)));            \
  __VA_ARGS__ ITM_API T _ITM_RfW##suf(const T *) __attribute__((alias("_ITM_R" #suf)));            \
  __VA_ARGS__ ITM_API void _ITM_WaR##suf(T *, T) __attribute__((alias("_ITM_W" #suf)));            \
  __VA_ARGS__ ITM_API void _ITM_WaW##suf(T *, T) __attribute__((alias("_ITM_W" #suf)));

/* The word types: the engine's typed barriers (any alignment). While some
 * thread has an exception object (I7) or a closed scope (I5), the write
 * goes through a function of its own, so that the common path makes no
 * frame and ends in a jump to the engine's store. */
#define ITM_WORD(suf, T, load, store)                                                              \
  ITM_API T _ITM_R##suf(const T *p) { return load(p); }                                            \
  static __attribute__((noinline, cold)) void itm_W##suf##_slow(T *p, T v) {                       \
    bool in_place = attempt_private(p, sizeof *p);                                                 \
    closed_note(&itm, p, sizeof *p, in_place);                                                     \
    if (in_place)                                                                                  \
      memcpy(p, &v, sizeof v);                                                                     \
    else                                                                                           \
      store(p, v);                                                                                 \
  }                                                                                                \
  ITM_API void _ITM_W##suf(T *p, T v) {                                                            \
    if (ITM_UNLIKELY(atomic_load_explicit(&slow_live, memory_order_relaxed) != 0))                 \
      itm_W##suf##_slow(p, v);                                                                     \
    else if (ITM_UNLIKELY(attempt_stack(p, sizeof *p)))                                            \
      memcpy(p, &v, sizeof v);                                                                     \
    else                                                                                           \
      store(p, v);                                                                                 \
  }                                                                                                \
  ITM_API void _ITM_L##suf(const T *p) { _ITM_LB(p, sizeof *p); }                                  \
  ITM_ALIASES(suf, T, )

ITM_WORD(U1, uint8_t, sstm_load_u8, sstm_store_u8)
ITM_WORD(U2, uint16_t, sstm_load_u16, sstm_store_u16)
ITM_WORD(U4, uint32_t, sstm_load_u32, sstm_store_u32)
ITM_WORD(U8, uint64_t, sstm_load_u64, sstm_store_u64)
ITM_WORD(F, float, sstm_load_float, sstm_store_float)
ITM_WORD(D, double, sstm_load_double, sstm_store_double)

/* The wider types (8 to 32 bytes), bit-exact: a long double's 16 bytes
 * include its 6 bytes of padding, which are in the object's storage. They
 * go as naturally aligned pieces of 8, 4, 2 or 1 bytes (a 16-byte vector
 * of floats at 4 mod 8, as GCC's vectorizer emits for float arrays: 4, 8
 * and 4), each through the typed barrier of its width. The engine's bulk
 * access (sstm_load_bytes, sstm_store_bytes) splits the same way, but
 * through the library's exported entries and its general paths; here the
 * pieces take this library's inlined fast paths (SSTM_INLINE_BARRIERS),
 * which measured faster (docs/benchmarks.md, "STAMP through the compiler
 * ABI"). The pieces of one object are read in one snapshot and written in
 * one commit as any accesses of one transaction are. */
static inline unsigned itm_piece(uintptr_t a, size_t n) {
  unsigned k = 8;
  while (k > n || (a & (k - 1)) != 0)
    k >>= 1;
  return k;
}
static inline void itm_load_wide(void *dst, const void *p, size_t n) {
  const char *s = p;
  char *d = dst;
  while (n > 0) {
    unsigned k = itm_piece((uintptr_t)s, n);
    switch (k) {
    case 8: {
      uint64_t w = sstm_load_u64((const uint64_t *)(const void *)s);
      memcpy(d, &w, 8);
      break;
    }
    case 4: {
      uint32_t w = sstm_load_u32((const uint32_t *)(const void *)s);
      memcpy(d, &w, 4);
      break;
    }
    case 2: {
      uint16_t w = sstm_load_u16((const uint16_t *)(const void *)s);
      memcpy(d, &w, 2);
      break;
    }
    default: *d = (char)sstm_load_u8((const uint8_t *)(const void *)s); break;
    }
    s += k, d += k, n -= k;
  }
}
static inline void itm_store_wide(void *p, const void *src, size_t n) {
  char *d = p;
  const char *s = src;
  while (n > 0) {
    unsigned k = itm_piece((uintptr_t)d, n);
    switch (k) {
    case 8: {
      uint64_t w;
      memcpy(&w, s, 8);
      sstm_store_u64((uint64_t *)(void *)d, w);
      break;
    }
    case 4: {
      uint32_t w;
      memcpy(&w, s, 4);
      sstm_store_u32((uint32_t *)(void *)d, w);
      break;
    }
    case 2: {
      uint16_t w;
      memcpy(&w, s, 2);
      sstm_store_u16((uint16_t *)(void *)d, w);
      break;
    }
    default: sstm_store_u8((uint8_t *)(void *)d, (uint8_t)*s); break;
    }
    d += k, s += k, n -= k;
  }
}

/* Outside a transaction (misuse: the engine reports it and reads zeros,
 * writes nothing, as it does for a word) a wide access goes to the
 * engine's bulk access whole, so that it is reported once, not once per
 * piece. */
#define ITM_BYTES(suf, T, ...)                                                                     \
  __VA_ARGS__ ITM_API T _ITM_R##suf(const T *p) {                                                  \
    T v;                                                                                           \
    if (ITM_UNLIKELY(itm.depth == 0))                                                              \
      sstm_load_bytes(&v, p, sizeof v);                                                            \
    else                                                                                           \
      itm_load_wide(&v, p, sizeof v);                                                              \
    return v;                                                                                      \
  }                                                                                                \
  __VA_ARGS__ ITM_API void _ITM_W##suf(T *p, T v) {                                                \
    if (ITM_UNLIKELY(itm.depth == 0)) {                                                            \
      sstm_store_bytes(p, &v, sizeof v);                                                           \
      return;                                                                                      \
    }                                                                                              \
    bool in_place = attempt_private(p, sizeof *p);                                                 \
    if (ITM_UNLIKELY(itm.nscope != 0)) closed_note(&itm, p, sizeof *p, in_place);                  \
    if (ITM_UNLIKELY(in_place))                                                                    \
      memcpy(p, &v, sizeof v);                                                                     \
    else                                                                                           \
      itm_store_wide(p, &v, sizeof v);                                                             \
  }                                                                                                \
  ITM_API void _ITM_L##suf(const T *p) { _ITM_LB(p, sizeof *p); }                                  \
  ITM_ALIASES(suf, T, __VA_ARGS__)

ITM_BYTES(E, long double)
ITM_BYTES(CF, float _Complex)
ITM_BYTES(CD, double _Complex)
ITM_BYTES(CE, long double _Complex)
ITM_BYTES(M64, __m64)
ITM_BYTES(M128, __m128)
/* Returned and passed in a ymm register: the AVX calling convention, as in
 * code compiled with -mavx, the only code that calls these. */
ITM_BYTES(M256, __m256, __attribute__((target("avx"))))

/* ---- bulk copies ------------------------------------------------------------ */

/* Copy n bytes from src to dst through a private chunk, each side read or
 * written through the transaction (tx) or plainly. Chunks go from the end
 * when dst overlaps src from above, as memmove does, so that no byte is
 * read after it was overwritten (a transactional read sees the
 * transaction's own writes). */
static void copy(void *dst, bool dst_tx, const void *src, bool src_tx, size_t n) {
  if (dst_tx && attempt_private(dst, n)) dst_tx = false;                 /* (I6), (I7) */
  if (ITM_UNLIKELY(itm.nscope != 0)) closed_note(&itm, dst, n, !dst_tx); /* (I5) */
  unsigned char buf[256];
  unsigned char *d = dst;
  const unsigned char *s = src;
  bool backward = d > s && d < s + n;
  while (n > 0) {
    size_t k = n < sizeof buf ? n : sizeof buf;
    size_t off = backward ? n - k : 0;
    if (src_tx)
      sstm_load_bytes(buf, s + off, k);
    else
      memcpy(buf, s + off, k);
    if (dst_tx)
      sstm_store_bytes(d + off, buf, k);
    else
      memcpy(d + off, buf, k);
    if (!backward) d += k, s += k;
    n -= k;
  }
}

/* memcpy and memmove, source and destination each non-transactional (n),
 * transactional (t), or transactional after a read (taR) or a write
 * (taW): the engine serves the last three alike. One function per
 * (source, destination) pair; the rest are its aliases. */
#define ITM_COPY(op, S, D, stx, dtx)                                                               \
  ITM_API void _ITM_##op##R##S##W##D(void *d, const void *s, size_t n) { copy(d, dtx, s, stx, n); }
#define ITM_COPY_ALIAS(op, S, D, base)                                                             \
  ITM_API void _ITM_##op##R##S##W##D(void *, const void *, size_t)                                 \
      __attribute__((alias("_ITM_" #op #base)));
/* clang-format off */
#define ITM_COPIES(op)                                                                             \
  ITM_COPY(op, n, t, false, true)                                                                  \
  ITM_COPY_ALIAS(op, n, taR, RnWt)                                                                 \
  ITM_COPY_ALIAS(op, n, taW, RnWt)                                                                 \
  ITM_COPY(op, t, n, true, false)                                                                  \
  ITM_COPY_ALIAS(op, taR, n, RtWn)                                                                 \
  ITM_COPY_ALIAS(op, taW, n, RtWn)                                                                 \
  ITM_COPY(op, t, t, true, true)                                                                   \
  ITM_COPY_ALIAS(op, t, taR, RtWt)                                                                 \
  ITM_COPY_ALIAS(op, t, taW, RtWt)                                                                 \
  ITM_COPY_ALIAS(op, taR, t, RtWt)                                                                 \
  ITM_COPY_ALIAS(op, taR, taR, RtWt)                                                               \
  ITM_COPY_ALIAS(op, taR, taW, RtWt)                                                               \
  ITM_COPY_ALIAS(op, taW, t, RtWt)                                                                 \
  ITM_COPY_ALIAS(op, taW, taR, RtWt)                                                               \
  ITM_COPY_ALIAS(op, taW, taW, RtWt)
/* clang-format on */

ITM_COPIES(memcpy)
ITM_COPIES(memmove)

ITM_API void _ITM_memsetW(void *dst, int c, size_t n) {
  bool in_place = attempt_private(dst, n);
  if (ITM_UNLIKELY(itm.nscope != 0)) closed_note(&itm, dst, n, in_place); /* (I5) */
  if (in_place) {                                                         /* (I6), (I7) */
    memset(dst, c, n);
    return;
  }
  unsigned char buf[256];
  memset(buf, c, n < sizeof buf ? n : sizeof buf);
  unsigned char *d = dst;
  while (n > 0) {
    size_t k = n < sizeof buf ? n : sizeof buf;
    sstm_store_bytes(d, buf, k);
    d += k;
    n -= k;
  }
}
ITM_API void _ITM_memsetWaR(void *, int, size_t) __attribute__((alias("_ITM_memsetW")));
ITM_API void _ITM_memsetWaW(void *, int, size_t) __attribute__((alias("_ITM_memsetW")));

/* ---- allocation --------------------------------------------------------------- */

/* The compiler turns malloc, calloc and free inside a transaction into
 * these: blocks allocated by an attempt that aborts are released, frees
 * wait for the commit and the grace period (schedstm/alloc.h). The blocks
 * are malloc's: the program may free() them outside transactions. */
ITM_API void *_ITM_malloc(size_t n) { return scope_alloc(sstm_malloc(n)); }
ITM_API void *_ITM_calloc(size_t n, size_t size) { return scope_alloc(sstm_calloc(n, size)); }
ITM_API void _ITM_free(void *p) { scope_free(p); }

/* ---- (I7) C++: operator new and delete, exceptions ------------------------------ */

/* The C++ runtime (libstdc++'s libsupc++), referenced weakly: a C program
 * linked with this library needs no libstdc++, and only code compiled by
 * g++ calls the entry points below, so the runtime is there whenever they
 * run (docs/design/itm.md (I7) 4). */
extern void *__cxa_allocate_exception(size_t) __attribute__((weak));
extern void __cxa_free_exception(void *) __attribute__((weak));
extern void __cxa_throw(void *, void *, void (*)(void *)) __attribute__((weak, noreturn));
extern void *__cxa_begin_catch(void *) __attribute__((weak));
extern void __cxa_end_catch(void) __attribute__((weak));
extern void *__cxa_get_globals(void) __attribute__((weak));
/* libsupc++'s entry point for transactional-memory runtimes [libitm]: ends
 * `caught` catches as __cxa_end_catch would, without running the exception
 * objects' destructors (the rollback undoes their effects anyway), and
 * frees the objects no longer referenced. */
extern void __cxa_tm_cleanup(void *, void *, unsigned) __attribute__((weak));
/* std::__throw_bad_alloc() */
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* The exception header that precedes every thrown object, and the
 * per-thread exception globals, as the Itanium C++ ABI (section 2.2)
 * specifies them [ItaniumCxxABI]; only caughtExceptions, uncaughtExceptions
 * and handlerCount are read or written here. */
typedef struct cxa_exception {
  void *exceptionType;
  void (*exceptionDestructor)(void *);
  void (*unexpectedHandler)(void);
  void (*terminateHandler)(void);
  struct cxa_exception *nextException;
  int handlerCount; /* active handlers; negated while rethrown */
  int handlerSwitchValue;
  const unsigned char *actionRecord;
  const unsigned char *languageSpecificData;
  void *catchTemp;
  void *adjustedPtr;
  struct _Unwind_Exception unwindHeader;
} cxa_exception_t;
/* The layout on x86-64 (LP64), as libsupc++'s. */
_Static_assert(offsetof(cxa_exception_t, handlerCount) == 40 && sizeof(cxa_exception_t) == 112,
               "the Itanium C++ ABI's __cxa_exception");

typedef struct cxa_eh_globals {
  cxa_exception_t *caughtExceptions; /* the handlers' stack, innermost first */
  unsigned uncaughtExceptions;
} cxa_eh_globals_t;

static cxa_eh_globals_t *eh_globals(void) {
  if (__cxa_get_globals == NULL || __cxa_tm_cleanup == NULL || __cxa_free_exception == NULL)
    itm_fatal("C++ exceptions in a transaction need libstdc++'s __cxa_get_globals, "
              "__cxa_free_exception and __cxa_tm_cleanup (with -static-libstdc++, link with "
              "-Wl,-u,__cxa_tm_cleanup)");
  return __cxa_get_globals();
}

static void eh_clear(itm_thread_t *t) {
  if (t->nexc != 0) atomic_fetch_sub_explicit(&slow_live, t->nexc, memory_order_relaxed);
  t->nexc = 0;
  t->catches = 0;
  t->eh_armed = false;
}

/* (I7) The attempt rolls back (a restart or a cancel): its exception
 * handling state goes back to the begin's. The catches it began and did not
 * end are ended (the landing pads that would call __cxa_end_catch will not
 * run), freeing their objects; the objects it allocated and that are not
 * being handled (not yet thrown, or in flight through the cleanups of the
 * unwinding) are freed; and the runtime's count of uncaught exceptions,
 * which __cxa_throw raised and no catch lowered, is put back. Nothing of
 * the objects' destructors runs: their effects, if any, were
 * transactional. Run by rollback_run, last. */
static void eh_rollback(itm_thread_t *t) {
  cxa_eh_globals_t *g = eh_globals();
  if (t->catches != 0) __cxa_tm_cleanup(NULL, NULL, t->catches);
  for (uint32_t i = 0; i < t->nexc; i++)
    if (!t->exc[i].caught) __cxa_free_exception(t->exc[i].obj);
  g->uncaughtExceptions = t->uncaught;
  eh_clear(t);
}

/* ---- the attempt's rollback ------------------------------------------------- */

/* The ABI's part of an attempt's rollback (a restart, or a cancel of the
 * whole transaction), one abort action of the engine, which runs it after
 * its own rollback (its locks, its redo log) and before it gives back the
 * blocks the attempt allocated. In libitm's order (gtm_thread::rollback [libitm]: its undo
 * log, the method's rollback, the user's undo actions, the allocations,
 * the C++ exceptions), which a program can tell from another: an undo
 * action may read private memory that the _ITM_L* log restores, or the
 * exception of the catch that registered it. So, whatever the attempt
 * registered first:
 * 1. the _ITM_L* log goes back, newest first (I6);
 * 2. the undo actions run, newest first, between action_enter and
 *    action_leave (they may run transactions);
 * 3. the C++ runtime's exception state goes back (I7).
 * A closed scope's cancel does the same for the scope (closed_cancel). */
static void rollback_run(void *arg) {
  itm_thread_t *t = arg;
  t->rb_armed = false;
  undo_restore_to(t, 0);
  if (t->nuact != 0) {
    action_enter(t);
    undo_actions_run(t);
    action_leave(t);
  }
  if (t->eh_armed) eh_rollback(t);
}

/* The attempt's first _ITM_L*, undo action or exception call: register
 * rollback_run (not as a user action: it needs the transaction's state). */
static void rollback_arm(itm_thread_t *t, const char *what) {
  int rc = sstm_on_abort(rollback_run, t);
  if (rc != 0) itm_fatal("%s: %s", what, sstm_strerror(rc));
  t->rb_armed = true;
}

/* The first exception call of an attempt: note the uncaught count and
 * register the rollback. NULL outside a transaction (the compiled code may
 * run a clone outside one, I6's _ITM_LB), where nothing is tracked. */
static itm_thread_t *eh_arm(void) {
  itm_thread_t *t = &itm;
  if (t->depth == 0) return NULL;
  if (!t->eh_armed) {
    t->uncaught = eh_globals()->uncaughtExceptions;
    if (!t->rb_armed) rollback_arm(t, "C++ exception in a transaction");
    t->eh_armed = true;
  }
  return t;
}

static itm_exc_t *exc_find(itm_thread_t *t, const void *obj) {
  for (uint32_t i = 0; i < t->nexc; i++)
    if (t->exc[i].obj == obj) return &t->exc[i];
  return NULL;
}

static void exc_drop(itm_thread_t *t, itm_exc_t *e) {
  *e = t->exc[--t->nexc];
  atomic_fetch_sub_explicit(&slow_live, 1, memory_order_relaxed);
}

/* The object of a throw inside the transaction. The compiled code writes
 * it through the write barriers (its constructor's clone); the C++ runtime
 * reads parts of it plainly to bind a handler (a thrown pointer's value, a
 * virtual base's offset through the virtual table pointer) and frees it in
 * __cxa_end_catch, before the commit would write a redo log back. So the
 * attempt writes it in place (exc_private): no other thread can reach it,
 * and a rollback frees it. */
ITM_API void *_ITM_cxa_allocate_exception(size_t size) {
  if (__cxa_allocate_exception == NULL) itm_fatal("_ITM_cxa_allocate_exception without libstdc++");
  void *obj = __cxa_allocate_exception(size); /* ends the process if out of memory */
  itm_thread_t *t = eh_arm();
  if (t == NULL) return obj;
  t->exc =
      grow(t->exc, &t->exc_cap, (size_t)t->nexc + 1, sizeof *t->exc, 4, "the exception records");
  t->exc[t->nexc++] = (itm_exc_t){obj, size, false};
  atomic_fetch_add_explicit(&slow_live, 1, memory_order_relaxed);
  return obj;
}

/* The compiled code frees an object whose construction threw. Written in
 * place and logged nowhere: it may go at once. */
ITM_API void _ITM_cxa_free_exception(void *obj) {
  itm_thread_t *t = &itm;
  itm_exc_t *e = t->depth ? exc_find(t, obj) : NULL;
  if (e) exc_drop(t, e);
  __cxa_free_exception(obj);
}

/* Nothing to record: __cxa_throw raises the uncaught count, which a
 * rollback puts back (eh_rollback). */
ITM_API void _ITM_cxa_throw(void *obj, void *tinfo, void (*dest)(void *)) {
  __cxa_throw(obj, tinfo, dest);
}

ITM_API void *_ITM_cxa_begin_catch(void *ue) {
  itm_thread_t *t = eh_arm();
  if (t) {
    /* The thrown object follows its header, whose last member is ue. */
    cxa_exception_t *h = (cxa_exception_t *)((char *)ue - offsetof(cxa_exception_t, unwindHeader));
    itm_exc_t *e = exc_find(t, h + 1);
    if (e) e->caught = true; /* a rollback ends the catch, which frees it */
    t->catches++;
  }
  return __cxa_begin_catch(ue);
}

ITM_API void _ITM_cxa_end_catch(void) {
  itm_thread_t *t = &itm;
  if (t->depth != 0 && t->catches != 0) {
    /* The catch that ends is the innermost handler's. With one handler
     * left, __cxa_end_catch frees the object: its record goes first, so
     * that no write is taken for private at its address. Rethrown (-1),
     * it leaves the handlers' stack and is in flight again: a rollback
     * then frees it itself. */
    cxa_exception_t *h = eh_globals()->caughtExceptions;
    itm_exc_t *e = h ? exc_find(t, h + 1) : NULL;
    if (e && h->handlerCount == 1)
      exc_drop(t, e);
    else if (e && h->handlerCount == -1)
      e->caught = false;
    t->catches--;
  }
  __cxa_end_catch();
}

/* operator new and delete in a transaction (their transactional clones,
 * _ZGTt + the mangled name): sstm_malloc and sstm_free, as _ITM_malloc and
 * _ITM_free. A block that an attempt allocates goes back at its rollback;
 * a delete waits for the commit and the grace period. The blocks are
 * malloc's, as those of libstdc++'s operator new, whose operator delete is
 * free(): a block new'd inside a transaction may be deleted outside, and
 * the reverse (a program that replaces the global operators must keep them
 * malloc-compatible, docs/design/itm.md "Limits"). Out of memory, the
 * throwing forms throw std::bad_alloc, as operator new does: the exception
 * leaves the transaction, which commits (I7). */
static void *cxx_new(size_t n, bool nothrow) {
  void *p = scope_alloc(sstm_malloc(n ? n : 1)); /* new(0) is a distinct block */
  if (ITM_UNLIKELY(p == NULL) && !nothrow) {
    if (_ZSt17__throw_bad_allocv == NULL) itm_fatal("operator new: out of memory");
    _ZSt17__throw_bad_allocv();
  }
  return p;
}

/* operator new(size_t), new[](size_t) */
ITM_API void *_ZGTtnwm(size_t n) { return cxx_new(n, false); }
ITM_API void *_ZGTtnam(size_t n) { return cxx_new(n, false); }
/* the nothrow forms: NULL when out of memory */
ITM_API void *_ZGTtnwmRKSt9nothrow_t(size_t n, const void *nt) {
  (void)nt;
  return cxx_new(n, true);
}
ITM_API void *_ZGTtnamRKSt9nothrow_t(size_t n, const void *nt) {
  (void)nt;
  return cxx_new(n, true);
}
/* operator delete(void *), delete[](void *), the nothrow and the sized
 * forms */
ITM_API void _ZGTtdlPv(void *p) { scope_free(p); }
ITM_API void _ZGTtdaPv(void *p) { scope_free(p); }
ITM_API void _ZGTtdlPvRKSt9nothrow_t(void *p, const void *nt) {
  (void)nt;
  scope_free(p);
}
ITM_API void _ZGTtdaPvRKSt9nothrow_t(void *p, const void *nt) {
  (void)nt;
  scope_free(p);
}
ITM_API void _ZGTtdlPvm(void *p, size_t n) {
  (void)n;
  scope_free(p);
}
ITM_API void _ZGTtdaPvm(void *p, size_t n) {
  (void)n;
  scope_free(p);
}

/* ---- clone tables (indirect calls) --------------------------------------------- */

/* Each object compiled with -fgnu-tm has a table of (function, its
 * transactional clone) pairs, registered by its start-up code (crtbegin)
 * and removed when it is unloaded. Lookups read a sorted array published
 * with release; a change builds a new array under clones_mu. Replaced
 * arrays are not freed: a lookup may still read one, and they change only
 * when objects are loaded or unloaded. */
typedef struct clone_pair {
  void *orig, *clone;
} clone_pair_t;
typedef struct clone_set {
  size_t n;
  clone_pair_t p[];
} clone_set_t;
typedef struct clone_table {
  void **pairs;
  size_t n;
  struct clone_table *next;
} clone_table_t;

static pthread_mutex_t clones_mu = PTHREAD_MUTEX_INITIALIZER;
static clone_table_t *clone_tables; /* under clones_mu */
static _Atomic(clone_set_t *) clones;

static int pair_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const clone_pair_t *)a)->orig;
  uintptr_t y = (uintptr_t)((const clone_pair_t *)b)->orig;
  return x < y ? -1 : x > y;
}

/* Under clones_mu: publish the pairs of every registered table. */
static void clones_rebuild(void) {
  size_t n = 0;
  for (clone_table_t *t = clone_tables; t; t = t->next)
    n += t->n;
  clone_set_t *s = malloc(sizeof *s + n * sizeof s->p[0]);
  if (s == NULL) itm_fatal("out of memory for the clone table");
  s->n = 0;
  for (clone_table_t *t = clone_tables; t; t = t->next)
    for (size_t i = 0; i < t->n; i++)
      s->p[s->n++] = (clone_pair_t){t->pairs[2 * i], t->pairs[2 * i + 1]};
  qsort(s->p, s->n, sizeof s->p[0], pair_cmp);
  /* release: pairs with the acquire load in clone_of, so that a reader
   * sees the array's contents. */
  atomic_store_explicit(&clones, s, memory_order_release);
}

ITM_API void _ITM_registerTMCloneTable(void *table, size_t n) {
  clone_table_t *t = malloc(sizeof *t);
  if (t == NULL) itm_fatal("out of memory for the clone table");
  pthread_mutex_lock(&clones_mu);
  *t = (clone_table_t){table, n, clone_tables};
  clone_tables = t;
  clones_rebuild();
  pthread_mutex_unlock(&clones_mu);
}

ITM_API void _ITM_deregisterTMCloneTable(void *table) {
  pthread_mutex_lock(&clones_mu);
  for (clone_table_t **pp = &clone_tables; *pp; pp = &(*pp)->next)
    if ((*pp)->pairs == table) {
      clone_table_t *t = *pp;
      *pp = t->next;
      free(t);
      break;
    }
  clones_rebuild();
  pthread_mutex_unlock(&clones_mu);
}

static void *clone_of(void *fn) {
  /* acquire: pairs with the release store of clones_rebuild. */
  clone_set_t *s = atomic_load_explicit(&clones, memory_order_acquire);
  if (s == NULL) return NULL;
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)s->p[mid].orig < (uintptr_t)fn)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n && s->p[lo].orig == fn ? s->p[lo].clone : NULL;
}

/* An indirect call in a __transaction_relaxed block: the clone, or the
 * function itself after the transaction has become serial (I4). */
ITM_API void *_ITM_getTMCloneOrIrrevocable(void *fn) {
  void *c = clone_of(fn);
  if (c) return c;
  _ITM_changeTransactionMode(itm_modeSerialIrrevocable);
  return fn;
}

/* An indirect call of a transaction_safe function pointer: its clone must
 * exist. */
ITM_API void *_ITM_getTMCloneSafe(void *fn) {
  void *c = clone_of(fn);
  if (c == NULL) itm_fatal("indirect call of %p in a transaction: no transactional clone", fn);
  return c;
}
