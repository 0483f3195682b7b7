/* SPDX-License-Identifier: MIT */
/* The per-thread state table that the engine publishes for other processes
 * (layout and reader protocol: include/schedstm/statetab.h). Enabled by
 * cfg.state_table or SCHEDSTM_STATE_TABLE=1; when off, the engine pays one
 * predictable NULL test per begin/commit/abort.
 *
 * It is part of the engine (src/core), not of src/os: its callers are the
 * engine's begin/commit/abort, registration and init, and the policies'
 * notes (sstm_cm_note, softser's priority changes), and what it publishes
 * is engine state (descriptors, configuration line, counters, the policy's
 * names). It calls nothing in the engine that calls it back: sstm_init
 * hands it the configuration line (sstm__stt_describe), so config.c and
 * this file do not form a circle; below the engine it calls
 * sstm__conflict_prio_of (src/os/sched.c) with plain arguments.
 *
 * Where the table is: a sealed memfd (memfd_create, named
 * SSTM_STT_MEMFD_NAME), not a file with a name. A name in a shared
 * directory (/dev/shm/schedstm.<pid>, layout versions 1 to 3) can be taken
 * by any local user before the program starts: a file, symbolic link, FIFO
 * or directory planted there made sstm_init fail. A memfd has no name that
 * another user can reach: readers open it as /proc/<pid>/fd/<n>, which the
 * kernel allows only to those who may inspect the process (the ptrace read
 * check: same user and a dumpable process, or CAP_SYS_PTRACE). A per-user
 * directory of mode 0700 would also keep the name out of others' reach,
 * but only where such a directory exists and is ours before we start
 * ($XDG_RUNTIME_DIR); one we create under /dev/shm can itself be
 * pre-empted. What the memfd gives up: a table outlives its process no
 * more, so a killed program's last state cannot be read afterwards (and
 * nothing is left behind to clean up).
 *
 * The memfd is allocated whole (posix_fallocate: no page can fault later
 * for want of memory) and sealed against shrinking and growing, with the
 * seals themselves sealed: a same-user process that truncates the table
 * under the program (which made its next entry write a SIGBUS) now fails
 * with EPERM, and a reader that finds F_SEAL_SHRINK on it can map it
 * without fearing a SIGBUS either. It stays open for as long as the table
 * is published (that open descriptor is what /proc/<pid>/fd shows); it is
 * close-on-exec, and the child of a fork() closes its copy and replaces
 * the mapping by private memory (pthread_atfork), so the child's commits
 * do not count in its parent's entries and the child publishes nothing. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <schedstm/statetab.h>

#include "core/engine.h"
#include "os/sched.h"

_Static_assert(SSTM_STT_REASONS >= SSTM_ABORT_REASON_COUNT, "a slot per abort reason");
_Static_assert(SSTM_STT_CMSTATS == SSTM_CM_NSTATS, "a slot per policy counter");
_Static_assert(sizeof(sstm_stt_header_t) % 64 == 0 && sizeof(sstm_stt_entry_t) % 64 == 0,
               "entries start on a cache line");
/* The header's size is part of the format: it changes only with the
 * version (statetab.h, "Versions"; 1152 bytes in versions 5 and 6). */
_Static_assert(sizeof(sstm_stt_header_t) == 1344, "the header's size is that of version 7");
_Static_assert(sizeof(sstm_stt_exec_t) % 64 == 0, "the executor area ends on a cache line");

static sstm_stt_header_t *table;
static size_t table_size;
/* The memfd, open while the table is published (-1 otherwise, and in the
 * child of a fork). */
static int table_fd = -1;

#define PUT(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static sstm_stt_entry_t *entries(void) { return (sstm_stt_entry_t *)(void *)(table + 1); }

