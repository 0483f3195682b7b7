/* SPDX-License-Identifier: MIT */
/* bench/tpcc/tpcc.h: TPC-C [TPCC] in memory on schedstm, as a library for
 * the in-process driver (tpcc_bench.c) and the request server
 * (bench/server/).
 *
 * What it holds: the nine tables (warehouse, district, customer, history,
 * new-order, order, order-line, item, stock), populated as clause 4.3 of the
 * specification says (scaled: see tpcc_scale_t), their indexes (customers
 * by last name, new orders per district in order, orders per district by
 * number, each customer's orders newest first), the five transaction
 * profiles with the specification's input generation (clause 2: NURand
 * with the C constants, last names from the syllables, remote warehouses,
 * the 1 % of new orders that roll back on an unused item number) and the
 * consistency conditions of clause 3.3.2. Everything a transaction reads
 * or writes goes through schedstm's public barriers (SSTM_LOAD/SSTM_STORE,
 * sstm_load_bytes/sstm_store_bytes) and its allocator (sstm_malloc for
 * inserts, sstm_free for deletes), as user code would. docs/tpcc.md says
 * what differs from the specification and why.
 *
 * Running a profile. tpcc_tx_body() is the body of one transaction: the
 * caller has started it (sstm_run, SSTM_ATOMIC_BEGIN, or an executor that
 * runs its request functions inside a transaction) and commits it. It is
 * safe to restart: it has no effect outside the transaction except on
 * *out, which it writes completely at the end of each attempt (so after a
 * commit *out holds the result of the committed attempt). tpcc_run() is the
 * one-shot form: its own sstm_run with the profile's priority and tag.
 *
 * Thread safety: any number of registered threads may run profiles on one
 * database at once. tpcc_db_create, tpcc_db_destroy, tpcc_check and
 * tpcc_corrupt need the database to themselves (no transaction on it
 * running or suspended).
 *
 * Money is in cents (int64_t), tax and discount rates in units of 1/10000,
 * dates in seconds since the epoch, and 0 stands for the specification's
 * null (O_CARRIER_ID, OL_DELIVERY_D). Identifiers are 1-based as in the
 * specification. */
#ifndef BENCH_TPCC_H
#define BENCH_TPCC_H

#include <stddef.h>
#include <stdint.h>

#include "bench_util.h"

/* The specification's fixed limits. */
#define TPCC_MAX_OL 15        /* order lines per order (5..15) */
#define TPCC_MIN_OL 5         /* fewest order lines per order */
#define TPCC_MAX_DISTRICTS 10 /* districts per warehouse (S_DIST_01..10) */
#define TPCC_NAMES 1000       /* distinct customer last names (3 syllables) */
#define TPCC_NAME_LEN 16      /* longest last name, without its NUL */

/* The five transaction profiles (clause 2). */
typedef enum tpcc_profile {
  TPCC_NEW_ORDER = 0,
  TPCC_PAYMENT = 1,
  TPCC_ORDER_STATUS = 2,
  TPCC_DELIVERY = 3,
  TPCC_STOCK_LEVEL = 4,
  TPCC_NPROFILES = 5 /* the number of profiles, not a profile */
} tpcc_profile_t;

/* Name of a profile ("new-order", "payment", "order-status", "delivery",
 * "stock-level"), or "?" for a value out of range. */
const char *tpcc_profile_name(tpcc_profile_t p);

/* Parse a profile name (as tpcc_profile_name writes it). Returns 0 and sets
 * *out, or -1 for an unknown name. */
int tpcc_profile_parse(const char *s, tpcc_profile_t *out);

/* The profile's default priority, [Silvestri17]'s mapping (shortest job
 * first): delivery 1, stock-level 2, new-order 3, order-status 4, payment 5
 * (higher runs first). 0 for a value out of range. */
int tpcc_default_priority(tpcc_profile_t p);

/* ---- scale ---------------------------------------------------------------- */

/* The size of a database. The specification's scale is per warehouse: 10
 * districts, 3000 customers and 3000 orders per district (the last 900 of
 * them undelivered, in NEW-ORDER), 100 000 items and as many stock rows.
 * Smaller figures give a scaled-down database with the same structure (the
 * undelivered orders are the last 30 %, customer ids and item ids drawn by
 * NURand over the smaller ranges). */
