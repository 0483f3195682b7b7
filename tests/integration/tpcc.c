/* SPDX-License-Identifier: MIT */
/* Integration: TPC-C on the STM (bench/tpcc, docs/tpcc.md).
 *
 * usage: tpcc run DESIGN POLICY THREADS [--ops N | --scaled-ops N]
 *        tpcc corrupt
 *        tpcc inputs
 *
 * run: THREADS terminals run the equal mix of the five profiles on a small
 * database, half through tpcc_run() and half in an atomic block the test
 * opens around tpcc_tx_body() (the way an executor runs a request), each
 * with its default priority. Every result is checked as it comes (status,
 * rollbacks only for inputs with the unused item, ids), and after the run:
 * tpcc_check() finds no violation; each district's D_NEXT_O_ID moved by
 * exactly the new orders that committed there, each warehouse's W_YTD by
 * exactly the payments made to it (the tests' own tallies, which a lost or
 * duplicated update breaks even where the specification's conditions stay
 * consistent); the engine's counters account for every commit and every
 * rollback (one cancel each).
 * corrupt: each of tpcc_corrupt's corruptions, on a database that has run
 * a few hundred transactions, makes tpcc_check() report the condition it
 * breaks, and an unknown name is refused.
 * inputs: tpcc_scale_validate and tpcc_input_validate refuse each bad field
 * with a message naming it; a generator made apart from the database
 * (tpcc_gen_init, as a load generator makes it) draws the same inputs; tpcc_tx_body answers
 * TPCC_EINPUT without touching the database; a rolled-back new order leaves no trace (the next one
 * gets its order number).
 */
#define _GNU_SOURCE
#include "tpcc.h"
#include "common_int.h"
#include "tpcc_internal.h"

#define MAX_THREADS 64

static tpcc_db_t *db;
static long ops_per_thread;

/* Per thread: committed new orders per district, payment amounts per
 * warehouse, rollbacks, commits. */
typedef struct tally {
  uint64_t new_orders[4][TPCC_MAX_DISTRICTS]; /* small scale: 2 warehouses */
  int64_t paid[4];
  uint64_t rollbacks, commits;
} tally_t;
static tally_t tallies[MAX_THREADS];

static int64_t now_s(void) { return (int64_t)time(NULL); }

/* The inline form, as an executor runs a request: the transaction is
 * opened here, the body runs in it, a rollback's cancel leaves the block. */
static int run_inline(const tpcc_input_t *in, int prio, tpcc_output_t *out) {
  sstm_attr_t attr = {.priority = prio,
                      .tag = in->profile,
                      .read_only = tpcc_profile_read_only((tpcc_profile_t)in->profile) != 0};
  out->status = -1;
  SSTM_ATOMIC_BEGIN(&attr)
    tpcc_tx_body(db, in, out);
  SSTM_ATOMIC_END();
  return out->status;
}

