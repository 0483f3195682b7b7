/* SPDX-License-Identifier: MIT */
/* bench/server/proto.c: encoding and decoding of the request server's
 * frames (docs/protocol.md). Every read is bounded by the frame's length. */
#include "proto.h"

#include <string.h>

static const char *const profile_names[PROTO_NPROFILES] = {
    "null", "new-order", "payment", "order-status", "delivery", "stock-level",
};

const char *proto_profile_name(unsigned profile) {
  return profile < PROTO_NPROFILES ? profile_names[profile] : NULL;
}

int proto_profile_by_name(const char *s) {
  for (int i = 0; i < PROTO_NPROFILES; i++)
    if (strcmp(s, profile_names[i]) == 0) return i;
  return -1;
}

unsigned proto_default_priority(unsigned profile) {
  switch (profile) {
  case PROTO_DELIVERY: return 1;
  case PROTO_STOCK_LEVEL: return 2;
  case PROTO_NEW_ORDER: return 3;
  case PROTO_ORDER_STATUS: return 4;
  case PROTO_PAYMENT: return 5;
  default: return 1;
  }
}

const char *proto_error_name(unsigned code) {
  switch (code) {
  case PROTO_E_FRAME: return "frame";
  case PROTO_E_VERSION: return "version";
  case PROTO_E_KIND: return "kind";
  case PROTO_E_PROFILE: return "profile";
  case PROTO_E_PRIORITY: return "priority";
  case PROTO_E_PARAMS: return "params";
  case PROTO_E_TOO_LARGE: return "too-large";
  case PROTO_E_SHUTDOWN: return "shutdown";
  case PROTO_E_INTERNAL: return "internal";
  case PROTO_E_UNSUPPORTED: return "unsupported";
  default: return "unknown";
  }
}

proto_peek_t proto_frame_peek(const uint8_t *buf, size_t len, size_t *frame_len) {
  if (len < PROTO_LEN_BYTES) return PROTO_PEEK_MORE;
  uint32_t body = proto_get32(buf);
  if (body > PROTO_MAX_BODY) return PROTO_PEEK_TOO_LARGE;
  *frame_len = PROTO_LEN_BYTES + (size_t)body;
  return len >= *frame_len ? PROTO_PEEK_FRAME : PROTO_PEEK_MORE;
}

/* A bounded reader over a request's parameters: every get fails (and
 * keeps failing) once the parameters are exhausted. */
typedef struct reader {
  const uint8_t *p, *end;
  bool short_read;
} reader_t;

static uint32_t get32(reader_t *r) {
  if (r->end - r->p < 4) {
    r->short_read = true;
    r->p = r->end;
    return 0;
  }
  uint32_t v = proto_get32(r->p);
  r->p += 4;
  return v;
}

static uint8_t get8(reader_t *r) {
  if (r->p >= r->end) {
    r->short_read = true;
    return 0;
  }
  return *r->p++;
}

static uint16_t get16(reader_t *r) {
  if (r->end - r->p < 2) {
    r->short_read = true;
    r->p = r->end;
    return 0;
  }
  uint16_t v = proto_get16(r->p);
  r->p += 2;
  return v;
}

#define FAIL(code, msg)                                                                            \
  do {                                                                                             \
    *detail = (msg);                                                                               \
    return (code);                                                                                 \
  } while (0)

