/* SPDX-License-Identifier: MIT */
/* bench/server/proto.h: the request server's wire protocol (docs/protocol.md
 * is its specification; this header is its one implementation, shared by
 * sstm-server, sstm-loadgen and the tests).
 *
 * A frame is a 4-byte big-endian length L (the bytes that follow, at most
 * PROTO_MAX_BODY) and a body of L bytes: a 12-byte header (version, kind,
 * priority, profile, request id) and the profile's parameters (requests),
 * result (replies) or an error code and message (errors). Every multi-byte
 * integer is big-endian. The codec is pure: no allocation, no I/O, and it
 * never reads outside the buffer it is given, whatever the bytes are. */
#ifndef SSTM_BENCH_PROTO_H
#define SSTM_BENCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION 1
#define PROTO_LEN_BYTES 4     /* the length prefix */
#define PROTO_HEADER_BYTES 12 /* version, kind, priority, profile, id */
/* The largest body a peer may send; a longer length is refused
 * (PROTO_E_TOO_LARGE) and the connection closed, since skipping that many
 * bytes would let a client hold the server's attention for nothing. */
#define PROTO_MAX_BODY 65536
#define PROTO_MAX_FRAME (PROTO_LEN_BYTES + PROTO_MAX_BODY)
/* Priority levels a request may carry: 1 (lowest) .. PROTO_MAX_PRIORITY;
 * 0 in a request means "the profile's default" (proto_default_priority). */
#define PROTO_MAX_PRIORITY 64
/* A null request's busy loop is bounded (microseconds). */
#define PROTO_NULL_MAX_SPIN_US 1000000u
/* TPC-C's customer last names are numbered 0..999 (their syllables). */
#define PROTO_LAST_NAMES 1000
#define PROTO_MAX_ORDER_LINES 15
#define PROTO_MIN_ORDER_LINES 5

typedef enum proto_kind {
  PROTO_REQUEST = 1,
  PROTO_REPLY = 2,
  PROTO_ERROR = 3,
} proto_kind_t;

/* Request profiles: a null request (a transaction that does nothing but
 * an optional busy loop, for tests and overhead measurements) and the five
 * TPC-C profiles [TPCC]. */
typedef enum proto_profile {
  PROTO_NULL = 0,
  PROTO_NEW_ORDER = 1,
  PROTO_PAYMENT = 2,
  PROTO_ORDER_STATUS = 3,
  PROTO_DELIVERY = 4,
  PROTO_STOCK_LEVEL = 5,
  PROTO_NPROFILES = 6,
} proto_profile_t;

/* Error codes carried by a PROTO_ERROR frame. */
typedef enum proto_error {
  PROTO_E_FRAME = 1,        /* body shorter than the header */
  PROTO_E_VERSION = 2,      /* version other than PROTO_VERSION */
  PROTO_E_KIND = 3,         /* a client sent something other than a request */
  PROTO_E_PROFILE = 4,      /* unknown profile */
  PROTO_E_PRIORITY = 5,     /* priority above the server's levels */
  PROTO_E_PARAMS = 6,       /* parameters truncated, trailing or out of range */
  PROTO_E_TOO_LARGE = 7,    /* length above PROTO_MAX_BODY: connection closed */
  PROTO_E_SHUTDOWN = 8,     /* the server is draining: request not accepted */
  PROTO_E_INTERNAL = 9,     /* the server could not run it (not accepted) */
  PROTO_E_UNSUPPORTED = 10, /* profile known but not served by this server */
} proto_error_t;

/* Name of a profile ("null", "new-order", ...), or NULL if unknown. */
const char *proto_profile_name(unsigned profile);
/* The profile whose name is s, or -1. */
int proto_profile_by_name(const char *s);
/* The mapping of [Silvestri17] (shortest job highest): delivery 1,
 * stock-level 2, new-order 3, order-status 4, payment 5; null 1. */
unsigned proto_default_priority(unsigned profile);
/* Name of an error code, or "unknown". */
const char *proto_error_name(unsigned code);

/* ---- the parameters of each profile ------------------------------------ */

typedef struct proto_null {
  uint32_t spin_us;    /* busy loop inside the transaction */
  const uint8_t *data; /* echoed back (points into the frame) */
  size_t len;
} proto_null_t;

typedef struct proto_order_line {
  uint32_t i_id, supply_w_id;
  uint8_t quantity;
} proto_order_line_t;

