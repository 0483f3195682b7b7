/* SPDX-License-Identifier: MIT */
/* Helpers shared by the contention managers. The policies see the engine
 * through include/schedstm/cm.h and src/iface/cm_services.h only (the build
 * gives src/cm/ no other engine header: src/CMakeLists.txt). */
#ifndef SSTM_CM_COMMON_H
#define SSTM_CM_COMMON_H

#include <stdatomic.h>
#include <stddef.h>

#include <schedstm/schedstm.h>

#include "os/os.h" /* sstm__rand */

#ifndef SSTM_LIKELY
#define SSTM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SSTM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

/* Aborts that come from a conflict with someone (as opposed to user
 * restarts, mode switches, or irrevocability). */
static inline bool sstm__cm_conflict_abort(sstm_abort_reason_t r) {
  switch (r) {
  case SSTM_ABORT_USER_RETRY:
  case SSTM_ABORT_USER_CANCEL:
  case SSTM_ABORT_RO_WRITE:
  case SSTM_ABORT_RO_EXTEND:
  case SSTM_ABORT_IRREVOCABLE: return false;
  default: return true;
  }
}

/* A conflict the policy can resolve: there is another party, and the
 * engine acts on the answer (cm.h: a kill, a failed validation and a
 * running irrevocable transaction always abort self, whatever is
 * answered; a kill's `other` is the killer, for information). */
static inline bool sstm__cm_decidable(const sstm_conflict_t *c) {
  return c->has_other && c->kind != SSTM_CONFLICT_KILLED && c->kind != SSTM_CONFLICT_VALIDATION &&
         c->kind != SSTM_CONFLICT_IRREVOCABLE;
}

static inline sstm_cm_action_t sstm__cm_abort_self(sstm_cm_ctx_t *ctx, const sstm_conflict_t *c,
                                                   uint64_t *wait_ns) {
  (void)ctx, (void)c, (void)wait_ns;
  return SSTM_CM_ABORT_SELF;
}

/* Another descriptor's state for the policy that owns ctx->state. A policy
 * may run inside a composite (P+ext, adaptive) that places its state at an
 * offset of the descriptor's policy state; the offset is the same in every
 * descriptor, so it is derived from our own. */
static inline void *sstm__cm_peer_state(sstm_cm_ctx_t *ctx, sstm_desc_t *d) {
  char *mine = (char *)sstm_cm_state_of(ctx->desc);
  return (char *)sstm_cm_state_of(d) + ((char *)ctx->state - mine);
}

/* ---- composite policies ----
 * A policy made of parts: "P+ext" (the base P and ext, cm/ext.c) and
 * adaptive (its sub-policies, cm/adaptive.c). Each part keeps its own
 * per-descriptor state inside the composite's, at a fixed offset, and its
 * hooks get a context whose state is there. */

/* Place the states of n parts one after the other from offset `at` of the
 * composite's state, each 16-byte aligned: off[i] is part i's offset.
 * Returns the end of the last one (16-byte aligned), where the
 * composite's own state may follow. */
static inline size_t sstm__cm_parts_layout(size_t at, const sstm_cm_ops_t *const *parts, int n,
                                           size_t *off) {
  at = (at + 15) & ~(size_t)15;
  for (int i = 0; i < n; i++) {
    off[i] = at;
    at += (parts[i]->state_size + 15) & ~(size_t)15;
  }
  return at;
}

/* The context a part's hook gets: the composite's, with the part's state. */
static inline sstm_cm_ctx_t sstm__cm_part_ctx(const sstm_cm_ctx_t *ctx, size_t off) {
  sstm_cm_ctx_t c = *ctx;
  c.state = (char *)ctx->state + off;
  return c;
}

/* "base+ext", built once per registered base (cm/ext.c); NULL with the
 * reason in sstm_last_error() when ext cannot wrap base. */
const sstm_cm_ops_t *sstm__cm_ext_compose(const sstm_cm_ops_t *base);

/* Progress bound of the policies that wait or yield instead of ordering
 * transactions: a transaction that has lost this many conflicts
 * (ctx->conflicts: user restarts do not count) restarts
 * irrevocable (it then never aborts). Without it a loser can retry without
 * end when the same winners keep coming back (hundreds of thousands of
 * retries of one transaction under softser when oversubscribed:
 * docs/benchmarks.md, "Figures behind the design"). */
#define SSTM_CM_RETRY_BOUND 256u

/* Does the abort being handled call for the progress bound's escalation?
 * Not a user restart or cancel: conflicts stays at the bound after an
 * escalation, and a body that restarts until another thread changes
 * something must not run every wait irrevocable (the others would be
 * serialised behind it); the next lost conflict escalates again. A switch
 * of mode at the bound (a wrong read-only hint, sstm_become_irrevocable's
 * restart) escalates too: its retry runs irrevocable, as the conflicts
 * lost before it call for (os_prio and timestamp count it as one). */
