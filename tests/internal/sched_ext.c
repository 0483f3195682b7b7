/* SPDX-License-Identifier: MIT */
/* Internal tests: the OS scheduling facilities (src/os/sched.{h,c}) used by
 * the policies: the choice of the time-slice extension facility (pure
 * function, every input combination), the rseq request/granted protocol on
 * a simulated control word, the real probe on the running kernel and what
 * sstm_describe reports for "P+ext", "P+ext" in rseq mode on a simulated
 * kernel (the sstm__ext_sim seam: requests inside attempts only, one yield
 * per grant, the order against the base policy's hooks, a resumed
 * transaction), the per-thread custom slice, lever names, and the OS
 * conflict priority order.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/cm_duo.h"
#include "cm/common.h"
#include "core/engine.h"
#include "os/sched.h"

_Static_assert(sizeof(sstm_slice_ctrl_t) == 2, "the rseq control word's two bytes");

#define AVAIL (1u << 4)   /* RSEQ_CS_FLAG_SLICE_EXT_AVAILABLE */
#define ENABLED (1u << 5) /* RSEQ_CS_FLAG_SLICE_EXT_ENABLED */

/* ---- sstm__ext_choose ------------------------------------------------------ */

TEST(ext_choose_every_combination) {
  const uint32_t flags[] = {0,        AVAIL,      ENABLED, AVAIL | ENABLED, ~(AVAIL | ENABLED),
                            ~ENABLED, 0xffffffffu};
  const int rcs[] = {0, -1, 1};
  int n = 0;
  for (int reg = 0; reg < 2; reg++)
    for (unsigned f = 0; f < sizeof flags / sizeof flags[0]; f++)
      for (unsigned pr = 0; pr < 3; pr++)
        for (unsigned sr = 0; sr < 3; sr++) {
          sstm_ext_probe_t p = {.rseq_registered = reg != 0,
                                .rseq_flags = flags[f],
                                .prctl_rc = rcs[pr],
                                .setattr_rc = rcs[sr],
                                .mode = (sstm_ext_mode_t)77};
          /* rseq: registered, the kernel offers the extension (bit 4) and
           * enabling it for the thread succeeded; bit 5 (enabled) is
           * informational. Else a custom slice if sched_setattr took one. */
          sstm_ext_mode_t want = SSTM_EXT_NONE;
          if (reg && (flags[f] & AVAIL) && rcs[pr] == 0)
            want = SSTM_EXT_RSEQ;
          else if (rcs[sr] == 0)
            want = SSTM_EXT_SLICE;
          sstm_ext_mode_t got = sstm__ext_choose(&p);
          CHECK_MSG(got == want,
                    "choose(registered %d, flags 0x%x, prctl %d, setattr %d) = %s, expected %s",
                    reg, flags[f], rcs[pr], rcs[sr], sstm__ext_mode_name(got),
                    sstm__ext_mode_name(want));
          CHECK_EQ_I(p.mode, 77); /* pure: the probe record is not written */
          n++;
        }
  CHECK_EQ_I(n, 2 * 7 * 3 * 3);
  CHECK_EQ_STR(sstm__ext_mode_name(SSTM_EXT_NONE), "none");
  CHECK_EQ_STR(sstm__ext_mode_name(SSTM_EXT_RSEQ), "rseq");
  CHECK_EQ_STR(sstm__ext_mode_name(SSTM_EXT_SLICE), "slice");
  CHECK_EQ_STR(sstm__ext_mode_name((sstm_ext_mode_t)9), "?");
}

/* ---- the request/granted protocol on a simulated control word ---------------- */

/* The simulated kernel: what rseq_slice_yield() does to the control word
 * (any system call ends a grant and clears `granted`). */
static void kernel_yield(sstm_slice_ctrl_t *c) { c->granted = 0; }

TEST(ext_enter_leave_protocol) {
  sstm_slice_ctrl_t c = {0, 0};
  /* nothing granted: no yield, request withdrawn */
  sstm__ext_enter(&c);
  CHECK_EQ_U(c.request, 1);
  CHECK_EQ_U(c.granted, 0);
  CHECK_FALSE(sstm__ext_leave(&c));
  CHECK_EQ_U(c.request, 0);
  CHECK_EQ_U(c.granted, 0);
  /* the kernel grants (it clears request and sets granted): yield; the
   * library leaves `granted` to the kernel, which clears it in the yield */
  sstm__ext_enter(&c);
  c.request = 0;
  c.granted = 1;
  CHECK_TRUE(sstm__ext_leave(&c));
  CHECK_EQ_U(c.request, 0);
  CHECK_EQ_U(c.granted, 1); /* user space never writes the kernel's byte */
  kernel_yield(&c);
  CHECK_FALSE(sstm__ext_leave(&c)); /* the grant was consumed by the yield */
  /* granted with the request still set (a grant racing the withdrawal):
   * the request is withdrawn first, then the grant is seen */
  sstm__ext_enter(&c);
  c.granted = 1;
  CHECK_TRUE(sstm__ext_leave(&c));
  CHECK_EQ_U(c.request, 0);
  CHECK_EQ_U(c.granted, 1);
  kernel_yield(&c);
  /* leave without enter: harmless */
  CHECK_FALSE(sstm__ext_leave(&c));
  CHECK_EQ_U(c.request, 0);
  /* enter is idempotent, and only the request byte is written */
  struct {
    uint8_t before;
    sstm_slice_ctrl_t c;
    uint8_t after[2];
  } g = {0xAA, {0, 0}, {0x55, 0x66}};
  sstm__ext_enter(&g.c);
  sstm__ext_enter(&g.c);
  CHECK_EQ_U(g.c.request, 1);
  g.c.granted = 1;
  CHECK_TRUE(sstm__ext_leave(&g.c));
  CHECK_EQ_U(g.c.granted, 1);
  CHECK_EQ_U(g.before, 0xAA);
  CHECK_EQ_U(g.after[0], 0x55);
  CHECK_EQ_U(g.after[1], 0x66);
}

