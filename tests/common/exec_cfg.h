/* SPDX-License-Identifier: MIT */
/* schedstm tests: the executor configuration the tests start from, so
 * that a field added to sstm_exec_config_t gets its default in every test
 * that creates an executor. */
#ifndef SSTM_TEST_EXEC_CFG_H
#define SSTM_TEST_EXEC_CFG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/exec.h>

#include "check.h"

/* The defaults (sstm_exec_config_default) without the environment, 64 KiB
 * context stacks, and the given pool, priority levels (0 keeps the
 * default) and preemption mode. */
static inline sstm_exec_config_t sstm_test_exec_config(unsigned workers, unsigned contexts,
                                                       unsigned levels,
                                                       sstm_exec_preempt_t preempt) {
  sstm_exec_config_t c;
  sstm_exec_config_default(&c);
  c.use_env = false;
  c.workers = workers;
  c.contexts = contexts;
  c.stack_kb = 64;
  if (levels) c.levels = levels;
  c.preempt = preempt;
  return c;
}

/* One of the executor's counters, read from its description
 * (sstm_exec_describe's " key=N"); the check fails when the description
 * has no such key. */
static inline uint64_t sstm_test_exec_counter(sstm_exec_t *ex, const char *key) {
  char buf[1024], k[64];
  sstm_exec_describe(ex, buf, sizeof buf);
  snprintf(k, sizeof k, " %s=", key);
  const char *p = strstr(buf, k);
  CHECK_NOT_NULL(p);
  return strtoull(p + strlen(k), NULL, 10);
}

#endif
