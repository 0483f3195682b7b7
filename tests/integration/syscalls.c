/* SPDX-License-Identifier: MIT */
/* Integration: no system call, no allocation and no lock on the fast path.
 *
 * A forked child initialises schedstm, warms up, then installs a seccomp
 * filter that traps (SECCOMP_RET_TRAP -> SIGSYS) every system call except
 * write, exit, exit_group and rt_sigreturn; a SIGSYS handler counts the
 * traps and records their numbers. Inside that window it runs 100000
 * conflict-free transactions (update, read-only hint, detected read-only,
 * inline and function forms, flat nesting) on one thread, with every
 * allocation counted (interposed in normal builds; under ASan/TSan through
 * the sanitizer allocator's hooks, tests/common/malloc_count.c). The child reports through a
 * pipe (write is allowed) and exits.
 *
 * The pthread lock entry points (mutex lock and trylock, spin lock) are
 * interposed and counted the same way: a conflict-free commit takes no
 * lock. (The stripe locks of an update commit are the STM's own versioned
 * words, acquired by CAS and never waited on here: there is no conflict.)
 *
 * Self-checks: a deliberate getpid(), a deliberate malloc() and a
 * deliberate pthread_mutex_lock() inside the window must be counted
 * (exactly one each), so a broken counting mechanism fails the test
 * instead of passing it.
 *
 * With --policy NAME the same window runs under that contention manager:
 * a commit that nobody waits for must make no system call whatever the
 * policy (ser-block, softser, os_prio, ... on their conflict-free path).
 *
 * With --state-table the library publishes the per-thread state table
 * (cfg.state_table, /dev/shm/schedstm.<pid>), whose entry every commit and
 * begin updates: still no system call. The child maps the table read-only
 * before the window, as sstm-top does, and checks after it that its entry's
 * commit count moved by exactly the window's transactions (the table was
 * written in the window, not merely present).
 *
 * usage: syscalls DESIGN [--txs N] [--policy NAME] [--state-table]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/lock_count.h"
#include "../common/malloc_count.h"
#include "common_int.h"
#include <schedstm/statetab.h> /* the table's layout */

#define MAXREC 32
struct report {
  long traps;
  long nr[MAXREC];
  long allocs;
  int malloc_counted;
  long locks;
  int locks_counted;
  uint64_t checksum, expect;
  uint64_t stt_commits; /* the table entry's commits over the window */
  int done;
};

static volatile long g_traps;
static volatile long g_nr[MAXREC];

static void on_sigsys(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)uc;
  long i = g_traps;
  if (i < MAXREC) g_nr[i] = si->si_syscall;
  g_traps = i + 1;
}

