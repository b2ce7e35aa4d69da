//! The embedded mappers (`zcode-embedded-mappers`) compiled ahead of time for the binary's
//! target, and the contract of each as the runtime read it at build time (see `build.rs`).
//! Discovery needs every contract, but only the selected mapper is ever loaded, from its
//! artifact.

include!(concat!(env!("OUT_DIR"), "/precompiled.rs"));

/// Starts an artifact on a page, so that the runtime can run its code (page-aligned inside it)
/// where the binary holds it. 4 KiB: the page of x86-64 Linux, the one platform that does
/// (`zcode-mapper-runtime`'s `in_place.rs`).
#[repr(C, align(4096))]
struct PageAligned<T: ?Sized>(T);

/// The artifact of the embedded mapper `name` precompiled at build time for the binary's
/// target, for `MapperRuntime::load_embedded`; `None` when the build could not make one.
pub fn precompiled(name: &str) -> Option<&'static [u8]> {
    PRECOMPILED.iter().find(|(embedded, _)| *embedded == name).map(|(_, bytes)| *bytes)
}

/// The contract of the embedded mapper `name` as JSON (a `zcode_contract::Contract`).
pub fn contract_json(name: &str) -> Option<&'static str> {
    CONTRACTS.iter().find(|(embedded, _)| *embedded == name).map(|(_, json)| *json)
}

/// Gives back the resident pages of `artifact`, a slice of this binary's read-only data that
/// has been loaded and will not be read again soon: wasmtime's `Component::deserialize` copied
/// it into memory of its own (where it cannot run in place). The bytes stay valid: only whole
/// pages inside the slice are dropped from this process's page tables (`MADV_DONTNEED`), and
/// the kernel maps them again from the binary's file if they are read. Before this, the first session's peak
/// RSS held the selected artifact twice: read here (about 2 MiB) and copied (issue 27).
///
/// Only for slices of a read-only, file-backed mapping that nothing writes, such as
/// [`precompiled`]'s. On a private anonymous or written page `MADV_DONTNEED` would lose the
/// contents, which is why this takes no other slice and is not public to other memory.
pub fn release(artifact: &'static [u8]) {
    if !PRECOMPILED.iter().any(|(_, bytes)| std::ptr::eq(*bytes, artifact)) {
        return;
    }
    release_pages(artifact);
}

#[cfg(target_os = "linux")]
fn release_pages(bytes: &'static [u8]) {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let Ok(page) = usize::try_from(page) else { return };
    if page == 0 {
        return;
    }
    let start = (bytes.as_ptr() as usize).next_multiple_of(page);
    let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
    if end <= start {
        return;
    }
    // SAFETY: [start, end) is whole pages inside `bytes`, a `'static` slice of this binary's
    // read-only data (checked above: one of `PRECOMPILED`'s artifacts, from `include_bytes!`),
    // which is a private file mapping no one writes. `MADV_DONTNEED` there only unmaps the
    // pages; a later read maps the same bytes again from the file, so every reference to them
    // stays valid. A failure (another kernel) changes nothing and is ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
    }
}

#[cfg(not(target_os = "linux"))]
fn release_pages(_bytes: &'static [u8]) {}
