/* SPDX-License-Identifier: MIT */
/* The transactional stdio's system calls fail (src/libc/sys.h, the seam):
 * ENOSPC in the middle of a committed batch, EINTR and short writes, a
 * failing read. Errors must be reported with their errno, and a batch
 * that fails must leave none of its bytes in the file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libc/esc.h"
#include "libc/sys.h"
#include "runner.h"

static char path[64];

static struct {
  int pwrite_calls;
  int fail_at;     /* pwrite call number that fails (after a partial write) */
  int fail_errno;  /* its errno */
  int eintr_every; /* every Nth call of pwrite and pread returns EINTR */
  size_t chunk;    /* largest count one pwrite writes (short writes) */
  int pread_calls;
  int pread_errno;     /* pread fails with it */
  int pread_fail_from; /* ... from this pread call on (0: every call) */
  size_t rchunk;       /* largest count one pread returns (short reads) */
  int fstat_errno;     /* fstat fails with it */
  off_t below;         /* preads at an offset below it are counted in n_below */
  int n_below;
  int write_calls; /* write(2), a byte stream's */
  int wfail_at;    /* write call number that fails */
  int wfail_errno; /* its errno */
  size_t wchunk;   /* largest count one write writes */
} fi;

static ssize_t fi_pwrite(int fd, const void *b, size_t n, off_t off) {
  int call = ++fi.pwrite_calls;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    errno = EINTR;
    return -1;
  }
  if (fi.fail_at && call == fi.fail_at) {
    errno = fi.fail_errno;
    return -1;
  }
  if (fi.chunk && n > fi.chunk) n = fi.chunk;
  return pwrite(fd, b, n, off);
}

static ssize_t fi_write(int fd, const void *b, size_t n) {
  int call = ++fi.write_calls;
  if (fi.wfail_at && call == fi.wfail_at) {
    errno = fi.wfail_errno;
    return -1;
  }
  if (fi.wchunk && n > fi.wchunk) n = fi.wchunk;
  return write(fd, b, n);
}

static ssize_t fi_pread(int fd, void *b, size_t n, off_t off) {
  int call = ++fi.pread_calls;
  if (off < fi.below) fi.n_below++;
  if (fi.pread_errno && call >= fi.pread_fail_from) {
    errno = fi.pread_errno;
    return -1;
  }
  if (fi.rchunk && n > fi.rchunk) n = fi.rchunk;
  if (fi.eintr_every && call % fi.eintr_every == 0) {
    errno = EINTR;
    return -1;
  }
  return pread(fd, b, n, off);
}

static int fi_fstat(int fd, struct stat *st) {
  if (fi.fstat_errno) {
    errno = fi.fstat_errno;
    return -1;
  }
  return fstat(fd, st);
}

static sstm__stdio_sys_t fi_sys;

static void setup(void) {
  sstm_test_init();
  sstm__stdio_set_bufsize(4096); /* the cases' writes are sized against 4 KiB buffers */
  memset(&fi, 0, sizeof fi);
  fi_sys = sstm__stdio_sys_default;
  fi_sys.pwrite = fi_pwrite;
  fi_sys.pread = fi_pread;
  fi_sys.fstat = fi_fstat;
  fi_sys.write = fi_write;
  sstm__stdio_sys = &fi_sys;
  snprintf(path, sizeof path, "/tmp/sstm-faults-XXXXXX");
  int fd = mkstemp(path);
  CHECK_GE_I(fd, 0);
  static char a[100];
  memset(a, 'A', sizeof a);
  CHECK_EQ_I(write(fd, a, sizeof a), 100);
  close(fd);
}

static void teardown(void) {
  sstm__stdio_sys = &sstm__stdio_sys_default;
  unlink(path);
  sstm_test_fini();
}

static size_t contents(unsigned char *buf, size_t cap) {
  int fd = open(path, O_RDONLY);
  CHECK_GE_I(fd, 0);
  ssize_t n = pread(fd, buf, cap, 0);
  CHECK_GE_I(n, 0);
  close(fd);
  return (size_t)n;
}

static unsigned char big[12000];

/* After a write of f that failed with ENOSPC: the flush reports it, the
 * file holds its n bytes `was` again (the undo), and f closes. */
static void close_undone(sstm_file_t *f, const unsigned char *was, size_t n) {
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  static unsigned char buf[4096];
  CHECK_LT_U(n, sizeof buf);
  CHECK_EQ_U(contents(buf, sizeof buf), n);
  CHECK_EQ_MEM(buf, was, n);
  sstm_clearerr(f);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(f));
}

/* The file becomes n distinct bytes (letters, so that an undo from the
 * wrong place shows), also kept in was; returns it opened "r+". */
static sstm_file_t *open_letters(unsigned char *was, size_t n) {
  for (size_t i = 0; i < n; i++)
    was[i] = (unsigned char)('a' + i % 26);
  int fd = open(path, O_WRONLY);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I(pwrite(fd, was, n, 0), (ssize_t)n);
  close(fd);
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  return f;
}

/* The file opened with mode, unbuffered: each write leaves with its
 * commit, so that a call reports its own write's failure. */
static sstm_file_t *open_unbuffered(const char *mode) {
  sstm_file_t *f = sstm_fopen(path, mode);
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IONBF, 0));
  return f;
}

/* sstm_fputs("11", f) commits, and its write fails with ENOSPC once the
 * first '1' is in the file (one byte per pwrite, the second from now
 * fails): the call reports the failure. */
static void put_11_failing(sstm_file_t *f) {
  fi.chunk = 1;
  fi.fail_at = fi.pwrite_calls + 2;
  fi.fail_errno = ENOSPC;
  errno = 0;
  CHECK_EQ_I(sstm_fputs("11", f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
}

TEST(enospc_in_a_committed_batch_leaves_none_of_its_bytes) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  memset(big, 'B', sizeof big);
  fi.chunk = 1000; /* each pwrite writes 1000 bytes at most */
  fi.fail_at = 5;  /* 4000 bytes are in the file when it fails */
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 50, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fwrite(big, 1, 6000, f), 6000); /* overwrites 50..99, extends */
  SSTM_ATOMIC_END();
  CHECK_GE_I(fi.pwrite_calls, 5);
  CHECK_TRUE(sstm_ferror(f));
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_TRUE(sstm_ferror(f)); /* reported, still set */
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  for (int i = 0; i < 100; i++)
    CHECK_EQ_I(buf[i], 'A');
  sstm_clearerr(f);
  CHECK_FALSE(sstm_ferror(f));
  CHECK_OK(sstm_fflush(f));
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(f));
  teardown();
}

