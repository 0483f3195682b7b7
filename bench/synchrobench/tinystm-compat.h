/* SPDX-License-Identifier: MIT */
/* Force-included (-include) by bench/synchrobench/build.sh into the tinystm
 * variant's compilations, before synchrobench's own tinystm.h mapping: that
 * mapping calls stm_start(0), written for TinySTM releases whose
 * stm_start took a pointer to the attributes; TinySTM 1.0.5 and later take
 * a stm_tx_attr_t union by value, which a plain 0 does not convert to. The
 * macro converts the argument (GCC's cast to a union from a member's
 * type, which stm.h documents for this use); a function-like macro does not
 * expand its own name again, so the call is TinySTM's function. Nothing
 * else of the mapping changes. */
#include <stm.h>

#define stm_start(attr) stm_start((stm_tx_attr_t)(attr))
