/* SPDX-License-Identifier: MIT */
/** @file
 * Transactional stdio: buffered streams that work inside transactions.
 *
 * A stream of this library (sstm_file_t) is an ISO C stdio stream whose
 * state (the buffers, the position, the end-of-file and error indicators,
 * the mirror of the kernel's file offset and the append position) is
 * transactional. Inside a transaction its operations are part of the
 * transaction. Two transactions that use the same stream conflict exactly
 * when at least one of them changes it: every call changes it (reads move
 * the position) except sstm_ftell(), sstm_feof() and sstm_ferror(), which
 * only read it. An attempt that aborts leaves neither a byte nor a
 * position change behind. A transaction's first call on a stream costs a
 * transactional load and store and a copy of the stream's state; its
 * further calls work on that private copy, which the commit installs. The
 * design follows [Smiljkovic13] and goes further (docs/design/tm-libc.md):
 *
 * - Regular files never make a transaction irrevocable. Bytes written are
 *   buffered, and bytes that leave the buffer inside a transaction are
 *   handed to the kernel after the commit, by the committing thread, in the
 *   order in which the transactions committed (pwrite(2) at the offset the
 *   transaction computed). Reads use pread(2) at the stream's own position
 *   (the kernel's offset is not moved), first waiting until every committed
 *   write of the stream has reached the kernel.
 * - Pipes, sockets and terminals make a transaction irrevocable
 *   (sstm_become_irrevocable(): the transaction may restart once) only for
 *   sstm_fflush() inside it, whose bytes cannot wait for the commit. Reads
 *   stay revocable: what read(2) returns is kept by the stream (its
 *   arrival log) until a committed transaction has read it, so a
 *   transaction that rolls back leaves those bytes, and an end of data
 *   that read(2) reported, to the next one. A read that finds no data
 *   waits in poll(2), revocable, so that other transactions (the writers
 *   of the pipe among them) commit meanwhile, also when a call needs more
 *   bytes than have arrived; a conflicting transaction whose policy kills
 *   the waiter ends its wait (docs/design/tm-libc.md (S6)). Their writes
 *   leave at commit, in commit order, each committed transaction's bytes
 *   once and contiguous in what this stream writes.
 * - sstm_fseek() keeps the kernel's file offset equal to the new position
 *   (for code that uses the descriptor, sstm_fileno()): the mirror of that
 *   offset is written transactionally before the lseek(2), and an abort
 *   moves the offset back.
 *
 * A transaction's first call that changes a stream waits for the stream's
 * turn (a spin, a few yields, then a futex sleep) while another
 * transaction that changes it has not ended, and during a while after
 * transactions lost the stream to each other (an attempt that lost it
 * twice in a row), so that one
 * transaction at a time uses a contended stream, without serialising the
 * rest of the runtime (docs/design/tm-libc.md (S9)). An irrevocable
 * transaction never waits for a turn.
 * Outside a transaction, a read or write that the stream's buffers serve
 * takes the stream's lock (waiting only for another such call) and is done
 * in place, unless a transaction has the stream in flight (has called an
 * operation on it and not yet ended); any other operation runs as a
 * transaction of its own. Either way it is ordered with the transactions
 * that use the stream as a transaction would be: atomic, and entirely
 * before or after each of them. A transaction's first operation on a
 * stream waits while such a call holds the lock (a short wait: the holder
 * waits for nothing). Operations outside transactions need a registered
 * thread (sstm_thread_init()); on an unregistered thread they fail with
 * errno EPERM. In a hook (<schedstm/hooks.h>) or a contention manager's
 * callback, where no transaction can run, an operation that needs one
 * (any but a read or write that the buffers serve) fails with errno
 * EINVAL.
 * In an executor's requests (schedstm/exec.h), whose transactions may be
 * suspended and resumed on another worker, the operations work as in any
 * transaction, and a suspended transaction holds a stream from the others
 * only as a lock does, under the executor's rule for conflicts with
 * paused transactions (sstm_exec_config_t::paused_conflict; by default the
 * one that meets it takes it over, and the suspended one restarts when
 * resumed). Such transactions never use the
 * fast path of a stream that one thread uses alone (docs/design/tm-libc.md
 * (S12)).
 *
 * Visibility: what a committed transaction wrote is in the kernel when
 * sstm_commit() (or sstm_run()) returns if it left the buffer (a full
 * buffer, a write that does not continue the buffered bytes, sstm_fflush()
 * in the transaction); the rest stays in the buffer, visible to the
 * stream's readers in this process, until sstm_fflush() or sstm_fclose()
 * outside a transaction, or a later overflow. After sstm_fflush() outside a
 * transaction returns 0, every byte that a committed transaction wrote
 * through the stream is in the kernel (a kill -9 then loses none of them);
 * no byte of a transaction that has not committed ever reaches the kernel
 * (except through a pipe, socket or terminal after sstm_fflush() in the
 * transaction, which made it irrevocable: it will commit).
 *
 * Errors: functions report errors the stdio way (EOF, 0 or -1, and errno),
 * and set the stream's error indicator. A write that fails after the commit
 * (ENOSPC, EIO) is undone: none of the bytes that left the buffers with it
 * stays in the file (bytes it overwrote are restored, the file is cut back
 * to its size before it). Those bytes may be several committed
 * transactions', and a transaction whose calls fell on both sides of a
 * buffer's end keeps the bytes of the other side. The transactions stay
 * committed and later writes still reach the file, at their offsets (at
 * the file's end for O_APPEND); the error indicator is set at once, and the
 * next sstm_fflush() or sstm_fclose() outside a transaction, on any thread,
 * returns EOF with that errno (once). The exception is a write call outside
 * a transaction whose own bytes leave with its commit, before it returns
 * (unbuffered, line buffered with a newline, or a buffer's size or more):
 * when that write fails, the call reports it itself, as ISO C's would
 * (EOF, fewer items, a negative count, with errno), and no flush reports
 * it again. A transaction's calls cannot see such a failure, which comes
 * after their commit. EINTR and short writes are retried.
 * On a pipe or socket the bytes that reached the kernel before the failure
 * (EPIPE, EAGAIN on an O_NONBLOCK descriptor) stay there and the rest of
 * the ticket is dropped, reported the same way; the library neither blocks
 * nor ignores SIGPIPE (a program whose readers may leave ignores it). An
 * O_NONBLOCK descriptor's read fails with EAGAIN instead of waiting.
 * A write that would take the position past off_t's maximum (INT64_MAX,
 * after an sstm_fseek() there) fails with errno EFBIG and sets the error
 * indicator, as write(2) does; the position stays a valid off_t.
 * A stream used after
 * sstm_fclose() fails with errno EBADF (the library keeps a closed stream's
 * header, not its buffers, for the next 1024 closes; a use after that is a
 * use of freed memory, as with fclose(3)).
 *
 * Differences from ISO C: no ungetc, no wide characters, sstm_setvbuf()
 * does not use the caller's array, and line buffering does not flush
 * other streams before a read; mixing reads and writes needs no fflush or
 * fseek in between; sstm_fprintf formats with vsnprintf(3), whose result is
 * then written as by sstm_fwrite(); a stream opened for appending writes on
 * an O_APPEND descriptor, so its bytes land at the file's end when they
 * reach the kernel, after whatever other writers appended, but it counts
 * its position (sstm_ftell(), and where an "a+" stream reads back bytes it
 * has not flushed) from the end of the file as this stream knows it (the
 * size at open, advanced by its own writes, refreshed by sstm_fseek(f, 0,
 * SEEK_END)), so appends by other writers are not seen before such a
 * seek; the end-of-file indicator does not stop reads: a read after it
 * reads what has arrived since (a terminal can be read again after its
 * end-of-file key), where ISO C and glibc return EOF until sstm_clearerr()
 * or a seek.
 *
 * At the program's end, as with C's streams: exit() (and a return from
 * main()) writes out the bytes that every open stream still buffers, on
 * the exiting thread, which is registered for it if it was not (when
 * every descriptor slot is taken, sstm_config_t::max_threads, an exiting
 * thread that is not registered cannot be, and nothing is written out:
 * close the streams or call sstm_fflush(NULL) from a registered thread
 * before); so does
 * sstm_shutdown(), before it tears the library down, and
 * sstm_fflush(NULL) outside a transaction. Not written out: after
 * _exit(), a fatal signal, an exit() called inside a transaction (the
 * flush would be part of it) or from a hook (where it cannot run), or an
 * exit() in the child of a fork()
 * (which may not use the library, <schedstm/schedstm.h>; the parent
 * writes the bytes out). An error of those writes sets the stream's
 * error indicator. A stream left open over sstm_shutdown() can be neither
 * flushed nor closed (EPERM, as on an unregistered thread) until the
 * library is initialised again and the thread registered. exit() waits
 * for the transactions that hold a stream, as any flush does: a program
 * that exits while another thread's transaction on a stream cannot end
 * (it waits for the exiting thread) does not end either; nor may one whose
 * signal handler calls exit() (which is not async-signal-safe) after it
 * interrupted a call on a stream.
 */
