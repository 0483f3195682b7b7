/* SPDX-License-Identifier: MIT */
/* ctxbench: the cost of the executor's low-level machinery (src/arch/ctx.h),
 * each against what it replaces, measured side by side in one run:
 *   switch    ns per user-level context switch: sstm__ctx_switch against
 *             the C library's swapcontext (which calls sigprocmask), a
 *             ping-pong between the thread's stack and a context
 *   trampoline  ns per pass through the preemption trampoline entered
 *             directly (no signal): saving and restoring every register
 *             around fn, against calling fn
 *   redirect  ns per self-signal round trip: a handler that redirects the
 *             thread into the preemption trampoline (which saves and
 *             restores every register around an empty fn) against a
 *             handler that returns at once
 * The variants alternate in rounds (A B A B ...), so that a change of load
 * on a shared machine hits both; the output gives each round's figures
 * and the median ratio, one JSON record per measure on stdout.
 *
 * usage: ctxbench [-n ITERATIONS] [-r ROUNDS] [-m switch|trampoline|redirect|all]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/ctx.h"
#include "os/os.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, int e) {
  fprintf(stderr, "ctxbench: %s: %s\n", what, strerror(e));
  exit(1);
}

/* ---- switch ---- */

static sstm__ctx_t our_main, our_ctx;
static ucontext_t uc_main, uc_ctx;
static volatile uint64_t sink;

static void our_entry(void *arg) {
  (void)arg;
  for (;;) {
    sink++;
    sstm__ctx_switch(&our_ctx, &our_main);
  }
}

static void uc_entry(void) {
  for (;;) {
    sink++;
    swapcontext(&uc_ctx, &uc_main);
  }
}

/* ns per switch (a round trip is two switches) */
static double run_ours(uint64_t n) {
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; i++)
    sstm__ctx_switch(&our_main, &our_ctx);
  return (double)(now_ns() - t0) / (double)(2 * n);
}

static double run_swapcontext(uint64_t n) {
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; i++)
    swapcontext(&uc_main, &uc_ctx);
  return (double)(now_ns() - t0) / (double)(2 * n);
}

static void bench_switch(uint64_t n, int rounds) {
  sstm__stack_t s1, s2;
  int e;
  if ((e = sstm__stack_alloc(&s1, 64 * 1024, 0)) != 0 || (e = sstm__stack_alloc(&s2, 64 * 1024, 0)))
    die("stack", e);
  if ((e = sstm__ctx_init_thread(&our_main)) != 0 ||
      (e = sstm__ctx_init(&our_ctx, s1.lo, s1.size, our_entry, NULL)) != 0)
    die("context", e);
  if (getcontext(&uc_ctx) != 0) die("getcontext", errno);
  uc_ctx.uc_stack.ss_sp = s2.lo;
  uc_ctx.uc_stack.ss_size = s2.size;
  uc_ctx.uc_link = NULL;
  makecontext(&uc_ctx, uc_entry, 0);
  run_ours(n / 10 + 1); /* warm up both */
  run_swapcontext(n / 10 + 1);
  double *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b);
  double *ratio = calloc((size_t)rounds, sizeof *ratio);
  if (!a || !b || !ratio) die("calloc", ENOMEM);
  for (int r = 0; r < rounds; r++) {
    if (r % 2 == 0) {
      a[r] = run_ours(n);
      b[r] = run_swapcontext(n);
    } else {
      b[r] = run_swapcontext(n);
      a[r] = run_ours(n);
    }
    ratio[r] = b[r] / a[r];
  }
  printf("{\"bench\":\"ctx_switch\",\"iterations\":%llu,\"rounds\":%d,\"ns_per_switch\":[",
         (unsigned long long)n, rounds);
  for (int r = 0; r < rounds; r++)
    printf("%s%.2f", r ? "," : "", a[r]);
  printf("],\"swapcontext_ns_per_switch\":[");
  for (int r = 0; r < rounds; r++)
    printf("%s%.2f", r ? "," : "", b[r]);
  double ma = median(a, rounds), mb = median(b, rounds), mr = median(ratio, rounds);
  printf("],\"median_ns\":%.2f,\"median_swapcontext_ns\":%.2f,\"median_ratio_swapcontext_to_ours\":"
         "%.2f}\n",
         ma, mb, mr);
  free(a);
  free(b);
  free(ratio);
  sstm__ctx_destroy(&our_ctx);
  sstm__stack_free(&s1);
  /* s2 stays mapped: uc_ctx never ends */
}

