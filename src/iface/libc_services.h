/* SPDX-License-Identifier: MIT */
/* What the engine offers the transactional stdio (src/libc) beyond the
 * public API (include/schedstm/tx.h): one facility, for the cost of a
 * transaction of one stdio call. Implemented by src/core/txn.c; not
 * exported from the library.
 *
 * src/libc is compiled with include/, src/iface/ and src/os/ on its
 * include path, not src/core/: it reaches the engine through the public
 * headers and this one.
 */
#ifndef SSTM_IFACE_LIBC_SERVICES_H
#define SSTM_IFACE_LIBC_SERVICES_H

#include <stdbool.h>

/* An action that runs at the end of the current attempt, whichever way it
 * ends: fn(arg, true) after it commits, where sstm_on_commit() actions
 * run, and fn(arg, false) after it is rolled back, where sstm_on_abort()
 * actions run; in registration order with those, with their rules
 * (include/schedstm/tx.h: outside the transaction, on the thread that ran
 * it, discarded with the attempt). One registration where a caller would
 * otherwise make two (the same fn for both outcomes), for the same cost
 * as one of them. Takes no lock and makes no system call unless the
 * attempt's array of actions must grow (realloc).
 * @param fn the action (not NULL)
 * @param arg passed to fn
 * @return 0, SSTM_ENOTX outside a transaction, SSTM_EINVAL (fn NULL) or
 *         SSTM_ENOMEM, with sstm_last_error() saying which */
int sstm__on_end(void (*fn)(void *arg, bool committed), void *arg);

#endif /* SSTM_IFACE_LIBC_SERVICES_H */