#ifndef SCHEDSTM_STDIO_H
#define SCHEDSTM_STDIO_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>

#include <schedstm/common.h>

SSTM_EXTERN_C_BEGIN

/** A transactional stream (opaque). */
typedef struct sstm_file sstm_file_t;

/** Open the file at path as a transactional stream, as fopen(3) does:
 * mode is "r", "w", "a", "r+", "w+" or "a+", with optional 'b' (ignored),
 * 'x' (O_EXCL) and 'e' (O_CLOEXEC). Call it outside a transaction; the
 * thread need not be registered. Blocks only in open(2).
 * @param path the file
 * @param mode the fopen(3) mode
 * @return the stream, or NULL with errno set (EINVAL for a bad mode or a
 *         call inside a transaction, ENOMEM, or open(2)'s error) */
SSTM_API sstm_file_t *sstm_fopen(const char *path, const char *mode);

/** Make a transactional stream of an open file descriptor, as fdopen(3):
 * mode must agree with the descriptor's access mode. The stream owns fd
 * from then on (sstm_fclose() closes it). A regular file is read and
 * written at the descriptor's current offset; anything else (pipe, socket,
 * terminal) is a byte stream. Mode "a" or "a+" sets O_APPEND on a
 * descriptor that lacks it (fcntl(2) F_SETFL, as glibc's and musl's
 * fdopen do), so that every write lands at the file's end, after what
 * other writers appended; the flag belongs to the open file description,
 * so the descriptor's duplicates append from then on too (a failed call
 * leaves the flags as they were). A descriptor that has O_APPEND makes an
 * append stream whatever the mode. Outside a transaction only.
 * @param fd an open file descriptor
 * @param mode the fdopen(3) mode
 * @return the stream, or NULL with errno set (EINVAL, EBADF, ENOMEM, or
 *         fcntl(2)'s error) */