/* fork() child: the child inherits the MAP_SHARED mapping of the parent's
 * memfd, where its descriptors (copies of the parent's) would go on counting
 * in the parent's entries, and a copy of the memfd's descriptor, through
 * which sstm-top would show the parent's table under the child's pid.
 * Close the copy, and replace the mapping, at the same address so that
 * every d->stt stays valid, by private zero pages. Nothing reads the
 * child's table, so nothing is copied: zero pages cost nothing until
 * written, where a copy would cost table_size bytes at every fork, most of
 * them followed by exec. The child has one thread here, and makes only
 * system calls (async-signal-safe). */
static void stt_atfork_child(void) {
  if (table == NULL) return;
  if (table_fd >= 0) close(table_fd);
  table_fd = -1;
  /* It needs no new address space (it replaces a mapping of the same
   * size); should it fail anyway (a commit limit), the child keeps writing
   * into the parent's entries: wrong counts, nothing worse. */
  (void)mmap(table, table_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
             0);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int atfork_rc; /* pthread_atfork's result; read after pthread_once */
static void atfork_register(void) { atfork_rc = pthread_atfork(NULL, NULL, stt_atfork_child); }

int sstm__stt_init(void) {
  pthread_once(&atfork_once, atfork_register); /* once per process, not per sstm_init */
  if (atfork_rc != 0) {
    errno = atfork_rc;
    sstm__set_error("state table: cannot register the fork handler: %m");
    return SSTM_ENOMEM;
  }
  unsigned n = sstm__g.cfg.max_threads;
  size_t exec_off = sizeof(sstm_stt_header_t) + (size_t)n * sizeof(sstm_stt_entry_t);
  table_size = exec_off + sizeof(sstm_stt_exec_t);
  int fd = memfd_create(SSTM_STT_MEMFD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    int e = errno;
    sstm__set_error("state table: memfd_create: %m%s",
                    e == ENOSYS || e == EINVAL ? " (sealed memfds need Linux 3.17)" : "");
    /* out of descriptors or memory is a resource, not a refusal */
    return e == EMFILE || e == ENFILE || e == ENOMEM ? SSTM_ENOMEM : SSTM_EPERM;
  }
  /* Allocate, not just size (ftruncate): shared memory takes its pages at
   * the first write, and without memory for it that write (the header
   * below, or the first transaction of a thread) would be a SIGBUS.
   * Retried on EINTR (shmem gives up an allocation when a signal arrives);
   * the error number is the result, errno is not set. EFBIG: the size is
   * beyond RLIMIT_FSIZE. */
  int e;
  do {
    e = posix_fallocate(fd, 0, (off_t)table_size);
  } while (e == EINTR);
  if (e != 0) {
    close(fd);
    errno = e;
    sstm__set_error("state table: cannot allocate %zu bytes of shared memory: %m", table_size);
    return SSTM_ENOMEM;
  }
  /* Sealed before it is mapped or published: no reader ever sees it
   * unsealed once its size is right (sstm-top waits for the seal). */
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    e = errno;
    close(fd);
    errno = e;
    sstm__set_error("state table: cannot seal the memfd: %m");
    return SSTM_EPERM;
  }
  void *p = mmap(NULL, table_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    e = errno;
    close(fd);
    errno = e;
    sstm__set_error("state table: cannot map %zu bytes: %m", table_size);
    return SSTM_ENOMEM;
  }
  table = p;
  table_fd = fd;
  table->version = SSTM_STT_VERSION;
  table->nentries = n;
  table->entry_size = sizeof(sstm_stt_entry_t);
  table->header_size = sizeof(sstm_stt_header_t);
  table->pid = (int32_t)getpid();
  table->nreasons = SSTM_ABORT_REASON_COUNT;
  table->start_ns = sstm__now_ns();
  table->exec_offset = (uint32_t)exec_off; /* at most 32767 entries: far below 4 GiB */
  table->exec_size = sizeof(sstm_stt_exec_t);
  for (int i = 0; i < SSTM_ABORT_REASON_COUNT && i < SSTM_STT_REASONS; i++)
    snprintf(table->reason_names[i], sizeof table->reason_names[i], "%s",
             sstm_abort_reason_name((sstm_abort_reason_t)i));
  for (int i = 0; i < SSTM_STT_CMSTATS; i++)
    snprintf(table->cm_stat_names[i], sizeof table->cm_stat_names[i], "%s",
             sstm__g.cm->stat_names[i] ? sstm__g.cm->stat_names[i] : "");
  /* release: a reader that sees the magic sees the header. */
  __atomic_store_n(&table->magic, SSTM_STT_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

/* Serialises the writers of cm_info (threads that close an adaptive
 * window, sstm_init); a leaf lock apart from what describe() takes. */
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;

/* Copy the policy's describe() line into the header (seqlock writer). */
/* The policy's line, and with config (not NULL, sizeof table->config
 * bytes) the configuration line, under cm_info_seq: a reader attaching
 * while sstm_init writes the configuration sees it whole or retries. */
static void publish_cm_info(const char *config) {
  char buf[sizeof table->cm_info];
  memset(buf, 0, sizeof buf); /* the file gets no stack bytes after the NUL */
  /* describe under the lock: two refreshes racing publish in the order
   * they read the policy, so the last line written is the newest. */
  pthread_mutex_lock(&info_lock);
  /* A line longer than the field ends in "..." (cut numbers would look
   * plausible). */
  if (sstm__g.cm->describe && sstm__g.cm->describe(buf, sizeof buf) >= (int)sizeof buf)
    memcpy(buf + sizeof buf - 4, "...", 4);
  uint32_t seq = GET(table->cm_info_seq);
  PUT(table->cm_info_seq, seq + 1); /* odd: being written */
  /* release fence: a reader that sees any byte below also sees the odd
   * sequence number, so its second read of it fails the comparison (the
   * reader's acquire fence sits between its copy and that read). */
  atomic_thread_fence(memory_order_release);
  for (size_t i = 0; config && i < sizeof table->config; i++)
    PUT(table->config[i], config[i]);
  for (size_t i = 0; i < sizeof buf; i++)
    PUT(table->cm_info[i], buf[i]);
  /* release: a reader that sees the even number sees the whole line. */
  __atomic_store_n(&table->cm_info_seq, seq + 2, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&info_lock);
}

/* Record the configuration line (sstm_describe's, passed in by sstm_init
 * once it has finished: the table does not call up into config.c) without
 * its " cm-info=" part: that is the policy's line, which changes
 * (adaptive's choice) and lives in cm_info, refreshed at every change. */
void sstm__stt_describe(const char *line) {
  if (table == NULL) return;
  char buf[sizeof table->config] = {0}; /* no stack bytes after the NUL in the table */
  const char *info = strstr(line, " cm-info=");
  size_t n = info ? (size_t)(info - line) : strlen(line);
  memcpy(buf, line, n < sizeof buf - 1 ? n : sizeof buf - 1);
  publish_cm_info(buf);
}

SSTM_API void sstm_cm_info_changed(void) {
  if (table) publish_cm_info(NULL);
}

void sstm__stt_fini(void) {
  if (table == NULL) return;
  /* NULL before the unmap: a fork() in between must not have its child
   * map over an address that may already be reused. */
  sstm_stt_header_t *t = table;
  table = NULL;
  munmap(t, table_size);
  /* the table is no longer published: readers find it gone */
  if (table_fd >= 0) close(table_fd);
  table_fd = -1;
}

sstm_stt_exec_t *sstm__stt_exec_area(void) {
  if (table == NULL) return NULL;
  return (sstm_stt_exec_t *)(void *)((char *)table + table->exec_offset);
}

void sstm__stt_attach(struct sstm_desc *d) {
  if (table == NULL) {
    d->stt = NULL;
    return;
  }
  sstm_stt_entry_t *e = &entries()[d->slot];
  /* Every field: a reused slot must not show its previous thread's values. */
  PUT(e->slot, d->slot);
  PUT(e->tid, atomic_load_explicit(&d->tid, memory_order_relaxed));
  PUT(e->in_tx, 0);
  PUT(e->txid, 0);
  PUT(e->commits, 0);
  PUT(e->aborts, 0);
  PUT(e->conflict_tid, 0);
  PUT(e->last_reason, 0);
  PUT(e->conflict_txid, 0);
  PUT(e->action, SSTM_ACT_NONE);
  PUT(e->os_policy, 0);
  PUT(e->os_nice, 0);
  PUT(e->cpu, -1);
  PUT(e->cpu_pinned, -1);
  for (int i = 0; i < SSTM_STT_REASONS; i++)
    PUT(e->aborts_by_reason[i], 0);
  for (int i = 0; i < SSTM_STT_CMSTATS; i++)
    PUT(e->cm_stats[i], 0);
  snprintf(e->cm, sizeof e->cm, "%s", d->cm->name);
  PUT(e->in_use, 1);
  d->stt = e;
}

void sstm__stt_prio_refresh(struct sstm_desc *d) {
  if (d->stt == NULL) return; /* no table: no system call either */
  int policy, nice;
  sstm__conflict_prio_of(atomic_load_explicit(&d->tid, memory_order_relaxed), &policy, &nice);
  sstm__stt_prio(d, policy, nice);
}

void sstm__stt_tid(struct sstm_desc *d) {
  if (d->stt == NULL) return;
  PUT(d->stt->tid, atomic_load_explicit(&d->tid, memory_order_relaxed));
  sstm__stt_prio_refresh(d);
}

void sstm__stt_detach(struct sstm_desc *d) {
  if (d->stt) PUT(d->stt->in_use, 0);
  d->stt = NULL;
}

/* The policy's counters, as the statistics have them now. */
static void copy_cm_stats(struct sstm_desc *d, sstm_stt_entry_t *e) {
  for (int i = 0; i < SSTM_STT_CMSTATS; i++)
    PUT(e->cm_stats[i], sstm__ctr_get(&d->ctr.cm_stats[i]));
}

void sstm__stt_begin(struct sstm_desc *d) {
  sstm_stt_entry_t *e = d->stt;
  PUT(e->tid, atomic_load_explicit(&d->tid, memory_order_relaxed)); /* attach may move it */
  PUT(e->txid, sstm__serial(d));
  PUT(e->in_tx, 1);
  /* A retry: what the policy did for the abort (a thread that keeps
   * losing, the one worth watching, may not commit for a long time). */
  if (d->retries) copy_cm_stats(d, e);
}

void sstm__stt_commit(struct sstm_desc *d) {
  sstm_stt_entry_t *e = d->stt;
  PUT(e->in_tx, 0);
  PUT(e->commits, GET(e->commits) + 1);
  copy_cm_stats(d, e);
}

void sstm__stt_abort(struct sstm_desc *d, sstm_abort_reason_t r, const sstm_party_t *other) {
  sstm_stt_entry_t *e = d->stt;
  PUT(e->aborts, GET(e->aborts) + 1);
  if ((unsigned)r < SSTM_STT_REASONS) PUT(e->aborts_by_reason[r], GET(e->aborts_by_reason[r]) + 1);
  PUT(e->last_reason, (uint32_t)r);
  PUT(e->conflict_tid, other ? other->tid : 0);
  PUT(e->conflict_txid, other ? other->txid : 0);
  /* rolled back: no attempt runs while the policy waits (the retry's begin
   * sets it again) */
  PUT(e->in_tx, 0);
}

void sstm__stt_action(struct sstm_desc *d, sstm_cm_act_t act) {
  PUT(d->stt->action, (uint32_t)act);
}

void sstm__stt_cpu(struct sstm_desc *d, int seen, int pinned) {
  if (d == NULL || d->stt == NULL) return;
  PUT(d->stt->cpu, seen);
  PUT(d->stt->cpu_pinned, pinned);
}

void sstm__stt_prio(struct sstm_desc *d, int policy, int nice) {
  if (d->stt == NULL) return;
  PUT(d->stt->os_policy, policy);
  PUT(d->stt->os_nice, nice);
}
