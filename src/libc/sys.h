/* SPDX-License-Identifier: MIT */
/* The system calls of the transactional stdio (src/libc/stdio.c), through
 * a table that tests replace to inject faults (ENOSPC, EINTR, short
 * writes: tests/internal/libc_faults.c; pipes and sockets:
 * tests/internal/libc_pipes.c). Nothing else uses it. A plain
 * pointer, read at each call: tests set it while no stream operation
 * runs. */
#ifndef SSTM_LIBC_SYS_H
#define SSTM_LIBC_SYS_H

#include <poll.h>
#include <sys/stat.h>
#include <sys/types.h>

typedef struct sstm__stdio_sys {
  ssize_t (*pread)(int fd, void *buf, size_t n, off_t off);
  ssize_t (*pwrite)(int fd, const void *buf, size_t n, off_t off);
  ssize_t (*read)(int fd, void *buf, size_t n);
  ssize_t (*write)(int fd, const void *buf, size_t n);
  off_t (*lseek)(int fd, off_t off, int whence);
  int (*fstat)(int fd, struct stat *st);
  int (*ftruncate)(int fd, off_t len);
  int (*poll)(struct pollfd *fds, nfds_t n, int timeout); /* a byte stream's wait for data (S6) */
} sstm__stdio_sys_t;

/* The table in use (the C library's functions by default). */
extern const sstm__stdio_sys_t *sstm__stdio_sys;
/* The default table, for tests that wrap it. */
extern const sstm__stdio_sys_t sstm__stdio_sys_default;

#endif /* SSTM_LIBC_SYS_H */