SSTM_API sstm_file_t *sstm_fdopen(int fd, const char *mode);

/** Flush and close a stream, outside a transaction, on a registered
 * thread. Waits until every committed write of the stream is in the
 * kernel. The stream must not be in use by another thread. A later use of
 * f fails with EBADF (see the file comment).
 * @param f the stream
 * @return 0, or EOF with errno set (a write error of this flush or an
 *         earlier deferred one, close(2)'s error; EBADF for a closed
 *         stream, EINVAL inside a transaction, EPERM on an unregistered
 *         thread); the stream is closed in every case but EINVAL and EPERM */
SSTM_API int sstm_fclose(sstm_file_t *f);

/** Bytes per buffer of a stream on a regular file by default (each stream
 * has a read buffer and a write buffer), 64 KiB: a stream of small
 * sequential calls makes one read or write per 64 KiB (a write that
 * extends the file also asks the kernel for its size, fstat(2), so that a
 * failure can cut the file back to it), where the kernel's part of each
 * call is most of its time, in transactions and in
 * irrevocable ones alike (docs/benchmarks.md, "The default buffer size").
 * The memory is 2 x 64 KiB per stream and per thread that uses it;
 * sstm_setvbuf() chooses a smaller size per stream (docs/design/tm-libc.md,
 * "Buffering"). */
