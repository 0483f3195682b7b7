/* SPDX-License-Identifier: MIT */
/* Unit tests of the request server's codec (bench/server/proto.c,
 * docs/protocol.md) and of its latency histogram (bench/server/hist.c):
 * every profile survives a round trip; every truncation, random byte
 * string and bit flip decodes to a result or to one of the protocol's
 * error codes, never reading outside the frame (the sanitizer builds run
 * this too); the histogram keeps every value within its bucket width. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../common/runner.h"
#include "hist.h"
#include "proto.h"

static proto_request_t sample(unsigned profile, sstm_rng_t *rng) {
  proto_request_t q;
  memset(&q, 0, sizeof q);
  q.id = sstm_rng_next(rng);
  q.priority = (uint8_t)sstm_rng_below(rng, 6);
  q.profile = (uint8_t)profile;
  static const uint8_t data[] = "echo me";
  switch (profile) {
  case PROTO_NULL: q.p.null = (proto_null_t){12, data, sizeof data}; break;
  case PROTO_NEW_ORDER:
    q.p.new_order.w_id = 2;
    q.p.new_order.d_id = 3;
    q.p.new_order.c_id = 1234;
    q.p.new_order.ol_cnt = (uint8_t)(5 + sstm_rng_below(rng, 11));
    for (unsigned i = 0; i < q.p.new_order.ol_cnt; i++)
      q.p.new_order.lines[i] =
          (proto_order_line_t){(uint32_t)(1 + i * 7), 1, (uint8_t)(1 + i % 10)};
    break;
  case PROTO_PAYMENT:
    q.p.payment = (proto_payment_t){.w_id = 1,
                                    .c_w_id = 2,
                                    .c_id = 77,
                                    .h_amount_cents = 4321,
                                    .c_last = 999,
                                    .d_id = 4,
                                    .c_d_id = 5,
                                    .by_name = 1};
    break;
  case PROTO_ORDER_STATUS:
    q.p.order_status = (proto_order_status_t){.w_id = 3, .c_id = 9, .c_last = 12, .d_id = 1};
    break;
  case PROTO_DELIVERY: q.p.delivery = (proto_delivery_t){7, 10}; break;
  case PROTO_STOCK_LEVEL: q.p.stock_level = (proto_stock_level_t){1, 2, 15}; break;
  }
  return q;
}

TEST(every_profile_round_trips) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  uint8_t buf[PROTO_MAX_FRAME];
  for (unsigned p = 0; p < PROTO_NPROFILES; p++) {
    proto_request_t q = sample(p, &rng), d;
    size_t len = proto_encode_request(&q, buf, sizeof buf), flen = 0;
    CHECK_GT_U(len, PROTO_LEN_BYTES + PROTO_HEADER_BYTES - 1);
    CHECK_EQ_I(proto_frame_peek(buf, len, &flen), PROTO_PEEK_FRAME);
    CHECK_EQ_U(flen, len);
    CHECK_EQ_I(proto_frame_peek(buf, len - 1, &flen), PROTO_PEEK_MORE);
    const char *detail;
    CHECK_EQ_I(proto_decode_request(buf, len, &d, &detail), 0);
    CHECK_EQ_U(d.id, q.id);
    CHECK_EQ_U(d.priority, q.priority);
    CHECK_EQ_U(d.profile, p);
    if (p == PROTO_NULL) {
      CHECK_EQ_U(d.p.null.spin_us, 12);
      CHECK_EQ_U(d.p.null.len, q.p.null.len);
      CHECK_EQ_MEM(d.p.null.data, q.p.null.data, q.p.null.len);
    } else {
      CHECK_EQ_MEM(&d.p, &q.p, sizeof d.p);
    }
  }
}

TEST(every_truncation_is_a_params_or_frame_error) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  uint8_t buf[PROTO_MAX_FRAME];
  for (unsigned p = 1; p < PROTO_NPROFILES; p++) {
    proto_request_t q = sample(p, &rng), d;
    size_t len = proto_encode_request(&q, buf, sizeof buf);
    for (size_t cut = PROTO_LEN_BYTES; cut < len; cut++) {
      /* A whole frame whose body is the first cut - 4 bytes: a copy of
       * exactly that size, so that a read past it is an ASan error. */
      uint8_t *f = malloc(cut);
      CHECK_NOT_NULL(f);
      memcpy(f, buf, cut);
      proto_put32(f, (uint32_t)(cut - PROTO_LEN_BYTES));
      const char *detail;
      int rc = proto_decode_request(f, cut, &d, &detail);
      int want = cut < PROTO_LEN_BYTES + PROTO_HEADER_BYTES ? PROTO_E_FRAME : PROTO_E_PARAMS;
      CHECK_MSG(rc == want, "profile %u cut at %zu: %d (%s), expected %d", p, cut, rc, detail,
                want);
      CHECK(detail && *detail);
      free(f);
    }
    /* One byte too many is refused as well. */
    uint8_t *f = malloc(len + 1);
    CHECK_NOT_NULL(f);
    memcpy(f, buf, len);
    f[len] = 0;
    proto_put32(f, (uint32_t)(len + 1 - PROTO_LEN_BYTES));
    const char *detail;
    CHECK_EQ_I(proto_decode_request(f, len + 1, &d, &detail), PROTO_E_PARAMS);
    free(f);
  }
}