/* ---- the running kernel ----------------------------------------------------- */

/* Can this thread take an EEVDF custom slice (sched_runtime for
 * SCHED_OTHER) and read it back? Checked independently of the library, on a
 * scratch thread. */
static void *slice_try(void *arg) {
  (void)arg;
  struct duo_sched_attr a;
  memset(&a, 0, sizeof a);
  if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) != 0) return (void *)0;
  a.sched_flags = 0;
  a.sched_runtime = 2000000;
  if (duo_setattr(0, &a) != 0) return (void *)0;
  struct duo_sched_attr b;
  memset(&b, 0, sizeof b);
  if (syscall(SYS_sched_getattr, 0, &b, (unsigned)sizeof b, 0u) != 0) return (void *)0;
  return (void *)(intptr_t)(b.sched_runtime == 2000000);
}
static bool custom_slices_work(void) {
  pthread_t t = duo_spawn(slice_try, NULL);
  void *r;
  CHECK_EQ_I(pthread_join(t, &r), 0);
  return r != NULL;
}

static bool kernel_at_least(int maj, int min) {
  struct utsname u;
  CHECK_EQ_I(uname(&u), 0);
  int a = 0, b = 0;
  sscanf(u.release, "%d.%d", &a, &b);
  return a > maj || (a == maj && b >= min);
}

static void *probe_thread(void *arg) {
  sstm__ext_probe(arg);
  return NULL;
}

TEST(ext_probe_on_this_machine) {
  sstm_ext_probe_t p;
  memset(&p, 0, sizeof p);
  duo_join(duo_spawn(probe_thread, &p));
  printf("probe: rseq registered %d, flags 0x%x, prctl %d, setattr %d -> %s\n", p.rseq_registered,
         p.rseq_flags, p.prctl_rc, p.setattr_rc, sstm__ext_mode_name(p.mode));
  CHECK_EQ_I(p.mode, sstm__ext_choose(&p));
  bool slices = custom_slices_work();
  CHECK_EQ_I(p.setattr_rc == 0, slices);
  if (!kernel_at_least(7, 0)) {
    /* no rseq slice extension before Linux 7.0 */
    CHECK_EQ_X(p.rseq_flags & AVAIL, 0);
    CHECK_NE_I(p.mode, SSTM_EXT_RSEQ);
    CHECK_EQ_I(p.mode, slices ? SSTM_EXT_SLICE : SSTM_EXT_NONE);
  }
  if (!(p.rseq_flags & AVAIL)) CHECK_NE_I(p.prctl_rc, 0); /* the prctl is not even tried */
}

static void init_cm(const char *cm) {
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = cm;
  CHECK_OK(sstm_init(&cfg));
}

TEST(describe_reports_the_ext_facility) {
  unsetenv("SCHEDSTM_EXT_MODE");
  bool slices = custom_slices_work();
  init_cm("ser-block+ext");
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  printf("%s\n", d);
  CHECK_CONTAINS(d, "cm=ser-block+ext");
  if (kernel_at_least(7, 0)) {
    CHECK_CONTAINS(d, "ext=");
  } else {
    CHECK_NOT_CONTAINS(d, "ext=rseq");
    CHECK_CONTAINS(d, slices ? "ext=slice" : "ext=none");
  }
  CHECK_OK(sstm_shutdown());
}

TEST(ext_mode_none_is_forced) {
  setenv("SCHEDSTM_EXT_MODE", "none", 1);
  init_cm("ser-block+ext");
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "ext=none");
  CHECK_NOT_CONTAINS(d, "ext=slice");
  /* and a registered thread keeps its slice */
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_OK(sstm_thread_init());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
}

TEST(ext_alone_is_suicide_plus_ext) {
  init_cm("ext");
  CHECK_EQ_STR(sstm_cm_current()->name, "suicide+ext");
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "ext=");
  CHECK_OK(sstm_shutdown());
  CHECK_NULL(sstm_cm_find("nosuch+ext"));
  CHECK_NULL(sstm_cm_find("+ext"));
  CHECK_NOT_NULL(sstm_cm_find("softser+ext"));
  CHECK_EQ_STR(sstm_cm_find("adaptive+ext")->name, "adaptive+ext");
  /* the composite keeps the base policy's counters, ext's yields last */
  const sstm_cm_ops_t *o = sstm_cm_find("ser-block+ext");
  CHECK_EQ_STR(o->stat_names[0], "ser_waits");
  CHECK_EQ_STR(o->stat_names[SSTM_CM_NSTATS - 1], "ext_yields");
}

/* The calling thread runs with ext's slice `want`, its policy and nice as
 * they were (`before`). */
