/* SPDX-License-Identifier: MIT */
/* The transactional stdio's escalation on a contended stream
 * (docs/design/tm-libc.md (S9)): the decisions, as pure functions of
 * plain values, so that tests can check them on constructed inputs
 * (tests/internal/libc_escalate.c). src/libc/stdio.c supplies the values
 * (the stream's ticket counters, the thread's record of lost attempts)
 * and carries out the decisions. */
#ifndef SSTM_LIBC_ESC_H
#define SSTM_LIBC_ESC_H

#include <stdbool.h>
#include <stdint.h>

/* Consecutive attempts of a thread that lost one stream (sstm__esc_lost)
 * before its next acquisition of that stream queues on the stream's
 * tickets. Two: one lost attempt is the ordinary price of optimism; a
 * second in a row on the same stream means the stream is contended and
 * the attempts are wasting the work that serialising on the stream would
 * save. */
#define SSTM__ESC_AFTER 2u

/* What a thread remembers of its lost attempts: the stream (an opaque
 * key, NULL: none) and how many of its attempts in a row lost it. */
typedef struct sstm__esc {
  const void *key;
  unsigned lost;
} sstm__esc_t;

/* Did an attempt that ended without committing lose the stream, that is,
 * was the stream the reason, as far as the stdio layer can tell?
 * - armed false: the attempt ended inside its acquisition (the
 *   transactional load or store of the stream's word, or the copy of the
 *   installed state that found a newer version): the stream's word is
 *   what it met. closed: the acquisition found the stream closed, and the
 *   attempt ended later for another reason.
 * - armed true: it had acquired version `ver`; it lost the stream if
 *   another transaction has acquired the stream since (`now_ver`, the
 *   version in the stream's word after the rollback, differs): under
 *   encounter-time locking that one took over or waited out the lock;
 *   under commit-time locking its commit invalidated this attempt. */
static inline bool sstm__esc_lost_stream(bool armed, bool closed, uint64_t ver, uint64_t now_ver) {
  if (!armed) return !closed;
  return now_ver != ver;
}

/* Record the end of an attempt that held a view of stream key: lost says
 * whether it lost the stream (above) and committed whether it committed.
 * A commit on the stream clears the record; an attempt that lost another
 * stream starts it again. */
static inline void sstm__esc_record(sstm__esc_t *e, const void *key, bool committed, bool lost) {
  if (committed) {
    if (e->key == key) e->key = 0, e->lost = 0;
    return;
  }
  if (!lost) return;
  if (e->key != key) e->key = key, e->lost = 0;
  e->lost++;
}

/* Turns a stream stays in serial mode after a thread escalates: the
 * acquisitions take the turn until 64 of them have committed, then they
 * are optimistic
 * again until a thread loses the stream SSTM__ESC_AFTER times in a row.
 * Long enough that a contended stream is not re-entered by a burst of
 * optimistic acquirers (each of which would lose it up to
 * SSTM__ESC_AFTER times) after every few turns; short enough that a
 * stream that stopped being contended soon costs no turn. */
#define SSTM__ESC_SPAN 64u

/* What an acquisition sees when it decides (stdio.c fills it). */
typedef struct sstm__esc_in {
  uint32_t span;    /* the stream's turns left in serial mode */
  bool turn_held;   /* the stream's turn is held */
  bool in_flight;   /* another acquisition of the stream has not ended */
  bool irrevocable; /* the attempt is irrevocable */
  bool holds_turn;  /* the attempt holds the turn of a stream already */
  bool in_action;   /* the transaction runs in an action of an earlier
                       attempt of the same thread (a view of that attempt
                       awaits its installation) */
  bool suspendable; /* the attempt may be suspended in its middle (its
                       descriptor detached and attached again later:
                       sstm__attempt_suspendable) */
} sstm__esc_in_t;

/* What the acquisition does. */
typedef enum sstm__esc_act {
  SSTM__ESC_NONE = 0, /* acquire at once (optimistic) */
  SSTM__ESC_TURN,     /* take the stream's turn first */
  SSTM__ESC_ENTER,    /* put the stream in serial mode (a full span), then
                         take the turn */
} sstm__esc_act_t;

/* The decision of an acquisition of stream key by the thread whose record
 * is e:
 * - never wait in an irrevocable attempt (it runs alone: nobody to
 *   conflict with), nor in one that already holds a turn (so no thread
 *   waits for a turn while holding one: the waits form no cycle), nor in
 *   a transaction inside an action of an earlier attempt of the thread
 *   (that attempt's installation may be what the holder of the turn waits
 *   for), nor in one that may be suspended (docs/design/tm-libc.md (S12):
 *   suspended while it held the turn, it would hold every other acquirer
 *   of the stream, the worker that would resume it included; it meets the
 *   others' lock of the stream's word instead, which the engine decides,
 *   a suspended holder's included);
 * - else take the turn while the stream is in serial mode or its turn is
 *   held (the holder must not be disturbed by acquirers that skip it);
 *   and when another acquisition of the stream is in flight: every
 *   acquisition writes the stream's word, so two that overlap conflict
 *   for certain, and the turn makes the later one wait without a
 *   conflict, at most one of them meeting the earlier one;
 * - else, when the thread lost this stream SSTM__ESC_AFTER times in a
 *   row, put the stream in serial mode and take the turn. */
