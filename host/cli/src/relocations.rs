//! Gives back the pages of the binary's own dynamic relocations once they are applied.
//!
//! The dynamic linker applies a position-independent executable's relocations before `main`:
//! one entry for each pointer in the binary's data (about 44,000 entries, 1 MB of `.rela.dyn`
//! here). Nothing reads them again, yet their pages stayed mapped, a twentieth of a cold
//! session's peak RSS (issue 27). The linker's packed form would shrink them instead, but the
//! binary would then need glibc 2.36 or later to start (`docs/performance.md`).

/// Drops the executable's applied relocations from this process's page tables. Reading them
/// again would still work: they are file pages of a read-only mapping, and the kernel maps
/// them again from the binary. Anything unexpected (another layout, another libc) leaves them.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn release() {
    let Some((start, end)) = executable_table() else { return };
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let Some(page) = usize::try_from(page).ok().filter(|&page| page > 0) else { return };
    let (start, end) = (start.next_multiple_of(page), end / page * page);
    if start < end {
        // SAFETY: [start, end) is whole pages of the relocation table inside a read-only
        // segment loaded from the executable's file (checked in `relocation_table`): a
        // private file mapping nothing writes. `MADV_DONTNEED` only unmaps those pages; a
        // later read maps the same bytes again. A failure changes nothing and is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn release() {}

/// The executable's relocation table, as [`relocation_table`] finds it.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn executable_table() -> Option<(usize, usize)> {
    let mut range: Option<(usize, usize)> = None;
    // SAFETY: the callback only reads the `dl_phdr_info` it is given, and writes `range`
    // through the pointer passed here, which outlives the call.
    unsafe {
        libc::dl_iterate_phdr(Some(executable), (&raw mut range).cast());
    }
    range
}

/// `dl_iterate_phdr`'s callback: the first object is the executable. Stops after it.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
unsafe extern "C" fn executable(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: the loader passes a valid `dl_phdr_info` whose program headers are mapped for
    // the life of the process; `data` is `release`'s `range`.
    unsafe {
        let info = &*info;
        let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
        *data.cast::<Option<(usize, usize)>>() = relocation_table(info.dlpi_addr as usize, headers);
    }
    1
}

/// `DT_RELA` and `DT_RELASZ`: where the relocations with addends are, and their size.
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;

/// The addresses of the executable's `DT_RELA` table, if it lies in a segment that is mapped
/// from the file and read-only.
///
/// # Safety
/// `headers` are the program headers of the object loaded at `base`, which is mapped.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
unsafe fn relocation_table(base: usize, headers: &[libc::Elf64_Phdr]) -> Option<(usize, usize)> {
    #[repr(C)]
    struct Dyn {
        tag: i64,
        value: u64,
    }
    let dynamic = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC)?;
    let entries = dynamic.p_memsz as usize / size_of::<Dyn>();
    let first = (base + dynamic.p_vaddr as usize) as *const Dyn;
    let (mut table, mut size) = (None, None);
    for index in 0..entries {
        // SAFETY: the dynamic segment is mapped, and holds `entries` entries.
        let entry = unsafe { &*first.add(index) };
        match entry.tag {
            0 => break,
            DT_RELA => table = Some(entry.value as usize),
            DT_RELASZ => size = Some(entry.value as usize),
            _ => {}
        }
    }
    let (table, size) = (table?, size?);
    // glibc rewrites the address to where the table was loaded; other loaders keep the
    // offset from the base.
    let start = if table >= base { table } else { base.checked_add(table)? };
    let end = start.checked_add(size)?;
    let read_only_file = headers.iter().any(|h| {
        let from = base + h.p_vaddr as usize;
        h.p_type == libc::PT_LOAD
            && h.p_flags & libc::PF_W == 0
            && from <= start
            && end <= from + h.p_filesz as usize
    });
    read_only_file.then_some((start, end))
}

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use std::io::{Read, Seek, SeekFrom};

    use super::*;

    /// Whether the page at `address` is in this process's page tables (`/proc/self/pagemap`,
    /// bit 63 of its entry).
    fn mapped(address: usize) -> bool {
        let mut pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        pagemap.seek(SeekFrom::Start((address / 4096 * 8) as u64)).unwrap();
        let mut entry = [0; 8];
        pagemap.read_exact(&mut entry).unwrap();
        u64::from_le_bytes(entry) >> 63 == 1
    }

    /// The table this binary's loader read is found in a read-only segment; its pages leave
    /// the page tables, and reading it again gives the same bytes.
    #[test]
    fn the_test_binarys_own_table_is_given_back_and_stays_readable() {
        let (start, end) =
            executable_table().expect("a position-independent test binary has relocations");
        let read =
            || unsafe { std::slice::from_raw_parts(start as *const u8, end - start) }.to_vec();
        let before = read();
        let whole_page = start.next_multiple_of(4096);
        assert!(whole_page + 4096 <= end, "a table of whole pages: {start:#x}..{end:#x}");
        assert!(mapped(whole_page));
        release();
        assert!(!mapped(whole_page));
        assert_eq!(read(), before);
        assert!(mapped(whole_page));
    }
}
