// SPDX-License-Identifier: MIT
// C++ on the gcc -fgnu-tm ABI (libschedstm-itm, src/abi/itm.c,
// docs/design/itm.md (I7)): this file is compiled with g++ -fgnu-tm and
// linked with libschedstm-itm instead of libitm, so operator new and delete
// inside __transaction_atomic blocks call their transactional clones
// (_ZGTtnwm, _ZGTtdlPvm, ...) and throws and catches call _ITM_cxa_*.
// Blocks are counted by the malloc interposition (common/malloc_count.c):
// the sizes used here are above the block cache's (512 bytes), so every
// block the library releases goes to free().
#include <atomic>
#include <exception>
#include <new>

#include <cstdint>
#include <cstdlib>

#include <schedstm/schedstm.h> // C++-aware: before the test helpers' extern "C"

extern "C" {
#include "../common/malloc_count.h"
#include "../common/runner.h"
}

#include "test_itm_cxx.h"

// The checks read memory through volatile: the compiler takes memory after
// a cancel to be as it was before the transaction.
#define V(x) (*(volatile __typeof__(x) *)&(x))

// ---- forced restarts ----------------------------------------------------------

long attempts;
__attribute__((transaction_pure, noinline)) long attempt_number() { return attempts++; }
__attribute__((transaction_pure, noinline)) void restart_first(long attempt) {
  if (attempt == 0) sstm_restart();
}

// The C++ runtime's state outside any handler: no exception being handled,
// none in flight.
__attribute__((noinline)) static void check_no_exception_state() {
  CHECK(std::current_exception() == nullptr);
  CHECK_EQ_I(std::uncaught_exceptions(), 0);
}

// ---- operator new and delete --------------------------------------------------------

static Big *list;

// The nothrow forms, which g++ 12 does not let a __transaction_atomic block
// call, through their exported names: inside a transaction all the same.
extern "C" void *_ZGTtnwmRKSt9nothrow_t(size_t, const std::nothrow_t &);
extern "C" void _ZGTtdlPvRKSt9nothrow_t(void *, const std::nothrow_t &);
__attribute__((transaction_pure)) static void *new_nothrow(size_t n) {
  return _ZGTtnwmRKSt9nothrow_t(n, std::nothrow);
}
__attribute__((transaction_pure)) static void delete_nothrow(void *p) {
  _ZGTtdlPvRKSt9nothrow_t(p, std::nothrow);
}

TEST(new_is_undone_by_a_restart_and_delete_waits_for_the_commit) {
  sstm_test_init();
  mc_track_sizes(sizeof(Big), sizeof(Big) + 1);
  // new in an attempt that restarts: that attempt's block goes back
  attempts = 0;
  __transaction_atomic {
    long a = attempt_number();
    Big *b = new Big;
    b->v[0] = 1;
    b->next = list;
    list = b;
    restart_first(a);
  }
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(mc_live(), 1);
  // a block of the plain operator new, deleted inside a transaction whose
  // first attempt restarts after the delete: freed once, after the commit
  Big *outside = new Big;
  outside->next = V(list);
  list = outside;
  CHECK_EQ_I(mc_live(), 2);
  attempts = 0;
  __transaction_atomic {
    long a = attempt_number();
    Big *b = list;
    list = b->next;
    delete b;
    restart_first(a);
    b = list; // the restarted attempt read the node after its delete
    b->v[1] = 2;
  }
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(list)->v[1], 2);
  sstm_reclaim();
  CHECK_EQ_I(mc_live(), 1);
  // new[] and the nothrow forms, and a block new'd inside deleted outside
  attempts = 0;
  Big *arr = nullptr;
  void *nt = nullptr;
  __transaction_atomic {
    long a = attempt_number();
    arr = new Big[2];
    arr[0].v[0] = 3;
    nt = new_nothrow(sizeof(Big));
    restart_first(a);
  }
  CHECK_EQ_I(mc_live(), 2); // arr (2 * sizeof(Big), not tracked) and nt
  __transaction_atomic {
    delete[] arr;
    delete_nothrow(nt);
  }
  delete list; // new'd inside a transaction: malloc's block
  list = nullptr;
  sstm_reclaim();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

// Out of memory, the throwing operator new throws std::bad_alloc out of the
// transaction, which commits what it did before.
static long before_bad_alloc;
static void *huge_block;
TEST(operator_new_out_of_memory_throws_bad_alloc_and_the_transaction_commits) {
  sstm_test_init();
  bool caught = false;
  try {
    __transaction_atomic {
      before_bad_alloc = 11;
      huge_block = ::operator new(size_t(1) << 62);
    }
  } catch (std::bad_alloc &) {
    caught = true;
  }
  CHECK(caught);
  CHECK_EQ_I(V(before_bad_alloc), 11);
  CHECK(V(huge_block) == nullptr);
  check_no_exception_state();
  sstm_test_fini();
}

// ---- exceptions ------------------------------------------------------------------

static void track_exceptions() { mc_track_sizes(sizeof(E), sizeof(E) + 512); }

long counter;

