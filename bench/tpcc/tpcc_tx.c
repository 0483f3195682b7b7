/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc_tx.c: the five TPC-C transaction profiles [TPCC]
 * (clauses 2.4 to 2.8, the x.2 "transaction profile" sections) as bodies of
 * schedstm transactions, and the one-shot tpcc_run().
 *
 * Each body runs inside a transaction its caller started and may run again
 * after an abort: it keeps its state in locals, writes shared data only
 * through the barriers, inserts rows allocated with sstm_malloc (released
 * if the attempt aborts) and deletes with sstm_free (deferred to the
 * commit and its grace period), and writes *out once, at its end. Which
 * fields are read with plain loads (those nothing writes after population)
 * is said in tpcc_internal.h. Values read through the barriers come from
 * one consistent snapshot (opacity, <schedstm/tx.h>), so an attempt never
 * sees an index or a count that no committed state holds; the range checks
 * on them below guard against a corrupted database, not against races. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <schedstm/schedstm.h>

#include "tpcc_internal.h"

/* A row that cannot be allocated: the transaction can neither finish nor
 * report it through the profile's output, as the library does for its own
 * logs (<schedstm/access.h>). */
static void *row_alloc(size_t size) {
  void *p = sstm_malloc(size);
  if (p == NULL) {
    fprintf(stderr, "tpcc: out of memory for a row of %zu bytes\n", size);
    abort();
  }
  return p;
}

/* A value read through the barriers that no consistent database holds. */
static void corrupted(const char *what, unsigned long long v) {
  fprintf(stderr, "tpcc: corrupted database: %s %llu\n", what, v);
  abort();
}

/* Append the decimal digits of v at p; returns the end. */
static char *put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0)
    *p++ = tmp[--n];
  return p;
}

/* Append the NUL-terminated string s, at most max characters; returns the
 * end. */
static char *put_str(char *p, const char *s, size_t max) {
  size_t n = strnlen(s, max);
  memcpy(p, s, n);
  return p + n;
}

/* The customer a key selects in district (w, d): by id, or the one in the
 * middle (position ceil(n / 2)) of those of the name sorted by C_FIRST
 * (clause 2.5.2.2). The last-name index is immutable. */
static uint32_t customer_of(const tpcc_db_t *db, uint32_t w, uint32_t d,
                            const tpcc_customer_key_t *k) {
  if (!k->by_name) return k->c_id;
  const tpcc_district_t *dist = tpcc_d(db, w, d);
  uint32_t lo = dist->name_start[k->c_last], n = dist->name_start[k->c_last + 1] - lo;
  /* n >= 1: tpcc_input_validate accepts only names in use */
  return dist->name_ids[lo + (n + 1) / 2 - 1];
}

/* The order o_id of a district, through its index; NULL if absent. */
static tpcc_order_t *order_lookup(tpcc_district_t *dist, uint32_t o_id) {
  for (tpcc_order_t *o = SSTM_LOAD(dist->orders[o_id & dist->order_mask]); o != NULL;
       o = SSTM_LOAD(o->hnext)) {
    if (SSTM_LOAD(o->o_id) == o_id) return o;
  }
  return NULL;
}

/* ---- new-order (clause 2.4.2) ---------------------------------------------- */