/* ---- the trampoline alone ---- */

/* Enter the trampoline as a redirect does (below the red zone: the
 * interrupted rip, fn, arg), without a signal: what a redirect adds to a
 * signal's round trip, measured without the signal's noise. It returns to
 * the instruction after the jump with every register as it was. */
static void tramp_pass(void (*fn)(void *), void *arg) {
  __asm__ volatile("leaq 1f(%%rip), %%rax\n\t"
                   "subq $128, %%rsp\n\t"
                   "pushq %%rax\n\t"
                   "pushq %[fn]\n\t"
                   "pushq %[arg]\n\t"
                   "jmp sstm__preempt_tramp\n"
                   "1:"
                   :
                   : [fn] "r"(fn), [arg] "r"(arg)
                   : "rax", "memory");
}

static void count_fn(void *arg) { (*(volatile uint64_t *)arg)++; }

static double run_tramp(uint64_t n, int via_tramp) {
  static volatile uint64_t count;
  void (*volatile call)(void *) = count_fn; /* an indirect call, as the trampoline makes */
  uint64_t t0 = now_ns();
  if (via_tramp) {
    for (uint64_t i = 0; i < n; i++)
      tramp_pass(count_fn, (void *)&count);
  } else {
    for (uint64_t i = 0; i < n; i++)
      call((void *)&count);
  }
  return (double)(now_ns() - t0) / (double)n;
}

static void bench_tramp(uint64_t n, int rounds) {
  sstm__preempt_xsave_size(); /* reads CPUID, as the first redirect would */
  run_tramp(n / 10 + 1, 1);
  double *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b);
  if (!a || !b) die("calloc", ENOMEM);
  for (int r = 0; r < rounds; r++) {
    if (r % 2 == 0) {
      a[r] = run_tramp(n, 1);
      b[r] = run_tramp(n, 0);
    } else {
      b[r] = run_tramp(n, 0);
      a[r] = run_tramp(n, 1);
    }
  }
  printf("{\"bench\":\"ctx_trampoline\",\"iterations\":%llu,\"rounds\":%d,\"xsave_bytes\":%zu,"
         "\"trampoline_ns\":[",
         (unsigned long long)n, rounds, sstm__preempt_xsave_size());
  for (int r = 0; r < rounds; r++)
    printf("%s%.2f", r ? "," : "", a[r]);
  printf("],\"plain_call_ns\":[");
  for (int r = 0; r < rounds; r++)
    printf("%s%.2f", r ? "," : "", b[r]);
  printf("],\"median_trampoline_ns\":%.2f,\"median_plain_call_ns\":%.2f}\n", median(a, rounds),
         median(b, rounds));
  free(a);
  free(b);
}

/* ---- redirect ---- */

static volatile int redirecting;
static volatile uint64_t fn_runs;

static void empty_fn(void *arg) {
  (void)arg;
  fn_runs++;
}

static void handler(int sig, siginfo_t *si, void *uc) {
  (void)sig;
  (void)si;
  if (redirecting) sstm__redirect(uc, empty_fn, NULL);
}

static double run_signals(uint64_t n, int redirect) {
  pid_t pid = getpid();
  pid_t tid = (pid_t)syscall(SYS_gettid);
  redirecting = redirect;
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < n; i++)
    syscall(SYS_tgkill, pid, tid, SIGUSR1);
  return (double)(now_ns() - t0) / (double)n;
}

