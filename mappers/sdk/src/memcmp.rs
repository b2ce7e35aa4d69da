//! `memcmp` for the guests, eight bytes at a time. In WebAssembly every comparison of two byte
//! strings is a call to it (LLVM expands none inline for this target): each member name a
//! compact read matches, each route the connection compares. wasi-libc's compares a byte at a
//! time, and in a profile of the desktop-4.0.0 relay it was 4 % of zcode-acp's CPU (issue 27).
//!
//! A symbol the component's own code defines is linked before the C library's archive is
//! searched, so this one stands for wasi-libc's in the whole guest.

use std::cmp::Ordering;

/// How `a` orders against `b` (both `n` bytes long) as C's `memcmp` says: the first differing
/// byte decides, compared as unsigned. Words are read eight bytes at a time, little-endian, so
/// the lowest differing byte of a word is its first. The last word ends where the bytes do and
/// may overlap the one before: the bytes it shares with that one are equal, so its first
/// difference is still the first. A byte at a time, the tail of each fixed text a compact
/// read compares (issue 27) was a loop of up to seven more rounds.
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    debug_assert_eq!(a.len(), b.len());
    let Some(last) = a.len().checked_sub(8) else {
        return a.iter().cmp(b);
    };
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"))
    };
    let mut at = 0;
    loop {
        let at_word = at.min(last);
        let (x, y) = (word(a, at_word), word(b, at_word));
        if x != y {
            let shift = (x ^ y).trailing_zeros() & !7;
            return ((x >> shift) as u8).cmp(&((y >> shift) as u8));
        }
        if at_word == last {
            return Ordering::Equal;
        }
        at += 8;
    }
}

/// C's `memcmp`, for the guest's own code and the C library's alike.
///
/// # Safety
/// `a` and `b` are each readable for `n` bytes (C's contract).
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> core::ffi::c_int {
    // C code may pass a null pointer with nothing to compare, which no slice may hold.
    if n == 0 {
        return 0;
    }
    // SAFETY: the caller's contract, as C states it; `n` is not zero, so neither is null.
    let (a, b) = unsafe { (std::slice::from_raw_parts(a, n), std::slice::from_raw_parts(b, n)) };
    compare(a, b) as core::ffi::c_int
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length up to three words, every position of the first difference, and byte
    /// values on both sides of 0x80 (compared unsigned).
    #[test]
    fn orders_as_the_first_differing_byte_does() {
        for len in 0..=24 {
            let base: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            assert_eq!(compare(&base, &base), Ordering::Equal);
            for at in 0..len {
                for (x, y) in [(0x00, 0x01), (0x7f, 0x80), (0x80, 0xff), (0x41, 0x42)] {
                    let (mut a, mut b) = (base.clone(), base.clone());
                    (a[at], b[at]) = (x, y);
                    // A later difference the other way must not count.
                    if at + 1 < len {
                        (a[at + 1], b[at + 1]) = (0xff, 0x00);
                    }
                    assert_eq!(compare(&a, &b), Ordering::Less, "{len} {at} {x} {y}");
                    assert_eq!(compare(&b, &a), Ordering::Greater, "{len} {at} {x} {y}");
                    assert_eq!(compare(&a, &b), a.cmp(&b));
                }
            }
        }
    }
}