TEST(failed_batch_is_reported_by_fclose) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  memset(big, 'C', sizeof big);
  fi.fail_at = 1;
  fi.fail_errno = EIO;
  SSTM_ATOMIC_BEGIN(NULL)
    /* larger than a buffer: a record, written by the commit's action (a
     * call outside transactions would report it itself) */
    CHECK_EQ_U(sstm_fwrite(big, 1, 5000, f), 5000);
  SSTM_ATOMIC_END();
  errno = 0;
  CHECK_EQ_I(sstm_fclose(f), EOF);
  CHECK_EQ_I(errno, EIO);
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  teardown();
}

TEST(eintr_and_short_writes_are_retried) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (unsigned char)('a' + i % 26);
  fi.chunk = 777;
  fi.eintr_every = 3;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_U(sstm_fwrite(big, 1, sizeof big, f), sizeof big);
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_fflush(f));
  CHECK_FALSE(sstm_ferror(f));
  sstm_rewind(f);
  static unsigned char back[12000];
  CHECK_EQ_U(sstm_fread(back, 1, sizeof back, f), sizeof back); /* preads with EINTR */
  CHECK_EQ_MEM(back, big, sizeof big);
  CHECK_GT_I(fi.pread_calls, 3);
  CHECK_OK(sstm_fclose(f));
  unsigned char buf[sizeof big];
  CHECK_EQ_U(contents(buf, sizeof buf), sizeof big);
  CHECK_EQ_MEM(buf, big, sizeof big);
  teardown();
}

TEST(read_error_sets_the_error_indicator) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "r");
  CHECK_NOT_NULL(f);
  fi.pread_errno = EIO;
  errno = 0;
  CHECK_EQ_I(sstm_fgetc(f), EOF);
  CHECK_EQ_I(errno, EIO);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_FALSE(sstm_feof(f));
  CHECK_EQ_I(sstm_ftell(f), 0);
  fi.pread_errno = 0;
  sstm_clearerr(f);
  CHECK_EQ_I(sstm_fgetc(f), 'A');
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* A refill that fails half-way (a short pread, then EIO) has read some
 * bytes into the attempt's read buffer, which still holds the window it
 * was to replace: that window must not be used with those bytes. Here the
 * window is [0, 512) of a file of letters, the refill at 5001 gets 100
 * bytes before it fails, and the window is read again in the same
 * transaction and, once installed, by the next one. */
TEST(a_refill_that_fails_half_way_leaves_no_foreign_bytes_in_the_window) {
  setup();
  static unsigned char was[8000];
  sstm_file_t *f = open_letters(was, sizeof was);
  fi.rchunk = 100;
  static volatile int attempts;
  attempts = 0;
  unsigned char b[20];
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    fi.pread_errno = 0;
    CHECK_EQ_U(sstm_fread(b, 1, 10, f), 10); /* the window [0, 512), read 100 at a time */
    CHECK_EQ_MEM(b, was, 10);
    CHECK_EQ_I(sstm_fseek(f, 5001, SEEK_SET), 0);
    fi.pread_errno = EIO;
    fi.pread_fail_from = fi.pread_calls + 2; /* 100 bytes of 5001.., then EIO */
    errno = 0;
    CHECK_EQ_U(sstm_fread(b, 1, 10, f), 0);
    CHECK_EQ_I(errno, EIO);
    CHECK_TRUE(sstm_ferror(f));
    CHECK_EQ_I(sstm_ftell(f), 5001);
    fi.pread_errno = 0;
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(b, 1, 20, f), 20);
    CHECK_EQ_MEM(b, was, 20); /* not was + 5001 */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(attempts, 1);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(b, 1, 20, f), 20);
    CHECK_EQ_MEM(b, was, 20);
  SSTM_ATOMIC_END();
  CHECK_TRUE(sstm_ferror(f)); /* the read error committed */
  sstm_clearerr(f);
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* A read error inside a line: sstm_fgets returns NULL with errno, as
 * stdio.h says and as ISO C's fgets does (the array's contents are then
 * indeterminate), not the part of the line read before the error; the
 * position counts that part, as glibc's does. sstm_fread returns the
 * items read before it, sstm_fgetc EOF. Buffers of 16 bytes: the line's
 * first 16 bytes come from the window, the refill fails. */
TEST(a_read_error_inside_a_line_makes_fgets_return_null) {
  setup(); /* 100 'A', no newline */
  sstm_file_t *f = sstm_fopen(path, "r");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IOFBF, 16));
  char line[64];
  fi.pread_errno = EIO;
  fi.pread_fail_from = 2; /* the first refill works, the second fails */
  errno = 0;
  CHECK_NULL(sstm_fgets(line, sizeof line, f));
  CHECK_EQ_I(errno, EIO);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_EQ_I(sstm_ftell(f), 16);
  sstm_clearerr(f);
  CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
  fi.pread_fail_from = fi.pread_calls + 2;
  errno = 0;
  CHECK_EQ_U(sstm_fread(line, 1, 20, f), 16);
  CHECK_EQ_I(errno, EIO);
  CHECK_TRUE(sstm_ferror(f));
  sstm_clearerr(f);
  CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
  fi.pread_fail_from = fi.pread_calls + 1;
  errno = 0;
  CHECK_EQ_I(sstm_fgetc(f), EOF);
  CHECK_EQ_I(errno, EIO);
  CHECK_FALSE(sstm_feof(f));
  fi.pread_errno = 0;
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* What a reader sees after a failed ticket (docs/design/tm-libc.md (S4)):
 * a read that the kernel serves (pread) sees the file, without the lost
 * bytes; a read that the installed read window serves sees them while
 * that window stands. Here the failing ticket's transaction read back
 * what it wrote, so its window holds its record's bytes (S5), and its
 * commit installed that window before the ticket failed. A refill
 * elsewhere replaces it; after that the file's bytes are read. */
