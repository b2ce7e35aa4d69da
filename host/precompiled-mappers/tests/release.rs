//! `release` gives an artifact's pages back to the kernel and leaves its bytes as they were
//! (issue 27: the first session's peak RSS held the selected artifact twice).

use zcode_precompiled_mappers::{PRECOMPILED, precompiled, release};

/// Whether the page holding `address` is mapped in this process (`/proc/self/pagemap`: bit 63
/// of the page's entry, readable without privileges).
#[cfg(target_os = "linux")]
fn resident(address: usize) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let page = 4096;
    let mut map = std::fs::File::open("/proc/self/pagemap").expect("pagemap");
    map.seek(SeekFrom::Start((address / page * 8) as u64)).expect("seek");
    let mut entry = [0u8; 8];
    map.read_exact(&mut entry).expect("read");
    u64::from_le_bytes(entry) >> 63 == 1
}

#[cfg(target_os = "linux")]
#[test]
fn a_released_artifact_leaves_memory_and_reads_the_same_afterwards() {
    let (name, artifact) = PRECOMPILED.first().expect("an embedded artifact");
    let loaded = precompiled(name).expect("its artifact");
    assert!(std::ptr::eq(loaded, *artifact), "one copy of the bytes, the one the binary loads");
    assert!(artifact.len() > 3 * 4096, "{name} spans whole pages");
    let sum = |bytes: &[u8]| {
        bytes.iter().fold(0u64, |s, b| s.wrapping_mul(31).wrapping_add(u64::from(*b)))
    };
    let before = sum(artifact);
    let middle = artifact.as_ptr() as usize + artifact.len() / 2;
    assert!(resident(middle), "a page just read is mapped");

    release(artifact);
    assert!(!resident(middle), "the artifact's pages are given back");
    // Read again, the bytes are the binary's own: mapped again from its file, unchanged.
    assert_eq!(sum(artifact), before);
    assert!(resident(middle));
}

/// Only the binary's own artifacts are released: a copy of one (heap memory, whose pages
/// `MADV_DONTNEED` would zero) is left alone.
#[cfg(target_os = "linux")]
#[test]
fn a_slice_that_is_not_an_embedded_artifact_is_left_alone() {
    let (_, artifact) = PRECOMPILED.first().expect("an embedded artifact");
    let copy: &'static [u8] = Box::leak(artifact.to_vec().into_boxed_slice());
    release(copy);
    assert_eq!(copy, *artifact);
}
