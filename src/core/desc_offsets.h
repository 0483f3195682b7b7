/* SPDX-License-Identifier: MIT */
/* The offsets of the descriptor fields that the assembly begin reads and
 * writes (sstm__begin_ckpt, core/begin_x86_64.S): plain numbers, so that
 * the assembler can include this file. txn.c checks each against
 * offsetof(struct sstm_desc, ...) with a static assertion, so a layout
 * change that forgets this file fails the build. */
#ifndef SSTM_CORE_DESC_OFFSETS_H
#define SSTM_CORE_DESC_OFFSETS_H

/* The begin's gate, one 32-bit word (little-endian): depth (uint16_t) in
 * its low half, then in_hook and slow_begin (uint8_t each). Zero: the
 * common begin. Under SSTM_DESC_GATE_NESTED: a nested begin or one in a
 * callback, which saves nothing; otherwise (slow_begin alone) the begin
 * saves the checkpoint and takes the general first attempt. */
#define SSTM_DESC_OFF_GATE 4
#define SSTM_DESC_GATE_NESTED 0x00ffffff /* depth and in_hook */
#define SSTM_DESC_OFF_CKPT 0xd0          /* sstm_ckpt_t ckpt */

/* The thread-local pointer the begin starts from: sstm__fast_cur of
 * schedstm/fastpath.h under its exported name, which carries the inline
 * generation (txn.c checks SSTM_DESC_INLINE_ABI against SSTM__INLINE_ABI;
 * a stale name fails the link). It is never NULL: a thread without a
 * descriptor has a static prefix whose gate word is under
 * SSTM_DESC_GATE_NESTED (core/barrier.c). */
#define SSTM_DESC_INLINE_ABI 2
#define SSTM_DESC_FAST_CUR sstm__fast_cur_abi2

#endif /* SSTM_CORE_DESC_OFFSETS_H */
