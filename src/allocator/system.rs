//! Blocks from and back to the system (`posix_memalign` / `free`): the layer under both
//! caches (and, through Rust's global allocator, the object boxes: [`fresh_box`]), and
//! the one place `reserved_bytes` changes for blocks (the other: a storage's inline bytes,
//! `stats::stats_inline_alloc`).

use super::stats::RESERVED_BYTES;
use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::atomic::Ordering;

/// Alignment of every block (a cache line; AVX-512 loads never split).
pub(crate) const ALIGNMENT: usize = 64;
/// Blocks at least this big are 2 MiB aligned and, up to the big-block cache's limit,
/// advised as huge pages (one fault per 2 MiB instead of per 4 KiB).
pub(super) const HUGE_THRESHOLD: usize = 2 << 20;
pub(super) const HUGE_ALIGN: usize = 2 << 20;

/// A new block of `nbytes` (> 0) from the system, `ALIGNMENT`-aligned (`HUGE_ALIGN` from
/// `HUGE_THRESHOLD` up, and advised as huge pages when the big-block cache could keep it);
/// NULL when out of memory.
///
/// A block bigger than the cache limit is faulted in afresh by every op that makes one, and
/// with THP `defrag=madvise` (a common default) each fault of a `MADV_HUGEPAGE` range may
/// compact memory synchronously: a 1 GiB clone then took up to 2.6x libtorch's time. Such
/// blocks get no advice, so the kernel's own THP policy decides, as for glibc `malloc` and
/// libtorch's CPU allocator (which advises only when an environment variable asks it to).
pub(super) fn fresh_alloc(nbytes: usize) -> *mut u8 {
    let align = if nbytes >= HUGE_THRESHOLD {
        HUGE_ALIGN
    } else {
        ALIGNMENT
    };
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign with a power-of-two alignment >= sizeof(void*).
    let rc = unsafe { libc::posix_memalign(&mut p, align, nbytes) };
    if rc != 0 {
        return std::ptr::null_mut();
    }
    #[cfg(target_os = "linux")]
    if nbytes >= HUGE_THRESHOLD && nbytes <= super::policy::cache_limit() {
        // Advice only: failure just means 4 KiB pages.
        // SAFETY: p is HUGE_ALIGN-aligned and owns nbytes bytes.
        unsafe {
            libc::madvise(p, nbytes, libc::MADV_HUGEPAGE);
        }
    }
    RESERVED_BYTES.fetch_add(nbytes as u64, Ordering::Relaxed);
    p as *mut u8
}

/// A hint before writing all of a new output of `nbytes` at `p`: when it is past the
/// big-block cache's limit (so its block came fresh from the system, never faulted), its
/// whole pages are populated in one `MADV_POPULATE_WRITE` call instead of one page fault
/// per 4 KiB page during the copy (a 1 GiB clone: 262,144 faults). The kernel does the
/// same zeroing either way; what goes is the fault entry and exit per page. Only the pages
/// wholly inside the range are named, and any failure (a kernel before 5.14, memory that is
/// not ordinary anonymous or file memory) just leaves the faults to the copy: the output's
/// content is not touched.
pub(crate) fn prefault_for_write(p: *mut u8, nbytes: usize) {
    if nbytes > super::policy::cache_limit() && nbytes >= HUGE_THRESHOLD {
        populate_pages(p, nbytes);
    }
}

/// `MADV_POPULATE_WRITE` on the whole pages inside `nbytes` at `p`; false when there are
/// none or the kernel refused (nothing else happens then).
fn populate_pages(p: *mut u8, nbytes: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        let page = page_size();
        let start = (p as usize).div_ceil(page) * page;
        let end = (p as usize).saturating_add(nbytes) / page * page;
        // SAFETY: advice on whole pages inside a range the caller owns and is about to
        // write; MADV_POPULATE_WRITE only faults pages in (as writes would), it never
        // changes their content.
        end > start
            && unsafe {
                libc::madvise(start as *mut c_void, end - start, libc::MADV_POPULATE_WRITE)
            } == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (p, nbytes);
        false
    }
}