static int install_filter(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* ---- the workload --------------------------------------------------------- */

static uint64_t words[64][8] __attribute__((aligned(64)));
static uint64_t checksum;

struct upd {
  unsigned i;
};
static void upd_fn(void *p) {
  unsigned i = ((struct upd *)p)->i;
  uint64_t a = sstm_load_u64(&words[i][0]);
  uint64_t b = sstm_load_u64(&words[(i + 1) % 64][0]);
  sstm_store_u64(&words[i][0], a + 1);
  sstm_store_u64(&words[i][1], b);
  uint32_t h = sstm_load_u32((const uint32_t *)(void *)&words[i][2]);
  sstm_store_u32((uint32_t *)(void *)&words[i][2], h + 1);
}
static void ro_fn(void *p) {
  uint64_t *sum = p;
  for (unsigned k = 0; k < 8; k++)
    *sum += sstm_load_u64(&words[(k * 7) % 64][0]);
}
static void nested_fn(void *p) {
  struct upd *u = p;
  CHECK_OK(sstm_run(NULL, upd_fn, u));
}

static void one_tx(unsigned n) {
  struct upd u = {n % 64};
  sstm_attr_t ro = {.read_only = true};
  uint64_t sum = 0;
  switch (n % 5) {
  case 0: CHECK_OK(sstm_run(NULL, upd_fn, &u)); break;
  case 1: CHECK_OK(sstm_run(&ro, ro_fn, &sum)); break;
  case 2: CHECK_OK(sstm_run(NULL, ro_fn, &sum)); break;
  case 3:
    SSTM_ATOMIC_BEGIN(NULL)
      sstm_store_u64(&words[u.i][3], sstm_load_u64(&words[u.i][3]) + 1);
    SSTM_ATOMIC_END()
    ;
    break;
  default: CHECK_OK(sstm_run(NULL, nested_fn, &u)); break;
  }
  checksum += sum;
}

static uint64_t expected_words_sum(void) {
  uint64_t s = 0;
  for (unsigned i = 0; i < 64; i++)
    s += words[i][0] + words[i][3];
  return s;
}

/* The calling thread's entry of this process's state table, mapped
 * read-only as a reader in another process would: through the memfd's
 * link in /proc/self/fd (schedstm/statetab.h). */
static const sstm_stt_entry_t *stt_entry_of_self(void) {
  DIR *d = opendir("/proc/self/fd");
  CHECK_NOT_NULL(d);
  char path[300] = "";
  struct dirent *de;
  while (!path[0] && (de = readdir(d)) != NULL) {
    char link[128];
    ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = '\0';
    if (strcmp(link, SSTM_STT_FD_LINK) == 0)
      snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
  }
  closedir(d);
  CHECK_MSG(path[0], "no descriptor of this process links to %s", SSTM_STT_FD_LINK);
  int tfd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK_MSG(tfd >= 0, "cannot open the state table at %s", path);
  struct stat st;
  CHECK_EQ_I(fstat(tfd, &st), 0);
  const void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, tfd, 0);
  CHECK_TRUE(map != MAP_FAILED);
  close(tfd);
  const sstm_stt_header_t *h = map;
  CHECK_EQ_U(h->magic, SSTM_STT_MAGIC);
  unsigned slot = sstm_desc_slot(sstm_self());
  CHECK_LT_U(slot, h->nentries);
  const sstm_stt_entry_t *e =
      (const sstm_stt_entry_t *)(const void *)((const char *)map + h->header_size +
                                               (size_t)slot * h->entry_size);
  CHECK_EQ_I(e->tid, (int)gettid());
  return e;
}

static void child(int fd, sstm_design_t design, long ntx, const char *policy, bool table) {
  static struct report rep;
  sstm_config_t c;
  int_config(&c, design, policy);
  c.state_table = table;
  CHECK_OK(sstm_init(&c));
  if (policy) CHECK_EQ_PTR(sstm_cm_current(), sstm_cm_find(policy));
  CHECK_OK(sstm_thread_init());
  for (unsigned n = 0; n < 20000; n++) /* warm-up: logs, caches, lazy binding */
    one_tx(n);
  uint64_t before = expected_words_sum();
  const sstm_stt_entry_t *entry = table ? stt_entry_of_self() : NULL;
  uint64_t stt_before = entry ? __atomic_load_n(&entry->commits, __ATOMIC_RELAXED) : 0;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  CHECK_EQ_I(sigaction(SIGSYS, &sa, NULL), 0);
  void *(*volatile do_malloc)(size_t) = malloc;
  void (*volatile do_free)(void *) = free;

  static pthread_mutex_t canary_lock = PTHREAD_MUTEX_INITIALIZER;
  mc_reset();
  mc_enable(true);
  lc_reset();
  lc_enable(true);
  if (install_filter() != 0) {
    rep.traps = -1;
    goto report;
  }
  /* ---- window: only the two deliberate calls may be counted ---- */
  syscall(SYS_getpid);
  /* (under a sanitizer its allocator might itself make a system call) */
  void *canary = mc_available() ? do_malloc(24) : NULL;
  pthread_mutex_lock(&canary_lock); /* uncontended: no system call */
  pthread_mutex_unlock(&canary_lock);
  for (long n = 0; n < ntx; n++)
    one_tx((unsigned)n);
  if (canary) do_free(canary);
  /* ---- end of window ---- */
  mc_enable(false);
  lc_enable(false);
  rep.traps = g_traps;
  for (int i = 0; i < MAXREC; i++)
    rep.nr[i] = g_nr[i];
  rep.allocs = (long)mc_allocs();
  rep.malloc_counted = mc_available();
  rep.locks = (long)lc_locks();
  rep.locks_counted = lc_available();
  if (entry) rep.stt_commits = __atomic_load_n(&entry->commits, __ATOMIC_RELAXED) - stt_before;
  /* 1/5 of the txs add 1 to words[i][0], 1/5 to words[i][3], 1/5 (nested)
   * to words[i][0] again */
  rep.checksum = expected_words_sum() - before;
  {
    uint64_t e = 0;
    for (long n = 0; n < ntx; n++)
      if (n % 5 == 0 || n % 5 == 3 || n % 5 == 4) e++;
    rep.expect = e;
  }
  rep.done = 1;
report:;
  const char *p = (const char *)&rep;
  size_t left = sizeof rep;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) break;
    p += w;
    left -= (size_t)w;
  }
  syscall(SYS_exit_group, 0);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DESIGN [--txs N] [--policy NAME] [--state-table]\n", argv[0]);
    return 2;
  }
  const char *policy = int_opt_str(argc, argv, "--policy", NULL);
  bool table = int_flag(argc, argv, "--state-table");
  char name[128];
  snprintf(name, sizeof name, "syscalls.%s", argv[1]);
  int_name_policy(name, sizeof name, policy);
  if (table) strncat(name, ".state_table", sizeof name - strlen(name) - 1);
  sstm_test_setup(name, argc, argv);
