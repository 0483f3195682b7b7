/* SPDX-License-Identifier: MIT */
/* schedstm tests: counting one thread's system calls (see syscall_count.h). */
#define _GNU_SOURCE
#include "syscall_count.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

enum { NR_MAX = 1024 };

/* The listener's descriptor: -1 until the attached thread has installed
 * its filter, -2 when it never will (sc_stop without an attach). */
static int listener = -1;
static int enabled;
static uint64_t calls[NR_MAX + 1]; /* by number; [NR_MAX] the others */
static pthread_t supervisor;
static bool started;

static void *supervise(void *arg) {
  (void)arg;
  int fd;
  /* The attached thread cannot make a system call before the filter is in
   * place and published, nor wait for us without one: poll. acquire: pairs
   * with the release store of sc_attach. */
  while ((fd = __atomic_load_n(&listener, __ATOMIC_ACQUIRE)) == -1)
    sched_yield(); /* the supervisor is not filtered */
  if (fd < 0) return NULL;
  for (;;) {
    struct seccomp_notif req;
    memset(&req, 0, sizeof req);
    if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
      if (errno == EINTR) continue;
      break; /* ENOENT: no filtered thread is left */
    }
    if (__atomic_load_n(&enabled, __ATOMIC_ACQUIRE)) {
      unsigned nr = req.data.nr >= 0 && req.data.nr < NR_MAX ? (unsigned)req.data.nr : NR_MAX;
      __atomic_fetch_add(&calls[nr], 1, __ATOMIC_RELAXED);
    }
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    (void)ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp); /* ENOENT: the caller died */
  }
  close(fd);
  return NULL;
}

void sc_start(void) {
  __atomic_store_n(&listener, -1, __ATOMIC_RELAXED);
  memset(calls, 0, sizeof calls);
  CHECK_EQ_I(pthread_create(&supervisor, NULL, supervise, NULL), 0);
  started = true;
}

bool sc_attach(void) {
  struct sock_filter all[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)};
  struct sock_fprog prog = {.len = 1, .filter = all};
  int fd = -1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    fd =
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  /* release: the supervisor reads the descriptor after it. */
  __atomic_store_n(&listener, fd >= 0 ? fd : -2, __ATOMIC_RELEASE);
  return fd >= 0;
}

void sc_enable(bool on) { __atomic_store_n(&enabled, on, __ATOMIC_RELEASE); }

uint64_t sc_calls(void) {
  uint64_t n = 0;
  for (unsigned i = 0; i <= NR_MAX; i++)
    n += __atomic_load_n(&calls[i], __ATOMIC_RELAXED);
  return n;
}

uint64_t sc_calls_of(long nr) {
  return nr >= 0 && nr < NR_MAX ? __atomic_load_n(&calls[nr], __ATOMIC_RELAXED) : 0;
}

void sc_stop(void) {
  if (!started) return;
  int expected = -1; /* never attached: let the supervisor go */
  __atomic_compare_exchange_n(&listener, &expected, -2, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
  CHECK_EQ_I(pthread_join(supervisor, NULL), 0);
  started = false;
}
