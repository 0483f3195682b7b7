/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc_db.c: TPC-C [TPCC] scale, population (clause 4.3),
 * random input generation (clause 2, the x.1 sections) and validation.
 * Population uses plain memory accesses before any transaction runs (see
 * tpcc_internal.h for which fields transactions later access how). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpcc_internal.h"

static const char *const profile_names[TPCC_NPROFILES] = {"new-order", "payment", "order-status",
                                                          "delivery", "stock-level"};

const char *tpcc_profile_name(tpcc_profile_t p) {
  return (unsigned)p < TPCC_NPROFILES ? profile_names[p] : "?";
}

int tpcc_profile_parse(const char *s, tpcc_profile_t *out) {
  for (unsigned p = 0; p < TPCC_NPROFILES; p++) {
    if (s != NULL && strcmp(s, profile_names[p]) == 0) {
      *out = (tpcc_profile_t)p;
      return 0;
    }
  }
  return -1;
}

int tpcc_default_priority(tpcc_profile_t p) {
  /* [Silvestri17], Table I: the shorter the profile, the higher. */
  static const int prio[TPCC_NPROFILES] = {[TPCC_DELIVERY] = 1,
                                           [TPCC_STOCK_LEVEL] = 2,
                                           [TPCC_NEW_ORDER] = 3,
                                           [TPCC_ORDER_STATUS] = 4,
                                           [TPCC_PAYMENT] = 5};
  return (unsigned)p < TPCC_NPROFILES ? prio[p] : 0;
}

int tpcc_profile_read_only(tpcc_profile_t p) {
  return p == TPCC_ORDER_STATUS || p == TPCC_STOCK_LEVEL;
}

void tpcc_set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- random numbers --------------------------------------------------------- */

void tpcc_rng_seed(tpcc_rng_t *r, uint64_t seed, uint64_t stream) {
  /* splitmix64 of (seed, stream): distinct streams for distinct pairs; never 0 */
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  r->s = z != 0 ? z : 0x2545F4914F6CDD1DULL;
}

uint64_t tpcc_rng_next(tpcc_rng_t *r) { return bench_rng_next(r); }

uint32_t tpcc_uniform(tpcc_rng_t *r, uint32_t lo, uint32_t hi) {
  uint64_t n = (uint64_t)hi - lo + 1;
  return lo + (uint32_t)(((unsigned __int128)tpcc_rng_next(r) * n) >> 64);
}

uint32_t tpcc_nurand(tpcc_rng_t *r, uint32_t a, uint32_t c, uint32_t x, uint32_t y) {
  /* (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x */
  return (((tpcc_uniform(r, 0, a) | tpcc_uniform(r, x, y)) + c) % (y - x + 1)) + x;
}

/* ---- strings ---------------------------------------------------------------- */

static const char *const syllables[10] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                          "ESE", "ANTI",  "CALLY", "ATION", "EING"};

void tpcc_last_name(uint32_t n, char out[TPCC_NAME_LEN + 1]) {
  snprintf(out, TPCC_NAME_LEN + 1, "%s%s%s", syllables[(n / 100) % 10], syllables[(n / 10) % 10],
           syllables[n % 10]);
}

/* A random a-string (letters and digits) of length lo..hi into s (which has
 * room for hi + 1 bytes). Returns its length. */
static size_t astring(tpcc_rng_t *r, char *s, uint32_t lo, uint32_t hi) {
  static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint32_t n = tpcc_uniform(r, lo, hi);
  for (uint32_t i = 0; i < n; i++)
    s[i] = alnum[tpcc_uniform(r, 0, sizeof alnum - 2)];
  s[n] = '\0';
  return n;
}

static void nstring(tpcc_rng_t *r, char *s, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    s[i] = (char)('0' + tpcc_uniform(r, 0, 9));
  s[n] = '\0';
}

/* I_DATA / S_DATA: 26..50 characters, 10 % with "ORIGINAL" at a random
 * place (clause 4.3.3.1). */
static void data_string(tpcc_rng_t *r, char s[51]) {
  size_t n = astring(r, s, 26, 50);
  if (tpcc_uniform(r, 1, 10) == 1) memcpy(s + tpcc_uniform(r, 0, (uint32_t)n - 8), "ORIGINAL", 8);
}