static void worker(sstm_tt_t *t) {
  tally_t *ty = &tallies[t->idx];
  tpcc_rng_t rng;
  tpcc_rng_seed(&rng, sstm_test_seed(), t->idx + 1);
  uint32_t home = t->idx % db->scale.warehouses + 1;
  for (long i = 0; i < ops_per_thread; i++) {
    tpcc_profile_t p = (tpcc_profile_t)(tpcc_rng_next(&rng) % TPCC_NPROFILES);
    tpcc_input_t in;
    tpcc_output_t out;
    tpcc_input_generate(db, &rng, p, home, now_s(), &in);
    CHECK_EQ_I(tpcc_input_validate(db, &in, NULL, 0), 0);
    int prio = tpcc_default_priority(p);
    int rc = (i & 1) ? tpcc_run(db, &in, prio, &out) : run_inline(&in, prio, &out);
    bool unused = p == TPCC_NEW_ORDER &&
                  in.u.new_order.items[in.u.new_order.ol_cnt - 1].i_id == db->scale.items + 1;
    if (unused) {
      CHECK_EQ_I(rc, TPCC_ROLLED_BACK);
      ty->rollbacks++;
      continue;
    }
    CHECK_EQ_I(rc, TPCC_OK);
    CHECK_EQ_U(out.profile, (uint32_t)p);
    ty->commits++;
    switch (p) {
    case TPCC_NEW_ORDER:
      CHECK_GT_U(out.u.new_order.o_id, db->scale.orders);
      CHECK_EQ_U(out.u.new_order.ol_cnt, in.u.new_order.ol_cnt);
      CHECK_GT_I(out.u.new_order.total, 0);
      ty->new_orders[in.w_id - 1][in.u.new_order.d_id - 1]++;
      break;
    case TPCC_PAYMENT:
      if (!in.u.payment.c.by_name) CHECK_EQ_U(out.u.payment.c_id, in.u.payment.c.c_id);
      ty->paid[in.w_id - 1] += in.u.payment.h_amount;
      break;
    case TPCC_ORDER_STATUS:
      if (!in.u.order_status.c.by_name)
        CHECK_EQ_U(out.u.order_status.c_id, in.u.order_status.c.c_id);
      if (out.u.order_status.o_id != 0) {
        CHECK_GE_U(out.u.order_status.ol_cnt, TPCC_MIN_OL);
        CHECK_LE_U(out.u.order_status.ol_cnt, TPCC_MAX_OL);
        /* delivered exactly when it has a carrier (one snapshot) */
        for (uint32_t l = 0; l < out.u.order_status.ol_cnt; l++)
          CHECK_EQ_I(out.u.order_status.lines[l].delivery_d != 0,
                     out.u.order_status.o_carrier_id != 0);
      }
      break;
    case TPCC_DELIVERY: CHECK_LE_U(out.u.delivery.delivered, db->scale.districts); break;
    case TPCC_STOCK_LEVEL: CHECK_LE_U(out.u.stock_level.low_stock, 20 * TPCC_MAX_OL); break;
    default: FAIL("profile %d", (int)p);
    }
  }
}

static void small_db(void) {
  tpcc_scale_t s;
  tpcc_scale_small(&s);
  char err[256];
  CHECK_MSG(tpcc_db_create(&s, sstm_test_seed(), &db, err, sizeof err) == 0, "%s", err);
  CHECK_LE_U(s.warehouses, 4);
}

static void mode_run(int argc, char **argv) {
  CHECK_GE_I(argc, 5);
  sstm_design_t design = int_parse_design(argv[2]);
  unsigned threads = (unsigned)atoi(argv[4]);
  CHECK_GT_U(threads, 0);
  CHECK_LE_U(threads, MAX_THREADS);
  threads = sstm_test_threads(threads);
  long total = int_opt_ops(argc, argv, (long)sstm_test_scaled(6000, 500), 500);
  ops_per_thread = total / (long)threads;
  int_init(design, argv[3]);
  CHECK_OK(sstm_thread_init());
  small_db();
  int64_t ytd0[4], next0[4][TPCC_MAX_DISTRICTS];
  for (uint32_t w = 1; w <= db->scale.warehouses; w++) {
    ytd0[w - 1] = tpcc_w(db, w)->ytd;
    for (uint32_t d = 1; d <= db->scale.districts; d++)
      next0[w - 1][d - 1] = tpcc_d(db, w, d)->next_o_id;
  }
  CHECK_OK(sstm_stats_reset());
  sstm_test_run_threads(threads, true, worker, NULL);

  char err[1024];
  long v = tpcc_check(db, err, sizeof err);
  CHECK_MSG(v == 0, "tpcc_check: %ld violations: %s", v, err);
  CHECK_EQ_STR(err, "ok");
  uint64_t commits = 0, rollbacks = 0;
  for (uint32_t w = 1; w <= db->scale.warehouses; w++) {
    int64_t paid = 0;
    for (unsigned t = 0; t < threads; t++)
      paid += tallies[t].paid[w - 1];
    CHECK_EQ_I(tpcc_w(db, w)->ytd - ytd0[w - 1], paid);
    for (uint32_t d = 1; d <= db->scale.districts; d++) {
      uint64_t n = 0;
      for (unsigned t = 0; t < threads; t++)
        n += tallies[t].new_orders[w - 1][d - 1];
      CHECK_EQ_I(tpcc_d(db, w, d)->next_o_id - next0[w - 1][d - 1], (long long)n);
    }
  }
  for (unsigned t = 0; t < threads; t++) {
    commits += tallies[t].commits;
    rollbacks += tallies[t].rollbacks;
  }
  sstm_stats_t s;
  CHECK_OK(sstm_stats_aggregate(&s));
  CHECK_EQ_U(s.commits_update + s.commits_ro, commits);
  CHECK_EQ_U(s.aborts[SSTM_ABORT_USER_CANCEL], rollbacks);
  printf("tpcc: %s %s, %u threads: %llu commits, %llu rollbacks, %llu aborts\n", argv[2], argv[3],
         threads, (unsigned long long)commits, (unsigned long long)rollbacks,
         (unsigned long long)s.aborts_total);
  tpcc_db_destroy(db);
  CHECK_OK(sstm_shutdown());
}

