/* SPDX-License-Identifier: MIT */
/* Helpers of the transactional stdio's randomized tests (libc_stress.c,
 * libc_faults_rw.c): a file's bytes, and the committed transactions' logs
 * in their serial order. */
#ifndef SSTM_TESTS_LIBC_MODEL_H
#define SSTM_TESTS_LIBC_MODEL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner.h"

/* The file's bytes in *out (to free, NUL-terminated); returns their count. */
static inline size_t read_file(const char *path, char **out) {
  int fd = open(path, O_RDONLY);
  CHECK_GE_I(fd, 0);
  off_t n = lseek(fd, 0, SEEK_END);
  CHECK_GE_I(n, 0);
  char *b = malloc((size_t)n + 1);
  CHECK_NOT_NULL(b);
  CHECK_EQ_I(pread(fd, b, (size_t)n, 0), n);
  close(fd);
  b[n] = 0;
  *out = b;
  return (size_t)n;
}

/* The logs that threads 0..threads-1 kept of their committed
 * transactions (nlogs[t] records of `size` bytes from logs[t], each
 * beginning with its uint64_t place in the serial order) as one array in
 * that order (to free): there are `committed` of them, and their places
 * are 0..committed-1, each once (no gap, no duplicate). */
static inline void **by_commit_order(const void *const *logs, const unsigned *nlogs,
                                     unsigned threads, size_t size, uint64_t committed) {
  uint64_t total = 0;
  for (unsigned t = 0; t < threads; t++)
    total += nlogs[t];
  CHECK_EQ_U(total, committed);
  void **by = calloc(total + 1, sizeof *by);
  CHECK_NOT_NULL(by);
  for (unsigned t = 0; t < threads; t++)
    for (unsigned i = 0; i < nlogs[t]; i++) {
      char *l = (char *)(uintptr_t)logs[t] + (size_t)i * size;
      uint64_t ord;
      memcpy(&ord, l, sizeof ord);
      CHECK_MSG(ord < total && by[ord] == NULL,
                "thread %u's transaction %u has place %llu in the serial order of %llu: a gap "
                "or a duplicate",
                t, i, (unsigned long long)ord, (unsigned long long)total);
      by[ord] = l;
    }
  return by;
}

#endif /* SSTM_TESTS_LIBC_MODEL_H */
