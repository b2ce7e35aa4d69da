//! Test support (feature `heap-count`): an allocator that counts the heap bytes live on each
//! thread, so a test measures what a mapper holds instead of guessing. Tests run on parallel
//! threads; each sees only its own allocations. A test binary installs it with
//! `#[global_allocator] static HEAP: Counting = Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    // `try_with`: allocations during thread teardown must not panic.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + bytes;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

pub struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A moving realloc holds both blocks for a moment: count the new one first.
        add(new_size as isize);
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        add(-(layout.size() as isize));
        moved
    }
}

/// Heap bytes live on this thread.
pub fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Runs `f`; returns its result and the most heap it held above what was live before it.
pub fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = live();
    PEAK.with(|peak| peak.set(before));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, (peak - before).max(0) as usize)
}