static void check_ext_slice(duo_view_t before, uint64_t want) {
  duo_view_t in = duo_view_of(duo_gettid());
  CHECK_EQ_U(in.runtime, want);
  CHECK_EQ_I(in.policy, before.policy);
  CHECK_EQ_I(in.nice, before.nice);
}

/* Slice mode with SCHEDSTM_EXT_SLICE_US=2500, or skip the test. */
static void need_slice_mode(void) {
  unsetenv("SCHEDSTM_EXT_MODE");
  if (!custom_slices_work()) sstm_test_skip("no EEVDF custom slices here");
  setenv("SCHEDSTM_EXT_SLICE_US", "2500", 1);
}

/* slice mode: a registered thread runs with the ext slice, and gets its
 * own back when it unregisters. */
static void *slice_thread(void *arg) {
  uint64_t want = *(uint64_t *)arg;
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_OK(sstm_thread_init());
  check_ext_slice(before, want);
  CHECK_OK(sstm_thread_exit());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  return NULL;
}

TEST(ext_slice_set_per_thread_and_restored) {
  need_slice_mode();
  init_cm("ser-block+ext");
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "ext=slice(2500us)");
  uint64_t want = 2500000;
  duo_join(duo_spawn(slice_thread, &want));
  CHECK_OK(sstm_shutdown());
}

/* A thread with a custom slice of its own gets it back when it leaves (it
 * was given the default). */
static void *own_slice_thread(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm__ext_set_slice(2000000));
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_EQ_U(before.runtime, 2000000);
  CHECK_OK(sstm_thread_init());
  check_ext_slice(before, 2500000);
  CHECK_OK(sstm_thread_exit());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  return NULL;
}

TEST(ext_slice_gives_back_the_threads_own_slice) {
  need_slice_mode();
  init_cm("ser-block+ext");
  duo_join(duo_spawn(own_slice_thread, NULL));
  CHECK_OK(sstm_shutdown());
}

/* The same when sstm_init's thread (whose slice the new threads inherit)
 * has the custom slice: it is not the kernel's default, and each thread
 * gets it back. Before, the init thread's slice was taken for the default,
 * and the threads left with the kernel's 1.4 ms instead of their 3 ms. */
static void *inherited_slice_thread(void *arg) {
  (void)arg;
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_EQ_U(before.runtime, 3000000); /* inherited */
  CHECK_OK(sstm_thread_init());
  check_ext_slice(before, 2500000);
  CHECK_OK(sstm_thread_exit());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  return NULL;
}

TEST(ext_slice_gives_back_a_custom_slice_that_sstm_init_had) {
  need_slice_mode();
  CHECK_TRUE(sstm__ext_set_slice(3000000));
  duo_view_t main_before = duo_view_of(duo_gettid());
  init_cm("ser-block+ext");
  duo_join(duo_spawn(inherited_slice_thread, NULL));
  CHECK_OK(sstm_shutdown());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), main_before);
  CHECK_TRUE(sstm__ext_set_slice(0));
}

/* sstm_sched_set changes the policy and nice value and keeps the thread's
 * custom slice (the EEVDF slice applies to SCHED_OTHER and SCHED_BATCH). */
static void *sched_set_thread(void *arg) {
  (void)arg;
  CHECK_TRUE(sstm__ext_set_slice(2000000));
  duo_view_t v = duo_view_of(duo_gettid());
  CHECK_EQ_U(v.runtime, 2000000);
  CHECK_OK(sstm_sched_set(SCHED_BATCH, v.nice));
  duo_view_t w = duo_view_of(duo_gettid());
  CHECK_EQ_I(w.policy, SCHED_BATCH);
  CHECK_EQ_I(w.nice, v.nice);
  CHECK_EQ_U(w.runtime, 2000000);
  CHECK_EQ_U(sstm__sched_slice_ns(), 2000000);
  return NULL;
}

TEST(sched_set_keeps_a_custom_slice) {
  need_slice_mode();
  init_cm("suicide");
  duo_join(duo_spawn(sched_set_thread, NULL));
  CHECK_OK(sstm_shutdown());
}

/* A descriptor made on one thread (sstm_desc_create) and run on another
 * (sstm_desc_attach): the slice is the thread's that runs it, from attach
 * to detach; the creating thread is left alone. */
static void *attach_thread(void *arg) {
  sstm_desc_t *d = arg;
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_OK(sstm_desc_attach(d));
  check_ext_slice(before, 2500000);
  CHECK_TRUE(sstm_desc_detach() == d);
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  return NULL;
}

TEST(ext_slice_follows_the_attached_thread) {
  need_slice_mode();
  duo_view_t mine = duo_view_of(duo_gettid());
  init_cm("ser-block+ext");
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), mine); /* the probe ran elsewhere */
  sstm_desc_t *d = NULL;
  CHECK_OK(sstm_desc_create(&d));
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), mine);
  duo_join(duo_spawn(attach_thread, d));
  duo_join(duo_spawn(attach_thread, d)); /* and again, on another thread */
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), mine);
  CHECK_OK(sstm_desc_destroy(d));
  CHECK_OK(sstm_shutdown());
}

/* ---- "P+ext" in rseq mode, on a simulated kernel (sstm__ext_sim) ---------- */

/* The simulated kernel: each thread's control word, and rseq_slice_yield(),
 * which ends the grant (clears `granted`) and is counted. */
