/* SPDX-License-Identifier: MIT */
/* Integration: TPC-C on the preemptive executor (include/schedstm/exec.h,
 * bench/tpcc): the consistency checks pass after a mixed run with
 * preemption on.
 *
 * usage: tpcc_exec PREEMPT [POLICY] [--ops N | --scaled-ops N] [--pace-us U]
 *   PREEMPT none | signal | poll; U: mean pause between submissions
 *   (default 40 us)
 *
 * Two submitter threads send the five profiles, each request with its
 * profile's default priority ([Silvestri17]: delivery 1 ... payment 5), to
 * an executor of two workers: one floods delivery, stock-level and
 * new-order, the other paces order-status and payment. The body is
 * tpcc_tx_body() inside the transaction the executor runs, so requests of
 * higher priority preempt lower ones in the middle of their transactions
 * (paused on their contexts, resumed later on any worker). Every result
 * is checked (committed, or rolled back by sstm_cancel() for the inputs
 * with the unused item, and only those), then tpcc_check() must find no
 * violation, each district's D_NEXT_O_ID must have moved by exactly the
 * new orders that committed there and each warehouse's W_YTD by exactly
 * the payments made to it. The number of preemptions is printed, not
 * asserted (it depends on timing). */
#define _GNU_SOURCE
#include <schedstm/exec.h>
#include <unistd.h>

#include "../common/exec_cfg.h"
#include "common_int.h"
#include "tpcc.h"
#include "tpcc_internal.h"

#define SUBMITTERS 2

typedef struct request {
  tpcc_input_t in;
  tpcc_output_t out;
  sstm_exec_future_t future;
} request_t;

static tpcc_db_t *db;
static sstm_exec_t *ex;
static request_t *reqs;
static long per_submitter;
static long pace_us;

/* The request body: runs inside the executor's transaction, possibly over
 * several attempts and preemptions. */
static void body(void *arg) {
  request_t *r = arg;
  tpcc_tx_body(db, &r->in, &r->out);
}

static void submitter(sstm_tt_t *t) {
  tpcc_rng_t rng;
  tpcc_rng_seed(&rng, sstm_test_seed(), t->idx + 1);
  uint32_t home = t->idx % db->scale.warehouses + 1;
  for (long i = 0; i < per_submitter; i++) {
    request_t *r = &reqs[t->idx * per_submitter + i];
    /* Submitter 0 floods the low priorities (the long profiles), submitter
     * 1 paces the high ones: a high-priority request then finds every
     * worker busy with a lower one, and preempts it. */
    static const tpcc_profile_t low[3] = {TPCC_DELIVERY, TPCC_STOCK_LEVEL, TPCC_NEW_ORDER};
    static const tpcc_profile_t high[2] = {TPCC_ORDER_STATUS, TPCC_PAYMENT};
    uint64_t x = tpcc_rng_next(&rng);
    tpcc_profile_t p = t->idx == 0 ? low[x % 3] : high[x % 2];
    tpcc_input_generate(db, &rng, p, home, (int64_t)time(NULL), &r->in);
    r->out.status = -1;
    sstm_exec_req_t q = {.fn = body,
                         .arg = r,
                         .priority = (unsigned)tpcc_default_priority(p),
                         .tag = (uint32_t)p,
                         .future = &r->future};
    CHECK_OK(sstm_exec_submit(ex, &q));
    if (t->idx == 1 && pace_us > 0)
      usleep((useconds_t)(tpcc_rng_next(&rng) % (2 * (uint64_t)pace_us)));
  }
}