#define SSTM_STDIO_BUFSIZ 65536u
/** Bytes per buffer of a stream on a pipe, socket or terminal by default:
 * 4 KiB, PIPE_BUF on Linux, so that a full buffer leaves in one write(2)
 * that the kernel keeps whole against the pipe's other writers. */
#define SSTM_STDIO_PIPE_BUFSIZ 4096u
/** The largest buffer size sstm_setvbuf() accepts (1 MiB). */
#define SSTM_STDIO_BUFMAX (1u << 20)

/** Choose the stream's buffering, as setvbuf(3), before its first use:
 * - _IOFBF: full buffering with size-byte buffers (0: the default,
 *   SSTM_STDIO_BUFSIZ on a regular file, SSTM_STDIO_PIPE_BUFSIZ else).
 *   Larger buffers make fewer, larger system calls for a stream of small
 *   calls (docs/benchmarks.md, "The default buffer size"), for 2 x size
 *   bytes per thread that uses the stream and per stream.
 * - _IOLBF: the same, and a write whose bytes hold a newline sends the
 *   bytes buffered so far out with its commit (outside a transaction:
 *   before the call returns).
 * - _IONBF: no buffering: the bytes of every write leave with its commit
 *   (outside a transaction: before the call returns); reads ask the kernel
 *   for what the call wants, not more (size is ignored).
 * Outside a transaction, a write call whose bytes left before it returned
 * reports that write's failure itself (see sstm_fputs()). On a regular
 * file, each write that extends the file also asks the kernel for the
 * file's size (fstat(2), so that a failure can cut it back there): with
 * _IOLBF, _IONBF or small buffers that is two system calls per write
 * instead of one (docs/benchmarks.md, "The file's size before a write
 * that extends it").
 * The bytes still never leave before the commit: a transaction's writes
 * are all or nothing whatever the mode. buf is not used (ISO C allows
 * that): the buffers of a transactional stream are versioned by the
 * library, which allocates them. Call it outside a transaction, before
 * any call that reads, writes, seeks, flushes or clears the stream
 * (sstm_ftell, sstm_feof, sstm_ferror and sstm_fileno may come first),
 * while no other thread uses the stream. Blocks on nothing.
 * @param f the stream
 * @param buf ignored (may be NULL)
 * @param mode _IOFBF, _IOLBF or _IONBF
 * @param size bytes per buffer, at most SSTM_STDIO_BUFMAX (0: the default)
 * @return 0, or EOF with errno: EINVAL (bad mode, size too large, a call
 *         inside a transaction), EBUSY (the stream was used already),
 *         EBADF (f NULL or closed); the buffering is unchanged then */
SSTM_API int sstm_setvbuf(sstm_file_t *f, char *buf, int mode, size_t size);

/** The stream's file descriptor (for fstat and the like; moving its offset
 * behind the stream's back is not detected).
 * @param f the stream
 * @return the descriptor, or -1 with errno EBADF for a closed stream */
SSTM_API int sstm_fileno(sstm_file_t *f);

/** Read one byte, as fgetc(3).
 * @param f the stream
 * @return the byte as an unsigned char, or EOF at end of file (the EOF
 *         indicator is set) or on error (the error indicator is set, errno) */
SSTM_API int sstm_fgetc(sstm_file_t *f);

/** Read a line of at most n - 1 bytes into s, as fgets(3). n == 1 reads
 * nothing (the stream is not looked at): s[0] is set to NUL and s is
 * returned, as glibc's fgets does.
 * @param s the destination (private memory)
 * @param n its size
 * @param f the stream
 * @return s, or NULL at end of file with nothing read, or on error (errno
 *         EINVAL for s NULL or n < 1, EBADF for f NULL or closed) */