TEST(after_a_failed_ticket_its_transactions_window_still_shows_the_lost_bytes) {
  setup();
  unsigned char was[2000], b[20], buf[100];
  sstm_file_t *f = open_letters(was, sizeof was);
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = EIO;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fputs("xyz", f), 3);
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(b, 1, 20, f), 20); /* xyz becomes a record, laid over the refill */
    CHECK_EQ_MEM(b + 10, "xyz", 3);
  SSTM_ATOMIC_END();
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_EQ_U(contents(buf, sizeof buf), sizeof buf);
  CHECK_EQ_MEM(buf, was, sizeof buf); /* undone */
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(b, 1, 20, f), 20); /* the installed window [0, 512) */
    CHECK_EQ_MEM(b + 10, "xyz", 3);
  SSTM_ATOMIC_END();
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 1500, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(f), was[1500]); /* a refill replaces the window */
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(b, 1, 20, f), 20);
    CHECK_EQ_MEM(b, was, 20);
  SSTM_ATOMIC_END();
  fi.fail_at = 0;
  errno = 0;
  CHECK_EQ_I(sstm_fclose(f), EOF);
  CHECK_EQ_I(errno, EIO);
  teardown();
}

/* The installation reads the bytes a ticket's records overwrite before it
 * writes them (S4): when that pread fails (EIO), the ticket fails before
 * it writes anything, and the failure is reported as a write's. */
TEST(a_ticket_whose_undo_bytes_cannot_be_read_writes_nothing) {
  setup(); /* 100 'A' */
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fputs("xyz", f), 3);
  SSTM_ATOMIC_END();
  fi.pread_errno = EIO;
  fi.pread_fail_from = fi.pread_calls + 1;
  int writes = fi.pwrite_calls;
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF);
  CHECK_EQ_I(errno, EIO);
  CHECK_EQ_I(fi.pwrite_calls, writes); /* nothing written */
  CHECK_TRUE(sstm_ferror(f));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  for (int i = 0; i < 100; i++)
    CHECK_EQ_I(buf[i], 'A');
  fi.pread_errno = 0;
  sstm_clearerr(f);
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* SEEK_END takes the file's size with fstat (S5): when that fails, the
 * seek fails with its errno and changes nothing (the position, the
 * kernel's offset), inside a transaction that goes on and outside one. */
TEST(a_seek_to_the_end_whose_fstat_fails_changes_nothing) {
  setup(); /* 100 'A' */
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  CHECK_EQ_I(sstm_fseek(f, 30, SEEK_SET), 0);
  fi.fstat_errno = EIO;
  errno = 0;
  CHECK_EQ_I(sstm_fseek(f, -10, SEEK_END), -1);
  CHECK_EQ_I(errno, EIO);
  CHECK_EQ_I(sstm_ftell(f), 30);
  CHECK_EQ_I(lseek(sstm_fileno(f), 0, SEEK_CUR), 30);
  SSTM_ATOMIC_BEGIN(NULL)
    fi.fstat_errno = EIO;
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_END), -1);
    CHECK_EQ_I(sstm_ftell(f), 30);
    CHECK_EQ_I(sstm_fgetc(f), 'A');
    fi.fstat_errno = 0;
    CHECK_EQ_I(sstm_fseek(f, -10, SEEK_END), 0);
    CHECK_EQ_I(sstm_ftell(f), 90);
  SSTM_ATOMIC_END();
  CHECK_EQ_I(sstm_ftell(f), 90);
  CHECK_EQ_I(lseek(sstm_fileno(f), 0, SEEK_CUR), 90);
  CHECK_FALSE(sstm_ferror(f));
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* An unbuffered stream writes at every commit: a write that fails there
 * (ENOSPC) leaves none of its bytes, is reported (a transaction's: by the
 * next flush), and the earlier and later commits' bytes stay. */
TEST(unbuffered_stream_reports_the_failing_commit_only) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IONBF, 0));
  fi.fail_at = 2;
  fi.fail_errno = ENOSPC;
  CHECK_EQ_I(sstm_fputc('1', f), '1');
  CHECK_FALSE(sstm_ferror(f));
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_U(sstm_fwrite("22", 1, 2, f), 2); /* committed, then its pwrite fails */
  SSTM_ATOMIC_END();
  CHECK_TRUE(sstm_ferror(f));
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  sstm_clearerr(f);
  CHECK_EQ_U(sstm_fwrite("33", 1, 2, f), 2);
  CHECK_FALSE(sstm_ferror(f));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 103);
  CHECK_EQ_MEM(buf + 100, "133", 3);
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* Tickets after a failed one (docs/design/tm-libc.md (S4)): on a stream
 * that writes at its offsets ("r+"), a later ticket's bytes go where its
 * transaction put them, past the failed ticket's, which leaves a hole of
 * zeros (the file was cut back to its size before that ticket); the
 * position counts the lost bytes. */
TEST(a_ticket_after_a_failed_one_keeps_its_offset) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IONBF, 0));
  CHECK_EQ_I(sstm_fseek(f, 100, SEEK_SET), 0);
  fi.chunk = 1;   /* one byte per pwrite */
  fi.fail_at = 2; /* '1' is in the file when it fails */
  fi.fail_errno = ENOSPC;
  errno = 0;
  CHECK_EQ_I(sstm_fputs("11", f), EOF); /* committed, then its write fails: it reports it */
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_TRUE(sstm_ferror(f));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  CHECK_EQ_I(sstm_fputs("22", f), 2);
  CHECK_EQ_I(sstm_ftell(f), 104);
  CHECK_EQ_U(contents(buf, sizeof buf), 104);
  CHECK_EQ_MEM(buf + 100,
               "\0\0"
               "22",
               4);
  CHECK_OK(sstm_fflush(f)); /* reported by the call */
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* On an O_APPEND stream the kernel puts every write at the end: the
 * ticket after a failed one follows the file's last byte, and a second
 * failure cuts the file back to its real size (the lengths written), not
 * to the append position, which counts the bytes lost. */