static __thread sstm_slice_ctrl_t sim_word;
static __thread int sim_yields;
static __thread bool sim_no_area; /* this thread's rseq area has no control word */
static sstm_slice_ctrl_t *sim_ctrl(void) { return sim_no_area ? NULL : &sim_word; }
static void sim_yield(void) {
  sim_word.granted = 0;
  sim_yields++;
}
static const sstm_ext_sim_t sim = {sim_ctrl, sim_yield};

/* The kernel defers a preemption: it takes the request and grants. */
static void sim_grant(void) {
  sim_word.request = 0;
  sim_word.granted = 1;
}

/* A base policy that records the request byte each of its hooks sees (-1:
 * not called since the last reset). */
static __thread int seen_begin, seen_commit, seen_abort;
static void seen_reset(void) { seen_begin = seen_commit = seen_abort = -1; }
static void rec_begin(sstm_cm_ctx_t *c) {
  (void)c;
  seen_begin = sim_word.request;
}
static void rec_commit(sstm_cm_ctx_t *c) {
  (void)c;
  seen_commit = sim_word.request;
}
static void rec_abort(sstm_cm_ctx_t *c, const sstm_abort_info_t *i) {
  (void)c, (void)i;
  seen_abort = sim_word.request;
}
static sstm_cm_action_t rec_conflict(sstm_cm_ctx_t *c, const sstm_conflict_t *cf, uint64_t *w) {
  (void)c, (void)cf, (void)w;
  return SSTM_CM_ABORT_SELF;
}
static const sstm_cm_ops_t rec_ops = {
    .name = "simrec",
    .description = "records what ext's control word says in each hook",
    .on_begin = rec_begin,
    .on_commit = rec_commit,
    .on_conflict = rec_conflict,
    .on_abort = rec_abort,
};

/* "simrec+ext" in rseq mode on the simulated kernel. */
static void init_sim(void) {
  unsetenv("SCHEDSTM_EXT_MODE");
  int rc = sstm_cm_register(&rec_ops);
  CHECK_MSG(rc == SSTM_OK || rc == SSTM_EBUSY, "sstm_cm_register: %s", sstm_strerror(rc));
  sstm__ext_sim = &sim;
  init_cm("simrec+ext");
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "ext=rseq");
}
static void fini_sim(void) {
  CHECK_OK(sstm_shutdown());
  sstm__ext_sim = NULL;
}

static uint64_t ext_yields_counted(void) {
  sstm_stats_t s;
  CHECK_OK(sstm_stats_get(sstm_self(), &s));
  return s.cm_stats[SSTM_CM_NSTATS - 1];
}

static uint64_t cell;
static int inside_req;     /* the request byte the body saw */
static int grant_attempts; /* grant in this many attempts, restarting in all but the last */
static int plain_restarts; /* then restart this many attempts without a grant */
static bool cancel_after_grant;
static void ext_body(void *arg) {
  (void)arg;
  inside_req = sim_word.request;
  sstm_store_u64(&cell, sstm_load_u64(&cell) + 1);
  if (grant_attempts > 0) {
    sim_grant();
    if (cancel_after_grant) sstm_cancel();
    if (--grant_attempts > 0 || plain_restarts > 0) sstm_restart();
  } else if (plain_restarts > 0) {
    plain_restarts--;
    sstm_restart();
  }
}
static void ro_body(void *arg) {
  (void)arg;
  inside_req = sim_word.request;
  (void)sstm_load_u64(&cell);
}

TEST(ext_rseq_requests_inside_transactions_only) {
  init_sim();
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_OK(sstm_thread_init());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before); /* rseq mode sets no slice */
  CHECK_EQ_U(sim_word.request, 0);
  /* no grant: the request is up during the attempt, the base's hooks see
   * it (ext enters before the base's begin and leaves after its commit),
   * and nothing yields */
  seen_reset();
  inside_req = -1;
  grant_attempts = 0;
  CHECK_OK(sstm_run(NULL, ext_body, NULL));
  CHECK_EQ_I(inside_req, 1);
  CHECK_EQ_I(seen_begin, 1);
  CHECK_EQ_I(seen_commit, 1);
  CHECK_EQ_I(seen_abort, -1);
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_EQ_I(sim_yields, 0);
  CHECK_EQ_U(ext_yields_counted(), 0);
  /* read-only, declared: the same */
  inside_req = -1;
  sstm_attr_t ro = {.read_only = true};
  CHECK_OK(sstm_run(&ro, ro_body, NULL));
  CHECK_EQ_I(inside_req, 1);
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_EQ_I(sim_yields, 0);
  CHECK_OK(sstm_thread_exit());
  fini_sim();
}