static void new_order(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  const __typeof__(in->u.new_order) *no = &in->u.new_order;
  uint32_t w = in->w_id, d = no->d_id, n = no->ol_cnt;
  tpcc_output_t res = {.profile = TPCC_NEW_ORDER, .status = TPCC_OK};
  const tpcc_warehouse_t *wh = tpcc_w(db, w);
  tpcc_district_t *dist = tpcc_d(db, w, d);
  tpcc_customer_t *cu = tpcc_c(db, w, d, no->c_id);
  res.u.new_order.w_tax = wh->tax;
  res.u.new_order.d_tax = dist->tax;
  res.u.new_order.c_discount = cu->discount;
  tpcc_last_name(cu->last, res.u.new_order.c_last);
  memcpy(res.u.new_order.c_credit, cu->credit, sizeof res.u.new_order.c_credit);

  uint32_t o_id = SSTM_LOAD(dist->next_o_id);
  SSTM_STORE(dist->next_o_id, o_id + 1);
  res.u.new_order.o_id = o_id;
  res.u.new_order.ol_cnt = n;

  /* The new order stays private to this attempt until the links below
   * commit: plain stores initialise it. */
  tpcc_order_t *ord = row_alloc(sizeof *ord + sizeof ord->lines[0] * n);
  uint32_t all_local = 1;
  for (uint32_t l = 0; l < n; l++)
    all_local &= no->items[l].supply_w_id == w;
  *ord = (tpcc_order_t){.o_id = o_id,
                        .d_id = d,
                        .w_id = w,
                        .c_id = no->c_id,
                        .ol_cnt = n,
                        .all_local = all_local,
                        .entry_d = in->now,
                        .carrier_id = 0};

  int64_t sum = 0;
  for (uint32_t l = 0; l < n; l++) {
    const tpcc_item_in_t *it = &no->items[l];
    if (it->i_id > db->scale.items) {
      /* The unused item id: "Item number is not valid", rolled back
       * (clause 2.4.2.3). The cancel discards the stock updates above and
       * releases the order. */
      res.status = TPCC_ROLLED_BACK;
      *out = res;
      sstm_cancel();
    }
    const tpcc_item_t *item = tpcc_i(db, it->i_id);
    tpcc_stock_t *st = tpcc_s(db, it->supply_w_id, it->i_id);
    int32_t q = SSTM_LOAD(st->quantity);
    int32_t want = (int32_t)it->quantity;
    SSTM_STORE(st->quantity, q >= want + 10 ? q - want : q - want + 91);
    SSTM_STORE(st->ytd, SSTM_LOAD(st->ytd) + want);
    SSTM_STORE(st->order_cnt, SSTM_LOAD(st->order_cnt) + 1);
    if (it->supply_w_id != w) SSTM_STORE(st->remote_cnt, SSTM_LOAD(st->remote_cnt) + 1);
    tpcc_order_line_t *ol = &ord->lines[l];
    ol->i_id = it->i_id;
    ol->supply_w_id = it->supply_w_id;
    ol->quantity = it->quantity;
    ol->amount = (int64_t)it->quantity * item->price;
    ol->delivery_d = 0;
    memcpy(ol->dist_info, st->dist[d - 1], sizeof ol->dist_info);
    sum += ol->amount;
  }

  /* Publish: the district's order index, the customer's order list, the
   * district's new-order queue (at its tail: numbers grow along it). */
  tpcc_order_t **bucket = &dist->orders[o_id & dist->order_mask];
  ord->hnext = SSTM_LOAD(*bucket);
  SSTM_STORE(*bucket, ord);
  ord->c_prev = SSTM_LOAD(cu->last_order);
  SSTM_STORE(cu->last_order, ord);
  tpcc_new_order_t *nn = row_alloc(sizeof *nn);
  *nn = (tpcc_new_order_t){.o_id = o_id, .order = ord, .next = NULL};
  tpcc_new_order_t *tail = SSTM_LOAD(dist->no_tail);
  if (tail != NULL)
    SSTM_STORE(tail->next, nn);
  else
    SSTM_STORE(dist->no_head, nn);
  SSTM_STORE(dist->no_tail, nn);

  /* sum <= 15 lines * 10 * 100.00: the products stay far below 2^63 */
  res.u.new_order.total = sum * (10000 - (int64_t)cu->discount) *
                          (10000 + (int64_t)wh->tax + (int64_t)dist->tax) / 100000000;
  *out = res;
}

/* ---- payment (clause 2.5.2) ------------------------------------------------- */

static void payment(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  const __typeof__(in->u.payment) *p = &in->u.payment;
  uint32_t w = in->w_id, d = p->d_id;
  int64_t amount = p->h_amount;
  tpcc_output_t res = {.profile = TPCC_PAYMENT, .status = TPCC_OK};
  tpcc_warehouse_t *wh = tpcc_w(db, w);
  tpcc_district_t *dist = tpcc_d(db, w, d);
  SSTM_STORE(wh->ytd, SSTM_LOAD(wh->ytd) + amount);
  SSTM_STORE(dist->ytd, SSTM_LOAD(dist->ytd) + amount);

  uint32_t c_id = customer_of(db, p->c_w_id, p->c_d_id, &p->c);
  tpcc_customer_t *cu = tpcc_c(db, p->c_w_id, p->c_d_id, c_id);
  int64_t balance = SSTM_LOAD(cu->balance) - amount;
  SSTM_STORE(cu->balance, balance);
  SSTM_STORE(cu->ytd_payment, SSTM_LOAD(cu->ytd_payment) + amount);
  SSTM_STORE(cu->payment_cnt, SSTM_LOAD(cu->payment_cnt) + 1);
  if (cu->credit[0] == 'B') {
    /* Bad credit: the payment's ids and amount go in front of C_DATA,
     * which keeps its first 500 characters (clause 2.5.2.2). */
    char data[sizeof cu->data];
    uint64_t ids[5] = {c_id, p->c_d_id, p->c_w_id, d, w};
    char *q = data;
    for (int i = 0; i < 5; i++) {
      q = put_u64(q, ids[i]);
      *q++ = ' ';
    }
    q = put_u64(q, (uint64_t)amount / 100); /* "C_ID C_D_ID C_W_ID D_ID W_ID 12.34|" */
    *q++ = '.';
    *q++ = (char)('0' + amount % 100 / 10);
    *q++ = (char)('0' + amount % 10);
    *q++ = '|';
    size_t head = (size_t)(q - data); /* at most 5 * 11 + 9 < 500 */
    sstm_load_bytes(data + head, cu->data, sizeof data - 1 - head);
    data[sizeof data - 1] = '\0';
    sstm_store_bytes(cu->data, data, sizeof data);
  }

  tpcc_history_t *h = row_alloc(sizeof *h);
  *h = (tpcc_history_t){.c_id = c_id,
                        .c_d_id = p->c_d_id,
                        .c_w_id = p->c_w_id,
                        .d_id = d,
                        .w_id = w,
                        .date = in->now,
                        .amount = amount};
  char *q = put_str(h->data, wh->name, 10); /* H_DATA: W_NAME, 4 spaces, D_NAME */
  memcpy(q, "    ", 4);
  *put_str(q + 4, dist->name, 10) = '\0';
  h->next = SSTM_LOAD(dist->history);
  SSTM_STORE(dist->history, h);

  res.u.payment.c_id = c_id;
  res.u.payment.c_balance = balance;
  memcpy(res.u.payment.c_credit, cu->credit, sizeof res.u.payment.c_credit);
  *out = res;
}