TEST(a_second_failure_on_an_append_stream_leaves_none_of_its_bytes) {
  setup();
  sstm_file_t *f = open_unbuffered("a");
  put_11_failing(f);                  /* its own write failed */
  CHECK_EQ_I(sstm_fputs("22", f), 2); /* calls 3 and 4 */
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 102);
  CHECK_EQ_MEM(buf + 100, "22", 2);
  CHECK_OK(sstm_fflush(f)); /* reported by the call */
  sstm_clearerr(f);
  fi.fail_at = fi.pwrite_calls + 2; /* '3' is in the file when it fails */
  errno = 0;
  CHECK_EQ_I(sstm_fputs("333", f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_EQ_U(contents(buf, sizeof buf), 102);
  CHECK_EQ_MEM(buf + 100, "22", 2);
  fi.fail_at = 0;
  CHECK_EQ_I(sstm_fputs("44", f), 2);
  CHECK_EQ_U(contents(buf, sizeof buf), 104);
  CHECK_EQ_MEM(buf + 100, "2244", 4);
  CHECK_OK(sstm_fclose(f)); /* reported by the call */
  teardown();
}

/* Another writer of the file (here a second stream, flushed) appended
 * after f was opened: f's failing ticket is cut back to the file's size
 * before it, not to the size f knew, which would take the other writer's
 * committed bytes with it. */
TEST(a_failing_append_leaves_what_another_writer_appended) {
  setup();
  sstm_file_t *f = open_unbuffered("a");
  sstm_file_t *g = sstm_fopen(path, "a");
  CHECK_NOT_NULL(g);
  CHECK_EQ_I(sstm_fputs("GGGG", g), 4);
  CHECK_OK(sstm_fflush(g));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 104);
  put_11_failing(f);
  CHECK_EQ_U(contents(buf, sizeof buf), 104);
  CHECK_EQ_MEM(buf + 100, "GGGG", 4);
  fi.fail_at = 0;
  CHECK_EQ_I(sstm_fputs("22", f), 2);
  CHECK_EQ_U(contents(buf, sizeof buf), 106);
  CHECK_EQ_MEM(buf + 100, "GGGG22", 6);
  CHECK_OK(sstm_fclose(g));
  CHECK_OK(sstm_fclose(f)); /* reported by the call */
  teardown();
}

/* Another writer extended the file after f was opened: f's failing write
 * over those bytes puts them back, and the file keeps its size (f's
 * ticket overwrote bytes there, it did not extend the file). */
TEST(a_failing_write_past_the_known_end_leaves_what_another_writer_wrote) {
  setup();
  sstm_file_t *f = open_unbuffered("r+");
  unsigned char o[100];
  memset(o, 'O', sizeof o);
  int fd = open(path, O_WRONLY);
  CHECK_GE_I(fd, 0);
  CHECK_EQ_I(pwrite(fd, o, sizeof o, 100), 100);
  close(fd);
  CHECK_EQ_I(sstm_fseek(f, 150, SEEK_SET), 0);
  put_11_failing(f);
  unsigned char buf[300];
  CHECK_EQ_U(contents(buf, sizeof buf), 200);
  CHECK_EQ_MEM(buf + 100, o, 100);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(f)); /* reported by the call */
  teardown();
}

/* Line buffering through short writes and EINTR: each line is in the file
 * whole once its call returns. */
TEST(line_buffered_lines_survive_short_writes_and_eintr) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IOLBF, 64));
  fi.chunk = 3;
  fi.eintr_every = 2;
  char line[80];
  unsigned char buf[4096];
  size_t want = 100;
  for (int i = 0; i < 20; i++) {
    int n = snprintf(line, sizeof line, "line %d of twenty, padded %*s\n", i, i, "");
    CHECK_EQ_I(sstm_fputs(line, f), n);
    want += (size_t)n;
    CHECK_EQ_U(contents(buf, sizeof buf), want);
    CHECK_EQ_MEM(buf + want - (size_t)n, line, (size_t)n);
  }
  CHECK_FALSE(sstm_ferror(f));
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* A write that begins its buffer inside the read window keeps the bytes it
 * overwrites from the window (docs/design/tm-libc.md (S4)): the record's
 * installation reads nothing, and a write that fails half-way still puts
 * the file's bytes back. */
TEST(an_overwrite_in_the_read_window_is_undone_from_the_window) {
  setup();
  unsigned char was[100];
  sstm_file_t *f = open_letters(was, sizeof was);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(f), was[10]);  /* the window: [10, 100) */
    CHECK_EQ_I(sstm_fputs("xyz", f), 3); /* 11..13, buffered */
  SSTM_ATOMIC_END();
  fi.below = 60;                    /* the refill reads at 60, the record's bytes are at 11 */
  fi.chunk = 1;                     /* one byte per pwrite */
  fi.fail_at = fi.pwrite_calls + 2; /* 'x' is in the file when it fails */
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 60, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(f), was[60]); /* xyz becomes a record; a refill */
  SSTM_ATOMIC_END();
  CHECK_EQ_I(fi.n_below, 0); /* the refill's only, none for the record */
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  close_undone(f, was, sizeof was);
  teardown();
}

static sstm_file_t *g_f;

