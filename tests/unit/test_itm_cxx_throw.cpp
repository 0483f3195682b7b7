// SPDX-License-Identifier: MIT
// The throwing functions of test_itm_cxx.cpp (see test_itm_cxx.h), compiled
// with g++ -fgnu-tm: their transactional clones call _ITM_cxa_*.
#include "test_itm_cxx.h"

void throw_e(int code) { throw E(code); }
void throw_virtual(int code) {
  WithVB w;
  w.code = code;
  w.x = 1;
  throw w;
}
void refuse(long amount) { throw Refused{amount}; }

namespace {
struct Guard {
  long attempt;
  __attribute__((transaction_safe)) ~Guard() { restart_first(attempt); }
};
} // namespace

void throw_under_guard(int code) {
  Guard g{attempt_number()};
  counter += 1;
  throw_e(code);
}

void catch_and_rethrow(int code) {
  try {
    throw_e(code);
  } catch (...) {
    throw;
  }
}