/* Each corruption and a condition its report must name. */
static const struct {
  const char *what, *expect;
} corruptions[] = {
    {"w-ytd", "condition 1:"},
    {"d-next-o-id", "condition 2:"},
    {"new-order-gap", "condition 3:"},
    {"order-line", "condition 6:"},
    {"carrier", "condition 5:"},
    {"delivery-d", "condition 7:"},
    {"history", "condition 9:"},
    {"c-balance", "condition 10:"},
    {"order-index", "missing from the order index"},
    {"customer-index", "index: customer"},
    {"stock-ytd", "S_YTD"},
};

static void mode_corrupt(void) {
  int_init(SSTM_DESIGN_ETL, NULL);
  CHECK_OK(sstm_thread_init());
  size_t n = sizeof corruptions / sizeof corruptions[0];
  /* every name tpcc_corrupt documents is tried here */
  size_t listed = 1;
  for (const char *p = tpcc_corruptions; *p; p++)
    listed += *p == ',';
  CHECK_EQ_U(listed, n);
  for (size_t i = 0; i < n; i++) {
    small_db();
    ops_per_thread = 300;
    memset(tallies, 0, sizeof tallies);
    sstm_test_run_threads(1, true, worker, NULL);
    char err[1024];
    CHECK_EQ_I(tpcc_check(db, err, sizeof err), 0);
    CHECK_MSG(tpcc_corrupt(db, corruptions[i].what, err, sizeof err) == 0, "%s: %s",
              corruptions[i].what, err);
    long v = tpcc_check(db, err, sizeof err);
    printf("tpcc: corrupt %s: %ld violations: %s\n", corruptions[i].what, v, err);
    CHECK_GT_I(v, 0);
    CHECK_CONTAINS(err, corruptions[i].expect);
    if (strcmp(corruptions[i].what, "order-line") == 0) CHECK_CONTAINS(err, "condition 4:");
    CHECK_CONTAINS(tpcc_corruptions, corruptions[i].what);
    tpcc_db_destroy(db);
  }
  small_db();
  char err[256];
  CHECK_EQ_I(tpcc_corrupt(db, "no-such-thing", err, sizeof err), -1);
  CHECK_CONTAINS(err, "unknown corruption 'no-such-thing'");
  tpcc_db_destroy(db);
  CHECK_OK(sstm_shutdown());
}

/* validate must refuse in with a message containing expect. */
static void refuse(const tpcc_input_t *in, const char *expect) {
  char err[256];
  CHECK_EQ_I(tpcc_input_validate(db, in, err, sizeof err), -1);
  CHECK_CONTAINS(err, expect);
  tpcc_output_t out;
  CHECK_EQ_I(tpcc_run(db, in, 1, &out), TPCC_EINPUT);
  CHECK_EQ_I(out.status, TPCC_EINPUT);
}

