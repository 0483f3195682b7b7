/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc_internal.h: the rows of the nine tables and the database
 * layout, shared by tpcc_db.c (population), tpcc_tx.c (the profiles) and
 * tpcc_check.c (the consistency checks). Not for users of tpcc.h.
 *
 * Which fields transactions access how:
 * - Fields that no profile ever writes after population (names, addresses,
 *   tax and discount rates, credit, item rows, S_DIST_xx, S_DATA, the
 *   last-name index) are read with plain loads: population happens before
 *   the threads that run profiles exist, and nothing writes them later.
 * - Every field a profile writes (year-to-date amounts, counters, balances,
 *   C_DATA, next order ids, carrier ids, delivery dates, list and index
 *   pointers) is read and written through the barriers only.
 * - Rows a transaction inserts (order with its lines, new-order, history)
 *   are allocated with sstm_malloc and initialised with plain stores while
 *   they are still private to the attempt (nothing points to them until
 *   its commit writes the pointer back, which orders the initialisation
 *   before any reader's load of the pointer); other transactions read
 *   every field of such rows through the barriers.
 * Fields that different profiles update are grouped in blocks aligned to
 * 64 bytes, so that they never share a lock stripe (32 bytes by default)
 * with each other: payment's D_YTD, new-order's D_NEXT_O_ID and the
 * new-order queue's two ends do not conflict falsely. */
#ifndef BENCH_TPCC_INTERNAL_H
#define BENCH_TPCC_INTERNAL_H

#include <stdint.h>

#include "tpcc.h"

#define TPCC_LINE 64 /* alignment of the independently updated blocks */

/* Initial C_BALANCE, C_YTD_PAYMENT and H_AMOUNT (clause 4.3.3.1), cents. */
#define TPCC_INIT_PAYMENT 1000
/* Initial undelivered share of the orders (900 of 3000), in percent. */
#define TPCC_UNDELIVERED_PCT 30

typedef struct tpcc_order_line {
  uint32_t i_id, supply_w_id, quantity;
  int64_t amount;     /* cents */
  int64_t delivery_d; /* written by delivery; 0 = null */
  char dist_info[25];
} tpcc_order_line_t;

typedef struct tpcc_order {
  uint32_t o_id, d_id, w_id, c_id;
  uint32_t ol_cnt, all_local;
  int64_t entry_d;
  uint32_t carrier_id;       /* written by delivery; 0 = null */
  struct tpcc_order *hnext;  /* next order of the same index bucket */
  struct tpcc_order *c_prev; /* the customer's previous order (older) */
  tpcc_order_line_t lines[]; /* ol_cnt of them */
} tpcc_order_t;

typedef struct tpcc_new_order {
  uint32_t o_id;
  tpcc_order_t *order;
  struct tpcc_new_order *next; /* next younger undelivered order */
} tpcc_new_order_t;

typedef struct tpcc_history {
  uint32_t c_id, c_d_id, c_w_id, d_id, w_id;
  int64_t date, amount;
  char data[25];
  struct tpcc_history *next; /* the district's previous history row */
} tpcc_history_t;

typedef struct tpcc_item {
  uint32_t im_id;
  int64_t price; /* cents */
  char name[25];
  char data[51];
} tpcc_item_t;

typedef struct tpcc_warehouse {
  _Alignas(TPCC_LINE) int64_t ytd; /* written by payment */
  _Alignas(TPCC_LINE) uint32_t tax;
  char name[11], street_1[21], street_2[21], city[21], state[3], zip[10];
} tpcc_warehouse_t;

typedef struct tpcc_district {
  _Alignas(TPCC_LINE) int64_t ytd;               /* payment */
  tpcc_history_t *history;                       /* payment: newest history row */
  _Alignas(TPCC_LINE) uint32_t next_o_id;        /* new-order */
  _Alignas(TPCC_LINE) tpcc_new_order_t *no_head; /* delivery (and new-order
                                                    when the queue is empty) */
  _Alignas(TPCC_LINE) tpcc_new_order_t *no_tail; /* new-order (and delivery
                                                    when it empties it) */
  _Alignas(TPCC_LINE) uint32_t tax;
  uint32_t d_id, w_id;
  char name[11], street_1[21], street_2[21], city[21], state[3], zip[10];
  /* Orders by number: a chained hash index whose bucket is o_id & mask
   * (numbers are dense, so the buckets fill evenly; the newest orders are
   * at the heads of their chains). Bucket heads are written by new-order. */
  tpcc_order_t **orders;
  uint32_t order_mask;
  /* Customers by last name (immutable: customers are never added or
   * removed): the ids of the customers named n are
   * name_ids[name_start[n] .. name_start[n + 1]), sorted by C_FIRST. */
  uint32_t name_start[TPCC_NAMES + 1];
  uint32_t *name_ids;
} tpcc_district_t;

typedef struct tpcc_customer {
  /* written by payment and delivery */
  _Alignas(TPCC_LINE) int64_t balance, ytd_payment;
  uint32_t payment_cnt, delivery_cnt;
  char data[501];                               /* written by payment (bad credit) */
  _Alignas(TPCC_LINE) tpcc_order_t *last_order; /* new-order: the newest order */
  /* immutable */
  _Alignas(TPCC_LINE) uint32_t discount; /* 1/10000 */
  uint32_t last;                         /* last-name number 0..999 */
  int64_t credit_lim, since;
  char first[17], middle[3], credit[3];
  char street_1[21], street_2[21], city[21], state[3], zip[10], phone[17];
} tpcc_customer_t;

typedef struct tpcc_stock {
  /* written by new-order */
  int64_t ytd;
  int32_t quantity;
  uint32_t order_cnt, remote_cnt;
  /* immutable */
  char dist[TPCC_MAX_DISTRICTS][25];
  char data[51];
} tpcc_stock_t;

struct tpcc_db {
  tpcc_scale_t scale;
  tpcc_gen_t gen;               /* the scale again, and NURand's C constants */
  uint32_t first_new_o_id;      /* first initially undelivered order number */
  tpcc_warehouse_t *warehouses; /* [w - 1] */
  tpcc_district_t *districts;   /* [(w - 1) * districts + d - 1] */
  tpcc_customer_t *customers;   /* [((w - 1) * districts + d - 1) * customers + c - 1] */
  tpcc_item_t *items;           /* [i - 1] */
  tpcc_stock_t *stock;          /* [(w - 1) * items + i - 1] */
  /* Rows that tpcc_corrupt unlinked, freed by tpcc_db_destroy. */
  tpcc_order_t *unlinked_order;
  tpcc_new_order_t *unlinked_new_order;
};

static inline tpcc_warehouse_t *tpcc_w(const tpcc_db_t *db, uint32_t w) {
  return &db->warehouses[w - 1];
}
static inline tpcc_district_t *tpcc_d(const tpcc_db_t *db, uint32_t w, uint32_t d) {
  return &db->districts[(size_t)(w - 1) * db->scale.districts + d - 1];
}
static inline tpcc_customer_t *tpcc_c(const tpcc_db_t *db, uint32_t w, uint32_t d, uint32_t c) {
  return &db->customers[((size_t)(w - 1) * db->scale.districts + d - 1) * db->scale.customers + c -
                        1];
}
static inline tpcc_item_t *tpcc_i(const tpcc_db_t *db, uint32_t i) { return &db->items[i - 1]; }
static inline tpcc_stock_t *tpcc_s(const tpcc_db_t *db, uint32_t w, uint32_t i) {
  return &db->stock[(size_t)(w - 1) * db->scale.items + i - 1];
}

/* The last name of number n (0..999): three syllables (clause 4.3.2.3). */
void tpcc_last_name(uint32_t n, char out[TPCC_NAME_LEN + 1]);

/* NURand(A, x, y) with constant c (clause 2.1.6). */
uint32_t tpcc_nurand(tpcc_rng_t *r, uint32_t a, uint32_t c, uint32_t x, uint32_t y);

/* Uniform in [lo, hi]. */
uint32_t tpcc_uniform(tpcc_rng_t *r, uint32_t lo, uint32_t hi);

/* Print into err (errlen bytes, NUL-terminated). */
void tpcc_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* BENCH_TPCC_INTERNAL_H */
