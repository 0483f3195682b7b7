/* SPDX-License-Identifier: MIT */
/* A stand-in for STAMP's lib/tm.h in the test of bench/stamp/tm_itm.h
 * (tests/integration/stamp_itm.c): STAMP's guard, and an error if the
 * program reaches its body, which tm_itm.h, force-included first, must
 * prevent by defining the guard. */
#ifndef TM_H
#define TM_H 1
#error "STAMP's tm.h was not replaced: bench/stamp/tm_itm.h must be force-included first"
#endif