static inline bool sstm__cm_escalates(const sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info,
                                      unsigned bound) {
  return ctx->conflicts >= bound && info->reason != SSTM_ABORT_USER_RETRY &&
         info->reason != SSTM_ABORT_USER_CANCEL;
}

static inline void sstm__cm_bound_retries(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info) {
  if (__builtin_expect(sstm__cm_escalates(ctx, info, SSTM_CM_RETRY_BOUND), 0))
    sstm_cm_next_irrevocable(ctx);
}

/* Bound on one serialisation wait: a winner that takes longer than this
 * (descheduled for several quanta) is given up on and the loser restarts. */
#define SSTM_SER_WAIT_MAX_NS 20000000ull /* 20 ms, five 4 ms ticks */

/* The bound the ser-* policies use (cm/ser.c), SSTM_SER_WAIT_MAX_NS; 0
 * waits without a bound. A test seam, as sstm__wait_slice_ns: only tests
 * change it (tests/unit/cm_policies.c lifts it so that a loser under load
 * still waits for its winner and the exact outcome of a chain of conflicts
 * can be asserted; with sstm__wait_slice_ns also 0 there, a lost wake-up
 * then hangs, and the watchdog fails the test). relaxed: set before the
 * threads that use it start. */
extern _Atomic uint64_t sstm__ser_wait_max_ns;

/* os_prio's cache refresh period, 4 ms (cm/os_prio.c). A test seam too:
 * tests/internal/sched_ext.c sets it to UINT64_MAX so that only the
 * at-once refreshes (sstm_sched_set, attach) can update the cache. relaxed:
 * set before the conflicts that read it. */
extern _Atomic uint64_t sstm__os_prio_quantum_ns;

/* The ser-* policies' on_abort (cm/ser.c): after a conflict lost to another
 * party, wait in `mode` until the winner's attempt has ended, at most
 * sstm__ser_wait_max_ns; counts waits and timeouts in the policy counters
 * SSTM_SER_WAITS and SSTM_SER_TIMEOUTS. Applies the progress bound first. */
enum { SSTM_SER_WAITS, SSTM_SER_TIMEOUTS };
void sstm__cm_ser_wait(sstm_cm_ctx_t *ctx, const sstm_abort_info_t *info, sstm_wait_mode_t mode);

/* ser-kill's watch of a lock holder (cm/ser_kill.c), and its decision as a
 * test seam (tests/internal/ser_kill_decide.c): the answer to conflict c,
 * given what the earlier rounds of this access saw in *w (updated) and the
 * number of times ser-kill has killed the holder's transaction. Pure: no
 * clock, no engine call. */
typedef struct sstm__ser_kill_watch {
  unsigned slot;   /* the holder watched: descriptor slot ... */
  uint64_t txid;   /* ... and attempt */
  uint32_t reads;  /* its read-set size at the last round */
  uint32_t writes; /* its write-set size at the last round */
  unsigned rounds; /* rounds watched */
  unsigned stalls; /* rounds in a row without progress */
  bool serialize;  /* the abort that follows sleeps behind the holder */
  bool spared;     /* the decision spared a holder killed often */
} sstm__ser_kill_watch_t;
sstm_cm_action_t sstm__ser_kill_decide(sstm__ser_kill_watch_t *w, const sstm_conflict_t *c,
                                       unsigned victim_kills, uint64_t *wait_ns);

/* The longest part "P+ext" appends to P's describe() line (ext.c,
 * c_describe): slice mode with the longest custom slice
 * (SSTM_EXT_SLICE_US_MAX) and both fallback counts at their widest. A
 * policy that bounds its own line (adaptive) leaves room for it in the
 * state table's policy field. */
#define SSTM__CM_EXT_LONGEST ",ext=slice(100000us),ext-fallback=slice:4294967295,none:4294967295"

/* adaptive's test seam (cm/adaptive.c; tests/internal/adaptive_decide.c):
 * judge one window from given counts (commits, update commits among them,
 * aborts) and CPU time (UINT64_MAX: unknown);
 * the name of sub-policy i; the current window length; the slice wanted. */
int sstm__adaptive_feed(uint64_t ns, uint64_t commits, uint64_t updates, uint64_t aborts,
                        unsigned threads, uint64_t cpu_ns, unsigned ncpu, char *reason, size_t len);
