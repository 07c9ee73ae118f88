/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bench only, never shipped (issue 34): BENCH_PAD bytes of int3 at the
 * start of the module's .text.  scripts/bench-place.sh copies the module's
 * sources into build/, puts this file in the copy's driver/ and links it
 * first (the copy's Kbuild), so that the whole text of the module moves by
 * BENCH_PAD bytes against the 4 KiB pages that QEMU's TCG translates by.
 */
	.section .text, "ax"
	.skip BENCH_PAD, 0xcc