static int decode_params(reader_t *r, proto_request_t *q, const char **detail) {
  switch (q->profile) {
  case PROTO_NULL: {
    proto_null_t *n = &q->p.null;
    n->spin_us = get32(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "null: truncated (needs spin_us)");
    if (n->spin_us > PROTO_NULL_MAX_SPIN_US) FAIL(PROTO_E_PARAMS, "null: spin_us above 1000000");
    n->data = r->p;
    n->len = (size_t)(r->end - r->p);
    r->p = r->end;
    return 0;
  }
  case PROTO_NEW_ORDER: {
    proto_new_order_t *o = &q->p.new_order;
    o->w_id = get32(r);
    o->d_id = get8(r);
    o->c_id = get32(r);
    o->ol_cnt = get8(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "new-order: truncated header");
    if (o->ol_cnt < PROTO_MIN_ORDER_LINES || o->ol_cnt > PROTO_MAX_ORDER_LINES)
      FAIL(PROTO_E_PARAMS, "new-order: ol_cnt outside 5..15");
    for (unsigned i = 0; i < o->ol_cnt; i++) {
      o->lines[i].i_id = get32(r);
      o->lines[i].supply_w_id = get32(r);
      o->lines[i].quantity = get8(r);
      if (r->short_read) FAIL(PROTO_E_PARAMS, "new-order: truncated order lines");
      if (o->lines[i].quantity < 1 || o->lines[i].quantity > 10)
        FAIL(PROTO_E_PARAMS, "new-order: quantity outside 1..10");
    }
    return 0;
  }
  case PROTO_PAYMENT: {
    proto_payment_t *p = &q->p.payment;
    p->w_id = get32(r);
    p->d_id = get8(r);
    p->c_w_id = get32(r);
    p->c_d_id = get8(r);
    p->by_name = get8(r);
    p->c_id = get32(r);
    p->c_last = get16(r);
    p->h_amount_cents = get32(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "payment: truncated");
    if (p->by_name > 1) FAIL(PROTO_E_PARAMS, "payment: by_name is not 0 or 1");
    if (p->c_last >= PROTO_LAST_NAMES) FAIL(PROTO_E_PARAMS, "payment: c_last above 999");
    if (p->h_amount_cents < 100 || p->h_amount_cents > 500000)
      FAIL(PROTO_E_PARAMS, "payment: h_amount outside 1.00..5000.00");
    return 0;
  }
  case PROTO_ORDER_STATUS: {
    proto_order_status_t *s = &q->p.order_status;
    s->w_id = get32(r);
    s->d_id = get8(r);
    s->by_name = get8(r);
    s->c_id = get32(r);
    s->c_last = get16(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "order-status: truncated");
    if (s->by_name > 1) FAIL(PROTO_E_PARAMS, "order-status: by_name is not 0 or 1");
    if (s->c_last >= PROTO_LAST_NAMES) FAIL(PROTO_E_PARAMS, "order-status: c_last above 999");
    return 0;
  }
  case PROTO_DELIVERY: {
    proto_delivery_t *d = &q->p.delivery;
    d->w_id = get32(r);
    d->carrier_id = get8(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "delivery: truncated");
    if (d->carrier_id < 1 || d->carrier_id > 10)
      FAIL(PROTO_E_PARAMS, "delivery: carrier_id outside 1..10");
    return 0;
  }
  case PROTO_STOCK_LEVEL: {
    proto_stock_level_t *s = &q->p.stock_level;
    s->w_id = get32(r);
    s->d_id = get8(r);
    s->threshold = get8(r);
    if (r->short_read) FAIL(PROTO_E_PARAMS, "stock-level: truncated");
    if (s->threshold < 10 || s->threshold > 20)
      FAIL(PROTO_E_PARAMS, "stock-level: threshold outside 10..20");
    return 0;
  }
  default: FAIL(PROTO_E_PROFILE, "unknown profile");
  }
}

int proto_decode_request(const uint8_t *frame, size_t len, proto_request_t *q,
                         const char **detail) {
  memset(q, 0, sizeof *q);
  *detail = "";
  if (len < PROTO_LEN_BYTES || proto_get32(frame) != len - PROTO_LEN_BYTES)
    FAIL(PROTO_E_FRAME, "length prefix does not match the frame");
  const uint8_t *b = frame + PROTO_LEN_BYTES;
  size_t blen = len - PROTO_LEN_BYTES;
  if (blen < PROTO_HEADER_BYTES) FAIL(PROTO_E_FRAME, "body shorter than the 12-byte header");
  q->priority = b[2];
  q->profile = b[3];
  q->id = proto_get64(b + 4);
  if (b[0] != PROTO_VERSION)
    FAIL(PROTO_E_VERSION, "unsupported protocol version (this server speaks 1)");
  if (b[1] != PROTO_REQUEST) FAIL(PROTO_E_KIND, "a client may only send requests (kind 1)");
  if (q->profile >= PROTO_NPROFILES) FAIL(PROTO_E_PROFILE, "unknown profile (0..5)");
  if (q->priority > PROTO_MAX_PRIORITY) FAIL(PROTO_E_PRIORITY, "priority above 64");
  reader_t r = {b + PROTO_HEADER_BYTES, b + blen, false};
  int rc = decode_params(&r, q, detail);
  if (rc != 0) return rc;
  if (r.p != r.end) FAIL(PROTO_E_PARAMS, "trailing bytes after the parameters");
  return 0;
}

/* A bounded writer: fails once cap would be exceeded. */
typedef struct writer {
  uint8_t *p, *end;
  bool overflow;
} writer_t;

static void put8(writer_t *w, uint8_t v) {
  if (w->p >= w->end) {
    w->overflow = true;
    return;
  }
  *w->p++ = v;
}

static void put32(writer_t *w, uint32_t v) {
  if (w->end - w->p < 4) {
    w->overflow = true;
    w->p = w->end;
    return;
  }
  proto_put32(w->p, v);
  w->p += 4;
}

static void put_bytes(writer_t *w, const void *s, size_t n) {
  if ((size_t)(w->end - w->p) < n) {
    w->overflow = true;
    w->p = w->end;
    return;
  }
  if (n) memcpy(w->p, s, n);
  w->p += n;
}

static void put16(writer_t *w, uint16_t v) {
  put8(w, (uint8_t)(v >> 8));
  put8(w, (uint8_t)v);
}

/* Writes the header at out (room for it checked by the caller) and returns
 * a writer positioned after it. */
