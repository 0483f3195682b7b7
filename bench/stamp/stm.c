/* SPDX-License-Identifier: MIT */
/* The STAMP adapter's functions (bench/stamp/stm.h): startup and shutdown,
 * thread entry and exit, and the undo log of STM_LOCAL_WRITE. Compiled into
 * every STAMP application that bench/stamp/build.sh builds. */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "stm.h"

#include "stats_out.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const sstm_attr_t sstm_stamp_ro_attr = {.read_only = true};

static void die(const char *what, int rc) {
  fprintf(stderr, "schedstm STAMP adapter: %s: %s (%s)\n", what, sstm_strerror(rc),
          sstm_last_error());
  exit(1);
}

static void note_stack(void);

void sstm_stamp_startup(void) {
  int rc = sstm_init(NULL);
  if (rc != 0) die("sstm_init", rc);
  note_stack(); /* the main thread's, in case it writes locally without entering */
}

/* The statistics' dump, to where SSTM_STAMP_STATS says (stats_out.h). */
static void dump(FILE *f) { (void)sstm_stats_dump(f); }

void sstm_stamp_shutdown(void) {
  sstm_stamp_stats_out(dump);
  int rc = sstm_shutdown();
  if (rc != 0) die("sstm_shutdown", rc);
}

sstm_desc_t *sstm_stamp_thread_enter(void) {
  int rc = sstm_thread_init();
  if (rc != 0) die("sstm_thread_init", rc);
  note_stack();
  return sstm_self();
}

static void local_log_release(void);

void sstm_stamp_thread_exit(void) {
  int rc = sstm_thread_exit();
  if (rc != 0) die("sstm_thread_exit", rc);
  local_log_release();
}

/* ---- the undo log of STM_LOCAL_WRITE --------------------------------------
 * One per thread. An attempt's first local write empties it and registers
 * the abort action that replays it; an attempt is told from the previous
 * one by sstm_txid(). After a commit the entries are simply left behind:
 * the next attempt that writes locally starts afresh. */
struct local_entry {
  void *addr;
  size_t size;
  unsigned char old[16];
};

static __thread struct {
  uint64_t txid;
  size_t n, cap;
  struct local_entry *e;
} local_log;

__thread uintptr_t sstm_stamp_begin_sp;

/* The lowest address of this thread's stack, set when the thread enters. */
static __thread uintptr_t stack_lo;

static void note_stack(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  int rc = pthread_getattr_np(pthread_self(), &attr);
  if (rc == 0) {
    rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  if (rc != 0) {
    fprintf(stderr, "schedstm STAMP adapter: the thread's stack (for STM_LOCAL_WRITE): %s\n",
            strerror(rc));
    exit(1);
  }
  stack_lo = (uintptr_t)addr;
}

/* The abort action: put the old bytes back, newest first (an address
 * written twice gets its first value). Not those in the stack below the
 * begin's stack pointer: every frame there belongs to a function the
 * attempt called, dead at the restart, or to the abort path that runs this
 * action, which may lie where the dead frames were, this function's own
 * frame included. */
static void local_undo(void *arg) {
  (void)arg;
  uintptr_t lo = stack_lo, hi = sstm_stamp_begin_sp;
  for (size_t i = local_log.n; i-- > 0;) {
    uintptr_t a = (uintptr_t)local_log.e[i].addr;
    if (a >= lo && a < hi) continue;
    memcpy(local_log.e[i].addr, local_log.e[i].old, local_log.e[i].size);
  }
  local_log.n = 0;
  local_log.txid = 0;
}

void sstm_stamp_local_log(void *addr, size_t size) {
  uint64_t id = sstm_txid();
  if (id == 0) return;             /* outside a transaction: a plain store, nothing to undo */
  if (stack_lo == 0) note_stack(); /* a thread that never entered */
  if (local_log.txid != id) {
    int rc = sstm_on_abort(local_undo, NULL);
    if (rc != 0) die("sstm_on_abort (STM_LOCAL_WRITE)", rc);
    local_log.txid = id;
    local_log.n = 0;
  }
  if (local_log.n == local_log.cap) {
    size_t cap = local_log.cap ? 2 * local_log.cap : 64;
    struct local_entry *e = realloc(local_log.e, cap * sizeof *e);
    if (e == NULL) {
      fprintf(stderr, "schedstm STAMP adapter: out of memory for the STM_LOCAL_WRITE log\n");
      exit(1);
    }
    local_log.e = e;
    local_log.cap = cap;
  }
  struct local_entry *en = &local_log.e[local_log.n++];
  en->addr = addr;
  en->size = size;
  memcpy(en->old, addr, size);
}

static void local_log_release(void) {
  free(local_log.e);
  local_log.e = NULL;
  local_log.n = local_log.cap = 0;
  local_log.txid = 0;
}