static void address(tpcc_rng_t *r, char st1[21], char st2[21], char city[21], char state[3],
                    char zip[10]) {
  astring(r, st1, 10, 20);
  astring(r, st2, 10, 20);
  astring(r, city, 10, 20);
  state[0] = (char)('A' + tpcc_uniform(r, 0, 25));
  state[1] = (char)('A' + tpcc_uniform(r, 0, 25));
  state[2] = '\0';
  nstring(r, zip, 4);
  memcpy(zip + 4, "11111", 6);
}

/* ---- scale ------------------------------------------------------------------ */

void tpcc_scale_default(tpcc_scale_t *s) {
  *s = (tpcc_scale_t){
      .warehouses = 1, .districts = 10, .customers = 3000, .items = 100000, .orders = 3000};
}

void tpcc_scale_small(tpcc_scale_t *s) {
  *s = (tpcc_scale_t){.warehouses = 2, .districts = 3, .customers = 60, .items = 200, .orders = 60};
}

/* Bounds that keep every product of the layout within 32 bits of rows per
 * table and the population within reach of one process. */
#define MAX_WAREHOUSES 1000u
#define MAX_CUSTOMERS 1000000u
#define MAX_ITEMS 10000000u

int tpcc_scale_validate(const tpcc_scale_t *s, char *err, size_t errlen) {
  if (s == NULL) {
    tpcc_set_err(err, errlen, "scale: NULL");
    return -1;
  }
  if (s->warehouses < 1 || s->warehouses > MAX_WAREHOUSES) {
    tpcc_set_err(err, errlen, "scale: warehouses %u not in 1..%u", s->warehouses, MAX_WAREHOUSES);
    return -1;
  }
  if (s->districts < 1 || s->districts > TPCC_MAX_DISTRICTS) {
    tpcc_set_err(err, errlen, "scale: districts %u not in 1..%u", s->districts, TPCC_MAX_DISTRICTS);
    return -1;
  }
  if (s->customers < 1 || s->customers > MAX_CUSTOMERS) {
    tpcc_set_err(err, errlen, "scale: customers %u not in 1..%u", s->customers, MAX_CUSTOMERS);
    return -1;
  }
  if (s->items < 1 || s->items > MAX_ITEMS) {
    tpcc_set_err(err, errlen, "scale: items %u not in 1..%u", s->items, MAX_ITEMS);
    return -1;
  }
  if (s->orders < 1 || s->orders > s->customers) {
    tpcc_set_err(err, errlen, "scale: orders %u not in 1..%u (customers)", s->orders, s->customers);
    return -1;
  }
  uint64_t rows = (uint64_t)s->warehouses * s->districts * s->customers;
  uint64_t stock = (uint64_t)s->warehouses * s->items;
  if (rows > 50000000u || stock > 50000000u) {
    tpcc_set_err(err, errlen,
                 "scale: %llu customers and %llu stock rows in all; at most 50 000 000 each",
                 (unsigned long long)rows, (unsigned long long)stock);
    return -1;
  }
  return 0;
}

const tpcc_scale_t *tpcc_db_scale(const tpcc_db_t *db) { return &db->scale; }

/* Number of last names in use: customers 1..1000 take names 0..999 in turn,
 * the others a NURand name among those (clause 4.3.3.1). */
static uint32_t names_in_use(const tpcc_scale_t *s) {
  return s->customers < TPCC_NAMES ? s->customers : TPCC_NAMES;
}

int tpcc_gen_init(tpcc_gen_t *g, const tpcc_scale_t *s, uint64_t seed, char *err, size_t errlen) {
  if (g == NULL) {
    tpcc_set_err(err, errlen, "tpcc_gen_init: NULL generator");
    return -1;
  }
  if (tpcc_scale_validate(s, err, errlen) != 0) return -1;
  /* A stream of its own (population draws from stream 0), so that a
   * generator needs no population. */
  tpcc_rng_t r;
  tpcc_rng_seed(&r, seed, 1);
  g->scale = *s;
  /* C_LAST's run value differs from its load value by 65..119, neither 96
   * nor 112 (clause 2.1.6.1). */
  g->c_last_load = tpcc_uniform(&r, 0, 255);
  uint32_t delta;
  do
    delta = tpcc_uniform(&r, 65, 119);
  while (delta == 96 || delta == 112);
  g->c_last_run = g->c_last_load + delta <= 255 ? g->c_last_load + delta : g->c_last_load - delta;
  g->c_id = tpcc_uniform(&r, 0, 1023);
  g->ol_i_id = tpcc_uniform(&r, 0, 8191);
  return 0;
}