/* ---- order-status (clause 2.6.2) -------------------------------------------- */

static void order_status(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  const __typeof__(in->u.order_status) *os = &in->u.order_status;
  tpcc_output_t res = {.profile = TPCC_ORDER_STATUS, .status = TPCC_OK};
  uint32_t c_id = customer_of(db, in->w_id, os->d_id, &os->c);
  tpcc_customer_t *cu = tpcc_c(db, in->w_id, os->d_id, c_id);
  res.u.order_status.c_id = c_id;
  res.u.order_status.c_balance = SSTM_LOAD(cu->balance);
  tpcc_order_t *o = SSTM_LOAD(cu->last_order); /* the newest: largest O_ID */
  if (o != NULL) {
    res.u.order_status.o_id = SSTM_LOAD(o->o_id);
    res.u.order_status.o_carrier_id = SSTM_LOAD(o->carrier_id);
    res.u.order_status.o_entry_d = SSTM_LOAD(o->entry_d);
    uint32_t n = SSTM_LOAD(o->ol_cnt);
    if (n > TPCC_MAX_OL) corrupted("ol_cnt", n);
    res.u.order_status.ol_cnt = n;
    for (uint32_t l = 0; l < n; l++) {
      tpcc_order_line_t *ol = &o->lines[l];
      tpcc_line_out_t *lo = &res.u.order_status.lines[l];
      lo->i_id = SSTM_LOAD(ol->i_id);
      lo->supply_w_id = SSTM_LOAD(ol->supply_w_id);
      lo->quantity = SSTM_LOAD(ol->quantity);
      lo->amount = SSTM_LOAD(ol->amount);
      lo->delivery_d = SSTM_LOAD(ol->delivery_d);
    }
  }
  *out = res;
}

/* ---- delivery (clause 2.7.4) ------------------------------------------------ */

/* All districts of the warehouse in one transaction (the specification lets
 * delivery be queued and run apart from its terminal; [Silvestri17] runs it
 * as one long transaction, the profile of lowest priority). */
static void delivery(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  uint32_t w = in->w_id, carrier = in->u.delivery.o_carrier_id;
  tpcc_output_t res = {.profile = TPCC_DELIVERY, .status = TPCC_OK};
  for (uint32_t d = 1; d <= db->scale.districts; d++) {
    tpcc_district_t *dist = tpcc_d(db, w, d);
    tpcc_new_order_t *no = SSTM_LOAD(dist->no_head); /* the oldest: smallest NO_O_ID */
    if (no == NULL) continue;                        /* skipped (clause 2.7.4.2) */
    tpcc_new_order_t *next = SSTM_LOAD(no->next);
    SSTM_STORE(dist->no_head, next);
    if (next == NULL) SSTM_STORE(dist->no_tail, (tpcc_new_order_t *)NULL);
    tpcc_order_t *o = SSTM_LOAD(no->order);
    res.u.delivery.o_id[d - 1] = SSTM_LOAD(no->o_id);
    sstm_free(no);
    uint32_t c_id = SSTM_LOAD(o->c_id), n = SSTM_LOAD(o->ol_cnt);
    if (c_id < 1 || c_id > db->scale.customers) corrupted("o_c_id", c_id);
    if (n > TPCC_MAX_OL) corrupted("ol_cnt", n);
    SSTM_STORE(o->carrier_id, carrier);
    int64_t sum = 0;
    for (uint32_t l = 0; l < n; l++) {
      SSTM_STORE(o->lines[l].delivery_d, in->now);
      sum += SSTM_LOAD(o->lines[l].amount);
    }
    tpcc_customer_t *cu = tpcc_c(db, w, d, c_id);
    SSTM_STORE(cu->balance, SSTM_LOAD(cu->balance) + sum);
    SSTM_STORE(cu->delivery_cnt, SSTM_LOAD(cu->delivery_cnt) + 1);
    res.u.delivery.delivered++;
  }
  *out = res;
}

