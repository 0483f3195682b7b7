/* SPDX-License-Identifier: MIT */
/** @file
 * Transactional accesses: the typed loads and stores (sstm_load_u8 ...
 * sstm_load_double, sstm_load_ptr, and the stores of the same types), the
 * bulk copies of any size, and the signed convenience wrappers. They are
 * valid inside a transaction (<schedstm/tx.h> begins and commits them);
 * <schedstm/generic.h> picks the width from an lvalue's type.
 *
 * By default the typed loads and stores are calls into the library.
 * Define SSTM_INLINE_BARRIERS before including this header (or
 * <schedstm/schedstm.h>) and they are <schedstm/inline.h>'s static inline
 * functions instead, with the same contracts.
 */
#ifndef SCHEDSTM_ACCESS_H
#define SCHEDSTM_ACCESS_H

#include <schedstm/common.h>
#if defined(SSTM_INLINE_BARRIERS)
#include <schedstm/inline.h>
#endif

SSTM_EXTERN_C_BEGIN
SSTM__CXX_CASTS_BEGIN

/** @name Typed loads
 * Valid only inside a transaction on a registered thread; outside one they
 * call the misuse handler (default: message on stderr, then abort()).
 * Any alignment is accepted; naturally aligned accesses are the fast path.
 * A float is accessed as 4 bytes, a double as 8 (bit-exact).
 * Out of memory: the read, write and lock logs grow on demand; if one
 * cannot grow, the process ends (message on stderr, then abort()): the
 * attempt could neither go on nor roll back without it. Growth stops once a
 * thread's transactions have reached their largest size.
 * With SSTM_INLINE_BARRIERS defined, the loads are <schedstm/inline.h>'s
 * static inline functions, with the same contract, and so are the stores.
 * @{ */
#if !defined(SSTM_INLINE_BARRIERS)
/** Transactional load of the value at addr (a float as 4 bytes, a double
 * as 8).
 * @param addr the address, any alignment
 * @return the value as of the transaction's snapshot, or its own write;
 *         0 after misuse (a handler that returned) */
SSTM_API SSTM_NOPLT uint8_t sstm_load_u8(const uint8_t *addr);
SSTM_API SSTM_NOPLT uint16_t sstm_load_u16(const uint16_t *addr);
SSTM_API SSTM_NOPLT uint32_t sstm_load_u32(const uint32_t *addr);
SSTM_API SSTM_NOPLT uint64_t sstm_load_u64(const uint64_t *addr);
SSTM_API SSTM_NOPLT void *sstm_load_ptr(void *const *addr);
SSTM_API SSTM_NOPLT float sstm_load_float(const float *addr);
SSTM_API SSTM_NOPLT double sstm_load_double(const double *addr);
#endif
/** @} */

/** @name Typed stores
 * The rules of the typed loads apply (inside a transaction only, any
 * alignment, a float as 4 bytes and a double as 8).
 * @{ */
#if !defined(SSTM_INLINE_BARRIERS)
/** Transactional store of v at addr: buffered in the redo log, written at
 * commit (a float as 4 bytes, a double as 8). Ignored after misuse (a
 * handler that returned).
 * @param addr the address, any alignment
 * @param v the value */
SSTM_API SSTM_NOPLT void sstm_store_u8(uint8_t *addr, uint8_t v);
SSTM_API SSTM_NOPLT void sstm_store_u16(uint16_t *addr, uint16_t v);
SSTM_API SSTM_NOPLT void sstm_store_u32(uint32_t *addr, uint32_t v);
SSTM_API SSTM_NOPLT void sstm_store_u64(uint64_t *addr, uint64_t v);
SSTM_API SSTM_NOPLT void sstm_store_ptr(void **addr, void *v);
SSTM_API SSTM_NOPLT void sstm_store_float(float *addr, float v);
SSTM_API SSTM_NOPLT void sstm_store_double(double *addr, double v);
#endif
/** @} */

/** @name Bulk copies
 * @{ */
/** Bulk copies (structs): transactional read of n bytes at src into private
 * memory dst, and transactional write of n bytes from private src to dst.
 * Any size and alignment; the same guarantees as n one-byte accesses (the
 * copy is part of the transaction's consistent snapshot). A read costs one
 * barrier per lock stripe it covers (default 32 bytes) when the stripe is
 * unlocked and the attempt uses encounter-time locking or is read-only, one
 * per naturally aligned piece otherwise. Outside a transaction: misuse
 * (sstm_set_misuse_handler); a load then fills dst with zeros.
 * @param dst where to copy: private memory (sstm_load_bytes), transactional
 *            memory (sstm_store_bytes)
 * @param src what to copy: transactional memory (sstm_load_bytes), private
 *            memory (sstm_store_bytes)
 * @param n bytes to copy, any number */
SSTM_API SSTM_NOPLT void sstm_load_bytes(void *dst, const void *src, size_t n);
SSTM_API SSTM_NOPLT void sstm_store_bytes(void *dst, const void *src, size_t n);
/** @} */

/** @name Signed convenience wrappers: loads
 * @{ */
/** Signed convenience wrapper: the unsigned load of the same width.
 * @param a the address
 * @return the value */
static inline int8_t sstm_load_i8(const int8_t *a) {
  return (int8_t)sstm_load_u8((const uint8_t *)a);
}
static inline int16_t sstm_load_i16(const int16_t *a) {
  return (int16_t)sstm_load_u16((const uint16_t *)a);
}
static inline int32_t sstm_load_i32(const int32_t *a) {
  return (int32_t)sstm_load_u32((const uint32_t *)a);
}
static inline int64_t sstm_load_i64(const int64_t *a) {
  return (int64_t)sstm_load_u64((const uint64_t *)a);
}
/** @} */

/** @name Signed convenience wrappers: stores
 * @{ */
/** Signed convenience wrapper: the unsigned store of the same width.
 * @param a the address
 * @param v the value */
static inline void sstm_store_i8(int8_t *a, int8_t v) { sstm_store_u8((uint8_t *)a, (uint8_t)v); }
static inline void sstm_store_i16(int16_t *a, int16_t v) {
  sstm_store_u16((uint16_t *)a, (uint16_t)v);
}
static inline void sstm_store_i32(int32_t *a, int32_t v) {
  sstm_store_u32((uint32_t *)a, (uint32_t)v);
}
static inline void sstm_store_i64(int64_t *a, int64_t v) {
  sstm_store_u64((uint64_t *)a, (uint64_t)v);
}
/** @} */

SSTM__CXX_CASTS_END
SSTM_EXTERN_C_END

#endif /* SCHEDSTM_ACCESS_H */