typedef struct tpcc_scale {
  uint32_t warehouses; /* >= 1 */
  uint32_t districts;  /* per warehouse, 1..TPCC_MAX_DISTRICTS */
  uint32_t customers;  /* per district, >= 1 */
  uint32_t items;      /* >= 1 */
  uint32_t orders;     /* initial orders per district, 1..customers (each
                          customer has at most one initial order) */
} tpcc_scale_t;

/* The specification's scale for one warehouse (10 districts, 3000
 * customers and orders, 100 000 items). */
void tpcc_scale_default(tpcc_scale_t *s);

/* A small scale for tests: 2 warehouses, 3 districts, 60 customers and
 * orders per district, 200 items. */
void tpcc_scale_small(tpcc_scale_t *s);

/* Check a scale against the limits above. Returns 0, or -1 with a message
 * naming the field in err (errlen bytes, always NUL-terminated). */
int tpcc_scale_validate(const tpcc_scale_t *s, char *err, size_t errlen);

/* ---- the database --------------------------------------------------------- */

typedef struct tpcc_db tpcc_db_t;

/* Create and populate a database (clause 4.3) of scale *s, its random
 * content and NURand C constants drawn from seed (the same seed and scale
 * give the same database). Plain memory accesses: no transaction and no
 * thread registration needed, the library need not be initialised; the
 * threads that then run profiles must be created (or synchronise with the
 * caller) after it returns. Takes about 1.5 s and 110 MB at the default
 * scale. Returns 0 and sets *out, or -1 with a message in err: a bad scale
 * (as tpcc_scale_validate) or out of memory. */
int tpcc_db_create(const tpcc_scale_t *s, uint64_t seed, tpcc_db_t **out, char *err, size_t errlen);

/* Free the database and every row. No transaction may run or be suspended
 * on it. db may be NULL. */
void tpcc_db_destroy(tpcc_db_t *db);

/* The scale the database was created with. */
const tpcc_scale_t *tpcc_db_scale(const tpcc_db_t *db);

/* ---- inputs and outputs --------------------------------------------------- */

/* A random number stream for the input generator: the benchmarks' own
 * xorshift64* (bench/common/bench_util.h), seeded by tpcc_rng_seed. */
typedef bench_rng_t tpcc_rng_t;

/* Seed a stream from a seed and a stream number (e.g. a terminal's). */
void tpcc_rng_seed(tpcc_rng_t *r, uint64_t seed, uint64_t stream);

/* Next 64 random bits. */
uint64_t tpcc_rng_next(tpcc_rng_t *r);

/* Customer selection: by id, or (payment and order-status) by last name. A
 * last name travels as its number 0..999, from which the specification's
 * syllable string follows (clause 4.3.2.3); by_name selects the customer
 * of that name in the middle of their list sorted by first name (clause
 * 2.5.2.2). */
typedef struct tpcc_customer_key {
  uint32_t by_name; /* 0: by c_id, 1: by c_last */
  uint32_t c_id;    /* 1..customers, when by_name is 0 */
  uint32_t c_last;  /* 0..999, when by_name is 1 */
} tpcc_customer_key_t;

/* One order line of a new order. */
typedef struct tpcc_item_in {
  uint32_t i_id;        /* 1..items, or items + 1: the unused id that
                           rolls the transaction back (last line only) */
  uint32_t supply_w_id; /* 1..warehouses */
  uint32_t quantity;    /* 1..10 */
} tpcc_item_in_t;

/* A profile's input, as the terminal of clause 2 enters it. w_id is the
 * terminal's home warehouse; now is the date the transaction records
 * (O_ENTRY_D, H_DATE, OL_DELIVERY_D), given by the caller so that the body
 * has no side effect such as reading the clock. */
typedef struct tpcc_input {
  uint32_t profile; /* tpcc_profile_t */
  uint32_t w_id;    /* 1..warehouses */
  int64_t now;      /* > 0 */
  union {
    struct {
      uint32_t d_id, c_id, ol_cnt; /* ol_cnt: TPCC_MIN_OL..TPCC_MAX_OL */
      tpcc_item_in_t items[TPCC_MAX_OL];
    } new_order; /* clause 2.4.1 */
    struct {
      uint32_t d_id, c_w_id, c_d_id;
      tpcc_customer_key_t c;
      int64_t h_amount; /* cents, 100..500000 */
    } payment;          /* clause 2.5.1 */
    struct {
      uint32_t d_id;
      tpcc_customer_key_t c;
    } order_status; /* clause 2.6.1 */
    struct {
      uint32_t o_carrier_id; /* 1..10 */
    } delivery;              /* clause 2.7.1 */
    struct {
      uint32_t d_id, threshold; /* threshold 10..20 */
    } stock_level;              /* clause 2.8.1 */
  } u;
} tpcc_input_t;