TEST(ext_rseq_yields_once_per_grant) {
  init_sim();
  CHECK_OK(sstm_thread_init());
  cell = 0;
  cancel_after_grant = false;
  /* granted during a committing attempt: one yield after the commit,
   * which clears the grant */
  grant_attempts = 1;
  seen_reset();
  CHECK_OK(sstm_run(NULL, ext_body, NULL));
  CHECK_EQ_I(sim_yields, 1);
  CHECK_EQ_U(sim_word.granted, 0);
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_EQ_U(ext_yields_counted(), 1);
  CHECK_EQ_U(cell, 1);
  /* granted in each of three attempts, two restarted: a yield at each
   * end, and the retry asks again. (The base's on_abort sees no request
   * here whatever the order: the grant took it. The plain restarts below
   * check the order.) */
  grant_attempts = 3;
  seen_reset();
  inside_req = -1;
  CHECK_OK(sstm_run(NULL, ext_body, NULL));
  CHECK_EQ_I(seen_abort, 0);
  CHECK_EQ_I(inside_req, 1);
  CHECK_EQ_I(sim_yields, 4);
  CHECK_EQ_U(ext_yields_counted(), 4);
  CHECK_EQ_U(cell, 2);
  /* aborts without a grant: no yield, and the base's on_abort still runs
   * after ext withdrew the request (it was up until then) */
  grant_attempts = 0;
  plain_restarts = 2;
  seen_reset();
  CHECK_OK(sstm_run(NULL, ext_body, NULL));
  CHECK_EQ_I(seen_abort, 0);
  CHECK_EQ_I(seen_commit, 1);
  CHECK_EQ_I(sim_yields, 4);
  /* granted, then cancelled: the cancel ends the attempt, ext yields */
  grant_attempts = 1;
  cancel_after_grant = true;
  CHECK_RC(sstm_run(NULL, ext_body, NULL), SSTM_ECANCELED);
  CHECK_EQ_I(sim_yields, 5);
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_EQ_U(sim_word.granted, 0);
  CHECK_EQ_U(ext_yields_counted(), 5);
  CHECK_EQ_U(cell, 3); /* the cancelled attempt's write is gone */
  cancel_after_grant = false;
  CHECK_OK(sstm_thread_exit());
  fini_sim();
}

/* A transaction detached inside an attempt and resumed on another thread:
 * the request follows it, and each thread gives back a grant it got before
 * letting the transaction go. Thread B attaches it, and detaches it again
 * without committing. */
static void *resume_on_b(void *arg) {
  sstm_desc_t *d = arg;
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_OK(sstm_desc_attach(d));
  CHECK_TRUE(sstm_in_tx());
  CHECK_EQ_U(sim_word.request, 1); /* B asks its kernel now */
  sstm_store_u64(&cell, sstm_load_u64(&cell) + 10);
  sim_grant(); /* B's kernel grants; B lets the transaction go */
  CHECK_TRUE(sstm_desc_detach() == d);
  CHECK_EQ_U(sim_word.request, 0); /* and not after it let go */
  CHECK_EQ_I(sim_yields, 1);       /* B gave its grant back */
  CHECK_EQ_U(sim_word.granted, 0);
  return NULL;
}

TEST(ext_rseq_request_follows_a_resumed_transaction) {
  init_sim();
  CHECK_OK(sstm_thread_init());
  cell = 0;
  volatile int before_detach = -1, after_detach = -1, after_return = -1;
  SSTM_ATOMIC_BEGIN(NULL)
    sstm_store_u64(&cell, sstm_load_u64(&cell) + 1);
    before_detach = sim_word.request;
    sim_grant(); /* granted on A, which then lets the transaction go */
    sstm_desc_t *d = sstm_desc_detach();
    CHECK_NOT_NULL(d);
    after_detach = sim_word.request;
    CHECK_EQ_I(sim_yields, 1); /* A gave its grant back at the detach */
    CHECK_EQ_U(sim_word.granted, 0);
    duo_join(duo_spawn(resume_on_b, d));
    CHECK_OK(sstm_desc_attach(d));
    after_return = sim_word.request;
  SSTM_ATOMIC_END();
  CHECK_EQ_I(before_detach, 1);
  CHECK_EQ_I(after_detach, 0); /* no request left behind on A */
  CHECK_EQ_I(after_return, 1); /* back on A, still inside: asked again */
  CHECK_EQ_U(sim_word.request, 0);
  CHECK_EQ_U(cell, 11);
  CHECK_EQ_I(sim_yields, 1);           /* nothing granted after the return */
  CHECK_EQ_U(ext_yields_counted(), 2); /* A's and B's */
  CHECK_OK(sstm_thread_exit());
  fini_sim();
}

/* A thread that cannot use the rseq extension (here: its rseq area has no
 * control word) falls back to the custom slice, or to nothing where slices
 * cannot be set, and sstm_describe reports the fallback after the mode. */
static sstm_slice_ctrl_t *main_word; /* the main thread's, which has an area */
static int main_req_seen;
static void no_area_body(void *arg) {
  (void)arg;
  main_req_seen = __atomic_load_n(&main_word->request, __ATOMIC_RELAXED);
  sstm_store_u64(&cell, sstm_load_u64(&cell) + 1);
}
static void *no_area_thread(void *arg) {
  (void)arg;
  sim_no_area = true;
  duo_view_t before = duo_view_of(duo_gettid());
  CHECK_OK(sstm_thread_init());
  if (custom_slices_work()) check_ext_slice(before, SSTM_EXT_SLICE_US_DEFAULT * 1000ull);
  /* no control word: nothing asked, and not in another thread's word (the
   * main thread, outside any transaction, has its request down) */
  main_req_seen = -1;
  CHECK_OK(sstm_run(NULL, no_area_body, NULL));
  CHECK_EQ_I(main_req_seen, 0);
  CHECK_EQ_I(sim_yields, 0);
  CHECK_OK(sstm_thread_exit());
  CHECK_VIEW_EQ(duo_view_of(duo_gettid()), before);
  return NULL;
}

