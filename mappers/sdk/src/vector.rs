//! The byte scans of a streamed line sixteen bytes at a time, with WebAssembly's 128-bit
//! vectors, in a guest built with them (`+simd128`, as the shipped mappers are). Elsewhere the
//! scans read eight bytes a word. In the guests of the desktop-4.0.0 relay, finding where a
//! string's plain run ends and checking that a line is ASCII were 9 % of zcode-acp's CPU, eight
//! bytes at a time (issue 27).
//!
//! Native tests do not reach this code: `scripts/test` runs the scans' unit tests again as
//! WebAssembly, with the vectors on, under Node's WASI.

use core::arch::wasm32::{
    u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_load, v128_or,
};

/// Where the first byte that is a quote, a backslash or a control character falls in `bytes`'
/// whole sixteen-byte blocks, or where those blocks end when none holds one.
pub fn plain_blocks(bytes: &[u8]) -> usize {
    let (quote, backslash, space) = (u8x16_splat(b'"'), u8x16_splat(b'\\'), u8x16_splat(0x20));
    let mut at = 0;
    for block in bytes.chunks_exact(16) {
        let block = load(block);
        let special = v128_or(
            v128_or(u8x16_eq(block, quote), u8x16_eq(block, backslash)),
            u8x16_lt(block, space),
        );
        // A bit for each byte, the first byte's lowest.
        let found = u8x16_bitmask(special);
        if found != 0 {
            return at + found.trailing_zeros() as usize;
        }
        at += 16;
    }
    at
}

/// How many of `bytes` lead in sixteen-byte blocks that are all ASCII.
pub fn ascii_blocks(bytes: &[u8]) -> usize {
    // The bitmask takes each byte's high bit.
    bytes.chunks_exact(16).take_while(|block| u8x16_bitmask(load(block)) == 0).count() * 16
}

/// The sixteen bytes `block` holds, as one vector.
#[inline(always)]
fn load(block: &[u8]) -> v128 {
    assert_eq!(block.len(), 16);
    // SAFETY: `block` holds sixteen readable bytes (checked above), and `v128_load` needs no
    // alignment.
    unsafe { v128_load(block.as_ptr().cast()) }
}