SSTM_API char *sstm_fgets(char *s, int n, sstm_file_t *f);

/** Read up to nmemb items of size bytes into ptr, as fread(3).
 * @param ptr the destination (private memory)
 * @param size bytes per item
 * @param nmemb number of items
 * @param f the stream
 * @return the number of whole items read (fewer at end of file or error);
 *         0 with errno EINVAL for ptr NULL (size and nmemb not 0: nothing
 *         is read), EBADF for f NULL or closed */
SSTM_API size_t sstm_fread(void *ptr, size_t size, size_t nmemb, sstm_file_t *f);

/** Read a line, growing *lineptr with realloc(3) as getline(3) does. The
 * buffer belongs to the caller: an attempt that aborts may have grown it
 * (*lineptr and *n then describe the grown buffer), never leaked it.
 * *lineptr is therefore NULL or a block of malloc(3), realloc(3) or of
 * sstm_malloc() in a transaction that has committed; not one that
 * sstm_malloc() gave in the running transaction, which its abort frees
 * (alloc.h): realloc(3) may already have freed it, and the abort would
 * free it a second time.
 * @param lineptr the line buffer (*lineptr may be NULL)
 * @param n its size
 * @param f the stream
 * @return the line's length, or -1 at end of file or on error (errno) */
SSTM_API ssize_t sstm_getline(char **lineptr, size_t *n, sstm_file_t *f);

/** Write one byte, as fputc(3).
 * @param c the byte (converted to unsigned char)
 * @param f the stream
 * @return the byte written, or EOF on error with errno (outside a
 *         transaction also when the byte left with the call's commit and
 *         that write failed: see sstm_fputs()) */
SSTM_API int sstm_fputc(int c, sstm_file_t *f);

/** Write a string without its terminating NUL, as fputs(3).
 * Outside a transaction the call is a transaction of its own; when its
 * bytes leave with its commit (an unbuffered stream, a line-buffered one
 * and bytes that hold a newline, or a buffer's size or more) they are in
 * the kernel when it returns, and if that write fails (ENOSPC, EIO,
 * EPIPE) the call returns EOF with its errno and sets the error
 * indicator: none of the bytes stay in a regular file, nor do the bytes
 * of earlier transactions that left with them (a line buffer's); that
 * failure is not reported again by sstm_fflush() or sstm_fclose(). Bytes
 * that stay buffered leave later, and a later failure is reported by the
 * call that writes them or by a flush. Inside a transaction the bytes
 * leave after the commit: the call cannot see their failure.
 * @param s the string
 * @param f the stream
 * @return a non-negative number, or EOF on error with errno */
SSTM_API int sstm_fputs(const char *s, sstm_file_t *f);

/** Write nmemb items of size bytes, as fwrite(3). Outside a transaction,
 * a write that leaves with the call's commit and fails is the call's
 * error, as for sstm_fputs().
 * @param ptr the data (private memory)
 * @param size bytes per item
 * @param nmemb number of items
 * @param f the stream
 * @return nmemb, or fewer on error with errno: 0 when the call failed
 *         (nothing is written then; errno EINVAL for ptr NULL with size
 *         and nmemb not 0, EBADF for f NULL or closed); outside a transaction, when its own
 *         write after its commit failed, the whole items that stayed in
 *         the kernel (0 on a regular file, whose failed write is undone;
 *         on a pipe or socket, those written before the failure) */
SSTM_API size_t sstm_fwrite(const void *ptr, size_t size, size_t nmemb, sstm_file_t *f);

/** Formatted output, as fprintf(3) (formatted with vsnprintf(3) into a
 * private buffer, then written as by sstm_fwrite()).
 * @param f the stream
 * @param fmt the format
 * @return the number of bytes written, or a negative number on error with
 *         errno (EINVAL for fmt NULL; outside a transaction also when its
 *         own write after its commit failed, see sstm_fputs()) */