TEST(ext_rseq_fallback_of_one_thread_is_reported) {
  init_sim();
  CHECK_OK(sstm_thread_init()); /* this one gets the extension */
  char d[1024];
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_TRUE(strstr(d, "ext-fallback") == NULL);
  grant_attempts = plain_restarts = 0;
  main_word = &sim_word;
  duo_join(duo_spawn(no_area_thread, NULL));
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_CONTAINS(d, "ext=rseq");
  CHECK_CONTAINS(d, custom_slices_work() ? "ext-fallback=slice:1,none:0"
                                         : "ext-fallback=slice:0,none:1");
  CHECK_OK(sstm_thread_exit());
  fini_sim();
  /* the counts start again with the next sstm_init */
  init_sim();
  CHECK_GT_I(sstm_describe(d, sizeof d), 0);
  CHECK_TRUE(strstr(d, "ext-fallback") == NULL);
  fini_sim();
}

/* The probes (softser's levers, ext's facility) change scheduling
 * attributes to see what the kernel allows. Unprivileged, with the default
 * RLIMIT_NICE of 0, nice 19 and SCHED_IDLE are one-way: a probe run on the
 * caller would leave the thread that calls sstm_init() (and every thread it
 * creates later) lowered for good. Checked in a child that drops root. */
static int probe_child(bool at19) {
  /* at nice 19 the nice lever lowers nothing: it must not be chosen */
  if (at19 && setpriority(PRIO_PROCESS, 0, 19) != 0) return 10;
  struct rlimit rl = {0, 0};
  if (setrlimit(RLIMIT_NICE, &rl) != 0) return 10;
  if (getuid() == 0) {
    if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0)
      return 11;
    sstm_test_child_rearm(); /* the ID change cleared it */
  }
  duo_view_t before = duo_view_of(duo_gettid());
  sstm_lever_t l = sstm__lever_probe();
  duo_view_t after = duo_view_of(duo_gettid());
  if (after.policy != before.policy || after.nice != before.nice || after.runtime != before.runtime)
    return 12; /* the lever probe changed the caller */
  if (l == SSTM_LEVER_NICE || l == SSTM_LEVER_IDLE)
    return 13; /* cannot be undone, or lowers nothing */
  /* SCHED_BATCH <-> SCHED_OTHER is reversible unprivileged: each lever is
   * probed from the caller's own starting point, not from where a failed
   * one-way probe left a shared probing thread (SCHED_IDLE, from which
   * nothing else can be reached). */
  if (l != SSTM_LEVER_BATCH) return 15;
  sstm_ext_probe_t p;
  sstm__ext_probe(&p);
  after = duo_view_of(duo_gettid());
  if (after.policy != before.policy || after.nice != before.nice || after.runtime != before.runtime)
    return 14; /* the ext probe changed the caller */
  printf("unprivileged: lever %s, ext %s\n", sstm__lever_name(l), sstm__ext_mode_name(p.mode));
  fflush(stdout);
  return 0;
}

/* Once at the runner's nice value, once at nice 19 (where nice would be
 * undoable but lower nothing: 13 if it were chosen). */
TEST(probes_leave_the_caller_as_it_was_unprivileged) {
  for (int at19 = 0; at19 < 2; at19++) {
    fflush(stdout);
    pid_t pid = sstm_test_fork();
    CHECK_GE_I(pid, 0);
    if (pid == 0) _exit(probe_child(at19));
    int st = 0;
    CHECK_EQ_I(waitpid(pid, &st, 0), pid);
    CHECK_TRUE(WIFEXITED(st));
    CHECK_MSG(WEXITSTATUS(st) == 0,
              "%s: child exit %d (10/11: could not drop privileges, 12: the lever probe changed "
              "the caller, 13: a one-way lever, or one that lowers nothing, was chosen, 14: the "
              "ext probe changed the caller, 15: not SCHED_BATCH)",
              at19 ? "at nice 19" : "at the runner's nice", WEXITSTATUS(st));
  }
}

TEST(ext_slice_us_validated) {
  unsetenv("SCHEDSTM_EXT_SLICE_US");
  sstm_config_t cfg;
  sstm_test_config(&cfg);
  cfg.cm = "ser-block+ext";
  cfg.ext_slice_us = 50;
  CHECK_RC(sstm_init(&cfg), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "ext_slice_us 50");
  CHECK_FALSE(sstm_initialized());
  /* from the environment, with use_env */
  setenv("SCHEDSTM_EXT_SLICE_US", "50", 1);
  sstm_config_default(&cfg);
  cfg.cm = "ser-block+ext";
  CHECK_RC(sstm_init(&cfg), SSTM_EINVAL);
  CHECK_CONTAINS(sstm_last_error(), "SCHEDSTM_EXT_SLICE_US");
  CHECK_FALSE(sstm_initialized());
  setenv("SCHEDSTM_EXT_SLICE_US", "4000", 1);
  CHECK_OK(sstm_init(&cfg));
  CHECK_OK(sstm_shutdown());
  unsetenv("SCHEDSTM_EXT_SLICE_US");
}

/* ---- levers and conflict priorities ----------------------------------------- */

/* The names; softser forces the lever a configuration names (the public
 * levers map onto the OS layer's: a _Static_assert in core/config.c). */