TEST(header_errors_have_their_codes) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  uint8_t buf[256];
  proto_request_t q = sample(PROTO_DELIVERY, &rng), d;
  size_t len = proto_encode_request(&q, buf, sizeof buf);
  const char *detail;
  struct {
    size_t at;
    uint8_t value;
    int code;
  } cases[] = {
      {4, 2, PROTO_E_VERSION}, {5, PROTO_REPLY, PROTO_E_KIND}, {6, 65, PROTO_E_PRIORITY},
      {7, 6, PROTO_E_PROFILE}, {16 + 4, 0, PROTO_E_PARAMS}, /* carrier 0 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t f[256];
    memcpy(f, buf, len);
    f[cases[i].at] = cases[i].value;
    CHECK_EQ_I(proto_decode_request(f, len, &d, &detail), cases[i].code);
    CHECK_EQ_U(d.id, q.id); /* the error can name the request */
  }
  /* A length prefix that disagrees with the frame. */
  CHECK_EQ_I(proto_decode_request(buf, len - 1, &d, &detail), PROTO_E_FRAME);
  size_t flen;
  uint8_t big[4];
  proto_put32(big, PROTO_MAX_BODY + 1);
  CHECK_EQ_I(proto_frame_peek(big, 4, &flen), PROTO_PEEK_TOO_LARGE);
  proto_put32(big, PROTO_MAX_BODY);
  CHECK_EQ_I(proto_frame_peek(big, 4, &flen), PROTO_PEEK_MORE);
  CHECK_EQ_I(proto_frame_peek(big, 3, &flen), PROTO_PEEK_MORE);
}

TEST(random_and_mutated_frames_decode_or_fail_cleanly) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  uint8_t buf[512];
  uint64_t n = sstm_test_scaled(200000, 2000), ok = 0;
  for (uint64_t i = 0; i < n; i++) {
    size_t len;
    if (i % 2) {
      proto_request_t q = sample((unsigned)sstm_rng_below(&rng, PROTO_NPROFILES), &rng);
      len = proto_encode_request(&q, buf, sizeof buf);
      for (unsigned k = 1 + (unsigned)sstm_rng_below(&rng, 3); k > 0; k--)
        buf[PROTO_LEN_BYTES + sstm_rng_below(&rng, len - PROTO_LEN_BYTES)] ^=
            (uint8_t)(1u << sstm_rng_below(&rng, 8));
    } else {
      len = PROTO_LEN_BYTES + (size_t)sstm_rng_below(&rng, 64);
      for (size_t k = 0; k < len; k++)
        buf[k] = (uint8_t)sstm_rng_next(&rng);
      proto_put32(buf, (uint32_t)(len - PROTO_LEN_BYTES));
    }
    uint8_t *f = malloc(len);
    CHECK_NOT_NULL(f);
    memcpy(f, buf, len);
    proto_request_t d;
    const char *detail;
    int rc = proto_decode_request(f, len, &d, &detail);
    CHECK_MSG(rc >= 0 && rc <= PROTO_E_PARAMS, "frame %llu: code %d", (unsigned long long)i, rc);
    if (rc == 0) {
      ok++;
      /* What decodes re-encodes to the same bytes. */
      uint8_t again[512];
      CHECK_EQ_U(proto_encode_request(&d, again, sizeof again), len);
      CHECK_EQ_MEM(again, f, len);
    }
    free(f);
  }
  CHECK_GT_U(ok, 0); /* some mutations (e.g. of the id) stay valid */
}

