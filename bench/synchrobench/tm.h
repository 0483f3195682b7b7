/* SPDX-License-Identifier: MIT */
/* Found as "tm.h" by synchrobench's benchmarks when bench/synchrobench/build.sh
 * builds them against schedstm (this directory comes first on the include
 * path), in place of the tree's c-cpp/include/tm.h: the TX_* / TM_* macros
 * are schedstm.h's. */
#include "schedstm.h"
