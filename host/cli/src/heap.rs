//! Keeps the heap's freed pages for the next read of the host's output.
//!
//! glibc gives the free top of a thread's heap back to the kernel once it passes 128 KiB. While
//! a turn streams, each 64 KiB read of the host's output is lifted out of the connection mapper
//! as one joined text, queued, handed to the session's mapper and freed, so a heap's top swings
//! by about 200 KB. glibc returned it (`madvise`: 263 times, 184 to 258 KB each, over a
//! 300,000-delta Desktop turn), and the next reads faulted the pages in again, zeroed: about 3 %
//! of zcode-acp's CPU in a profile of the desktop-4.0.0 relay (issue 27).

/// Free heap memory a thread's heap keeps before glibc trims it: a read's swing (its free top
/// reached about 400 KB), with room. Each heap may keep this much, which a long turn's peak RSS
/// shows: 1 MiB cost the Services Server's 1,000,000-delta turn 0.4–1.3 MiB more growth, against
/// a target of 5 MB; with 512 KiB, three to four `madvise` calls are left a turn.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD: libc::c_int = 512 << 10;

/// The size from which glibc serves an allocation with its own mapping. Setting the trim
/// threshold turns off glibc's own tuning of this one, which starts at 128 KiB and rises with
/// the largest such block freed; this keeps blocks of a read's size on the heap from the start.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 512 << 10;

/// Sets glibc's trim and mapping thresholds for this process. Another libc keeps its defaults.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_freed_pages() {
    // SAFETY: mallopt takes the allocator's lock and only sets its parameters; a refusal (0)
    // leaves the defaults, which are only slower.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_pages() {}