SSTM_API int sstm_fprintf(sstm_file_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** Formatted output with a va_list, as vfprintf(3).
 * @param f the stream
 * @param fmt the format
 * @param ap the arguments
 * @return the number of bytes written, or a negative number on error with
 *         errno (as sstm_fprintf()) */
SSTM_API int sstm_vfprintf(sstm_file_t *f, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/** Set the position, as fseek(3) (whence SEEK_SET, SEEK_CUR or SEEK_END);
 * clears the EOF indicator. On a regular file the kernel's offset is moved
 * too, undone if the transaction aborts. SEEK_END waits until the
 * stream's committed writes are in the kernel, then asks the kernel for
 * the size (fstat(2)), counting the transaction's own pending writes.
 * @param f the stream
 * @param offset the offset
 * @param whence SEEK_SET, SEEK_CUR or SEEK_END
 * On a regular file the position must be one the kernel accepts for the
 * file: a seek past the file system's largest file fails as lseek(2) and
 * fseek(3) fail (EINVAL). SEEK_END on a file whose size the kernel reports
 * as 0 although it has content (most of /proc) counts from 0, as glibc's
 * fseek(3) does (which also takes the end from fstat(2)): reads then start
 * at the first byte, and a negative offset fails with EINVAL.
 * @return 0, or -1 with errno (EINVAL: bad whence, a negative position, or
 *         one past the largest file the file system holds; ESPIPE: not a
 *         regular file; EBADF); on failure the position, the kernel's
 *         offset and the indicators are unchanged */
SSTM_API int sstm_fseek(sstm_file_t *f, off_t offset, int whence);

/** The position, as ftell(3).
 * @param f the stream
 * @return the position, or -1 with errno (ESPIPE for a byte stream, EBADF) */
SSTM_API off_t sstm_ftell(sstm_file_t *f);

/** sstm_fseek(f, 0, SEEK_SET) and sstm_clearerr(f), as rewind(3): the
 * indicators are cleared also when the seek fails (ESPIPE on a pipe).
 * @param f the stream */
SSTM_API void sstm_rewind(sstm_file_t *f);

/** Push buffered bytes out, as fflush(3). Outside a transaction: the
 * buffered bytes and every committed write of the stream are in the kernel
 * when it returns 0. Inside a transaction on a regular file: the buffered
 * bytes leave with the commit (the transaction stays revocable). Inside a
 * transaction on a pipe, socket or terminal: the transaction waits,
 * revocable, until the descriptor takes the bytes without blocking (a
 * pipe's free room, when its capacity holds them), then becomes
 * irrevocable (it restarts once to do so) and the bytes are written
 * now. A NULL f, outside a transaction, flushes every open stream that
 * writes, as fflush(NULL) does (not the streams opened meanwhile); a
 * close of a stream on another thread waits for that stream's flush.
 * @param f the stream, or NULL: every stream (outside a transaction)
 * @return 0, or EOF with errno (this write's error, or one of an earlier
 *         deferred write that its own call did not report, see the file
 *         comment; EBADF for f closed; for NULL the first stream's error,
 *         EINVAL inside a transaction) */
SSTM_API int sstm_fflush(sstm_file_t *f);

/** The end-of-file indicator, as feof(3).
 * @param f the stream
 * @return non-zero if set */
SSTM_API int sstm_feof(sstm_file_t *f);

/** The error indicator, as ferror(3) (also set by a deferred write that
 * failed after its commit).
 * @param f the stream
 * @return non-zero if set */
SSTM_API int sstm_ferror(sstm_file_t *f);

/** Clear the end-of-file and error indicators, as clearerr(3) (also the
 * pending error of a deferred write).
 * @param f the stream */
SSTM_API void sstm_clearerr(sstm_file_t *f);

SSTM_EXTERN_C_END

#endif /* SCHEDSTM_STDIO_H */