static sstm_exec_preempt_t parse_preempt(const char *s) {
  if (strcmp(s, "none") == 0) return SSTM_EXEC_PREEMPT_NONE;
  if (strcmp(s, "signal") == 0) return SSTM_EXEC_PREEMPT_SIGNAL;
  if (strcmp(s, "poll") == 0) return SSTM_EXEC_PREEMPT_POLL;
  fprintf(stderr, "bad preemption mode \"%s\" (none, signal, poll)\n", s);
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s none|signal|poll [POLICY] [--ops N]\n", argv[0]);
    return 2;
  }
  const char *policy = argc > 2 && argv[2][0] != '-' ? argv[2] : NULL;
  char name[128];
  snprintf(name, sizeof name, "tpcc_exec.%s.%s", argv[1], policy ? policy : "default");
  sstm_test_setup(name, argc, argv);
  sstm_exec_preempt_t mode = parse_preempt(argv[1]);
  long total = int_opt_ops(argc, argv, (long)sstm_test_scaled(4000, 400), 400);
  per_submitter = total / SUBMITTERS;
  pace_us = int_opt(argc, argv, "--pace-us", 40);

  int_init(SSTM_DESIGN_ETL, policy);
  CHECK_OK(sstm_thread_init());
  tpcc_scale_t s;
  tpcc_scale_small(&s);
  char err[1024];
  CHECK_MSG(tpcc_db_create(&s, sstm_test_seed(), &db, err, sizeof err) == 0, "%s", err);
  int64_t ytd0[2], next0[2][3];
  CHECK_EQ_U(s.warehouses, 2);
  CHECK_EQ_U(s.districts, 3);
  for (uint32_t w = 1; w <= 2; w++) {
    ytd0[w - 1] = tpcc_w(db, w)->ytd;
    for (uint32_t d = 1; d <= 3; d++)
      next0[w - 1][d - 1] = tpcc_d(db, w, d)->next_o_id;
  }

  sstm_exec_config_t cfg = sstm_test_exec_config(2, 32, 8, mode);
  cfg.stack_kb = 128;
  CHECK_OK(sstm_exec_create(&cfg, &ex));
  char desc[512];
  sstm_exec_describe(ex, desc, sizeof desc);
  printf("tpcc_exec: %s\n", desc);

  reqs = calloc((size_t)(per_submitter * SUBMITTERS), sizeof *reqs);
  CHECK_NOT_NULL(reqs);
  sstm_test_run_threads(SUBMITTERS, false, submitter, NULL);

  int64_t paid[2] = {0, 0};
  uint64_t new_orders[2][3] = {{0}}, commits = 0, rollbacks = 0;
  for (long i = 0; i < per_submitter * SUBMITTERS; i++) {
    request_t *r = &reqs[i];
    int rc = sstm_exec_wait(&r->future);
    const tpcc_input_t *in = &r->in;
    bool unused = in->profile == TPCC_NEW_ORDER &&
                  in->u.new_order.items[in->u.new_order.ol_cnt - 1].i_id == s.items + 1;
    if (unused) {
      CHECK_EQ_I(rc, SSTM_ECANCELED);
      CHECK_EQ_I(r->out.status, TPCC_ROLLED_BACK);
      rollbacks++;
      continue;
    }
    CHECK_RC(rc, SSTM_OK);
    CHECK_EQ_I(r->out.status, TPCC_OK);
    CHECK_EQ_U(r->out.profile, in->profile);
    commits++;
    if (in->profile == TPCC_NEW_ORDER)
      new_orders[in->w_id - 1][in->u.new_order.d_id - 1]++;
    else if (in->profile == TPCC_PAYMENT)
      paid[in->w_id - 1] += in->u.payment.h_amount;
  }
  uint64_t preemptions = 0, promotions = 0;
  for (unsigned l = 0; l < cfg.levels; l++) {
    sstm_exec_level_stats_t ls;
    CHECK_OK(sstm_exec_stats(ex, l, &ls));
    preemptions += ls.preemptions;
    promotions += ls.promotions;
    if (mode == SSTM_EXEC_PREEMPT_NONE) CHECK_EQ_U(ls.preemptions, 0);
  }
  CHECK_OK(sstm_exec_destroy(ex));

  long v = tpcc_check(db, err, sizeof err);
  CHECK_MSG(v == 0, "tpcc_check: %ld violations: %s", v, err);
  for (uint32_t w = 1; w <= 2; w++) {
    CHECK_EQ_I(tpcc_w(db, w)->ytd - ytd0[w - 1], paid[w - 1]);
    for (uint32_t d = 1; d <= 3; d++)
      CHECK_EQ_I(tpcc_d(db, w, d)->next_o_id - next0[w - 1][d - 1],
                 (long long)new_orders[w - 1][d - 1]);
  }
  printf("tpcc_exec: %s: %llu commits, %llu rollbacks, %llu preemptions, %llu promotions\n",
         argv[1], (unsigned long long)commits, (unsigned long long)rollbacks,
         (unsigned long long)preemptions, (unsigned long long)promotions);
  free(reqs);
  tpcc_db_destroy(db);
  CHECK_OK(sstm_shutdown());
  printf("PASS %s\n", name);
  return 0;
}