/* ---- stock-level (clause 2.8.2) --------------------------------------------- */

/* Sort a[0..n) ascending: Shell's sort with Ciura's gaps (at most 300
 * elements here; no C library call, which could allocate, inside a
 * transaction body). */
static void sort_u32(uint32_t *a, uint32_t n) {
  static const uint32_t gaps[] = {132, 57, 23, 10, 4, 1};
  for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    uint32_t gap = gaps[g];
    for (uint32_t i = gap; i < n; i++) {
      uint32_t v = a[i], j = i;
      for (; j >= gap && a[j - gap] > v; j -= gap)
        a[j] = a[j - gap];
      a[j] = v;
    }
  }
}

static void stock_level(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  uint32_t w = in->w_id, threshold = in->u.stock_level.threshold;
  tpcc_output_t res = {.profile = TPCC_STOCK_LEVEL, .status = TPCC_OK};
  tpcc_district_t *dist = tpcc_d(db, w, in->u.stock_level.d_id);
  uint32_t next = SSTM_LOAD(dist->next_o_id);
  uint32_t first = next > 20 ? next - 20 : 1;
  uint32_t ids[20 * TPCC_MAX_OL], k = 0;
  /* The items of the district's last 20 orders. */
  for (uint32_t o_id = first; o_id < next; o_id++) {
    tpcc_order_t *o = order_lookup(dist, o_id);
    if (o == NULL) corrupted("order missing from the index", o_id);
    uint32_t n = SSTM_LOAD(o->ol_cnt);
    if (n > TPCC_MAX_OL) corrupted("ol_cnt", n);
    for (uint32_t l = 0; l < n; l++) {
      uint32_t i_id = SSTM_LOAD(o->lines[l].i_id);
      if (i_id < 1 || i_id > db->scale.items) corrupted("ol_i_id", i_id);
      ids[k++] = i_id;
    }
  }
  /* Distinct items whose home stock is below the threshold. */
  sort_u32(ids, k);
  for (uint32_t j = 0; j < k; j++) {
    if (j > 0 && ids[j] == ids[j - 1]) continue;
    if (SSTM_LOAD(tpcc_s(db, w, ids[j])->quantity) < (int32_t)threshold)
      res.u.stock_level.low_stock++;
  }
  *out = res;
}

/* ---- entry points ----------------------------------------------------------- */

void tpcc_tx_body(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out) {
  if (out == NULL) return;
  if (db == NULL || in == NULL || tpcc_input_validate(db, in, NULL, 0) != 0) {
    *out = (tpcc_output_t){.profile = in != NULL ? in->profile : 0, .status = TPCC_EINPUT};
    return;
  }
  switch ((tpcc_profile_t)in->profile) {
  case TPCC_NEW_ORDER: new_order(db, in, out); break;
  case TPCC_PAYMENT: payment(db, in, out); break;
  case TPCC_ORDER_STATUS: order_status(db, in, out); break;
  case TPCC_DELIVERY: delivery(db, in, out); break;
  case TPCC_STOCK_LEVEL: stock_level(db, in, out); break;
  default: break; /* unreachable: validated */
  }
}

typedef struct run_arg {
  tpcc_db_t *db;
  const tpcc_input_t *in;
  tpcc_output_t *out;
} run_arg_t;

static void run_body(void *arg) {
  run_arg_t *a = arg;
  tpcc_tx_body(a->db, a->in, a->out);
}

int tpcc_run(tpcc_db_t *db, const tpcc_input_t *in, int priority, tpcc_output_t *out) {
  if (db == NULL || in == NULL || out == NULL) return TPCC_EINPUT;
  tpcc_profile_t p = (tpcc_profile_t)in->profile;
  sstm_attr_t attr = {.read_only = tpcc_profile_read_only(p) != 0,
                      .priority = priority,
                      .tag = (uint32_t)p < TPCC_NPROFILES ? (uint32_t)p : 0};
  run_arg_t a = {db, in, out};
  int rc = sstm_run(&attr, run_body, &a);
  if (rc == SSTM_ECANCELED) return out->status;
  if (rc != 0) return rc;
  return out->status;
}