const char *sstm__adaptive_sub_name(int i);
/* the length of the longest line adaptive's describe() can write */
size_t sstm__adaptive_line_max(void);
uint64_t sstm__adaptive_window_ns(void);
/* the custom slice adaptive wants its threads to take, 0: none */
uint64_t sstm__adaptive_slice_want_ns(void);
/* the share of the CPUs' time idle in every window sstm__adaptive_feed
 * judges from now on (below 0: unknown, the default after init) */
void sstm__adaptive_feed_idle(double share);

/* admit's decision (cm/admit.c), a test seam (tests/internal/admit_decide.c):
 * the gate's state across windows, and one window judged from its
 * counts (commits and aborts of every thread, the threads that ran
 * transactions) and the gate's limit of transactions in flight. Returns
 * whether the gate is on for the next window. Pure: no clock, no engine
 * call. */
typedef struct sstm__admit_judge {
  bool on;       /* the gate is on */
  bool sticky;   /* admit-slice: calm windows do not turn it off */
  unsigned calm; /* windows in a row under ADMIT_OFF_APC while on (not sticky) */
} sstm__admit_judge_t;
/* A window needs this many commits and aborts to turn the gate on. */
#define ADMIT_MIN_EVENTS 64
/* Aborts per commit that turn it on: one in 4096. Each lost conflict
 * costs a sleep behind the winner, about a scheduling round when threads
 * far outnumber CPUs, against a few microseconds per transaction, so
 * conflicts are "frequent" at rates that look small (rb-aw at 64 threads
 * under ser-block: 1 in 2200; docs/benchmarks.md). */
#define ADMIT_ON_APC (1.0 / 4096)
/* ... and below which, ADMIT_OFF_WINDOWS windows in a row, it turns off
 * (lower: the gate itself makes conflicts rarer). */
#define ADMIT_OFF_APC (1.0 / 32768)
#define ADMIT_OFF_WINDOWS 3
bool sstm__admit_decide(sstm__admit_judge_t *j, uint64_t commits, uint64_t aborts, unsigned threads,
                        uint64_t limit);
/* Another test seam of admit's and admit-slice's: after sstm_init, the
 * gate is `on` with `limit` places, a bound of wait_max_ns (0: none) on
 * waiting while no place is given back and, under admit-slice, a slice of
 * hold_ns (0: unchanged; ignored under admit), until the next sstm_init;
 * its windows decide nothing. Not concurrent with transactions. */
void sstm__admit_pin(bool on, uint64_t limit, uint64_t wait_max_ns, uint64_t hold_ns);
/* A test seam of admit's and admit-slice's windows: the check a begin or
 * an abort makes with its clock reading `now` (taken before the check, so
 * possibly older than the start of a window another thread just opened);
 * whether it closed a window (never while the gate is pinned). */
bool sstm__admit_window_at(sstm_cm_ctx_t *ctx, uint64_t now);
/* admit-slice's gate as a part of another policy (adaptive, which runs it
 * only while threads outnumber CPUs and conflicts are frequent). The
 * driving policy calls init/fini from its own, desc_init from its
 * desc_init (on sstm__admit_gate_state_size() bytes of its state), leave
 * from its desc_fini and on_detach (a held place is given back), and,
 * while it wants the gate, begin from an admission hook
 * (sstm__cm_admit_hook: at the start of every attempt, where the thread
 * may sleep for its turn). sstm__admit_drive turns the gate on or off and
 * takes the decision from admit's own windows until the next init
 * (sleepers are woken when it turns off); its waits are not counted in
 * the driver's counter slots. holds says whether the descriptor holds a
 * place now (owner-only). Only one of admit, admit-slice and a driver
 * runs in a process at a time (one gate). peer_holds says whether
 * descriptor d holds a place now, read from any thread without a lock (a
 * hint: the holder may give it back the next instant); false for NULL. */
int sstm__admit_gate_init(const sstm_config_t *cfg);
void sstm__admit_gate_fini(void);
size_t sstm__admit_gate_state_size(void);
void sstm__admit_gate_desc_init(sstm_cm_ctx_t *ctx);
void sstm__admit_gate_begin(sstm_cm_ctx_t *ctx);
void sstm__admit_gate_leave(sstm_cm_ctx_t *ctx);
bool sstm__admit_gate_holds(const sstm_cm_ctx_t *ctx);
bool sstm__admit_gate_peer_holds(sstm_cm_ctx_t *ctx, sstm_desc_t *d);
void sstm__admit_drive(bool on);
bool sstm__admit_gate_on(void);
/* The gate's counts since the last sstm_init, for the whole process
 * (tests): threads that waited for admission, waits that ended by the
 * bound on the gate's progress, places reclaimed from holders whose slice
 * was over. Exact once the threads that counted have been joined. */
void sstm__admit_gate_counts(uint64_t *waits, uint64_t *timeouts, uint64_t *reclaims);

#endif /* SSTM_CM_COMMON_H */