// The transactions of the tests below, each in a function of its own:
// g++ 12 stops with an internal error (expand_call_tm) on a catch in a
// transaction whose function has other exception regions (the calls of
// the checks).
__attribute__((noinline)) static void tx_catch_e() {
  __transaction_atomic {
    try {
      counter += 1;
      throw_e(5);
    } catch (E &e) {
      counter += e.code;
    }
  }
}

__attribute__((noinline)) static void tx_catch_virtual_base() {
  __transaction_atomic {
    try {
      throw_virtual(42);
    } catch (VB &b) {
      counter += b.code;
    }
  }
}

__attribute__((noinline)) static void tx_restart_while_unwinding() {
  __transaction_atomic {
    try {
      throw_under_guard(2);
    } catch (...) {
      counter += 2;
    }
  }
}

__attribute__((noinline)) static void tx_restart_in_catch() {
  __transaction_atomic {
    long a = attempt_number();
    try {
      throw_e(4);
    } catch (...) {
      counter += 4;
      restart_first(a);
    }
  }
}

__attribute__((noinline)) static void tx_restart_in_catch_of_rethrown() {
  __transaction_atomic {
    long a = attempt_number();
    try {
      catch_and_rethrow(10);
    } catch (...) {
      counter += 10;
      restart_first(a);
    }
  }
}

const void *last_exception;
void note_exception(const void *obj) { last_exception = obj; }

// A block that plain code allocates after the catch and that holds the
// freed exception object's address: malloc hands the block out again
// (glibc's per-thread cache, the same size).
static unsigned char *reused;
static size_t reused_at;
__attribute__((transaction_pure, noinline)) static unsigned char *plain_block() {
  if (reused != nullptr) return reused;
  const size_t size = sizeof(E) + 128; // the C++ runtime's header in front
  void *tried[64];
  int n = 0;
  while (n < 64 && reused == nullptr) {
    // (not zeroed here: malloc and memset would become calloc, which
    // glibc serves from elsewhere)
    unsigned char *b = static_cast<unsigned char *>(malloc(size));
    // as integers: the compiler takes a fresh block to hold no older object
    uintptr_t x = (uintptr_t)last_exception, lo = (uintptr_t)b;
    if (x >= lo && x + sizeof(int) <= lo + size) {
      reused = b;
      reused_at = x - lo;
      reused[reused_at] = 0;
    } else {
      tried[n++] = b;
    }
  }
  for (int i = 0; i < n; i++)
    free(tried[i]);
  return reused;
}

__attribute__((noinline)) static void tx_restart_after_catch() {
  __transaction_atomic {
    long a = attempt_number();
    try {
      throw_e(1);
    } catch (...) {
      counter += 1;
    }
    // the exception object is no longer the attempt's: a write at its
    // address goes through the transaction, undone by the restart
    unsigned char *b = plain_block();
    if (a == 0 && b != nullptr) b[reused_at] = 99;
    restart_first(a);
  }
}

__attribute__((noinline)) static void tx_cancel_in_catch() {
  __transaction_atomic {
    try {
      counter = 1;
      throw_e(3);
    } catch (...) { // g++ 12 fails (an internal error) on a cancel in a typed catch here
      __transaction_cancel;
    }
  }
}

TEST(an_exception_thrown_and_caught_inside_a_transaction) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  tx_catch_e();
  CHECK_EQ_I(V(counter), 6);
  // A class with a virtual base: the C++ runtime reads the object's
  // virtual table pointer plainly to bind the handler, so the object must
  // hold what the constructor wrote in place, not in a redo log.
  tx_catch_virtual_base();
  CHECK_EQ_I(V(counter), 48);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

TEST(an_exception_that_leaves_the_transaction_commits_it) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  int got = 0;
  try {
    __transaction_atomic {
      counter = 7;
      throw_e(9);
    }
  } catch (E &e) {
    got = e.code;
    CHECK_EQ_I(V(counter), 7); // visible in the handler outside
  }
  CHECK_EQ_I(got, 9);
  CHECK_EQ_I(V(counter), 7);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  // The commit left no exception state to the next transaction: its
  // restart inside a catch is rolled back as any.
  attempts = 0;
  tx_restart_in_catch();
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(counter), 11);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

// Restarts in each phase of an exception: its object is freed once, by the
// rollback or by the runtime, and the runtime's state is as before.
TEST(a_restart_between_the_throw_and_the_catch_frees_the_exception) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  attempts = 0;
  tx_restart_while_unwinding();
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(counter), 3);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

TEST(a_restart_inside_a_catch_ends_it_and_frees_the_exception) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  attempts = 0;
  tx_restart_in_catch();
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(counter), 4);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

TEST(a_restart_in_the_catch_of_a_rethrown_exception_frees_it) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  attempts = 0;
  tx_restart_in_catch_of_rethrown();
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(counter), 10);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