static void *overwrite_11(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(g_f, 11, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fputs("QQQ", g_f), 3); /* xyz leaves; QQQ stays buffered */
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

/* The window's bytes kept for a write buffer are the file's only while no
 * other acquisition changed the stream: here another thread's commit
 * writes there, so the undo of the record made from the buffer it left
 * must come from the file (xyz), not from this thread's window (AAA). */
TEST(window_bytes_are_not_used_once_another_thread_wrote_there) {
  setup();
  g_f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(g_f);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(g_f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(g_f), 'A');
    CHECK_EQ_I(sstm_fputs("xyz", g_f), 3);
  SSTM_ATOMIC_END();
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, overwrite_11, NULL), 0);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  CHECK_EQ_MEM(buf + 11, "xyz", 3);
  fi.chunk = 1;
  fi.fail_at = fi.pwrite_calls + 2; /* 'Q' is in the file when it fails */
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(g_f, 60, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(g_f), 'A'); /* QQQ becomes a record */
  SSTM_ATOMIC_END();
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  errno = 0;
  CHECK_EQ_I(sstm_fflush(g_f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  CHECK_EQ_MEM(buf + 11, "xyz", 3);
  for (int i = 0; i < 100; i++)
    if (i < 11 || i >= 14) CHECK_EQ_I(buf[i], 'A');
  sstm_clearerr(g_f);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* After a failed ticket, the installed read window may still show its
 * lost bytes (a read-back's, docs/design/tm-libc.md (S4), "Readers after a
 * failed ticket"): a write buffer that begins there must not take them as
 * the file's bytes under it, or the undo of its own failing ticket writes
 * the lost bytes back into the file. */
TEST(a_failed_tickets_bytes_in_the_window_are_not_an_undo) {
  setup();
  unsigned char was[100];
  sstm_file_t *f = open_letters(was, sizeof was);
  fi.fail_at = fi.pwrite_calls + 1; /* the read-back's ticket writes nothing */
  fi.fail_errno = ENOSPC;
  unsigned char back[50];
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fputs("XXXX", f), 4);
    CHECK_EQ_I(sstm_fseek(f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fread(back, 1, sizeof back, f), sizeof back); /* the window shows XXXX */
  SSTM_ATOMIC_END();
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  CHECK_EQ_MEM(buf, was, sizeof was);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fputs("YY", f), 2); /* a buffer that begins in the window */
  SSTM_ATOMIC_END();
  fi.chunk = 1;
  fi.fail_at = fi.pwrite_calls + 2; /* the first 'Y' is in the file when it fails */
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  CHECK_EQ_MEM(buf, was, sizeof was);
  sstm_clearerr(f);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* A write buffer that begins in the read window and runs past its end: the
 * window holds the undo bytes of its first part only, so the installation
 * must read the rest from the file. Here the window is [10, 522) (a refill
 * after a seek), the buffer [11, 1011) over a 2000-byte file, and the
 * write fails after 600 bytes: every byte must be as it was. */
TEST(an_overwrite_that_runs_past_the_read_window_is_undone_from_the_file) {
  setup();
  static unsigned char was[2000], mine[1000];
  sstm_file_t *f = open_letters(was, sizeof was);
  for (int i = 0; i < 1000; i++)
    mine[i] = (unsigned char)('0' + i % 10);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 10, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(f), was[10]);
    CHECK_EQ_U(sstm_fwrite(mine, 1, sizeof mine, f), sizeof mine); /* 11..1010, buffered */
  SSTM_ATOMIC_END();
  fi.chunk = 1;                       /* one byte per pwrite */
  fi.fail_at = fi.pwrite_calls + 601; /* 600 bytes, to 610, are in the file */
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(f, 1500, SEEK_SET), 0);
    CHECK_EQ_I(sstm_fgetc(f), was[1500]); /* the buffer becomes a record */
  SSTM_ATOMIC_END();
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  close_undone(f, was, sizeof was);
  teardown();
}

/* sstm_fflush outside a transaction returns only once every byte that a
 * committed transaction wrote through the stream is in the kernel
 * (include/schedstm/stdio.h), also another thread's whose commit action
 * is still writing. Here that thread's pwrite stalls until the flush
 * returns or 300 ms pass: a flush that returned meanwhile broke the rule
 * (a kill -9 then would lose committed bytes). */
static struct { atomic_int in_pwrite, flushed, early; } st;
static __thread bool st_writer; /* this thread commits the record */

static ssize_t stall_pwrite(int fd, const void *b, size_t n, off_t off) {
  if (st_writer && atomic_exchange_explicit(&st.in_pwrite, 1, memory_order_seq_cst) == 0) {
    for (int i = 0; i < 300; i++) {
      if (atomic_load_explicit(&st.flushed, memory_order_seq_cst)) {
        atomic_store_explicit(&st.early, 1, memory_order_seq_cst);
        break;
      }
      usleep(1000);
    }
  }
  return pwrite(fd, b, n, off);
}

static void *commit_big(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  st_writer = true;
  static unsigned char rec[6000];
  memset(rec, 'W', sizeof rec);
  SSTM_ATOMIC_BEGIN(NULL)
    /* larger than a buffer: a record, written by the commit's action */
    CHECK_EQ_U(sstm_fwrite(rec, 1, sizeof rec, g_f), sizeof rec);
  SSTM_ATOMIC_END();
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(fflush_waits_for_the_writes_of_other_threads_commits) {
  setup();
  memset(&st, 0, sizeof st);
  fi_sys.pwrite = stall_pwrite;
  g_f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(g_f);
  pthread_t writer;
  CHECK_EQ_I(pthread_create(&writer, NULL, commit_big, NULL), 0);
  while (!atomic_load_explicit(&st.in_pwrite, memory_order_seq_cst))
    usleep(100);
  CHECK_OK(sstm_fflush(g_f));
  atomic_store_explicit(&st.flushed, 1, memory_order_seq_cst);
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), sizeof buf);
  CHECK_EQ_I(buf[0], 'W'); /* in the file when the flush returned */
  CHECK_EQ_I(pthread_join(writer, NULL), 0);
  CHECK_EQ_I(atomic_load_explicit(&st.early, memory_order_seq_cst), 0);
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* The error indicator stays set from the failure on (docs/design/tm-libc.md
 * (S4)), also while another thread's sstm_fflush takes the pending error
 * to report it. That flush is stopped at the start of its second
 * transaction (a tx_begin hook on its thread): after it took werr in
 * earlier builds, which set the indicator only in that transaction, so
 * that sstm_ferror said 0 there. */
static struct { atomic_int begins, stopped, go, done; } fs;
static __thread bool fs_flusher;

static void fs_begin(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (!fs_flusher || atomic_fetch_add_explicit(&fs.begins, 1, memory_order_relaxed) != 1) return;
  /* seq_cst: the main thread's loop reads stopped, then checks ferror */
  atomic_store_explicit(&fs.stopped, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&fs.go, memory_order_seq_cst))
    usleep(100);
}