const tpcc_gen_t *tpcc_db_generator(const tpcc_db_t *db) { return &db->gen; }

/* ---- population ------------------------------------------------------------- */

static void populate_items(tpcc_db_t *db, tpcc_rng_t *r) {
  for (uint32_t i = 1; i <= db->scale.items; i++) {
    tpcc_item_t *it = tpcc_i(db, i);
    it->im_id = tpcc_uniform(r, 1, 10000);
    astring(r, it->name, 14, 24);
    it->price = tpcc_uniform(r, 100, 10000);
    data_string(r, it->data);
  }
}

static void populate_stock(tpcc_db_t *db, tpcc_rng_t *r, uint32_t w) {
  for (uint32_t i = 1; i <= db->scale.items; i++) {
    tpcc_stock_t *s = tpcc_s(db, w, i);
    s->quantity = (int32_t)tpcc_uniform(r, 10, 100);
    for (unsigned d = 0; d < TPCC_MAX_DISTRICTS; d++)
      astring(r, s->dist[d], 24, 24);
    s->ytd = 0;
    s->order_cnt = 0;
    s->remote_cnt = 0;
    data_string(r, s->data);
  }
}

/* Sort ids[0..n) by the customers' C_FIRST, then id (insertion sort: a
 * name has about customers / 1000 holders). */
static void sort_by_first(const tpcc_db_t *db, uint32_t w, uint32_t d, uint32_t *ids, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    uint32_t v = ids[i];
    const char *f = tpcc_c(db, w, d, v)->first;
    uint32_t j = i;
    while (j > 0) {
      int c = strcmp(tpcc_c(db, w, d, ids[j - 1])->first, f);
      if (c < 0 || (c == 0 && ids[j - 1] < v)) break;
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = v;
  }
}

/* Build district (w, d)'s last-name index. Returns 0 or -1 (no memory). */
static int build_name_index(tpcc_db_t *db, uint32_t w, uint32_t d) {
  tpcc_district_t *dist = tpcc_d(db, w, d);
  uint32_t nc = db->scale.customers;
  dist->name_ids = malloc(sizeof *dist->name_ids * nc);
  if (dist->name_ids == NULL) return -1;
  uint32_t count[TPCC_NAMES] = {0};
  for (uint32_t c = 1; c <= nc; c++)
    count[tpcc_c(db, w, d, c)->last]++;
  dist->name_start[0] = 0;
  for (uint32_t n = 0; n < TPCC_NAMES; n++)
    dist->name_start[n + 1] = dist->name_start[n] + count[n];
  uint32_t fill[TPCC_NAMES];
  memcpy(fill, dist->name_start, sizeof fill);
  for (uint32_t c = 1; c <= nc; c++)
    dist->name_ids[fill[tpcc_c(db, w, d, c)->last]++] = c;
  for (uint32_t n = 0; n < TPCC_NAMES; n++)
    sort_by_first(db, w, d, dist->name_ids + dist->name_start[n],
                  dist->name_start[n + 1] - dist->name_start[n]);
  return 0;
}

static void populate_customers(tpcc_db_t *db, tpcc_rng_t *r, uint32_t w, uint32_t d, int64_t now) {
  for (uint32_t c = 1; c <= db->scale.customers; c++) {
    tpcc_customer_t *cu = tpcc_c(db, w, d, c);
    cu->last =
        c <= TPCC_NAMES ? c - 1 : tpcc_nurand(r, 255, db->gen.c_last_load, 0, TPCC_NAMES - 1);
    memcpy(cu->middle, "OE", 3);
    astring(r, cu->first, 8, 16);
    address(r, cu->street_1, cu->street_2, cu->city, cu->state, cu->zip);
    nstring(r, cu->phone, 16);
    cu->since = now;
    memcpy(cu->credit, tpcc_uniform(r, 1, 10) == 1 ? "BC" : "GC", 3);
    cu->credit_lim = 5000000;
    cu->discount = tpcc_uniform(r, 0, 5000);
    cu->balance = -TPCC_INIT_PAYMENT;
    cu->ytd_payment = TPCC_INIT_PAYMENT;
    cu->payment_cnt = 1;
    cu->delivery_cnt = 0;
    cu->last_order = NULL;
    astring(r, cu->data, 300, 500);
  }
}

