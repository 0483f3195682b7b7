// SPDX-License-Identifier: MIT
// Shared by test_itm_cxx.cpp and test_itm_cxx_throw.cpp. The functions that
// throw live in a translation unit of their own: g++ 12 stops with an
// internal error (in expand_call_tm) on a typed catch in a transaction when
// it sees the body of the transaction_safe function that throws into it.
#ifndef SSTM_TEST_ITM_CXX_H
#define SSTM_TEST_ITM_CXX_H

struct Big {
  long v[80];
  Big *next;
};

// An exception object of a size of its own, to count its blocks: the C++
// runtime allocates it with its header in front.
extern const void *last_exception;
// Not transactional: notes the address of the newest exception object.
__attribute__((transaction_pure)) void note_exception(const void *obj);
struct E {
  int code;
  char pad[700];
  __attribute__((transaction_safe)) explicit E(int c) : code(c), pad() { note_exception(this); }
};

struct Refused {
  long amount;
};

extern long attempts, counter;
// Not transactional: the attempts of a transaction, restarts included.
__attribute__((transaction_pure)) long attempt_number();
// The first attempt restarts (as a conflict would restart it) where this is
// called.
__attribute__((transaction_pure)) void restart_first(long attempt);

__attribute__((transaction_safe)) void throw_e(int code);
// Throws an object of a class with a virtual base, VB{code}: to bind a
// handler of VB, the C++ runtime reads the object's virtual table pointer
// plainly.
struct VB {
  int code;
};
struct WithVB : virtual VB {
  long x;
};
__attribute__((transaction_safe)) void throw_virtual(int code);
__attribute__((transaction_safe)) void refuse(long amount);
// Throws E{code} under an object whose destructor restarts the first
// attempt: the unwinding runs it between the throw and the catch.
__attribute__((transaction_safe)) void throw_under_guard(int code);
// Catches E{code} and rethrows it: it leaves the handlers' stack and is in
// flight again.
__attribute__((transaction_safe)) void catch_and_rethrow(int code);

#endif