static void *flush_reports(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  fs_flusher = true;
  errno = 0;
  CHECK_EQ_I(sstm_fflush(g_f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  fs_flusher = false;
  atomic_store_explicit(&fs.done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(ferror_stays_set_while_another_thread_flushes_the_error) {
  setup();
  g_f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(g_f);
  CHECK_OK(sstm_setvbuf(g_f, NULL, _IONBF, 0));
  fi.fail_at = 1;
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    /* committed, then its write fails: the stream's pending report (a
     * call outside transactions would report its own) */
    CHECK_EQ_I(sstm_fputs("11", g_f), 2);
  SSTM_ATOMIC_END();
  CHECK_TRUE(sstm_ferror(g_f));
  memset(&fs, 0, sizeof fs);
  static const sstm_hooks_t hooks = {.tx_begin = fs_begin};
  int h = sstm_hooks_add(&hooks, NULL);
  CHECK_GE_I(h, 0);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, flush_reports, NULL), 0);
  /* bounded by the flush: its second transaction begins, or it returns */
  while (!atomic_load_explicit(&fs.stopped, memory_order_seq_cst)) {
    CHECK_MSG(!atomic_load_explicit(&fs.done, memory_order_seq_cst),
              "the flush returned after one transaction");
    usleep(100);
  }
  CHECK_TRUE(sstm_ferror(g_f));
  atomic_store_explicit(&fs.go, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(sstm_hooks_remove(h));
  CHECK_TRUE(sstm_ferror(g_f)); /* reported, still set */
  CHECK_OK(sstm_fflush(g_f));   /* reported once */
  sstm_clearerr(g_f);
  CHECK_FALSE(sstm_ferror(g_f));
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* A deferred write that fails while another thread's sstm_clearerr runs
 * stays reported: clearerr clears the errors before it, not one that
 * comes during it. The writer's failing pwrite waits until the clearer's
 * transaction has committed; the clearer's tx_commit hook then waits
 * until the writer's commit (its ticket's failure) has returned. Earlier
 * builds cleared the pending error after that transaction, over this
 * failure: sstm_ferror said 0 and the next sstm_fflush returned 0, with
 * the committed bytes not in the file. */
static struct { atomic_int in_pwrite, cleared, written; } ce;
static __thread bool ce_writer, ce_clearer;

static ssize_t ce_pwrite(int fd, const void *b, size_t n, off_t off) {
  if (!ce_writer) return pwrite(fd, b, n, off);
  atomic_store_explicit(&ce.in_pwrite, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&ce.cleared, memory_order_seq_cst))
    usleep(100);
  errno = ENOSPC;
  return -1;
}

static void ce_commit(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (!ce_clearer) return;
  atomic_store_explicit(&ce.cleared, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&ce.written, memory_order_seq_cst))
    usleep(100);
}

static void *ce_write(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  static unsigned char rec[6000];
  memset(rec, 'W', sizeof rec);
  ce_writer = true;
  SSTM_ATOMIC_BEGIN(NULL)
    /* larger than a buffer: a record, written by the commit's action */
    CHECK_EQ_U(sstm_fwrite(rec, 1, sizeof rec, g_f), sizeof rec);
  SSTM_ATOMIC_END();
  ce_writer = false;
  atomic_store_explicit(&ce.written, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(a_write_that_fails_during_clearerr_stays_reported) {
  setup();
  memset(&ce, 0, sizeof ce);
  fi_sys.pwrite = ce_pwrite;
  g_f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(g_f);
  static const sstm_hooks_t hooks = {.tx_commit = ce_commit};
  int h = sstm_hooks_add(&hooks, NULL);
  CHECK_GE_I(h, 0);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, ce_write, NULL), 0);
  while (!atomic_load_explicit(&ce.in_pwrite, memory_order_seq_cst))
    usleep(100);
  ce_clearer = true;
  sstm_clearerr(g_f);
  ce_clearer = false;
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(sstm_hooks_remove(h));
  CHECK_TRUE(sstm_ferror(g_f));
  errno = 0;
  CHECK_EQ_I(sstm_fflush(g_f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100); /* the failed ticket is undone */
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* (S5) A refill never sees a half-written ticket: if a ticket began to be
 * written during its pread (started moved), the attempt restarts; so it
 * does when a newer version began to be installed (validate), which on a
 * regular file comes before that version's ticket, so that either test
 * alone passes this test, and it fails with both taken out. Under
 * commit-time locking another transaction can commit and write while a
 * reader is in flight. Here the reader's first pread returns the file's
 * first 50 'A' bytes, then waits until the writer's ticket (100 'B' at 0)
 * has put its last 50 bytes in the file and stalls there; the reader's
 * second pread reads them. Without the test of started, the reader's
 * attempt holds 50 'A' and 50 'B', a state no serial order has; with it,
 * the attempt restarts and its retry reads 100 'B'. */
static struct { atomic_int go, half, read2; } hw;
static __thread int hw_role; /* 1: the reader, 2: the writer */
static __thread int hw_preads;

static ssize_t hw_pread(int fd, void *b, size_t n, off_t off) {
  if (hw_role == 1 && ++hw_preads == 1 && n > 50) {
    ssize_t r = pread(fd, b, 50, off); /* before the writer's ticket */
    CHECK_EQ_I(r, 50);
    atomic_store_explicit(&hw.go, 1, memory_order_seq_cst);
    /* bounded by the writer: it reaches its ticket's write, or fails */
    while (!atomic_load_explicit(&hw.half, memory_order_seq_cst))
      usleep(100);
    return r; /* short: pread_all asks for the rest */
  }
  ssize_t r = pread(fd, b, n, off);
  if (hw_role == 1 && hw_preads == 2) atomic_store_explicit(&hw.read2, 1, memory_order_seq_cst);
  return r;
}

static ssize_t hw_pwrite(int fd, const void *b, size_t n, off_t off) {
  if (hw_role == 2 && n == 100 && !atomic_load_explicit(&hw.half, memory_order_seq_cst)) {
    const char *c = b;
    CHECK_EQ_I(pwrite(fd, c + 50, 50, off + 50), 50); /* the second half first */
    atomic_store_explicit(&hw.half, 1, memory_order_seq_cst);
    for (int i = 0; i < 3000 && !atomic_load_explicit(&hw.read2, memory_order_seq_cst); i++)
      usleep(100);
    CHECK_EQ_I(pwrite(fd, c, 50, off), 50);
    return 100;
  }
  return pwrite(fd, b, n, off);
}

static void *hw_writer(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  hw_role = 2;
  while (!atomic_load_explicit(&hw.go, memory_order_seq_cst))
    usleep(100);
  static unsigned char bb[100];
  memset(bb, 'B', sizeof bb);
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fseek(g_f, 0, SEEK_SET), 0);
    CHECK_EQ_U(sstm_fwrite(bb, 1, sizeof bb, g_f), sizeof bb);
    CHECK_EQ_I(sstm_fflush(g_f), 0); /* a record: written after the commit */
  SSTM_ATOMIC_END();
  hw_role = 0;
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(a_refill_that_a_ticket_overlaps_restarts) {
  setup(); /* 100 'A' */
  sstm_test_fini();
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.design = SSTM_DESIGN_CTL;
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_thread_init());
  sstm__stdio_sys_t sys = sstm__stdio_sys_default;
  sys.pread = hw_pread;
  sys.pwrite = hw_pwrite;
  sstm__stdio_sys = &sys;
  memset(&hw, 0, sizeof hw);
  g_f = sstm_fopen(path, "r+");
  CHECK_NOT_NULL(g_f);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, hw_writer, NULL), 0);
  hw_role = 1;
  static volatile int attempts;
  attempts = 0;
  unsigned char b[100];
  SSTM_ATOMIC_BEGIN(NULL)
    attempts++;
    CHECK_EQ_I(sstm_fseek(g_f, 0, SEEK_SET), 0); /* the writer leaves the position at 100 */
    errno = 0;
    size_t got = sstm_fread(b, 1, sizeof b, g_f);
    CHECK_MSG(got == sizeof b, "attempt %d read %zu bytes, errno %d", attempts, got, errno);
    for (size_t i = 1; i < sizeof b; i++)
      CHECK_MSG(b[i] == b[0], "attempt %d read '%c' at 0 and '%c' at %zu", attempts, b[0], b[i], i);
  SSTM_ATOMIC_END();
  hw_role = 0;
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_GE_I(attempts, 2);
  CHECK_EQ_I(b[0], 'B');
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

/* ---- a call outside transactions whose own write fails ------------------------- */

/* (docs/design/tm-libc.md "Buffering", (S4)) A call outside transactions
 * on an unbuffered stream, or a line-buffered one whose bytes hold a
 * newline, is a transaction whose commit writes its bytes before the call
 * returns. When that ticket fails, the call reports it as ISO C's would:
 * sstm_fputc and sstm_fputs EOF, sstm_fwrite 0 (the ticket is undone
 * whole: none of its items stays), sstm_fprintf a negative value, each
 * with the ticket's errno; the error indicator is set; the report is the
 * call's, so the next sstm_fflush returns 0; the file holds none of the
 * ticket's bytes. On the line-buffered stream a transaction's bytes
 * ("tx", no newline) wait in the buffer and leave in the same ticket: the
 * call reports their loss too, that transaction having returned. */
enum { PUTC, PUTS, WRITE, PRINTF };

/* The call `call` with the bytes "ab\n" (fputc: '\n' alone); returns
 * whether it returned success, and checks what it returned. */
static bool write_call(int call, sstm_file_t *f, bool fails) {
  switch (call) {
  case PUTC: {
    int r = sstm_fputc('\n', f);
    CHECK_EQ_I(r, fails ? EOF : '\n');
    return r != EOF;
  }
  case PUTS: {
    int r = sstm_fputs("ab\n", f);
    if (fails)
      CHECK_EQ_I(r, EOF);
    else
      CHECK_GE_I(r, 0);
    return r != EOF;
  }
  case WRITE: {
    size_t r = sstm_fwrite("ab\n", 1, 3, f);
    CHECK_EQ_U(r, fails ? 0 : 3);
    return r != 0;
  }
  default: {
    int r = sstm_fprintf(f, "%s\n", "ab");
    if (fails)
      CHECK_LT_I(r, 0);
    else
      CHECK_EQ_I(r, 3);
    return r >= 0;
  }
  }
}

static void own_write_fails(int call, int vmode) {
  setup(); /* 100 'A' */
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, vmode, 64));
  const char *mine = call == PUTC ? "\n" : "ab\n";
  char want[8] = "";
  if (vmode == _IOLBF) {
    SSTM_ATOMIC_BEGIN(NULL)
      CHECK_EQ_I(sstm_fputs("tx", f), 2); /* buffered: no newline */
    SSTM_ATOMIC_END();
    strcpy(want, "tx");
  }
  strcat(want, mine); /* the ticket */
  fi.chunk = 1;       /* one byte per pwrite */
  /* its first byte is in the file when it fails (the undo cuts it back) */
  fi.fail_at = fi.pwrite_calls + (strlen(want) > 1 ? 2 : 1);
  fi.fail_errno = call % 2 ? EIO : ENOSPC;
  errno = 0;
  CHECK_FALSE(write_call(call, f, true));
  CHECK_EQ_I(errno, fi.fail_errno);
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at); /* its own commit wrote the ticket */
  CHECK_TRUE(sstm_ferror(f));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100); /* none of the ticket's bytes */
  for (int i = 0; i < 100; i++)
    CHECK_EQ_I(buf[i], 'A');
  CHECK_OK(sstm_fflush(f));   /* the call took the report */
  CHECK_TRUE(sstm_ferror(f)); /* until clearerr */
  sstm_clearerr(f);
  CHECK_FALSE(sstm_ferror(f));
  fi.fail_at = 0;
  CHECK_TRUE(write_call(call, f, false)); /* the stream goes on */
  size_t k = strlen(mine);
  CHECK_EQ_U(contents(buf, sizeof buf), 100 + k);
  CHECK_EQ_MEM(buf + 100, mine, k);
  CHECK_FALSE(sstm_ferror(f));
  CHECK_OK(sstm_fclose(f)); /* nothing left to report */
  teardown();
}