static void mode_inputs(void) {
  int_init(SSTM_DESIGN_ETL, NULL);
  CHECK_OK(sstm_thread_init());
  char err[256];
  tpcc_scale_t s;
  tpcc_scale_small(&s);
  CHECK_EQ_I(tpcc_scale_validate(&s, err, sizeof err), 0);
  tpcc_scale_t bad = s;
  bad.districts = 11;
  CHECK_EQ_I(tpcc_scale_validate(&bad, err, sizeof err), -1);
  CHECK_CONTAINS(err, "districts 11 not in 1..10");
  bad = s;
  bad.orders = s.customers + 1;
  CHECK_EQ_I(tpcc_db_create(&bad, 1, &db, err, sizeof err), -1);
  CHECK_CONTAINS(err, "orders 61 not in 1..60");
  CHECK_NULL(db);
  bad = s;
  bad.warehouses = 0;
  CHECK_EQ_I(tpcc_scale_validate(&bad, err, sizeof err), -1);
  CHECK_CONTAINS(err, "warehouses 0");

  small_db();
  /* A generator made apart from the database (a load generator's) has its
   * C constants and draws the same inputs. */
  tpcc_gen_t g;
  CHECK_EQ_I(tpcc_gen_init(&g, &s, sstm_test_seed(), err, sizeof err), 0);
  CHECK_EQ_MEM(&g, tpcc_db_generator(db), sizeof g);
  CHECK_NE_U(g.c_last_run, g.c_last_load);
  uint32_t delta =
      g.c_last_run > g.c_last_load ? g.c_last_run - g.c_last_load : g.c_last_load - g.c_last_run;
  CHECK_GE_U(delta, 65);
  CHECK_LE_U(delta, 119);
  CHECK_NE_U(delta, 96);
  CHECK_NE_U(delta, 112);
  CHECK_EQ_I(tpcc_gen_init(&g, &bad, 1, err, sizeof err), -1);
  CHECK_CONTAINS(err, "warehouses 0");
  CHECK_EQ_I(tpcc_gen_init(&g, &s, sstm_test_seed(), err, sizeof err), 0);
  tpcc_rng_t r1, r2;
  tpcc_rng_seed(&r1, 11, 3);
  tpcc_rng_seed(&r2, 11, 3);
  for (int i = 0; i < 200; i++) {
    tpcc_input_t a, b;
    tpcc_input_generate(db, &r1, (tpcc_profile_t)(i % TPCC_NPROFILES), 1 + i % 2, 5, &a);
    tpcc_gen_input(&g, &r2, (tpcc_profile_t)(i % TPCC_NPROFILES), 1 + i % 2, 5, &b);
    CHECK_EQ_MEM(&a, &b, sizeof a);
    CHECK_EQ_I(tpcc_input_validate(db, &a, err, sizeof err), 0);
  }
  tpcc_rng_t rng;
  tpcc_rng_seed(&rng, 7, 0);
  tpcc_input_t good, in;
  tpcc_input_generate(db, &rng, TPCC_NEW_ORDER, 1, now_s(), &good);
  CHECK_EQ_I(tpcc_input_validate(db, &good, err, sizeof err), 0);
  in = good;
  in.profile = 9;
  refuse(&in, "profile 9");
  in = good;
  in.w_id = 3;
  refuse(&in, "w_id 3 not in 1..2");
  in = good;
  in.now = 0;
  refuse(&in, "now 0");
  in = good;
  in.u.new_order.ol_cnt = 16;
  refuse(&in, "ol_cnt 16");
  in = good;
  in.u.new_order.items[0].i_id = db->scale.items + 1; /* unused id, not on the last line */
  refuse(&in, "line 1: i_id 201 not in 1..200");
  in = good;
  in.u.new_order.items[1].quantity = 11;
  refuse(&in, "line 2: quantity 11");
  in = good;
  in.u.new_order.items[0].supply_w_id = 0;
  refuse(&in, "supply_w_id 0");
  tpcc_input_generate(db, &rng, TPCC_PAYMENT, 2, now_s(), &good);
  in = good;
  in.u.payment.h_amount = 500001;
  refuse(&in, "h_amount 500001");
  in = good;
  in.u.payment.c = (tpcc_customer_key_t){.by_name = 1, .c_last = 60};
  refuse(&in, "c_last 60 not in 0..59");
  in = good;
  in.u.payment.c = (tpcc_customer_key_t){.by_name = 2};
  refuse(&in, "by_name 2");
  tpcc_input_generate(db, &rng, TPCC_STOCK_LEVEL, 1, now_s(), &good);
  in = good;
  in.u.stock_level.threshold = 21;
  refuse(&in, "threshold 21");
  tpcc_input_generate(db, &rng, TPCC_DELIVERY, 1, now_s(), &good);
  in = good;
  in.u.delivery.o_carrier_id = 0;
  refuse(&in, "o_carrier_id 0");

  /* A rollback leaves no trace: the next new order of the district gets
   * the number the rolled-back one had; the stock it touched is as before. */
  char e1[1024];
  tpcc_input_generate(db, &rng, TPCC_NEW_ORDER, 1, now_s(), &in);
  uint32_t d = in.u.new_order.d_id, n = in.u.new_order.ol_cnt;
  uint32_t next = tpcc_d(db, 1, d)->next_o_id;
  tpcc_stock_t *st = tpcc_s(db, in.u.new_order.items[0].supply_w_id, in.u.new_order.items[0].i_id);
  int64_t ytd = st->ytd;
  in.u.new_order.items[n - 1].i_id = db->scale.items + 1;
  tpcc_output_t out;
  CHECK_EQ_I(tpcc_run(db, &in, 3, &out), TPCC_ROLLED_BACK);
  CHECK_EQ_I(out.status, TPCC_ROLLED_BACK);
  CHECK_EQ_U(tpcc_d(db, 1, d)->next_o_id, next);
  CHECK_EQ_I(st->ytd, ytd);
  in.u.new_order.items[n - 1].i_id = 1;
  CHECK_EQ_I(tpcc_run(db, &in, 3, &out), TPCC_OK);
  CHECK_EQ_U(out.u.new_order.o_id, next);
  CHECK_EQ_I(tpcc_check(db, e1, sizeof e1), 0);

  /* Payment by a customer with bad credit: the payment's ids and amount go
   * in front of C_DATA, which keeps its first 500 characters. */
  uint32_t bc = 0;
  for (uint32_t c = 1; c <= db->scale.customers && bc == 0; c++)
    if (tpcc_c(db, 2, 1, c)->credit[0] == 'B') bc = c;
  CHECK_GT_U(bc, 0); /* 10 % of 60 customers: the seed would have to be unlucky */
  char old[501], want[1100];
  memcpy(old, tpcc_c(db, 2, 1, bc)->data, sizeof old);
  tpcc_input_generate(db, &rng, TPCC_PAYMENT, 1, now_s(), &in);
  in.u.payment.d_id = 3;
  in.u.payment.c_w_id = 2;
  in.u.payment.c_d_id = 1;
  in.u.payment.c = (tpcc_customer_key_t){.by_name = 0, .c_id = bc};
  in.u.payment.h_amount = 12345;
  int64_t bal = tpcc_c(db, 2, 1, bc)->balance;
  CHECK_EQ_I(tpcc_run(db, &in, 5, &out), TPCC_OK);
  CHECK_EQ_I(out.u.payment.c_balance, bal - 12345);
  CHECK_EQ_STR(out.u.payment.c_credit, "BC");
  snprintf(want, sizeof want, "%u 1 2 3 1 123.45|%s", bc, old);
  want[500] = '\0';
  CHECK_EQ_STR(tpcc_c(db, 2, 1, bc)->data, want);
  CHECK_EQ_I(tpcc_check(db, e1, sizeof e1), 0);
  tpcc_db_destroy(db);
  CHECK_OK(sstm_shutdown());
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s run DESIGN POLICY THREADS [--ops N] | corrupt | inputs\n", argv[0]);
    return 2;
  }
  char name[128];
  snprintf(name, sizeof name, "tpcc.%s", argv[1]);
  sstm_test_setup(name, argc, argv);
  if (strcmp(argv[1], "run") == 0)
    mode_run(argc, argv);
  else if (strcmp(argv[1], "corrupt") == 0)
    mode_corrupt();
  else if (strcmp(argv[1], "inputs") == 0)
    mode_inputs();
  else
    FAIL("unknown mode \"%s\"", argv[1]);
  printf("PASS %s\n", name);
  return 0;
}