TEST(lever_names_and_forcing) {
  static const char *const names[] = {"none", "nice", "idle", "batch", "slice"};
  for (int i = 0; i < 5; i++) {
    CHECK_EQ_STR(sstm__lever_name((sstm_lever_t)i), names[i]);
  }
  CHECK_EQ_STR(sstm__lever_name((sstm_lever_t)7), "?");
  /* forced through the configuration: describe names the lever */
  static const sstm_softser_lever_t forced[] = {SSTM_SOFTSER_LEVER_NONE, SSTM_SOFTSER_LEVER_BATCH};
  for (int i = 0; i < 2; i++) {
    sstm_config_t cfg;
    sstm_test_config(&cfg);
    cfg.cm = "softser";
    cfg.softser_lever = forced[i];
    int rc = sstm_init(&cfg);
    if (rc == SSTM_EPERM) continue; /* batch cannot be undone here */
    CHECK_OK(rc);
    char buf[512];
    sstm_describe(buf, sizeof buf);
    CHECK_CONTAINS(buf, i == 0 ? "lever=none" : "lever=batch");
    CHECK_OK(sstm_shutdown());
  }
}

/* A restore puts back only what the lever made: a thread whose nice was
 * changed while it was lowered (sstm_sched_set, as its program may) keeps
 * the change. The restore used to write the saved nice back over it. On a
 * scratch thread, with the nice lever (root, or a sufficient RLIMIT_NICE:
 * skipped where it cannot be undone). */
static int restored_nice[2];
static void *lever_restore_thread(void *arg) {
  (void)arg;
  int tid = sstm__gettid();
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  sstm_prio_saved_t saved;
  /* lowered and restored: back to base */
  CHECK(sstm__lever_lower(SSTM_LEVER_NICE, tid, &saved));
  CHECK_EQ_I(getpriority(PRIO_PROCESS, 0), 19);
  CHECK(sstm__lever_restore(SSTM_LEVER_NICE, tid, &saved));
  restored_nice[0] = getpriority(PRIO_PROCESS, 0);
  /* lowered, changed by the program, restored: the change stands */
  CHECK(sstm__lever_lower(SSTM_LEVER_NICE, tid, &saved));
  CHECK_OK(sstm_sched_set(SCHED_OTHER, base < 5 ? base + 5 : base - 1));
  CHECK(sstm__lever_restore(SSTM_LEVER_NICE, tid, &saved));
  restored_nice[1] = getpriority(PRIO_PROCESS, 0);
  CHECK_OK(sstm_sched_set(SCHED_OTHER, base));
  return NULL;
}
TEST(lever_restore_keeps_a_change_made_while_lowered) {
  if (!sstm__lever_undoable(SSTM_LEVER_NICE))
    sstm_test_skip("the nice lever cannot be undone here");
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  CHECK_EQ_I(errno, 0);
  if (base > 17) sstm_test_skip("nice above 17: no room to change it while lowered");
  duo_join(duo_spawn(lever_restore_thread, NULL));
  int changed = base < 5 ? base + 5 : base - 1; /* what the thread set */
  CHECK_EQ_I(restored_nice[0], base);
  CHECK_EQ_I(restored_nice[1], changed);
}

/* os_prio caches each thread's conflict priority for a quantum, but a
 * change made through sstm_sched_set is seen at the next conflict. The
 * policy's on_conflict is called directly (this thread against H, both
 * empty, this one younger): at equal priority the younger aborts itself,
 * and once H has lowered itself with sstm_sched_set, it kills H. Passes
 * whatever the timing; without the refresh on sstm_sched_set it fails
 * (the refresh by age is turned off here: sstm__os_prio_quantum_ns). */
static sstm_desc_t *h_desc;
static int h_low_nice;

/* Set-up of an os_prio duel: h_low_nice is 10 above the process's nice
 * (skipped when that is out of range), the library runs os_prio, and this
 * thread is registered. */
static void os_prio_duel_init(void) {
  errno = 0;
  int base = getpriority(PRIO_PROCESS, 0);
  CHECK_EQ_I(errno, 0);
  if (base > 9) sstm_test_skip("nice above 9: no lower priority left to test with");
  h_low_nice = base + 10;
  duo_reset();
  /* no refresh by age: only the at-once refreshes under test update the
   * cache, however long the steps below take on a loaded machine */
  atomic_store_explicit(&sstm__os_prio_quantum_ns, UINT64_MAX, memory_order_relaxed);
  init_cm("os_prio");
  CHECK_OK(sstm_thread_init());
}

static void os_prio_duel_fini(void) {
  atomic_store_explicit(&sstm__os_prio_quantum_ns, 4000000, memory_order_relaxed);
}

/* This thread's policy view (*ctx, both sets empty, younger) and a write
 * conflict with `other`'s attempt (older), for calling on_conflict directly. */
static sstm_conflict_t os_prio_duel(sstm_cm_ctx_t *ctx, sstm_desc_t *other) {
  *ctx = sstm_self()->cm_ctx;
  ctx->reads = ctx->writes = 0;
  ctx->birth = 200;
  sstm_conflict_t c = {.kind = SSTM_CONFLICT_WRITE_LOCKED, .has_other = true};
  c.other.desc = other;
  c.other.slot = sstm_desc_slot(other);
  c.other.tid = sstm_desc_tid(other);
  c.other.birth = 100;
  return c;
}