/* One history row per customer, H_AMOUNT 10.00 (clause 4.3.3.1). */
static int populate_history(tpcc_db_t *db, tpcc_rng_t *r, uint32_t w, uint32_t d, int64_t now) {
  tpcc_district_t *dist = tpcc_d(db, w, d);
  for (uint32_t c = 1; c <= db->scale.customers; c++) {
    tpcc_history_t *h = malloc(sizeof *h);
    if (h == NULL) return -1;
    *h = (tpcc_history_t){.c_id = c, .c_d_id = d, .c_w_id = w, .d_id = d, .w_id = w, .date = now};
    h->amount = TPCC_INIT_PAYMENT;
    astring(r, h->data, 12, 24);
    h->next = dist->history;
    dist->history = h;
  }
  return 0;
}

/* Orders 1..orders with a random permutation of the customers, their lines,
 * and the last 30 % undelivered, in the new-order queue. */
static int populate_orders(tpcc_db_t *db, tpcc_rng_t *r, uint32_t w, uint32_t d, int64_t now) {
  tpcc_district_t *dist = tpcc_d(db, w, d);
  uint32_t nc = db->scale.customers, no = db->scale.orders;
  uint32_t *perm = malloc(sizeof *perm * nc);
  if (perm == NULL) return -1;
  for (uint32_t i = 0; i < nc; i++)
    perm[i] = i + 1;
  for (uint32_t i = nc - 1; i > 0; i--) {
    uint32_t j = tpcc_uniform(r, 0, i);
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (uint32_t o = 1; o <= no; o++) {
    uint32_t ol_cnt = tpcc_uniform(r, TPCC_MIN_OL, TPCC_MAX_OL);
    tpcc_order_t *ord = malloc(sizeof *ord + sizeof ord->lines[0] * ol_cnt);
    if (ord == NULL) {
      free(perm);
      return -1;
    }
    bool delivered = o < db->first_new_o_id;
    *ord = (tpcc_order_t){.o_id = o,
                          .d_id = d,
                          .w_id = w,
                          .c_id = perm[o - 1],
                          .ol_cnt = ol_cnt,
                          .all_local = 1,
                          .entry_d = now,
                          .carrier_id = delivered ? tpcc_uniform(r, 1, 10) : 0};
    for (uint32_t l = 0; l < ol_cnt; l++) {
      tpcc_order_line_t *ol = &ord->lines[l];
      ol->i_id = tpcc_uniform(r, 1, db->scale.items);
      ol->supply_w_id = w;
      ol->quantity = 5;
      ol->amount = delivered ? 0 : tpcc_uniform(r, 1, 999999);
      ol->delivery_d = delivered ? now : 0;
      astring(r, ol->dist_info, 24, 24);
    }
    tpcc_order_t **bucket = &dist->orders[o & dist->order_mask];
    ord->hnext = *bucket;
    *bucket = ord;
    tpcc_customer_t *cu = tpcc_c(db, w, d, ord->c_id);
    ord->c_prev = cu->last_order;
    cu->last_order = ord;
    if (!delivered) {
      tpcc_new_order_t *n = malloc(sizeof *n);
      if (n == NULL) {
        free(perm);
        return -1;
      }
      *n = (tpcc_new_order_t){.o_id = o, .order = ord, .next = NULL};
      if (dist->no_tail != NULL)
        dist->no_tail->next = n;
      else
        dist->no_head = n;
      dist->no_tail = n;
    }
  }
  free(perm);
  dist->next_o_id = no + 1;
  return 0;
}

static int populate_district(tpcc_db_t *db, tpcc_rng_t *r, uint32_t w, uint32_t d, int64_t now) {
  tpcc_district_t *dist = tpcc_d(db, w, d);
  dist->d_id = d;
  dist->w_id = w;
  astring(r, dist->name, 6, 10);
  address(r, dist->street_1, dist->street_2, dist->city, dist->state, dist->zip);
  dist->tax = tpcc_uniform(r, 0, 2000);
  dist->ytd = (int64_t)db->scale.customers * TPCC_INIT_PAYMENT;
  /* Index buckets: a power of two, at least twice the initial orders. */
  uint32_t nb = 1024;
  while (nb < 2 * db->scale.orders)
    nb *= 2;
  dist->orders = calloc(nb, sizeof *dist->orders);
  if (dist->orders == NULL) return -1;
  dist->order_mask = nb - 1;
  populate_customers(db, r, w, d, now);
  if (build_name_index(db, w, d) != 0) return -1;
  if (populate_history(db, r, w, d, now) != 0) return -1;
  return populate_orders(db, r, w, d, now);
}

int tpcc_db_create(const tpcc_scale_t *s, uint64_t seed, tpcc_db_t **out, char *err,
                   size_t errlen) {
  if (out == NULL) {
    tpcc_set_err(err, errlen, "tpcc_db_create: out is NULL");
    return -1;
  }
  *out = NULL;
  if (tpcc_scale_validate(s, err, errlen) != 0) return -1;
  tpcc_db_t *db = calloc(1, sizeof *db);
  if (db == NULL) goto nomem;
  db->scale = *s;
  if (tpcc_gen_init(&db->gen, s, seed, err, errlen) != 0) {
    tpcc_db_destroy(db);
    return -1;
  }
  tpcc_rng_t r;
  tpcc_rng_seed(&r, seed, 0);
  db->first_new_o_id = s->orders - s->orders * TPCC_UNDELIVERED_PCT / 100 + 1;

  uint32_t nd = s->warehouses * s->districts;
  db->warehouses = aligned_alloc(TPCC_LINE, sizeof *db->warehouses * s->warehouses);
  db->districts = aligned_alloc(TPCC_LINE, sizeof *db->districts * nd);
  db->customers = aligned_alloc(TPCC_LINE, sizeof *db->customers * nd * s->customers);
  db->items = malloc(sizeof *db->items * s->items);
  db->stock = malloc(sizeof *db->stock * (size_t)s->warehouses * s->items);
  if (db->warehouses == NULL || db->districts == NULL || db->customers == NULL ||
      db->items == NULL || db->stock == NULL)
    goto nomem;
  memset(db->warehouses, 0, sizeof *db->warehouses * s->warehouses);
  memset(db->districts, 0, sizeof *db->districts * nd);
  memset(db->customers, 0, sizeof *db->customers * nd * s->customers);

  int64_t now = 1;
  populate_items(db, &r);
  for (uint32_t w = 1; w <= s->warehouses; w++) {
    tpcc_warehouse_t *wh = tpcc_w(db, w);
    astring(&r, wh->name, 6, 10);
    address(&r, wh->street_1, wh->street_2, wh->city, wh->state, wh->zip);
    wh->tax = tpcc_uniform(&r, 0, 2000);
    wh->ytd = (int64_t)s->districts * s->customers * TPCC_INIT_PAYMENT;
    populate_stock(db, &r, w);
    for (uint32_t d = 1; d <= s->districts; d++)
      if (populate_district(db, &r, w, d, now) != 0) goto nomem;
  }
  *out = db;
  return 0;
nomem:
  tpcc_db_destroy(db);
  tpcc_set_err(err, errlen, "tpcc_db_create: out of memory");
  return -1;
}

void tpcc_db_destroy(tpcc_db_t *db) {
  if (db == NULL) return;
  if (db->districts != NULL) {
    uint32_t nd = db->scale.warehouses * db->scale.districts;
    for (uint32_t i = 0; i < nd; i++) {
      tpcc_district_t *dist = &db->districts[i];
      for (tpcc_new_order_t *n = dist->no_head, *next; n != NULL; n = next) {
        next = n->next;
        free(n);
      }
      for (tpcc_history_t *h = dist->history, *next; h != NULL; h = next) {
        next = h->next;
        free(h);
      }
      if (dist->orders != NULL) {
        for (uint32_t b = 0; b <= dist->order_mask; b++) {
          for (tpcc_order_t *o = dist->orders[b], *next; o != NULL; o = next) {
            next = o->hnext;
            free(o);
          }
        }
      }
      free(dist->orders);
      free(dist->name_ids);
    }
  }
  free(db->unlinked_order);
  free(db->unlinked_new_order);
  free(db->warehouses);
  free(db->districts);
  free(db->customers);
  free(db->items);
  free(db->stock);
  free(db);
}

/* ---- inputs ----------------------------------------------------------------- */

static uint32_t other_warehouse(tpcc_rng_t *r, uint32_t w, uint32_t nw) {
  uint32_t o = tpcc_uniform(r, 1, nw - 1);
  return o >= w ? o + 1 : o;
}

static void customer_key(const tpcc_gen_t *g, tpcc_rng_t *r, tpcc_customer_key_t *k) {
  if (tpcc_uniform(r, 1, 100) <= 60) {
    *k = (tpcc_customer_key_t){
        .by_name = 1, .c_last = tpcc_nurand(r, 255, g->c_last_run, 0, names_in_use(&g->scale) - 1)};
  } else {
    *k = (tpcc_customer_key_t){.by_name = 0,
                               .c_id = tpcc_nurand(r, 1023, g->c_id, 1, g->scale.customers)};
  }
}

void tpcc_input_generate(const tpcc_db_t *db, tpcc_rng_t *r, tpcc_profile_t p, uint32_t w_id,
                         int64_t now, tpcc_input_t *in) {
  tpcc_gen_input(&db->gen, r, p, w_id, now, in);
}

void tpcc_gen_input(const tpcc_gen_t *g, tpcc_rng_t *r, tpcc_profile_t p, uint32_t w_id,
                    int64_t now, tpcc_input_t *in) {
  const tpcc_scale_t *s = &g->scale;
  memset(in, 0, sizeof *in);
  in->profile = (uint32_t)p;
  in->w_id = w_id;
  in->now = now;
  switch (p) {
  case TPCC_NEW_ORDER: {
    in->u.new_order.d_id = tpcc_uniform(r, 1, s->districts);
    in->u.new_order.c_id = tpcc_nurand(r, 1023, g->c_id, 1, s->customers);
    uint32_t n = tpcc_uniform(r, TPCC_MIN_OL, TPCC_MAX_OL);
    in->u.new_order.ol_cnt = n;
    bool rollback = tpcc_uniform(r, 1, 100) == 1;
    for (uint32_t l = 0; l < n; l++) {
      tpcc_item_in_t *it = &in->u.new_order.items[l];
      it->i_id = tpcc_nurand(r, 8191, g->ol_i_id, 1, s->items);
      if (rollback && l == n - 1) it->i_id = s->items + 1;
      it->supply_w_id = s->warehouses > 1 && tpcc_uniform(r, 1, 100) == 1
                            ? other_warehouse(r, w_id, s->warehouses)
                            : w_id;
      it->quantity = tpcc_uniform(r, 1, 10);
    }
    break;
  }
  case TPCC_PAYMENT:
    in->u.payment.d_id = tpcc_uniform(r, 1, s->districts);
    if (s->warehouses > 1 && tpcc_uniform(r, 1, 100) > 85) {
      in->u.payment.c_w_id = other_warehouse(r, w_id, s->warehouses);
      in->u.payment.c_d_id = tpcc_uniform(r, 1, s->districts);
    } else {
      in->u.payment.c_w_id = w_id;
      in->u.payment.c_d_id = in->u.payment.d_id;
    }
    customer_key(g, r, &in->u.payment.c);
    in->u.payment.h_amount = tpcc_uniform(r, 100, 500000);
    break;
  case TPCC_ORDER_STATUS:
    in->u.order_status.d_id = tpcc_uniform(r, 1, s->districts);
    customer_key(g, r, &in->u.order_status.c);
    break;
  case TPCC_DELIVERY: in->u.delivery.o_carrier_id = tpcc_uniform(r, 1, 10); break;
  case TPCC_STOCK_LEVEL:
    in->u.stock_level.d_id = tpcc_uniform(r, 1, s->districts);
    in->u.stock_level.threshold = tpcc_uniform(r, 10, 20);
    break;
  default: break; /* profile out of range: tpcc_input_validate refuses it */
  }
}

static int check_key(const tpcc_db_t *db, const tpcc_customer_key_t *k, const char *profile,
                     char *err, size_t errlen) {
  if (k->by_name > 1) {
    tpcc_set_err(err, errlen, "%s: by_name %u is neither 0 nor 1", profile, k->by_name);
    return -1;
  }
  if (k->by_name == 1 && k->c_last >= names_in_use(&db->scale)) {
    tpcc_set_err(err, errlen, "%s: c_last %u not in 0..%u (names in use)", profile, k->c_last,
                 names_in_use(&db->scale) - 1);
    return -1;
  }
  if (k->by_name == 0 && (k->c_id < 1 || k->c_id > db->scale.customers)) {
    tpcc_set_err(err, errlen, "%s: c_id %u not in 1..%u", profile, k->c_id, db->scale.customers);
    return -1;
  }
  return 0;
}

#define RANGE(v, lo, hi, name)                                                                     \
  do {                                                                                             \
    if ((v) < (lo) || (v) > (hi)) {                                                                \
      tpcc_set_err(err, errlen, "%s: %s %lld not in %lld..%lld", pname, name, (long long)(v),      \
                   (long long)(lo), (long long)(hi));                                              \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

int tpcc_input_validate(const tpcc_db_t *db, const tpcc_input_t *in, char *err, size_t errlen) {
  if (db == NULL || in == NULL) {
    tpcc_set_err(err, errlen, "tpcc_input_validate: NULL %s", db == NULL ? "db" : "input");
    return -1;
  }
  const tpcc_scale_t *s = &db->scale;
  if (in->profile >= TPCC_NPROFILES) {
    tpcc_set_err(err, errlen, "input: profile %u not in 0..%u", in->profile, TPCC_NPROFILES - 1);
    return -1;
  }
  const char *pname = tpcc_profile_name((tpcc_profile_t)in->profile);
  RANGE(in->w_id, 1u, s->warehouses, "w_id");
  if (in->now <= 0) {
    tpcc_set_err(err, errlen, "%s: now %lld is not a positive date", pname, (long long)in->now);
    return -1;
  }
  switch ((tpcc_profile_t)in->profile) {
  case TPCC_NEW_ORDER: {
    const __typeof__(in->u.new_order) *no = &in->u.new_order;
    RANGE(no->d_id, 1u, s->districts, "d_id");
    RANGE(no->c_id, 1u, s->customers, "c_id");
    RANGE(no->ol_cnt, (uint32_t)TPCC_MIN_OL, (uint32_t)TPCC_MAX_OL, "ol_cnt");
    for (uint32_t l = 0; l < no->ol_cnt; l++) {
      const tpcc_item_in_t *it = &no->items[l];
      /* the unused id (items + 1) is valid input on the last line only */
      uint32_t max_i = l == no->ol_cnt - 1 ? s->items + 1 : s->items;
      if (it->i_id < 1 || it->i_id > max_i) {
        tpcc_set_err(err, errlen, "new-order: line %u: i_id %u not in 1..%u", l + 1, it->i_id,
                     max_i);
        return -1;
      }
      if (it->supply_w_id < 1 || it->supply_w_id > s->warehouses) {
        tpcc_set_err(err, errlen, "new-order: line %u: supply_w_id %u not in 1..%u", l + 1,
                     it->supply_w_id, s->warehouses);
        return -1;
      }
      if (it->quantity < 1 || it->quantity > 10) {
        tpcc_set_err(err, errlen, "new-order: line %u: quantity %u not in 1..10", l + 1,
                     it->quantity);
        return -1;
      }
    }
    return 0;
  }
  case TPCC_PAYMENT:
    RANGE(in->u.payment.d_id, 1u, s->districts, "d_id");
    RANGE(in->u.payment.c_w_id, 1u, s->warehouses, "c_w_id");
    RANGE(in->u.payment.c_d_id, 1u, s->districts, "c_d_id");
    RANGE(in->u.payment.h_amount, 100, 500000, "h_amount");
    return check_key(db, &in->u.payment.c, pname, err, errlen);
  case TPCC_ORDER_STATUS:
    RANGE(in->u.order_status.d_id, 1u, s->districts, "d_id");
    return check_key(db, &in->u.order_status.c, pname, err, errlen);
  case TPCC_DELIVERY: RANGE(in->u.delivery.o_carrier_id, 1u, 10u, "o_carrier_id"); return 0;
  case TPCC_STOCK_LEVEL:
    RANGE(in->u.stock_level.d_id, 1u, s->districts, "d_id");
    RANGE(in->u.stock_level.threshold, 10u, 20u, "threshold");
    return 0;
  default: return -1; /* unreachable: checked above */
  }
}
