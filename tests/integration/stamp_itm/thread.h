/* SPDX-License-Identifier: MIT */
/* A stand-in for STAMP's lib/thread.h, which bench/stamp/tm_itm.h includes
 * as STAMP's tm.h does; the test (tests/integration/stamp_itm.c) checks
 * that it was. */
#ifndef SSTM_STAMP_ITM_TEST_THREAD_H
#define SSTM_STAMP_ITM_TEST_THREAD_H
#endif