static void bench_redirect(uint64_t n, int rounds) {
  sstm__stack_t alt;
  int e = sstm__altstack_install(&alt);
  if (e != 0) die("sigaltstack", e);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) die("sigaction", errno);
  run_signals(n / 10 + 1, 1);
  run_signals(n / 10 + 1, 0);
  fn_runs = 0;
  double *a = calloc((size_t)rounds, sizeof *a), *b = calloc((size_t)rounds, sizeof *b);
  double *extra = calloc((size_t)rounds, sizeof *extra);
  if (!a || !b || !extra) die("calloc", ENOMEM);
  for (int r = 0; r < rounds; r++) {
    if (r % 2 == 0) {
      a[r] = run_signals(n, 1);
      b[r] = run_signals(n, 0);
    } else {
      b[r] = run_signals(n, 0);
      a[r] = run_signals(n, 1);
    }
    extra[r] = a[r] - b[r];
  }
  if (fn_runs != n * (uint64_t)rounds) {
    fprintf(stderr, "ctxbench: %llu redirects ran fn, expected %llu\n", (unsigned long long)fn_runs,
            (unsigned long long)(n * (uint64_t)rounds));
    exit(1);
  }
  printf("{\"bench\":\"ctx_redirect\",\"iterations\":%llu,\"rounds\":%d,\"xsave_bytes\":%zu,"
         "\"redirect_ns\":[",
         (unsigned long long)n, rounds, sstm__preempt_xsave_size());
  for (int r = 0; r < rounds; r++)
    printf("%s%.1f", r ? "," : "", a[r]);
  printf("],\"plain_signal_ns\":[");
  for (int r = 0; r < rounds; r++)
    printf("%s%.1f", r ? "," : "", b[r]);
  double ma = median(a, rounds), mb = median(b, rounds), mx = median(extra, rounds);
  printf("],\"median_redirect_ns\":%.1f,\"median_plain_signal_ns\":%.1f,"
         "\"median_extra_ns\":%.1f}\n",
         ma, mb, mx);
  free(a);
  free(b);
  free(extra);
  sa.sa_handler = SIG_DFL;
  sa.sa_flags = 0;
  sigaction(SIGUSR1, &sa, NULL);
  sstm__altstack_remove(&alt);
}

static void usage(FILE *f, const char *argv0) {
  fprintf(f, "usage: %s [-n ITERATIONS] [-r ROUNDS] [-m switch|trampoline|redirect|all]\n", argv0);
}

int main(int argc, char **argv) {
  uint64_t n = 1000000;
  int rounds = 11;
  const char *mode = "all";
  int c;
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  while ((c = getopt_long(argc, argv, "n:r:m:h", longopts, NULL)) != -1) {
    char *end;
    switch (c) {
    case 'n':
      errno = 0;
      n = strtoull(optarg, &end, 10);
      if (errno || *end || n == 0 || optarg[0] == '-') {
        fprintf(stderr, "ctxbench: -n: '%s' is not a positive integer\n", optarg);
        return 2;
      }
      break;
    case 'r':
      errno = 0;
      long r = strtol(optarg, &end, 10);
      if (errno || *end || r <= 0 || r > 1000) {
        fprintf(stderr, "ctxbench: -r: '%s' is not an integer in 1..1000\n", optarg);
        return 2;
      }
      rounds = (int)r;
      break;
    case 'm':
      if (strcmp(optarg, "switch") && strcmp(optarg, "trampoline") && strcmp(optarg, "redirect") &&
          strcmp(optarg, "all")) {
        fprintf(stderr, "ctxbench: -m: '%s' is not switch, trampoline, redirect or all\n", optarg);
        return 2;
      }
      mode = optarg;
      break;
    case 'h': usage(stdout, argv[0]); return 0;
    default: usage(stderr, argv[0]); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr, argv[0]);
    return 2;
  }
  if (strcmp(mode, "all") == 0 || strcmp(mode, "switch") == 0) bench_switch(n, rounds);
  if (strcmp(mode, "switch") != 0 && strcmp(mode, "redirect") != 0) bench_tramp(n / 4 + 1, rounds);
  if (strcmp(mode, "switch") != 0 && strcmp(mode, "trampoline") != 0)
    bench_redirect(n / 20 + 1, rounds); /* a signal costs microseconds */
  return 0;
}