// Handled and freed by the runtime's __cxa_end_catch: a restart after the
// catch must not free it again, and its address is no longer private to
// the attempt.
TEST(a_restart_after_a_catch_does_not_free_the_exception_again) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  attempts = 0;
  tx_restart_after_catch();
  CHECK_EQ_I(V(attempts), 2);
  CHECK_EQ_I(V(counter), 1);
  check_no_exception_state();
  CHECK(V(reused) != nullptr);
  CHECK_EQ_I(mc_live(), 1); // the plain block
  CHECK_EQ_I(V(reused[reused_at]), 0);
  free(reused);
  sstm_test_fini();
}

TEST(a_cancel_inside_a_catch_ends_the_catch) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  tx_cancel_in_catch();
  CHECK_EQ_I(V(counter), 0);
  check_no_exception_state();
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

// The undo actions run before the exception state is rolled back, as
// libitm orders them (gtm_thread::rollback, libitm/beginend.cc: the user
// actions, then the C++ exceptions): an undo action registered in a catch
// still finds the exception being handled, its object alive, though the
// catch registered the ABI's rollback of exceptions first.
extern "C" void _ITM_addUserUndoAction(void (*fn)(void *), void *arg);
static std::atomic<int> undo_saw_exception{-1};
static void undo_in_catch(void *) {
  undo_saw_exception.store(std::current_exception() != nullptr, std::memory_order_relaxed);
}
__attribute__((transaction_pure)) static void add_undo_in_catch() {
  _ITM_addUserUndoAction(undo_in_catch, nullptr);
}

__attribute__((noinline)) static void tx_cancel_in_catch_with_an_undo_action() {
  __transaction_atomic {
    try {
      counter = 1;
      throw_e(4);
    } catch (...) {
      add_undo_in_catch();
      __transaction_cancel;
    }
  }
}

TEST(an_undo_action_registered_in_a_catch_runs_before_the_rollback_ends_it) {
  sstm_test_init();
  track_exceptions();
  counter = 0;
  tx_cancel_in_catch_with_an_undo_action();
  CHECK_EQ_I(V(counter), 0);
  CHECK_EQ_I(undo_saw_exception.load(std::memory_order_relaxed), 1);
  check_no_exception_state(); // the rollback ended the catch after the action
  CHECK_EQ_I(mc_live(), 0);
  sstm_test_fini();
}

// ---- a bank of new'd accounts under threads --------------------------------------

// Each transfer replaces the debited account's node by a new one (new and
// delete in the transaction) and refuses, by throwing out of the
// transaction, a debit that the balance does not cover.
#define ACCOUNTS 16
struct Account {
  long balance;
  long pad[72];
};
static Account *accounts[ACCOUNTS];
static long transfers;
static std::atomic<long> refused, bad_sums;

static void bank_worker(sstm_tt_t *t) {
  uint64_t n = sstm_test_scaled(1000, 200);
  for (uint64_t i = 0; i < n; i++) {
    int a = (int)sstm_rng_below(&t->rng, ACCOUNTS), b = (int)sstm_rng_below(&t->rng, ACCOUNTS);
    long amt = (long)sstm_rng_below(&t->rng, 150);
    if (i % 8 == 0) {
      long sum = 0;
      __transaction_atomic {
        sum = 0;
        for (int k = 0; k < ACCOUNTS; k++)
          sum += accounts[k]->balance;
      }
      if (sum != 100 * ACCOUNTS) bad_sums.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    try {
      __transaction_atomic {
        Account *x = accounts[a];
        if (x->balance < amt) refuse(amt);
        Account *nx = new Account;
        nx->balance = x->balance - amt;
        accounts[a] = nx;
        delete x;
        accounts[b]->balance += amt;
        transfers++;
      }
    } catch (Refused &r) {
      if (r.amount == amt) refused.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

TEST(bank_of_new_accounts_keeps_its_sum_under_threads) {
  sstm_test_init();
  mc_track_sizes(sizeof(Account), sizeof(Account) + 1);
  for (int k = 0; k < ACCOUNTS; k++) {
    accounts[k] = new Account;
    accounts[k]->balance = 100;
  }
  unsigned nt = sstm_test_threads(4);
  sstm_test_run_threads(nt, false, bank_worker, NULL);
  long sum = 0;
  for (int k = 0; k < ACCOUNTS; k++) {
    CHECK_GE_I(accounts[k]->balance, 0);
    sum += accounts[k]->balance;
  }
  CHECK_EQ_I(sum, 100 * ACCOUNTS);
  CHECK_EQ_I(bad_sums.load(std::memory_order_relaxed), 0);
  uint64_t n = sstm_test_scaled(1000, 200);
  CHECK_EQ_U((uint64_t)transfers + (uint64_t)refused.load(std::memory_order_relaxed),
             nt * (n - (n + 7) / 8));
  CHECK_GT_I(refused.load(std::memory_order_relaxed), 0);
  // every node of an aborted attempt went back, every deleted one is freed;
  // the interposition tracks 4096 blocks at once, which every block of the
  // run fits in (deleted ones wait in their threads' batches of 1024)
  sstm_reclaim();
  if ((uint64_t)nt * n + ACCOUNTS < 4096) CHECK_EQ_I(mc_live(), ACCOUNTS);
  check_no_exception_state();
  sstm_test_fini();
}

SSTM_TEST_MAIN()
