/* SPDX-License-Identifier: MIT */
/* bench/server/tpcc_wire.h: between the protocol's TPC-C parameters
 * (proto.h) and bench/tpcc's inputs and outputs. The protocol's profile
 * numbers are TPC-C's plus one (0 is the null request). */
#ifndef SSTM_BENCH_TPCC_WIRE_H
#define SSTM_BENCH_TPCC_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "tpcc.h"

/* The TPC-C input of a decoded TPC-C request q (profile 1..5), dated now.
 * Ranges that depend on the database's scale are not checked here:
 * tpcc_input_validate() does. */
void tpcc_wire_to_input(const proto_request_t *q, int64_t now, tpcc_input_t *in);

/* The request parameters (and profile) of a TPC-C input; id and priority
 * are left as they are. */
void tpcc_wire_from_input(const tpcc_input_t *in, proto_request_t *q);

/* The reply payload of a finished TPC-C request: the outcome byte and a
 * 32-bit value (docs/protocol.md). */
void tpcc_wire_reply(const tpcc_output_t *out, bool rolled_back,
                     uint8_t payload[PROTO_TPCC_REPLY_BYTES]);

#endif /* SSTM_BENCH_TPCC_WIRE_H */