static inline sstm__esc_act_t sstm__esc_decide(const sstm__esc_t *e, const void *key,
                                               const sstm__esc_in_t *in) {
  if (in->irrevocable || in->holds_turn || in->in_action || in->suspendable) return SSTM__ESC_NONE;
  bool mine = e->key == key && e->lost >= SSTM__ESC_AFTER;
  if (in->span != 0)
    return mine && in->span < SSTM__ESC_SPAN / 2 ? SSTM__ESC_ENTER : SSTM__ESC_TURN;
  if (mine) return SSTM__ESC_ENTER;
  return in->turn_held || in->in_flight ? SSTM__ESC_TURN : SSTM__ESC_NONE;
}

/* The turns left in serial mode after a turn that committed ends. */
static inline uint32_t sstm__esc_span_next(uint32_t span) { return span ? span - 1 : 0; }

struct sstm_file;
/* Tests (stdio.c): the number of turns taken on f so far; the turns left
 * in serial mode; put f in serial mode for span committed turns. */
uint64_t sstm__stdio_turns(const struct sstm_file *f);
uint32_t sstm__stdio_span(const struct sstm_file *f);
void sstm__stdio_set_span(struct sstm_file *f, uint32_t span);
/* Tests: f's keeper word (stdio.c, solo, (S10)): 0 when no thread keeps
 * f, else the keeper's tag << 8 | its state (1 committed, 2 rolled back,
 * 3 in flight, 4 handed back). */
uint64_t sstm__stdio_solo(const struct sstm_file *f);
/* Tests: called by a thread about to begin keeping f (stdio.c,
 * solo_start), after its tests and before it claims the word; NULL
 * (the default): nothing. Set it only while no stream is in use. */
extern void (*sstm__stdio_solo_start_hook)(const struct sstm_file *f);
/* Tests: how long the holder of a turn waits for the acquisitions that
 * went first without it (stdio.c, turn_alone; default 1 ms). */
void sstm__stdio_set_alone_ns(uint64_t ns);
/* Tests (stdio.c, (S11)): a keeper of a contended stream yields after n of
 * its attempts while others wait, or ns nanoseconds after the first of
 * them began to wait (n 0: SOLO_BATCH, the default; n UINT32_MAX: no
 * keeping for a batch, a contended stream stays in serial mode, (S9); ns
 * 0: SOLO_BATCH_NS); the hand-overs of f so far; the process-wide maxima
 * of the attempts a keeper entered in one batch while others waited and of
 * the hand-overs to others that a waiter saw after it took its ticket
 * (reset: set both to 0 after reading). */
void sstm__stdio_set_batch(uint32_t n, uint64_t ns);
/* Tests (stdio.c): the buffer size of the streams opened from now on
 * (0: the default of the stream's kind), for tests whose cases were written
 * around a size of their own. */
void sstm__stdio_set_bufsize(uint32_t n);
uint64_t sstm__stdio_takes(const struct sstm_file *f);
/* Tests (stdio.c, (S11)): the calling thread's tag (the one in a keeper
 * word while it keeps), and whether a keeper with that tag counts as live
 * (live_tag): false once its thread has ended, or while another keeper
 * whose tag shares the slot holds it. */
uint32_t sstm__stdio_tag(void);
bool sstm__stdio_tag_live(uint32_t tag);
/* Tests (stdio.c, (S11)): the ends of keepers counted so far (live_exits:
 * a thread that kept a stream for a batch ended or unregistered). */
uint64_t sstm__stdio_live_exits(void);
void sstm__stdio_batch_stats(uint64_t *batch_max, uint64_t *ticket_max, int reset);
/* Tests (stdio.c, (S11)): f's yields so far (a keeper that gave the
 * stream up to the waiters after its batch), and its take-backs (a keeper
 * that took its own yield back because no other waiter took it). */
void sstm__stdio_yields(const struct sstm_file *f, uint64_t *yields, uint64_t *backs);
/* Tests (stdio.c, (S6)): the arrivals of byte streams' arrival logs that
 * the calling thread's reads have visited so far (arrival_find). */
uint64_t sstm__stdio_arrivals_walked(void);
/* Tests: called by a thread that waits for f's keeper for a batch
 * (stdio.c, solo_wait) in a round of its wait where it counts as a waiter
 * that spins and the keeper knows that others wait (hot 1), and before it
 * yields the CPU or sleeps (hot 0: it does not count as spinning then).
 * NULL (the default): nothing. Set it only while no stream is in use. */
extern void (*sstm__stdio_wait_hook)(const struct sstm_file *f, int hot);

/* Tests, SCHEDSTM_DEBUG builds only (elsewhere never called): called by an
 * attempt that copies the installed state of f (stdio.c, snapshot), after
 * it found the version it wants installed and before it copies the state,
 * so that a test can install a newer version there. NULL (the default):
 * nothing. Set it only while no stream is in use. */
extern void (*sstm__stdio_snapshot_hook)(const struct sstm_file *f);

#endif /* SSTM_LIBC_ESC_H */
