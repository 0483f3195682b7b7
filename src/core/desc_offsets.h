/* SPDX-License-Identifier: MIT */
/* The offsets of the descriptor fields that the assembly begin reads and
 * writes (sstm__begin_ckpt, core/begin_x86_64.S): plain numbers, so that
 * the assembler can include this file. txn.c checks each against
 * offsetof(struct sstm_desc, ...) with a static assertion, so a layout
 * change that forgets this file fails the build. */
#ifndef SSTM_CORE_DESC_OFFSETS_H
#define SSTM_CORE_DESC_OFFSETS_H

#define SSTM_DESC_OFF_DEPTH 4        /* uint32_t depth */
#define SSTM_DESC_OFF_IN_HOOK 0xbb   /* uint8_t in_hook */
#define SSTM_DESC_OFF_CKPT 0xd0      /* sstm_ckpt_t ckpt */
#define SSTM_DESC_OFF_BEGIN_SP 0x1d8 /* uintptr_t begin_sp */

#endif /* SSTM_CORE_DESC_OFFSETS_H */
