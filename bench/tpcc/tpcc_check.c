/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc_check.c: the consistency conditions of clause 3.3.2 of
 * TPC-C [TPCC] and this implementation's own invariants, checked with plain
 * reads on a quiescent database, and tpcc_corrupt(), which breaks them on
 * purpose so that the tests can show each check fails when it should.
 *
 * Conditions checked (numbering of clause 3.3.2):
 *  1  W_YTD = sum(D_YTD) of the warehouse's districts
 *  2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) of the district
 *  3  max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER of the district
 *  4  sum(O_OL_CNT) = ORDER-LINE rows of the district
 *  5  O_CARRIER_ID is null exactly for the orders in NEW-ORDER
 *  6  O_OL_CNT = the order's ORDER-LINE rows
 *  7  OL_DELIVERY_D is null exactly when its order's O_CARRIER_ID is
 *  8  W_YTD = sum(H_AMOUNT) of the warehouse's history
 *  9  D_YTD = sum(H_AMOUNT) of the district's history
 * 10  C_BALANCE = sum(OL_AMOUNT of delivered lines) - sum(H_AMOUNT), per
 *     customer
 * 12  C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered lines)
 * Conditions 4 (sum(O_OL_CNT) = ORDER-LINE rows) and 6 (O_OL_CNT = the
 * order's line rows): an order stores its O_OL_CNT lines in itself, so the
 * rows counted are its well-formed lines (an item, a supply warehouse and
 * a quantity in range): a line a new order never wrote, or one
 * overwritten, is missing from the count. Condition 11
 * relates row counts to the initial population and holds only until the
 * first delivery; it is not checked. Own invariants: the order index
 * holds orders 1..D_NEXT_O_ID-1 exactly once each, in the right bucket;
 * each customer's order list is newest first, complete, and its head is
 * C_LAST_ORDER; the new-order queue is ascending and its tail pointer is
 * its last row; the last-name index holds each customer once, under its
 * name, sorted by C_FIRST; C_PAYMENT_CNT = the customer's history rows;
 * C_DELIVERY_CNT = its orders delivered since population; S_YTD,
 * S_ORDER_CNT, S_REMOTE_CNT = the sums over the lines that new orders
 * added; S_QUANTITY within 10..100. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpcc_internal.h"

/* Up to this many violations are described in err. */
#define REPORT_MAX 4

typedef struct report {
  long count;
  char *err;
  size_t len, used;
} report_t;

static void violation(report_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(report_t *r, const char *fmt, ...) {
  r->count++;
  if (r->err == NULL || r->len == 0 || r->count > REPORT_MAX) return;
  if (r->used > 0 && r->used + 2 < r->len) {
    memcpy(r->err + r->used, "; ", 3);
    r->used += 2;
  }
  if (r->used + 1 >= r->len) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(r->err + r->used, r->len - r->used, fmt, ap);
  va_end(ap);
  if (n > 0) r->used += (size_t)n < r->len - r->used ? (size_t)n : r->len - r->used - 1;
}

/* Per-customer sums over one district. */
typedef struct csum {
  int64_t delivered_amount; /* OL_AMOUNT of delivered lines */
  int64_t paid;             /* H_AMOUNT of history rows naming the customer */
  uint32_t history_rows;
  uint32_t delivered_run; /* orders delivered by delivery transactions */
} csum_t;

/* Per-stock sums over the lines that new orders added. */
typedef struct ssum {
  int64_t ytd;
  uint32_t order_cnt, remote_cnt;
} ssum_t;

static void check_name_index(const tpcc_db_t *db, uint32_t w, uint32_t d, report_t *r) {
  const tpcc_district_t *dist = tpcc_d(db, w, d);
  uint32_t nc = db->scale.customers;
  if (dist->name_start[0] != 0 || dist->name_start[TPCC_NAMES] != nc) {
    violation(r, "index: district %u/%u: last-name index spans %u..%u, not 0..%u", w, d,
              dist->name_start[0], dist->name_start[TPCC_NAMES], nc);
    return;
  }
  unsigned char *seen = calloc(nc + 1, 1);
  if (seen == NULL) {
    violation(r, "check: out of memory");
    return;
  }
  for (uint32_t n = 0; n < TPCC_NAMES; n++) {
    for (uint32_t k = dist->name_start[n]; k < dist->name_start[n + 1]; k++) {
      uint32_t c = dist->name_ids[k];
      if (c < 1 || c > nc || seen[c]) {
        violation(r, "index: district %u/%u: last-name index entry %u is customer %u (%s)", w, d, k,
                  c, c < 1 || c > nc ? "out of range" : "twice");
        continue;
      }
      seen[c] = 1;
      if (tpcc_c(db, w, d, c)->last != n)
        violation(r, "index: customer %u/%u/%u is under name %u, its C_LAST is %u", w, d, c, n,
                  tpcc_c(db, w, d, c)->last);
      if (k > dist->name_start[n] &&
          strcmp(tpcc_c(db, w, d, dist->name_ids[k - 1])->first, tpcc_c(db, w, d, c)->first) > 0)
        violation(r, "index: district %u/%u: name %u not sorted by C_FIRST at entry %u", w, d, n,
                  k);
    }
  }
  free(seen);
}

/* Walk one district: orders (index and customer lists), new orders,
 * history; fills cs (per customer, indexed c - 1) and ss (per stock row of
 * the whole database). Returns the district's sum of H_AMOUNT. */
static int64_t check_district(const tpcc_db_t *db, uint32_t w, uint32_t d, csum_t *cs, ssum_t *ss,
                              report_t *r) {
  const tpcc_district_t *dist = tpcc_d(db, w, d);
  uint32_t next = dist->next_o_id, nc = db->scale.customers;
  if (next < 1) {
    violation(r, "district %u/%u: D_NEXT_O_ID is 0", w, d);
    return 0;
  }
  uint32_t norders = next - 1;
  /* The order index: each of 1..next-1 exactly once, in its bucket. */
  const tpcc_order_t **by_id = calloc((size_t)norders + 1, sizeof *by_id);
  if (by_id == NULL) {
    violation(r, "check: out of memory");
    return 0;
  }
  uint32_t max_o_id = 0;
  for (uint32_t b = 0; b <= dist->order_mask; b++) {
    for (const tpcc_order_t *o = dist->orders[b]; o != NULL; o = o->hnext) {
      if ((o->o_id & dist->order_mask) != b)
        violation(r, "index: order %u/%u/%u in bucket %u", w, d, o->o_id, b);
      if (o->o_id > max_o_id) max_o_id = o->o_id;
      if (o->o_id < 1 || o->o_id > norders) {
        violation(r, "condition 2: district %u/%u: order %u beyond D_NEXT_O_ID - 1 = %u", w, d,
                  o->o_id, norders);
        continue;
      }
      if (by_id[o->o_id] != NULL) {
        violation(r, "index: order %u/%u/%u indexed twice", w, d, o->o_id);
        continue;
      }
      by_id[o->o_id] = o;
    }
  }
  if (max_o_id != norders)
    violation(r, "condition 2: district %u/%u: D_NEXT_O_ID - 1 = %u, max(O_ID) = %u", w, d, norders,
              max_o_id);

  /* The new-order queue: ascending, contiguous (condition 3), its tail. */
  unsigned char *undelivered = calloc((size_t)norders + 1, 1);
  if (undelivered == NULL) {
    free(by_id);
    violation(r, "check: out of memory");
    return 0;
  }
  uint32_t no_rows = 0, no_min = 0, no_max = 0;
  const tpcc_new_order_t *last = NULL;
  for (const tpcc_new_order_t *n = dist->no_head; n != NULL; n = n->next) {
    if (no_rows == 0) no_min = n->o_id;
    if (no_rows > 0 && n->o_id <= no_max)
      violation(r, "index: district %u/%u: new-order queue not ascending at %u", w, d, n->o_id);
    no_max = n->o_id;
    no_rows++;
    last = n;
    if (n->o_id < 1 || n->o_id > norders || by_id[n->o_id] != n->order) {
      violation(r, "index: district %u/%u: new order %u names no indexed order", w, d, n->o_id);
      continue;
    }
    undelivered[n->o_id] = 1;
  }
  if (dist->no_tail != last)
    violation(r, "index: district %u/%u: new-order tail is not the queue's last row", w, d);
  if (no_rows > 0) {
    if (no_max != norders)
      violation(r, "condition 2: district %u/%u: D_NEXT_O_ID - 1 = %u, max(NO_O_ID) = %u", w, d,
                norders, no_max);
    if (no_max - no_min + 1 != no_rows)
      violation(r,
                "condition 3: district %u/%u: max(NO_O_ID) - min(NO_O_ID) + 1 = %u, %u rows in "
                "NEW-ORDER",
                w, d, no_max - no_min + 1, no_rows);
  }

  /* Orders and lines: conditions 4 to 7, per-customer and per-stock sums. */
  uint64_t sum_ol_cnt = 0, line_rows = 0;
  for (uint32_t o_id = 1; o_id <= norders; o_id++) {
    const tpcc_order_t *o = by_id[o_id];
    if (o == NULL) {
      violation(r, "index: order %u/%u/%u missing from the order index", w, d, o_id);
      continue;
    }
    if (o->w_id != w || o->d_id != d || o->c_id < 1 || o->c_id > nc) {
      violation(r, "order %u/%u/%u: keys %u/%u, customer %u", w, d, o_id, o->w_id, o->d_id,
                o->c_id);
      continue;
    }
    if (o->ol_cnt < TPCC_MIN_OL || o->ol_cnt > TPCC_MAX_OL) {
      violation(r, "order %u/%u/%u: O_OL_CNT %u not in 5..15", w, d, o_id, o->ol_cnt);
      continue;
    }
    sum_ol_cnt += o->ol_cnt;
    uint32_t rows = 0; /* the order's well-formed line rows */
    bool in_queue = undelivered[o_id] != 0;
    if ((o->carrier_id == 0) != in_queue)
      violation(r, "condition 5: order %u/%u/%u: O_CARRIER_ID %u but %s NEW-ORDER", w, d, o_id,
                o->carrier_id, in_queue ? "in" : "not in");
    bool placed = o_id >= db->scale.orders + 1; /* by new-order, not population */
    csum_t *c = &cs[o->c_id - 1];
    /* delivered by a delivery transaction (not at population) */
    if (o->carrier_id != 0 && o_id >= db->first_new_o_id) c->delivered_run++;
    for (uint32_t l = 0; l < o->ol_cnt; l++) {
      const tpcc_order_line_t *ol = &o->lines[l];
      if ((ol->delivery_d == 0) != (o->carrier_id == 0))
        violation(r, "condition 7: order %u/%u/%u line %u: OL_DELIVERY_D %lld, O_CARRIER_ID %u", w,
                  d, o_id, l + 1, (long long)ol->delivery_d, o->carrier_id);
      if (ol->delivery_d != 0) c->delivered_amount += ol->amount;
      if (ol->i_id < 1 || ol->i_id > db->scale.items || ol->supply_w_id < 1 ||
          ol->supply_w_id > db->scale.warehouses || ol->quantity < 1 || ol->quantity > 10) {
        /* not an ORDER-LINE row: a line that was never written, or was
         * overwritten */
        violation(r, "order %u/%u/%u line %u: item %u, supply warehouse %u, quantity %u", w, d,
                  o_id, l + 1, ol->i_id, ol->supply_w_id, ol->quantity);
        continue;
      }
      rows++;
      if (placed) {
        ssum_t *s = &ss[(size_t)(ol->supply_w_id - 1) * db->scale.items + ol->i_id - 1];
        s->ytd += ol->quantity;
        s->order_cnt++;
        if (ol->supply_w_id != w) s->remote_cnt++;
      }
    }
    if (rows != o->ol_cnt)
      violation(r, "condition 6: order %u/%u/%u: O_OL_CNT %u, %u ORDER-LINE rows", w, d, o_id,
                o->ol_cnt, rows);
    line_rows += rows;
  }
  if (sum_ol_cnt != line_rows)
    violation(r, "condition 4: district %u/%u: sum(O_OL_CNT) %llu, %llu ORDER-LINE rows", w, d,
              (unsigned long long)sum_ol_cnt, (unsigned long long)line_rows);
  /* Customers' order lists: newest first, each order once. */
  for (uint32_t c = 1; c <= nc; c++) {
    uint32_t prev = UINT32_MAX;
    for (const tpcc_order_t *o = tpcc_c(db, w, d, c)->last_order; o != NULL; o = o->c_prev) {
      if (o->c_id != c || o->o_id >= prev || o->o_id < 1 || o->o_id > norders ||
          by_id[o->o_id] != o) {
        violation(r, "index: customer %u/%u/%u: order list broken at order %u", w, d, c, o->o_id);
        break;
      }
      prev = o->o_id;
      undelivered[o->o_id] |= 2; /* seen on its customer's list */
    }
  }
  for (uint32_t o_id = 1; o_id <= norders; o_id++) {
    if (by_id[o_id] != NULL && by_id[o_id]->c_id >= 1 && by_id[o_id]->c_id <= nc &&
        !(undelivered[o_id] & 2))
      violation(r, "index: order %u/%u/%u not on customer %u's order list", w, d, o_id,
                by_id[o_id]->c_id);
  }

  /* History rows of this district (H_W_ID, H_D_ID); per customer by
   * H_C_W_ID, H_C_D_ID (added to that district's sums by the caller). */
  int64_t hsum = 0;
  for (const tpcc_history_t *h = dist->history; h != NULL; h = h->next) {
    hsum += h->amount;
    if (h->w_id != w || h->d_id != d || h->c_w_id < 1 || h->c_w_id > db->scale.warehouses ||
        h->c_d_id < 1 || h->c_d_id > db->scale.districts || h->c_id < 1 || h->c_id > nc)
      violation(r, "history: district %u/%u: row for customer %u/%u/%u", w, d, h->c_w_id, h->c_d_id,
                h->c_id);
  }
  free(by_id);
  free(undelivered);
  return hsum;
}

/* Add every history row that names a customer of district (w, d), wherever
 * it was recorded (remote payments record it in the paying district). */
static void history_of(const tpcc_db_t *db, uint32_t w, uint32_t d, csum_t *cs) {
  uint32_t nd = db->scale.warehouses * db->scale.districts;
  for (uint32_t i = 0; i < nd; i++) {
    for (const tpcc_history_t *h = db->districts[i].history; h != NULL; h = h->next) {
      if (h->c_w_id == w && h->c_d_id == d && h->c_id >= 1 && h->c_id <= db->scale.customers) {
        cs[h->c_id - 1].paid += h->amount;
        cs[h->c_id - 1].history_rows++;
      }
    }
  }
}

long tpcc_check(tpcc_db_t *db, char *err, size_t errlen) {
  report_t rep = {.err = err, .len = errlen};
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (db == NULL) {
    violation(&rep, "check: NULL database");
    return rep.count;
  }
  const tpcc_scale_t *s = &db->scale;
  csum_t *cs = malloc(sizeof *cs * s->customers);
  ssum_t *ss = calloc((size_t)s->warehouses * s->items, sizeof *ss);
  if (cs == NULL || ss == NULL) {
    violation(&rep, "check: out of memory");
    goto out;
  }
  for (uint32_t w = 1; w <= s->warehouses; w++) {
    int64_t sum_d_ytd = 0, sum_w_hist = 0;
    for (uint32_t d = 1; d <= s->districts; d++) {
      const tpcc_district_t *dist = tpcc_d(db, w, d);
      memset(cs, 0, sizeof *cs * s->customers);
      check_name_index(db, w, d, &rep);
      int64_t hsum = check_district(db, w, d, cs, ss, &rep);
      history_of(db, w, d, cs);
      sum_d_ytd += dist->ytd;
      sum_w_hist += hsum;
      if (dist->ytd != hsum)
        violation(&rep, "condition 9: district %u/%u: D_YTD %lld, sum(H_AMOUNT) %lld", w, d,
                  (long long)dist->ytd, (long long)hsum);
      for (uint32_t c = 1; c <= s->customers; c++) {
        const tpcc_customer_t *cu = tpcc_c(db, w, d, c);
        const csum_t *x = &cs[c - 1];
        if (cu->balance != x->delivered_amount - x->paid)
          violation(
              &rep, "condition 10: customer %u/%u/%u: C_BALANCE %lld, delivered %lld - paid %lld",
              w, d, c, (long long)cu->balance, (long long)x->delivered_amount, (long long)x->paid);
        if (cu->balance + cu->ytd_payment != x->delivered_amount)
          violation(&rep,
                    "condition 12: customer %u/%u/%u: C_BALANCE + C_YTD_PAYMENT %lld, delivered "
                    "%lld",
                    w, d, c, (long long)(cu->balance + cu->ytd_payment),
                    (long long)x->delivered_amount);
        if (cu->payment_cnt != x->history_rows)
          violation(&rep, "customer %u/%u/%u: C_PAYMENT_CNT %u, %u history rows", w, d, c,
                    cu->payment_cnt, x->history_rows);
        if (cu->delivery_cnt != x->delivered_run)
          violation(&rep,
                    "customer %u/%u/%u: C_DELIVERY_CNT %u, %u orders delivered since population", w,
                    d, c, cu->delivery_cnt, x->delivered_run);
      }
    }
    const tpcc_warehouse_t *wh = tpcc_w(db, w);
    if (wh->ytd != sum_d_ytd)
      violation(&rep, "condition 1: warehouse %u: W_YTD %lld, sum(D_YTD) %lld", w,
                (long long)wh->ytd, (long long)sum_d_ytd);
    if (wh->ytd != sum_w_hist)
      violation(&rep, "condition 8: warehouse %u: W_YTD %lld, sum(H_AMOUNT) %lld", w,
                (long long)wh->ytd, (long long)sum_w_hist);
  }
  for (uint32_t w = 1; w <= s->warehouses; w++) {
    for (uint32_t i = 1; i <= s->items; i++) {
      const tpcc_stock_t *st = tpcc_s(db, w, i);
      const ssum_t *x = &ss[(size_t)(w - 1) * s->items + i - 1];
      if (st->ytd != x->ytd || st->order_cnt != x->order_cnt || st->remote_cnt != x->remote_cnt)
        violation(&rep,
                  "stock %u/%u: S_YTD %lld, S_ORDER_CNT %u, S_REMOTE_CNT %u; the new orders' "
                  "lines give %lld, %u, %u",
                  w, i, (long long)st->ytd, st->order_cnt, st->remote_cnt, (long long)x->ytd,
                  x->order_cnt, x->remote_cnt);
      if (st->quantity < 10 || st->quantity > 100)
        violation(&rep, "stock %u/%u: S_QUANTITY %d not in 10..100", w, i, st->quantity);
    }
  }
out:
  free(cs);
  free(ss);
  if (rep.count > REPORT_MAX && err != NULL && rep.used + 1 < errlen)
    snprintf(err + rep.used, errlen - rep.used, "; ... %ld violations in all", rep.count);
  if (rep.count == 0 && err != NULL && errlen > 0) snprintf(err, errlen, "ok");
  return rep.count;
}

/* ---- deliberate corruption (for the tests) ---------------------------------- */

const char tpcc_corruptions[] =
    "w-ytd, d-next-o-id, new-order-gap, order-line, carrier, delivery-d, "
    "history, c-balance, order-index, customer-index, stock-ytd";

int tpcc_corrupt(tpcc_db_t *db, const char *what, char *err, size_t errlen) {
  if (db == NULL || what == NULL) {
    tpcc_set_err(err, errlen, "tpcc_corrupt: NULL %s", db == NULL ? "database" : "name");
    return -1;
  }
  /* District 1 of warehouse 1 (where terminal 0 runs profiles), or for the
   * corruptions of the new-order queue the first district whose queue has
   * three rows. */
  uint32_t w = 1, d = 1;
  if (strcmp(what, "new-order-gap") == 0 || strcmp(what, "carrier") == 0) {
    for (uint32_t i = 0; i < db->scale.warehouses * db->scale.districts; i++) {
      const tpcc_new_order_t *h = db->districts[i].no_head;
      if (h != NULL && h->next != NULL && h->next->next != NULL) {
        w = db->districts[i].w_id;
        d = db->districts[i].d_id;
        break;
      }
    }
  }
  tpcc_district_t *dist = tpcc_d(db, w, d);
  tpcc_order_t *newest = dist->orders[(dist->next_o_id - 1) & dist->order_mask];
  while (newest != NULL && newest->o_id != dist->next_o_id - 1)
    newest = newest->hnext;
  if (strcmp(what, "w-ytd") == 0) {
    tpcc_w(db, w)->ytd += 1;
  } else if (strcmp(what, "d-next-o-id") == 0) {
    dist->next_o_id++;
  } else if (strcmp(what, "new-order-gap") == 0) {
    /* unlink the second row of the queue */
    tpcc_new_order_t *h = dist->no_head;
    if (h == NULL || h->next == NULL || h->next->next == NULL || db->unlinked_new_order != NULL)
      goto nothing;
    db->unlinked_new_order = h->next;
    h->next = h->next->next;
  } else if (strcmp(what, "order-line") == 0) {
    if (newest == NULL) goto nothing;
    newest->lines[newest->ol_cnt - 1].i_id = 0; /* as if never written */
  } else if (strcmp(what, "carrier") == 0) {
    if (dist->no_head == NULL) goto nothing;
    dist->no_head->order->carrier_id = 3;
  } else if (strcmp(what, "delivery-d") == 0) {
    if (newest == NULL) goto nothing;
    newest->lines[0].delivery_d = newest->lines[0].delivery_d != 0 ? 0 : 1;
  } else if (strcmp(what, "history") == 0) {
    if (dist->history == NULL) goto nothing;
    dist->history->amount += 1;
  } else if (strcmp(what, "c-balance") == 0) {
    tpcc_c(db, w, d, 1)->balance -= 1;
  } else if (strcmp(what, "order-index") == 0) {
    /* unlink the newest order from its bucket */
    tpcc_order_t **b = &dist->orders[(dist->next_o_id - 1) & dist->order_mask];
    if (newest == NULL || db->unlinked_order != NULL) goto nothing;
    db->unlinked_order = newest;
    while (*b != newest)
      b = &(*b)->hnext;
    *b = newest->hnext;
  } else if (strcmp(what, "customer-index") == 0) {
    /* swap two index entries of different names */
    uint32_t n0 = tpcc_c(db, w, d, 1)->last;
    uint32_t k = dist->name_start[n0];
    uint32_t other = dist->name_start[n0 + 1] < db->scale.customers ? dist->name_start[n0 + 1]
                     : k > 0                                        ? k - 1
                                                                    : UINT32_MAX;
    if (other == UINT32_MAX) goto nothing;
    uint32_t t = dist->name_ids[k];
    dist->name_ids[k] = dist->name_ids[other];
    dist->name_ids[other] = t;
  } else if (strcmp(what, "stock-ytd") == 0) {
    tpcc_s(db, w, 1)->ytd += 1;
  } else {
    tpcc_set_err(err, errlen, "tpcc_corrupt: unknown corruption '%s' (valid: %s)", what,
                 tpcc_corruptions);
    return -1;
  }
  return 0;
nothing:
  tpcc_set_err(err, errlen, "tpcc_corrupt: %s: nothing to break in district %u/%u", what, w, d);
  return -1;
}
