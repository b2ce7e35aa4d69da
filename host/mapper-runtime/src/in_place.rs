//! Running a precompiled artifact where the binary holds it, instead of from a copy.
//!
//! `Component::deserialize` copies an artifact into memory of its own: about 3 MiB of private,
//! resident memory per process for the selected embedded mapper, on top of the pages read to
//! copy it (issue 27, the cold peak). `Component::deserialize_raw` uses the bytes where they
//! are. The binary's read-only data is a file mapping: only the pages the mapper touches become
//! resident, and they are shared with every other zcode-acp process and the page cache.
//!
//! wasmtime cannot change the protection of memory it does not own, so the engine is given
//! [`PageProtection`], which makes an artifact's code executable with `mprotect`: read-only
//! becomes read and execute, never writable. Only x86-64 Linux uses it. Elsewhere an
//! artifact is copied, as before: other CPUs need their instruction cache synchronised, and
//! other systems may refuse executable file pages that are not the binary's code.

use std::sync::{Mutex, PoisonError};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use std::sync::Arc;

    use wasmtime::{Config, CustomCodeMemory};

    /// Code pages made executable and back with `mprotect`. The engine calls it for all the
    /// code it publishes: its own mappings (compiled components, copies, cache files) and
    /// artifacts run in place.
    struct PageProtection {
        page: usize,
    }

    impl PageProtection {
        fn protect(&self, ptr: *const u8, len: usize, prot: libc::c_int) -> wasmtime::Result<()> {
            // SAFETY: wasmtime hands over a range of code memory it holds, aligned to
            // `required_alignment` (a page). Changing its protection changes no byte.
            let done = unsafe { libc::mprotect(ptr as *mut libc::c_void, len, prot) };
            if done == 0 {
                Ok(())
            } else {
                Err(wasmtime::Error::msg(format!(
                    "cannot change the protection of mapper code: {}",
                    std::io::Error::last_os_error()
                )))
            }
        }
    }

    impl CustomCodeMemory for PageProtection {
        fn required_alignment(&self) -> usize {
            self.page
        }

        fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            self.protect(ptr, len, libc::PROT_READ | libc::PROT_EXEC)
        }

        /// Back to read-only, not read-write: wasmtime unpublishes only as it drops the code
        /// (its own mappings are unmapped next), and an artifact in the binary's read-only
        /// data must never become writable.
        fn unpublish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            self.protect(ptr, len, libc::PROT_READ)
        }
    }

    pub(crate) fn page_size() -> Option<usize> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).ok().filter(|page| page.is_power_of_two())
    }

    pub(crate) fn configure(config: &mut Config) {
        if let Some(page) = page_size() {
            config.with_custom_code_memory(Some(Arc::new(PageProtection { page })));
        }
    }
}

/// Sets the engine up to run artifacts in place, where this platform can.
pub(crate) fn configure(config: &mut wasmtime::Config) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    linux::configure(config);
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    let _ = config;
}

/// Artifacts run in place in this process, by address. wasmtime registers code by address for
/// the whole process and cannot register one range twice, so one artifact may run in place
/// once: the runtime that claims it keeps the component and reuses it, and any other runtime
/// copies it. A claim lasts as long as the process.
static CLAIMED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// Whether `artifact` may run where it lies, for the caller alone: on a platform with
/// [`configure`], starting on a page boundary (so that its code section, page-aligned inside
/// it, starts on one too), and not claimed before.
pub(crate) fn claim(artifact: &[u8]) -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    let fits = linux::page_size().is_some_and(|page| artifact.as_ptr().addr().is_multiple_of(page));
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    let fits = false;
    let mut claimed = CLAIMED.lock().unwrap_or_else(PoisonError::into_inner);
    let address = artifact.as_ptr().addr();
    if !fits || claimed.contains(&address) {
        return false;
    }
    claimed.push(address);
    true
}