#ifdef SSTM_TEST_RANDOM_DELAY
  sstm_test_skip("the random-delay build sleeps and yields inside the engine");
#endif
  sstm_design_t design = int_parse_design(argv[1]);
  long ntx = int_opt(argc, argv, "--txs", 100000);
  int pfd[2];
  CHECK_EQ_I(pipe(pfd), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = sstm_test_fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) {
    close(pfd[0]);
    child(pfd[1], design, ntx, policy, table);
    _exit(99);
  }
  close(pfd[1]);
  struct report rep;
  memset(&rep, 0, sizeof rep);
  size_t got = 0;
  while (got < sizeof rep) {
    ssize_t r = read(pfd[0], (char *)&rep + got, sizeof rep - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int st;
  CHECK_EQ_I(waitpid(pid, &st, 0), pid);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: status 0x%x", st);
  CHECK_EQ_U(got, sizeof rep);
  CHECK_MSG(rep.traps >= 0, "could not install the seccomp filter");
  CHECK_TRUE(rep.done);
  CHECK_EQ_U(rep.checksum, rep.expect); /* the transactions really ran */
  if (rep.traps != 1) {
    char list[512] = "";
    size_t off = 0;
    for (long i = 0; i < rep.traps && i < MAXREC; i++)
      off += (size_t)snprintf(list + off, sizeof list - off, " %ld", rep.nr[i]);
    FAIL("%ld system calls in the window (expected exactly 1, the deliberate getpid = %d); "
         "numbers:%s",
         rep.traps, (int)SYS_getpid, list);
  }
  CHECK_EQ_I(rep.nr[0], SYS_getpid);
  if (rep.malloc_counted) {
    CHECK_MSG(rep.allocs == 1,
              "%ld allocations in the window (expected exactly 1, the deliberate malloc)",
              rep.allocs);
  } else {
    printf("note: allocation counting unavailable in this build (sanitizer owns malloc)\n");
  }
  if (rep.locks_counted) {
    CHECK_MSG(rep.locks == 1,
              "%ld pthread lock calls in the window (expected exactly 1, the deliberate one)",
              rep.locks);
  } else {
    printf("note: lock counting unavailable in this build (sanitizer owns pthread)\n");
  }
  if (table) CHECK_EQ_U(rep.stt_commits, (uint64_t)ntx); /* the table was written */
  printf("PASS %s: %ld transactions, no system call, %s, %s\n", name, ntx,
         rep.malloc_counted ? "no allocation" : "allocations not counted",
         rep.locks_counted ? "no lock" : "locks not counted");
  return 0;
}