/// The system's page size (4 KiB on x86_64; 16 or 64 KiB on some arm64 kernels), 4096 if
/// `sysconf` cannot tell.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Gives a block of `cap` bytes from [`fresh_alloc`] back to the system.
///
/// # Safety
/// `p` came from `fresh_alloc(cap)`, is owned by the caller and not used again.
pub(super) unsafe fn system_free(p: *mut u8, cap: usize) {
    // SAFETY: a posix_memalign block (the contract), freed once.
    unsafe { libc::free(p as *mut c_void) };
    RESERVED_BYTES.fetch_sub(cap as u64, Ordering::Relaxed);
}

/// The alignment `malloc` gives every block (glibc on 64-bit targets), and Rust's global
/// allocator with it: a box aligned to at most this is a plain `malloc`.
const MALLOC_ALIGN: usize = 16;

/// Whether a box of `layout` is over-aligned the cheap way ([`fresh_box`]): above malloc's
/// alignment, and no memory checker watching (which then sees the exact block).
#[inline]
fn slack_aligned(layout: Layout) -> bool {
    layout.align() > MALLOC_ALIGN && crate::sanitizer::checker().is_none()
}

/// A new object block for `layout` (non-zero size), or NULL. A box aligned past
/// `MALLOC_ALIGN` (the storage's, 64: `StorageImpl::BOX_ALIGN`) is not a
/// `posix_memalign`: glibc's aligned path leaves a free fragment in front of each block that
/// nothing of the library's sizes reuses, 128 bytes of resident memory per block measured
/// over 10^6 of them (BENCHMARKS.md, "A live small tensor"). It is a `malloc` of `align`
/// more bytes instead, aligned inside, with the `malloc` block's address in the word just
/// before the box (the box starts at least `MALLOC_ALIGN` bytes in). Under a memory checker
/// the block is the exact one (`std::alloc::alloc(layout)`), so that the checker sees its
/// bounds.
///
/// # Safety
/// `layout` has a non-zero size.
pub(super) unsafe fn fresh_box(layout: Layout) -> *mut u8 {
    // SAFETY: a non-zero size (the contract).
    unsafe {
        if slack_aligned(layout) {
            slack_alloc(layout)
        } else {
            std::alloc::alloc(layout)
        }
    }
}

