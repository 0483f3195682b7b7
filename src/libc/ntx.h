/* SPDX-License-Identifier: MIT */
/* The stream's lock for calls outside transactions (docs/design/tm-libc.md
 * (S8), src/libc/stdio.c), for tests (tests/internal/libc_ntx.c): take it
 * as such a call does (false: a transaction has the stream in flight, the
 * lock is not held), and release it. */
#ifndef SSTM_LIBC_NTX_H
#define SSTM_LIBC_NTX_H

#include <stdbool.h>

struct sstm_file;
bool sstm__stdio_ntx_lock(struct sstm_file *f);
void sstm__stdio_ntx_unlock(struct sstm_file *f);

#endif /* SSTM_LIBC_NTX_H */
