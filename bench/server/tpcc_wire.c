/* SPDX-License-Identifier: MIT */
/* bench/server/tpcc_wire.c: protocol parameters <-> TPC-C inputs. */
#include "tpcc_wire.h"

#include <string.h>

static void key_to(uint8_t by_name, uint32_t c_id, uint16_t c_last, tpcc_customer_key_t *k) {
  k->by_name = by_name;
  k->c_id = c_id;
  k->c_last = c_last;
}

void tpcc_wire_to_input(const proto_request_t *q, int64_t now, tpcc_input_t *in) {
  memset(in, 0, sizeof *in);
  in->now = now;
  switch (q->profile) {
  case PROTO_NEW_ORDER: {
    const proto_new_order_t *o = &q->p.new_order;
    in->profile = TPCC_NEW_ORDER;
    in->w_id = o->w_id;
    in->u.new_order.d_id = o->d_id;
    in->u.new_order.c_id = o->c_id;
    in->u.new_order.ol_cnt = o->ol_cnt;
    for (unsigned i = 0; i < o->ol_cnt && i < TPCC_MAX_OL; i++) {
      in->u.new_order.items[i].i_id = o->lines[i].i_id;
      in->u.new_order.items[i].supply_w_id = o->lines[i].supply_w_id;
      in->u.new_order.items[i].quantity = o->lines[i].quantity;
    }
    break;
  }
  case PROTO_PAYMENT: {
    const proto_payment_t *p = &q->p.payment;
    in->profile = TPCC_PAYMENT;
    in->w_id = p->w_id;
    in->u.payment.d_id = p->d_id;
    in->u.payment.c_w_id = p->c_w_id;
    in->u.payment.c_d_id = p->c_d_id;
    key_to(p->by_name, p->c_id, p->c_last, &in->u.payment.c);
    in->u.payment.h_amount = p->h_amount_cents;
    break;
  }
  case PROTO_ORDER_STATUS: {
    const proto_order_status_t *s = &q->p.order_status;
    in->profile = TPCC_ORDER_STATUS;
    in->w_id = s->w_id;
    in->u.order_status.d_id = s->d_id;
    key_to(s->by_name, s->c_id, s->c_last, &in->u.order_status.c);
    break;
  }
  case PROTO_DELIVERY:
    in->profile = TPCC_DELIVERY;
    in->w_id = q->p.delivery.w_id;
    in->u.delivery.o_carrier_id = q->p.delivery.carrier_id;
    break;
  case PROTO_STOCK_LEVEL:
    in->profile = TPCC_STOCK_LEVEL;
    in->w_id = q->p.stock_level.w_id;
    in->u.stock_level.d_id = q->p.stock_level.d_id;
    in->u.stock_level.threshold = q->p.stock_level.threshold;
    break;
  default: in->profile = TPCC_NPROFILES; /* refused by tpcc_input_validate */
  }
}

void tpcc_wire_from_input(const tpcc_input_t *in, proto_request_t *q) {
  memset(&q->p, 0, sizeof q->p);
  q->profile = (uint8_t)(in->profile + 1);
  switch (in->profile) {
  case TPCC_NEW_ORDER: {
    proto_new_order_t *o = &q->p.new_order;
    o->w_id = in->w_id;
    o->d_id = (uint8_t)in->u.new_order.d_id;
    o->c_id = in->u.new_order.c_id;
    o->ol_cnt = (uint8_t)in->u.new_order.ol_cnt;
    for (unsigned i = 0; i < o->ol_cnt && i < PROTO_MAX_ORDER_LINES; i++) {
      o->lines[i].i_id = in->u.new_order.items[i].i_id;
      o->lines[i].supply_w_id = in->u.new_order.items[i].supply_w_id;
      o->lines[i].quantity = (uint8_t)in->u.new_order.items[i].quantity;
    }
    break;
  }
  case TPCC_PAYMENT: {
    proto_payment_t *p = &q->p.payment;
    p->w_id = in->w_id;
    p->d_id = (uint8_t)in->u.payment.d_id;
    p->c_w_id = in->u.payment.c_w_id;
    p->c_d_id = (uint8_t)in->u.payment.c_d_id;
    p->by_name = (uint8_t)in->u.payment.c.by_name;
    p->c_id = in->u.payment.c.c_id;
    p->c_last = (uint16_t)in->u.payment.c.c_last;
    p->h_amount_cents = (uint32_t)in->u.payment.h_amount;
    break;
  }
  case TPCC_ORDER_STATUS: {
    proto_order_status_t *s = &q->p.order_status;
    s->w_id = in->w_id;
    s->d_id = (uint8_t)in->u.order_status.d_id;
    s->by_name = (uint8_t)in->u.order_status.c.by_name;
    s->c_id = in->u.order_status.c.c_id;
    s->c_last = (uint16_t)in->u.order_status.c.c_last;
    break;
  }
  case TPCC_DELIVERY:
    q->p.delivery.w_id = in->w_id;
    q->p.delivery.carrier_id = (uint8_t)in->u.delivery.o_carrier_id;
    break;
  case TPCC_STOCK_LEVEL:
    q->p.stock_level.w_id = in->w_id;
    q->p.stock_level.d_id = (uint8_t)in->u.stock_level.d_id;
    q->p.stock_level.threshold = (uint8_t)in->u.stock_level.threshold;
    break;
  default: break;
  }
}

void tpcc_wire_reply(const tpcc_output_t *out, bool rolled_back,
                     uint8_t payload[PROTO_TPCC_REPLY_BYTES]) {
  uint32_t v = 0;
  switch (out->profile) {
  case TPCC_NEW_ORDER: v = out->u.new_order.o_id; break;
  case TPCC_PAYMENT: v = out->u.payment.c_id; break;
  case TPCC_ORDER_STATUS: v = out->u.order_status.o_id; break;
  case TPCC_DELIVERY: v = out->u.delivery.delivered; break;
  case TPCC_STOCK_LEVEL: v = out->u.stock_level.low_stock; break;
  default: break;
  }
  payload[0] = rolled_back ? PROTO_OUTCOME_ROLLED_BACK : PROTO_OUTCOME_COMMITTED;
  proto_put32(payload + 1, rolled_back ? 0 : v);
}
