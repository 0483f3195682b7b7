/* SPDX-License-Identifier: MIT */
/* Thread mapping across fork(). The child of a process that has run
 * sstm_init may call no schedstm function (schedstm/schedstm.h); this
 * checks that the most common way of doing it anyway (a fork soon after
 * sstm_init, no other thread in the library) does not crash the child,
 * and that the parent goes on unharmed. stmap and detect load the
 * machine's topology in a thread of the library's own (a cache miss, more
 * than one CPU allowed), which the first evaluation and sstm_shutdown()
 * join. A child forked while that thread runs has no such thread: joining
 * it there returned at once, and the child installed the topology the
 * thread never loaded (NULL): its first evaluation (stmap) or description
 * (detect) crashed on it. The child loads the topology itself instead.
 * The loader is held in the seam sstm__map_loader_seam
 * (iface/map_runtime.h) until the child has been forked, so the
 * interleaving is certain; a child that hangs is failed by the runner's
 * watchdog, and dies with its parent (PR_SET_PDEATHSIG).
 *
 * A mutation that fails it: runtime.c's fork_child not marking the loader
 * lost (the child joins it as above, and crashes: SIGSEGV).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <schedstm/map.h>

#include "iface/map_runtime.h"

#include "../common/txhelp.h"

static sem_t entered, go;

static void hold_loader(void) {
  sem_post(&entered);
  while (sem_wait(&go) != 0) {
  }
}

static unsigned allowed_cpus(void) {
  cpu_set_t s;
  CHECK_EQ_I(sched_getaffinity(0, sizeof s, &s), 0);
  return (unsigned)CPU_COUNT(&s);
}

/* The child: an evaluation (stmap's needs the topology) and a shutdown,
 * each of which joined the lost loader; its exit status says how it went
 * (0: both returned, and stmap's topology loaded). */
static int child(sstm_map_strategy_t s) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int rc = sstm_map_evaluate();
  if (rc < 0) return 10;
  /* stmap's evaluation waits for the topology; detect's only reports it
   * (a load may still run: sstm_shutdown waits for it). */
  char d[2048];
  sstm_describe(d, sizeof d);
  if (s == SSTM_MAP_STRATEGY_STMAP && strstr(d, "map-topo-from=\"hwloc\"") == NULL) return 11;
  sstm_map_stats_t st;
  if (sstm_map_stats_get(&st) != 0 || st.strategy != s) return 12;
  if (sstm_shutdown() != 0) return 13;
  return 0;
}

static void fork_while_loading(sstm_map_strategy_t s) {
  if (allowed_cpus() < 2) sstm_test_skip("one CPU allowed: the topology loads in sstm_init");
  CHECK_EQ_I(sem_init(&entered, 0, 0), 0);
  CHECK_EQ_I(sem_init(&go, 0, 0), 0);
  sstm__map_loader_seam = hold_loader;
  sstm_config_t c;
  sstm_test_config(&c);
  c.map = s;
  c.map_topo_cache = ""; /* no cache: hwloc, in the loader thread */
  c.map_mi = SSTM_MAP_MI_MAX;
  CHECK_OK(sstm_init(&c));
  while (sem_wait(&entered) != 0) {
  }
  /* The loader is in the seam: it has loaded nothing. */
  pid_t pid = fork();
  CHECK_GE_I(pid, 0);
  if (pid == 0) _exit(child(s));
  sem_post(&go);
  int status = 0;
  CHECK_EQ_I(waitpid(pid, &status, 0), pid);
  CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: %s %d",
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  /* The parent's loader went on: its evaluation joins it. */
  CHECK_GE_I(sstm_map_evaluate(), 0);
  CHECK_OK(sstm_shutdown());
  sstm__map_loader_seam = NULL;
  sem_destroy(&entered);
  sem_destroy(&go);
}

TEST(a_child_forked_while_the_topology_loads_loads_it_itself_stmap) {
  fork_while_loading(SSTM_MAP_STRATEGY_STMAP);
}

TEST(a_child_forked_while_the_topology_loads_loads_it_itself_detect) {
  fork_while_loading(SSTM_MAP_STRATEGY_DETECT);
}

SSTM_TEST_MAIN()