TEST(an_unbuffered_fputc_whose_write_fails_returns_eof) { own_write_fails(PUTC, _IONBF); }
TEST(an_unbuffered_fputs_whose_write_fails_returns_eof) { own_write_fails(PUTS, _IONBF); }
TEST(an_unbuffered_fwrite_whose_write_fails_returns_0) { own_write_fails(WRITE, _IONBF); }
TEST(an_unbuffered_fprintf_whose_write_fails_returns_a_negative_value) {
  own_write_fails(PRINTF, _IONBF);
}
TEST(a_line_buffered_fputc_whose_write_fails_returns_eof) { own_write_fails(PUTC, _IOLBF); }
TEST(a_line_buffered_fputs_whose_write_fails_returns_eof) { own_write_fails(PUTS, _IOLBF); }
TEST(a_line_buffered_fwrite_whose_write_fails_returns_0) { own_write_fails(WRITE, _IOLBF); }
TEST(a_line_buffered_fprintf_whose_write_fails_returns_a_negative_value) {
  own_write_fails(PRINTF, _IOLBF);
}

/* Full buffering: a call's bytes leave with its commit only when they are
 * a buffer's size or more (a record of their own): that call reports its
 * ticket's failure (sstm_fwrite 0). A call that only makes the buffered
 * bytes leave (they and its own do not fit) keeps its own bytes in the
 * buffer: it returns success, and the loss of the bytes it spilled, whose
 * calls returned success earlier, is reported by the next sstm_fflush
 * (docs/design/tm-libc.md, "Buffering"). */