TEST(replies_and_errors_round_trip) {
  uint8_t f[128];
  proto_response_t r;
  size_t len = proto_encode_reply(42, 5, PROTO_PAYMENT, "abcde", 5, f, sizeof f);
  CHECK_EQ_U(len, PROTO_LEN_BYTES + PROTO_HEADER_BYTES + 5);
  CHECK_EQ_I(proto_decode_response(f, len, &r), 0);
  CHECK_EQ_U(r.kind, PROTO_REPLY);
  CHECK_EQ_U(r.id, 42);
  CHECK_EQ_U(r.priority, 5);
  CHECK_EQ_U(r.plen, 5);
  CHECK_EQ_MEM(r.payload, "abcde", 5);
  /* Too small a buffer: nothing is encoded. */
  CHECK_EQ_U(proto_encode_reply(1, 1, 0, "abcde", 5, f, 20), 0);
  len = proto_encode_error(7, PROTO_NULL, PROTO_E_PARAMS, "a long message that is cut", f, 30);
  CHECK_EQ_U(len, 30);
  CHECK_EQ_I(proto_decode_response(f, len, &r), 0);
  CHECK_EQ_U(r.kind, PROTO_ERROR);
  CHECK_EQ_U(r.error_code, PROTO_E_PARAMS);
  CHECK_EQ_U(r.id, 7);
  CHECK_EQ_U(r.plen, 30 - PROTO_LEN_BYTES - PROTO_HEADER_BYTES - 1);
  CHECK_EQ_MEM(r.payload, "a long message", 13);
  CHECK_EQ_STR(proto_error_name(PROTO_E_TOO_LARGE), "too-large");
  CHECK_EQ_I(proto_profile_by_name("stock-level"), PROTO_STOCK_LEVEL);
  CHECK_EQ_I(proto_profile_by_name("nope"), -1);
  CHECK_EQ_U(proto_default_priority(PROTO_PAYMENT), 5);
  CHECK_EQ_U(proto_default_priority(PROTO_DELIVERY), 1);
}

TEST(histogram_buckets_are_contiguous_and_narrow) {
  unsigned prev = 0;
  for (unsigned i = 1; i < HIST_BUCKETS; i++) {
    CHECK_EQ_U(hist_bucket_low(i), hist_bucket_high(i - 1) + 1);
    CHECK_EQ_U(hist_index(hist_bucket_low(i)), i);
    CHECK_EQ_U(hist_index(hist_bucket_high(i)), i);
    /* width / low <= 1 / HIST_SUB: every value kept within 3.2 % */
    uint64_t w = hist_bucket_high(i) - hist_bucket_low(i) + 1;
    CHECK_MSG(w <= 1 || w * HIST_SUB <= hist_bucket_low(i), "bucket %u: [%llu, %llu]", i,
              (unsigned long long)hist_bucket_low(i), (unsigned long long)hist_bucket_high(i));
    prev = i;
  }
  CHECK_EQ_U(prev, HIST_BUCKETS - 1);
  CHECK_EQ_U(hist_bucket_high(HIST_BUCKETS - 1), UINT64_MAX);
  CHECK_EQ_U(hist_index(UINT64_MAX), HIST_BUCKETS - 1);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

TEST(histogram_quantiles_match_a_sorted_reference) {
  sstm_rng_t rng;
  sstm_rng_seed(&rng, sstm_test_seed());
  enum { N = 20000 };
  static uint64_t v[N];
  static hist_t h, a, b;
  hist_init(&h);
  hist_init(&a);
  hist_init(&b);
  CHECK_EQ_U(hist_quantile(&h, 0.5), 0);
  for (int i = 0; i < N; i++) {
    /* log-uniform over 1 ns .. 1 s */
    v[i] = 1 + (sstm_rng_next(&rng) >> (34 + sstm_rng_below(&rng, 30)));
    hist_record(&h, v[i]);
    hist_record(i % 2 ? &a : &b, v[i]);
  }
  qsort(v, N, sizeof v[0], cmp_u64);
  const double qs[] = {0.0, 0.5, 0.9, 0.99, 0.999, 1.0};
  hist_merge(&a, &b);
  for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
    size_t rank = (size_t)(qs[k] * N + 0.999999999);
    uint64_t exact = v[rank ? rank - 1 : 0], got = hist_quantile(&h, qs[k]);
    CHECK_MSG(got >= exact && (double)got <= (double)exact * (1.0 + 1.0 / HIST_SUB) + 1,
              "q %.3f: histogram %llu, exact %llu", qs[k], (unsigned long long)got,
              (unsigned long long)exact);
    CHECK_EQ_U(hist_quantile(&a, qs[k]), got); /* merge = recording both */
  }
  CHECK_EQ_U(h.max, v[N - 1]);
  CHECK_EQ_U(h.min, v[0]);
  CHECK_EQ_U(h.count, N);
}

SSTM_TEST_MAIN()
