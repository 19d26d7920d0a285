/* A stand-in for a shim of a later layout (bats/ps.bats copies it to a path named
 * libtscshim.so): the note that says where its state block is, as the shim's
 * (shim/visible.c), and a block of layout 3, whose fields `tscshim ps` must not read. */
#include "state_block.h"

#include <stdint.h>

__attribute__((used)) struct {
	char magic[8];
	uint32_t layout, size;
	uint64_t fields[12];
} other_block = {STATE_BLOCK_MAGIC, 3, sizeof other_block, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}};

__asm__(".pushsection .note.tscshim, \"a\", @note\n"
	"\t.balign 4\n"
	"\t.long 8\n"
	"\t.long 8\n"
	"\t.long 0x54534331\n"
	"\t.asciz \"" STATE_NOTE_NAME "\"\n"
	"\t.quad other_block - .\n"
	"\t.popsection\n");