static void *lowering_thread(void *arg) {
  (void)arg;
  CHECK_OK(sstm_thread_init());
  h_desc = sstm_self();
  duo_set(1);
  duo_wait(2);
  CHECK_OK(sstm_sched_set(SCHED_OTHER, h_low_nice));
  duo_set(3);
  duo_wait(4);
  CHECK_OK(sstm_thread_exit());
  return NULL;
}

TEST(os_prio_sees_sstm_sched_set_at_once) {
  os_prio_duel_init();
  pthread_t h = duo_spawn(lowering_thread, NULL);
  duo_wait(1);
  const sstm_cm_ops_t *ops = sstm_cm_current();
  struct sstm_desc *me = sstm_self();
  sstm_cm_ctx_t ctx;
  sstm_conflict_t c = os_prio_duel(&ctx, h_desc);
  uint64_t w = 0;
  CHECK_EQ_I(ops->on_conflict(&ctx, &c, &w), SSTM_CM_ABORT_SELF); /* caches both */
  duo_set(2);
  duo_wait(3);
  CHECK_EQ_I(ops->on_conflict(&ctx, &c, &w), SSTM_CM_ABORT_OTHER);
  int changes = -1;
  for (int i = 0; i < SSTM_CM_NSTATS && ops->stat_names[i]; i++)
    if (strcmp(ops->stat_names[i], "prio_changes") == 0) changes = i;
  CHECK_GE_I(changes, 0);
  sstm_stats_t st;
  CHECK_OK(sstm_stats_get(me, &st));
  CHECK_EQ_U(st.cm_stats[changes], 1);
  duo_set(4);
  duo_join(h);
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  os_prio_duel_fini();
}

/* The same cache when a descriptor moves to another thread: D runs on a
 * thread at the process's nice, then on one at a lower priority (a larger
 * nice, set with setpriority, not through the library). The first conflict
 * caches D's priority (equal: this younger thread aborts itself); after the
 * move the next one must see the new thread's priority at once and kill D.
 * Without the refresh on attach it fails, as above. */
static sstm_desc_t *mv_desc;
static void *first_home(void *arg) {
  (void)arg;
  CHECK_OK(sstm_desc_attach(mv_desc));
  duo_set(1);
  duo_wait(2);
  CHECK_EQ_PTR(sstm_desc_detach(), mv_desc);
  duo_set(3);
  return NULL;
}
static void *second_home(void *arg) {
  (void)arg;
  CHECK_EQ_I(setpriority(PRIO_PROCESS, (id_t)duo_gettid(), h_low_nice), 0);
  duo_wait(3);
  CHECK_OK(sstm_desc_attach(mv_desc));
  duo_set(4);
  duo_wait(5);
  CHECK_EQ_PTR(sstm_desc_detach(), mv_desc);
  return NULL;
}

TEST(os_prio_follows_a_descriptor_to_another_thread) {
  os_prio_duel_init();
  CHECK_OK(sstm_desc_create(&mv_desc));
  pthread_t t1 = duo_spawn(first_home, NULL);
  pthread_t t2 = duo_spawn(second_home, NULL);
  duo_wait(1);
  const sstm_cm_ops_t *ops = sstm_cm_current();
  sstm_cm_ctx_t ctx;
  sstm_conflict_t c = os_prio_duel(&ctx, mv_desc);
  uint64_t w = 0;
  CHECK_EQ_I(ops->on_conflict(&ctx, &c, &w), SSTM_CM_ABORT_SELF); /* caches D's */
  duo_set(2);
  duo_wait(4);
  CHECK_NE_I(sstm_desc_tid(mv_desc), c.other.tid);
  c.other.tid = sstm_desc_tid(mv_desc);
  CHECK_EQ_I(ops->on_conflict(&ctx, &c, &w), SSTM_CM_ABORT_OTHER);
  duo_set(5);
  duo_join(t1);
  duo_join(t2);
  CHECK_OK(sstm_desc_destroy(mv_desc));
  CHECK_OK(sstm_thread_exit());
  CHECK_OK(sstm_shutdown());
  os_prio_duel_fini();
}

TEST(conflict_priority_order) {
  /* RT > OTHER > BATCH > IDLE, then priority (nice: lower is favoured) */
  int rt1 = sstm__conflict_prio_encode(SCHED_FIFO, 0, 1);
  int rt99 = sstm__conflict_prio_encode(SCHED_RR, 0, 99);
  int o_m20 = sstm__conflict_prio_encode(SCHED_OTHER, -20, 0);
  int o0 = sstm__conflict_prio_encode(SCHED_OTHER, 0, 0);
  int o19 = sstm__conflict_prio_encode(SCHED_OTHER, 19, 0);
  int b_m20 = sstm__conflict_prio_encode(SCHED_BATCH, -20, 0);
  int b19 = sstm__conflict_prio_encode(SCHED_BATCH, 19, 0);
  int idle = sstm__conflict_prio_encode(SCHED_IDLE, -20, 0);
  CHECK_GT_I(rt99, rt1);
  CHECK_GT_I(rt1, o_m20);
  CHECK_GT_I(o_m20, o0);
  CHECK_GT_I(o0, o19);
  CHECK_GT_I(o19, b_m20);
  CHECK_GT_I(b_m20, b19);
  CHECK_GT_I(b19, idle);
  int pol, nice;
  CHECK_EQ_I(sstm__conflict_prio_of(duo_gettid(), &pol, &nice),
             sstm__conflict_prio_encode(pol, nice, 0));
}

SSTM_TEST_MAIN()