/* What input generation needs of a database: its scale and NURand's C
 * constants (clause 2.1.6), which tpcc_db_create() draws from its seed.
 * A program that generates inputs for a database in another process (a
 * load generator) makes the same generator from the same scale and seed
 * with tpcc_gen_init(), without populating a database. */
typedef struct tpcc_gen {
  tpcc_scale_t scale;
  uint32_t c_last_load; /* C for C_LAST at population, 0..255 */
  uint32_t c_last_run;  /* C for C_LAST at run time: differs from c_last_load
                           by 65..119, neither 96 nor 112 */
  uint32_t c_id;        /* C for C_ID, 0..1023 */
  uint32_t ol_i_id;     /* C for OL_I_ID, 0..8191 */
} tpcc_gen_t;

/* The generator of the database that tpcc_db_create(s, seed, ...) makes.
 * Returns 0, or -1 with a message in err for a bad scale (as
 * tpcc_scale_validate). */
int tpcc_gen_init(tpcc_gen_t *g, const tpcc_scale_t *s, uint64_t seed, char *err, size_t errlen);

/* The database's generator. */
const tpcc_gen_t *tpcc_db_generator(const tpcc_db_t *db);

/* tpcc_input_generate() from a generator (same contract). */
void tpcc_gen_input(const tpcc_gen_t *g, tpcc_rng_t *rng, tpcc_profile_t p, uint32_t w_id,
                    int64_t now, tpcc_input_t *in);

/* Generate the input of profile p for a terminal of home warehouse w_id,
 * with the distributions of clause 2 (x.1): NURand(1023) customer ids,
 * NURand(8191) item ids, NURand(255) last names with the run's C constants
 * (clause 2.1.6), 5..15 order lines, 1 % of new orders with an unused item
 * as their last line, 1 % remote supply warehouses, 15 % remote customers
 * in payment (both only with two warehouses or more), 60 % selection by
 * last name in payment and order-status, uniform districts, carriers,
 * thresholds and amounts. p and w_id must be valid (an invalid one gives
 * an input that tpcc_input_validate refuses). */
void tpcc_input_generate(const tpcc_db_t *db, tpcc_rng_t *rng, tpcc_profile_t p, uint32_t w_id,
                         int64_t now, tpcc_input_t *in);

/* Check an input against the database's scale (for inputs that come from
 * elsewhere, e.g. the network). Returns 0, or -1 with a message naming the
 * field in err (errlen bytes, always NUL-terminated). */
int tpcc_input_validate(const tpcc_db_t *db, const tpcc_input_t *in, char *err, size_t errlen);

/* Outcome of a profile (tpcc_output_t::status, tpcc_run's result). */
typedef enum tpcc_status {
  TPCC_OK = 0,          /* committed */
  TPCC_ROLLED_BACK = 1, /* the new order named an unused item: rolled back
                           (clause 2.4.2.3), nothing of it is visible */
  TPCC_EINPUT = 2       /* the input failed tpcc_input_validate: nothing
                           was read or written */
} tpcc_status_t;

/* One order line as order-status reports it. */
typedef struct tpcc_line_out {
  uint32_t i_id, supply_w_id, quantity;
  int64_t amount;     /* cents */
  int64_t delivery_d; /* 0: not delivered */
} tpcc_line_out_t;

/* A profile's output (the terminal's output screen of clause 2, the fields
 * a client checks). */
typedef struct tpcc_output {
  uint32_t profile; /* tpcc_profile_t, as in the input */
  int32_t status;   /* tpcc_status_t */
  union {
    struct {
      uint32_t o_id, ol_cnt;
      uint32_t c_discount, w_tax, d_tax; /* 1/10000 */
      int64_t total;                     /* cents: sum(OL_AMOUNT) * (1 - discount)
                                          * (1 + w_tax + d_tax), rounded down */
      char c_last[TPCC_NAME_LEN + 1];
      char c_credit[3];
    } new_order;
    struct {
      uint32_t c_id;
      int64_t c_balance; /* after the payment */
      char c_credit[3];
    } payment;
    struct {
      uint32_t c_id;
      int64_t c_balance;
      uint32_t o_id; /* 0: the customer has no order */
      uint32_t o_carrier_id;
      int64_t o_entry_d;
      uint32_t ol_cnt;
      tpcc_line_out_t lines[TPCC_MAX_OL];
    } order_status;
    struct {
      /* per district 1..districts (index d_id - 1): the order delivered,
       * 0 when the district had no undelivered order */
      uint32_t o_id[TPCC_MAX_DISTRICTS];
      uint32_t delivered; /* how many districts delivered an order */
    } delivery;
    struct {
      uint32_t low_stock; /* distinct items below the threshold */
    } stock_level;
  } u;
} tpcc_output_t;