/// A `layout` block inside a `malloc` of `layout.align()` more bytes (see [`fresh_box`]);
/// NULL when out of memory.
///
/// # Safety
/// `layout` has a non-zero size and an alignment of at least `MALLOC_ALIGN`.
unsafe fn slack_alloc(layout: Layout) -> *mut u8 {
    let Some(outer) = slack_layout(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: a non-zero size.
    let raw = unsafe { std::alloc::alloc(outer) };
    if raw.is_null() {
        return raw;
    }
    // In MALLOC_ALIGN..=align: room for the address word in front, the box inside `outer`.
    let lead = layout.align() - (raw as usize & (layout.align() - 1));
    // SAFETY: raw + lead + layout.size() <= raw + outer.size(); the word before the box
    // is in the block and 8-aligned (lead and raw are multiples of MALLOC_ALIGN).
    unsafe {
        let p = raw.add(lead);
        (p as *mut *mut u8).sub(1).write(raw);
        p
    }
}

/// The `malloc` block a slack-aligned box of `layout` lives in.
#[inline]
fn slack_layout(layout: Layout) -> Option<Layout> {
    Layout::from_size_align(layout.size().checked_add(layout.align())?, MALLOC_ALIGN).ok()
}

/// Gives back an object block from [`fresh_box`]`(layout)`.
///
/// # Safety
/// `p` came from `fresh_box(layout)`, holds no live value, and the caller gives it up.
pub(super) unsafe fn free_box(p: *mut u8, layout: Layout) {
    // SAFETY: as fresh_box made it (the same test: the checker is decided once per
    // process): the exact block, or a slack one whose address is the word before `p`.
    unsafe {
        if slack_aligned(layout) {
            slack_free(p, layout);
        } else {
            std::alloc::dealloc(p, layout);
        }
    }
}

/// Gives back a block from [`slack_alloc`]`(layout)`.
///
/// # Safety
/// `p` came from `slack_alloc(layout)` and the caller gives it up.
unsafe fn slack_free(p: *mut u8, layout: Layout) {
    // SAFETY: the word before `p` holds the address of the `outer` block it is in
    // (slack_alloc), which is given back once.
    unsafe {
        let raw = (p as *mut *mut u8).sub(1).read();
        let outer = slack_layout(layout).unwrap_or_else(|| unreachable!("slack_alloc made it"));
        std::alloc::dealloc(raw, outer);
    }
}

#[cfg(test)]
mod box_tests {
    use super::*;

    /// A slack-aligned block is aligned as asked, holds its whole size (every byte written
    /// and read back while its neighbours are live), and goes back to the block it came
    /// from (Miri checks the provenance and the matching layout).
    #[test]
    fn slack_blocks_are_aligned_and_whole() {
        for (size, align) in [(192usize, 64usize), (1, 64), (64, 32), (100, 128)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero sizes, alignments >= MALLOC_ALIGN; each block written
            // within its size and freed once.
            unsafe {
                let blocks: Vec<*mut u8> = (0..8).map(|_| slack_alloc(layout)).collect();
                for (i, &p) in blocks.iter().enumerate() {
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "{layout:?}");
                    p.write_bytes(i as u8, size);
                }
                for (i, &p) in blocks.iter().enumerate() {
                    let got = std::slice::from_raw_parts(p, size);
                    assert!(got.iter().all(|&b| b == i as u8), "{layout:?}");
                    slack_free(p, layout);
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux", not(miri)))]
mod tests {
    use super::*;

    /// Whether the mapping holding `p` is advised as huge pages ("hg" in its smaps
    /// VmFlags).
    fn advised_huge(p: *mut u8) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let a = p as usize;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = lo <= a && a < hi;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().any(|f| f == "hg");
                }
            }
        }
        panic!("no mapping holds {p:p}")
    }

    /// A big block the cache could keep is advised as huge pages; one bigger than the
    /// cache limit (faulted in afresh by every op that makes one) is left to the kernel's
    /// THP policy. Nothing is touched: the blocks are only reserved address space.
    #[test]
    fn only_cacheable_big_blocks_are_advised_huge() {
        let small_big = 2 * HUGE_ALIGN;
        let over = (super::super::policy::cache_limit() / HUGE_ALIGN + 1) * HUGE_ALIGN;
        assert!(over > super::super::policy::cache_limit());
        for (n, want) in [(small_big, true), (over, false)] {
            let want = want && n <= super::super::policy::cache_limit();
            let p = fresh_alloc(n);
            assert!(!p.is_null());
            assert_eq!(advised_huge(p), want, "block of {n} bytes");
            // SAFETY: from fresh_alloc(n), freed once.
            unsafe { system_free(p, n) };
        }
    }
}

// Not under Miri, which has no mmap / madvise / mincore.
#[cfg(all(test, target_os = "linux", not(miri)))]
mod populate_tests {
    use super::*;

    /// Population faults in exactly the whole pages inside the range (not the partial ones
    /// at its ends) and leaves their content as it was.
    #[test]
    fn populate_names_only_whole_pages_and_keeps_content() {
        let page = page_size();
        let n = 16 * page;
        // SAFETY: a fresh private anonymous mapping of n bytes, unmapped at the end.
        unsafe {
            let m = libc::mmap(
                std::ptr::null_mut(),
                n,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(m, libc::MAP_FAILED);
            let base = m as *mut u8;
            // Pages 2 and 12 are touched (content 7); the range starts inside page 1 and
            // ends inside page 13, so pages 2..13 are whole inside it.
            *base.add(2 * page + 5) = 7;
            *base.add(12 * page) = 7;
            assert!(populate_pages(base.add(page + 100), 12 * page - 50));
            let mut vec = vec![0u8; 16];
            assert_eq!(libc::mincore(m, n, vec.as_mut_ptr()), 0);
            let resident: Vec<bool> = vec.iter().map(|v| v & 1 == 1).collect();
            let want: Vec<bool> = (0..16).map(|i| (2..13).contains(&i)).collect();
            assert_eq!(resident, want);
            assert_eq!((*base.add(2 * page + 5), *base.add(12 * page)), (7, 7));
            assert_eq!(*base.add(7 * page), 0);
            // No whole page inside: nothing to do.
            assert!(!populate_pages(base.add(14 * page + 1), page));
            assert_eq!(libc::munmap(m, n), 0);
        }
    }
}