TEST(a_fully_buffered_call_reports_only_a_ticket_that_holds_its_bytes) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IOFBF, 64));
  memset(big, 'B', 64);
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = EIO;
  errno = 0;
  CHECK_EQ_U(sstm_fwrite(big, 1, 64, f), 0); /* a record of its own */
  CHECK_EQ_I(errno, EIO);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_OK(sstm_fflush(f));
  sstm_clearerr(f);
  unsigned char buf[300];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  fi.fail_at = 0;
  memset(big, 'C', 60);
  CHECK_EQ_U(sstm_fwrite(big, 1, 60, f), 60); /* buffered */
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = ENOSPC;
  CHECK_EQ_I(sstm_fputs("0123456789", f), 10); /* spills the 60, keeps its 10 */
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF); /* the 60 bytes' report; the 10 leave */
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_EQ_U(contents(buf, sizeof buf), 110);
  CHECK_EQ_MEM(buf + 100, "0123456789", 10);
  CHECK_OK(sstm_fflush(f));
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* Each failure is reported once, by its own reporter: a transaction's
 * failed ticket by the next flush, a call's own by the call, whatever the
 * order in which they happened. */
TEST(a_call_reports_its_own_failure_and_leaves_a_transactions_to_the_flush) {
  setup();
  sstm_file_t *f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IONBF, 0));
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = ENOSPC;
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fputs("tx", f), 2);
  SSTM_ATOMIC_END();
  CHECK_TRUE(sstm_ferror(f));
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = EIO;
  errno = 0;
  CHECK_EQ_I(sstm_fputs("call", f), EOF);
  CHECK_EQ_I(errno, EIO); /* its own errno */
  errno = 0;
  CHECK_EQ_I(sstm_fflush(f), EOF); /* the transaction's, once */
  CHECK_EQ_I(errno, ENOSPC);
  CHECK_OK(sstm_fflush(f));
  CHECK_TRUE(sstm_ferror(f));
  unsigned char buf[200];
  CHECK_EQ_U(contents(buf, sizeof buf), 100);
  sstm_clearerr(f);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(f));
  teardown();
}

/* On a byte stream a failing ticket keeps the bytes written before the
 * failure (S6): sstm_fwrite returns the whole items of the call among
 * them. Here a transaction's "tx" waits in the line buffer, then the
 * call's 3 items of 2 bytes ("ab", "cd", "e\n") leave with it; 5 bytes
 * reach the pipe ("txabc") before the write fails: the call's 3 bytes
 * there hold 1 whole item. */
TEST(a_call_on_a_pipe_whose_write_fails_returns_the_items_that_left) {
  setup();
  int ch[2];
  CHECK_EQ_I(pipe2(ch, O_CLOEXEC), 0);
  sstm_file_t *f = sstm_fdopen(ch[1], "w");
  CHECK_NOT_NULL(f);
  CHECK_OK(sstm_setvbuf(f, NULL, _IOLBF, 64));
  SSTM_ATOMIC_BEGIN(NULL)
    CHECK_EQ_I(sstm_fputs("tx", f), 2);
  SSTM_ATOMIC_END();
  fi.wchunk = 5;
  fi.wfail_at = fi.write_calls + 2;
  fi.wfail_errno = EPIPE;
  errno = 0;
  CHECK_EQ_U(sstm_fwrite("abcde\n", 2, 3, f), 1);
  CHECK_EQ_I(errno, EPIPE);
  CHECK_TRUE(sstm_ferror(f));
  CHECK_OK(sstm_fflush(f));
  char buf[16];
  CHECK_EQ_I(read(ch[0], buf, sizeof buf), 5);
  CHECK_EQ_MEM(buf, "txabc", 5);
  sstm_clearerr(f);
  fi.wfail_at = 0;
  CHECK_EQ_I(sstm_fputs("ok\n", f), 3);
  CHECK_EQ_I(read(ch[0], buf, sizeof buf), 3);
  CHECK_EQ_MEM(buf, "ok\n", 3);
  CHECK_OK(sstm_fclose(f));
  close(ch[0]);
  teardown();
}

/* The error indicator is set from the failure on also while the call that
 * reports its own failure sets it: that call is stopped at the start of
 * its second transaction (the one that sets the indicator; a tx_begin
 * hook on its thread), and another thread's sstm_ferror must say 1 there
 * (the stream's pending report, werr, does not hold this failure). */
static struct { atomic_int begins, stopped, go, done; } oc;
static __thread bool oc_caller;

static void oc_begin(void *arg, uint64_t txid) {
  (void)arg, (void)txid;
  if (!oc_caller || atomic_fetch_add_explicit(&oc.begins, 1, memory_order_relaxed) != 1) return;
  /* seq_cst: the main thread's loop reads stopped, then checks ferror */
  atomic_store_explicit(&oc.stopped, 1, memory_order_seq_cst);
  while (!atomic_load_explicit(&oc.go, memory_order_seq_cst))
    usleep(100);
}

static void *own_failure_call(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  oc_caller = true;
  errno = 0;
  CHECK_EQ_I(sstm_fputs("11", g_f), EOF);
  CHECK_EQ_I(errno, ENOSPC);
  oc_caller = false;
  atomic_store_explicit(&oc.done, 1, memory_order_seq_cst);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(ferror_stays_set_while_a_call_reports_its_own_failure) {
  setup();
  g_f = sstm_fopen(path, "a");
  CHECK_NOT_NULL(g_f);
  CHECK_OK(sstm_setvbuf(g_f, NULL, _IONBF, 0));
  fi.fail_at = fi.pwrite_calls + 1;
  fi.fail_errno = ENOSPC;
  memset(&oc, 0, sizeof oc);
  static const sstm_hooks_t hooks = {.tx_begin = oc_begin};
  int h = sstm_hooks_add(&hooks, NULL);
  CHECK_GE_I(h, 0);
  pthread_t t;
  CHECK_EQ_I(pthread_create(&t, NULL, own_failure_call, NULL), 0);
  /* bounded by the call: its second transaction begins, or it returns */
  while (!atomic_load_explicit(&oc.stopped, memory_order_seq_cst)) {
    CHECK_MSG(!atomic_load_explicit(&oc.done, memory_order_seq_cst),
              "the call returned after one transaction");
    usleep(100);
  }
  CHECK_GE_I(fi.pwrite_calls, fi.fail_at); /* the ticket failed */
  CHECK_TRUE(sstm_ferror(g_f));
  atomic_store_explicit(&oc.go, 1, memory_order_seq_cst);
  CHECK_EQ_I(pthread_join(t, NULL), 0);
  CHECK_OK(sstm_hooks_remove(h));
  CHECK_TRUE(sstm_ferror(g_f));
  CHECK_OK(sstm_fflush(g_f)); /* the call reported it */
  sstm_clearerr(g_f);
  fi.fail_at = 0;
  CHECK_OK(sstm_fclose(g_f));
  teardown();
}

SSTM_TEST_MAIN()