/* ---- running a profile ---------------------------------------------------- */

/* The body of one transaction of profile in->profile. Call it INSIDE a
 * transaction the caller started on a registered thread; the caller
 * commits. Reads and writes the database through the barriers only, and
 * allocates and frees rows with sstm_malloc/sstm_free, so an attempt that
 * aborts leaves nothing behind and the body may run again (restart-safe).
 * Writes *out completely once per attempt, at its end; nothing else outside
 * the transaction.
 *
 * Rollback: the 1 % of new orders whose last line names the unused item id
 * (items + 1) are rolled back as clause 2.4.2.3 asks, after the work the
 * specification does before it: the body sets out->status to
 * TPCC_ROLLED_BACK and calls sstm_cancel(), which does not return (the
 * transaction ends without retrying; sstm_run returns SSTM_ECANCELED,
 * SSTM_ATOMIC_BEGIN's block is left at its end). A caller that cannot
 * accept a cancel must not submit such inputs.
 *
 * An input that fails tpcc_input_validate sets out->status to TPCC_EINPUT
 * and returns at once, without any access (the transaction commits empty).
 * A read-only profile (order-status, stock-level) writes nothing and may
 * run in a transaction started with attr.read_only. */
void tpcc_tx_body(tpcc_db_t *db, const tpcc_input_t *in, tpcc_output_t *out);

/* Is the profile read-only (order-status, stock-level)? */
int tpcc_profile_read_only(tpcc_profile_t p);

/* Run one profile in its own transaction: sstm_run() with attr.priority =
 * priority, attr.tag = the profile and attr.read_only for the read-only
 * profiles, on the calling thread, which must be registered. Blocks as
 * sstm_run does. Returns TPCC_OK (committed), TPCC_ROLLED_BACK,
 * TPCC_EINPUT, or sstm_run's error (negative: SSTM_ENOTHREAD) with *out
 * unspecified. */
int tpcc_run(tpcc_db_t *db, const tpcc_input_t *in, int priority, tpcc_output_t *out);

/* ---- consistency ---------------------------------------------------------- */

/* Check the database: the consistency conditions 1 to 10 and 12 of clause
 * 3.3.2 (sums of year-to-date amounts, order and new-order numbering,
 * order-line counts, carrier and delivery dates, history sums, customer
 * balances against delivered order lines and payments) for every
 * warehouse, district and customer, and this implementation's own
 * invariants: every index agrees with its table (each order found by
 * number in its district's index and on its customer's list, newest first;
 * the new-order queue in order; the last-name index complete and sorted),
 * stock counters agree with the order lines that new orders added, stock
 * quantities within 10..100. Plain reads: no transaction may run or be
 * suspended on db. Returns the number of violations found (0: consistent)
 * and the first few, each naming the condition and the row, in err
 * (errlen bytes, always NUL-terminated; "ok" when there is none). */
long tpcc_check(tpcc_db_t *db, char *err, size_t errlen);

/* For the tests of tpcc_check: break one invariant on purpose (plain
 * writes; as tpcc_check, no transaction may run). what names it:
 * "w-ytd" (condition 1), "d-next-o-id" (2), "new-order-gap" (3),
 * "order-line" (4 and 6), "carrier" (5), "delivery-d" (7), "history" (8, 9),
 * "c-balance" (10, 12), "order-index" (an order missing from its index),
 * "customer-index" (a customer out of the last-name index), "stock-ytd"
 * (stock counters). Returns 0, or -1 with a message in err for an unknown
 * name or a database with nothing to break that way (e.g. no undelivered
 * order left). */
int tpcc_corrupt(tpcc_db_t *db, const char *what, char *err, size_t errlen);

/* The names tpcc_corrupt accepts, comma-separated. */
extern const char tpcc_corruptions[];

#endif /* BENCH_TPCC_H */