typedef struct proto_new_order {
  uint32_t w_id, c_id;
  uint8_t d_id, ol_cnt;
  proto_order_line_t lines[PROTO_MAX_ORDER_LINES];
} proto_new_order_t;

typedef struct proto_payment {
  uint32_t w_id, c_w_id, c_id, h_amount_cents;
  uint16_t c_last; /* the last name's number, 0..999 [TPCC] 4.3.2.3 */
  uint8_t d_id, c_d_id, by_name;
} proto_payment_t;

typedef struct proto_order_status {
  uint32_t w_id, c_id;
  uint16_t c_last;
  uint8_t d_id, by_name;
} proto_order_status_t;

typedef struct proto_delivery {
  uint32_t w_id;
  uint8_t carrier_id;
} proto_delivery_t;

typedef struct proto_stock_level {
  uint32_t w_id;
  uint8_t d_id, threshold;
} proto_stock_level_t;

/* A decoded request. */
typedef struct proto_request {
  uint64_t id;
  uint8_t priority; /* as sent: 0 = the profile's default */
  uint8_t profile;
  union {
    proto_null_t null;
    proto_new_order_t new_order;
    proto_payment_t payment;
    proto_order_status_t order_status;
    proto_delivery_t delivery;
    proto_stock_level_t stock_level;
  } p;
} proto_request_t;

/* ---- framing ------------------------------------------------------------- */

/* What proto_frame_peek found at the start of a receive buffer. */
typedef enum proto_peek {
  PROTO_PEEK_MORE,      /* fewer bytes than a whole frame: read more */
  PROTO_PEEK_FRAME,     /* a whole frame of *frame_len bytes */
  PROTO_PEEK_TOO_LARGE, /* its length exceeds PROTO_MAX_BODY */
} proto_peek_t;

/* Looks at buf[0..len): whether a whole frame is there and how long it is
 * (length prefix included). */
proto_peek_t proto_frame_peek(const uint8_t *buf, size_t len, size_t *frame_len);

/* Decodes the request frame frame[0..len) (a whole frame as
 * proto_frame_peek delimited it) into *req. Returns 0, or a proto_error_t
 * code with *detail set to a static message; the header fields that could
 * be read (id, profile) are filled even on error, so that the error reply
 * can name them. req->p.null.data points into frame. */
int proto_decode_request(const uint8_t *frame, size_t len, proto_request_t *req,
                         const char **detail);

/* Encodes a request into out[0..cap). Returns the frame length, or 0 if
 * it does not fit or the request is not encodable (unknown profile, more
 * than PROTO_MAX_ORDER_LINES lines, a body above PROTO_MAX_BODY). */
size_t proto_encode_request(const proto_request_t *req, uint8_t *out, size_t cap);

/* Encodes a reply header and body: kind PROTO_REPLY, the priority the
 * request ran at, and payload[0..plen). Returns the frame length or 0 if it
 * does not fit in cap or exceeds PROTO_MAX_BODY. */
size_t proto_encode_reply(uint64_t id, unsigned priority, unsigned profile, const void *payload,
                          size_t plen, uint8_t *out, size_t cap);

/* Encodes an error frame: code then the message (truncated to fit). */
size_t proto_encode_error(uint64_t id, unsigned profile, unsigned code, const char *msg,
                          uint8_t *out, size_t cap);

/* A decoded reply or error frame (for clients). */
typedef struct proto_response {
  uint8_t kind, priority, profile, error_code;
  uint64_t id;
  const uint8_t *payload; /* reply: its payload; error: the message */
  size_t plen;
} proto_response_t;

/* Decodes a reply or error frame. Returns 0 or -1 (malformed). */
int proto_decode_response(const uint8_t *frame, size_t len, proto_response_t *resp);

/* The TPC-C reply payload: an outcome and one profile-specific value
 * (docs/protocol.md). */
enum { PROTO_OUTCOME_COMMITTED = 0, PROTO_OUTCOME_ROLLED_BACK = 1 };
#define PROTO_TPCC_REPLY_BYTES 5

/* ---- big-endian helpers -------------------------------------------------- */

static inline void proto_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}
static inline uint16_t proto_get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t proto_get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void proto_put64(uint8_t *p, uint64_t v) {
  proto_put32(p, (uint32_t)(v >> 32));
  proto_put32(p + 4, (uint32_t)v);
}
static inline uint64_t proto_get64(const uint8_t *p) {
  return (uint64_t)proto_get32(p) << 32 | proto_get32(p + 4);
}

#endif /* SSTM_BENCH_PROTO_H */