static writer_t begin_frame(uint8_t *out, size_t cap, unsigned kind, unsigned priority,
                            unsigned profile, uint64_t id) {
  writer_t w = {out, out + cap, cap < PROTO_LEN_BYTES + PROTO_HEADER_BYTES};
  if (w.overflow) return w;
  w.p += PROTO_LEN_BYTES;
  put8(&w, PROTO_VERSION);
  put8(&w, (uint8_t)kind);
  put8(&w, (uint8_t)priority);
  put8(&w, (uint8_t)profile);
  proto_put64(w.p, id);
  w.p += 8;
  return w;
}

static size_t end_frame(uint8_t *out, writer_t *w) {
  if (w->overflow) return 0;
  size_t len = (size_t)(w->p - out);
  if (len - PROTO_LEN_BYTES > PROTO_MAX_BODY) return 0;
  proto_put32(out, (uint32_t)(len - PROTO_LEN_BYTES));
  return len;
}

size_t proto_encode_request(const proto_request_t *q, uint8_t *out, size_t cap) {
  writer_t w = begin_frame(out, cap, PROTO_REQUEST, q->priority, q->profile, q->id);
  switch (q->profile) {
  case PROTO_NULL:
    put32(&w, q->p.null.spin_us);
    put_bytes(&w, q->p.null.data, q->p.null.len);
    break;
  case PROTO_NEW_ORDER: {
    const proto_new_order_t *o = &q->p.new_order;
    if (o->ol_cnt > PROTO_MAX_ORDER_LINES) return 0;
    put32(&w, o->w_id);
    put8(&w, o->d_id);
    put32(&w, o->c_id);
    put8(&w, o->ol_cnt);
    for (unsigned i = 0; i < o->ol_cnt; i++) {
      put32(&w, o->lines[i].i_id);
      put32(&w, o->lines[i].supply_w_id);
      put8(&w, o->lines[i].quantity);
    }
    break;
  }
  case PROTO_PAYMENT: {
    const proto_payment_t *p = &q->p.payment;
    put32(&w, p->w_id);
    put8(&w, p->d_id);
    put32(&w, p->c_w_id);
    put8(&w, p->c_d_id);
    put8(&w, p->by_name);
    put32(&w, p->c_id);
    put16(&w, p->c_last);
    put32(&w, p->h_amount_cents);
    break;
  }
  case PROTO_ORDER_STATUS: {
    const proto_order_status_t *s = &q->p.order_status;
    put32(&w, s->w_id);
    put8(&w, s->d_id);
    put8(&w, s->by_name);
    put32(&w, s->c_id);
    put16(&w, s->c_last);
    break;
  }
  case PROTO_DELIVERY:
    put32(&w, q->p.delivery.w_id);
    put8(&w, q->p.delivery.carrier_id);
    break;
  case PROTO_STOCK_LEVEL:
    put32(&w, q->p.stock_level.w_id);
    put8(&w, q->p.stock_level.d_id);
    put8(&w, q->p.stock_level.threshold);
    break;
  default: return 0;
  }
  return end_frame(out, &w);
}

size_t proto_encode_reply(uint64_t id, unsigned priority, unsigned profile, const void *payload,
                          size_t plen, uint8_t *out, size_t cap) {
  writer_t w = begin_frame(out, cap, PROTO_REPLY, priority, profile, id);
  put_bytes(&w, payload, plen);
  return end_frame(out, &w);
}

size_t proto_encode_error(uint64_t id, unsigned profile, unsigned code, const char *msg,
                          uint8_t *out, size_t cap) {
  writer_t w = begin_frame(out, cap, PROTO_ERROR, 0, profile, id);
  put8(&w, (uint8_t)code);
  if (w.overflow) return 0;
  size_t room = (size_t)(w.end - w.p);
  size_t n = strlen(msg);
  put_bytes(&w, msg, n < room ? n : room);
  return end_frame(out, &w);
}

int proto_decode_response(const uint8_t *frame, size_t len, proto_response_t *r) {
  memset(r, 0, sizeof *r);
  if (len < PROTO_LEN_BYTES + PROTO_HEADER_BYTES || proto_get32(frame) != len - PROTO_LEN_BYTES)
    return -1;
  const uint8_t *b = frame + PROTO_LEN_BYTES;
  if (b[0] != PROTO_VERSION || (b[1] != PROTO_REPLY && b[1] != PROTO_ERROR)) return -1;
  r->kind = b[1];
  r->priority = b[2];
  r->profile = b[3];
  r->id = proto_get64(b + 4);
  r->payload = b + PROTO_HEADER_BYTES;
  r->plen = len - PROTO_LEN_BYTES - PROTO_HEADER_BYTES;
  if (r->kind == PROTO_ERROR) {
    if (r->plen < 1) return -1;
    r->error_code = r->payload[0];
    r->payload++;
    r->plen--;
  }
  return 0;
}
