//! The allocator of plinth's binaries, and how long it keeps the pages freed.
//!
//! Both binaries parse and write JSON of many small values on several threads: mimalloc spends
//! less time and memory on that than the system allocator (measured by plinth-bench, and a
//! tenth of the service's CPU went to glibc's `malloc_consolidate` and `free`). Version 2, a
//! crate feature: version 3 keeps freed pages a second by default, which a short command pays
//! for in peak memory. How long freed pages are kept suits each binary: see
//! [`keep_freed_pages`].

use std::ffi::c_long;

pub use mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`, which libmimalloc-sys does not name; it lies between two
/// options it does name, which the assertion checks.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = libmimalloc_sys::mi_option_eager_commit_delay + 1;
const _: () = assert!(libmimalloc_sys::mi_option_use_numa_nodes == PURGE_DELAY + 1);

/// Keeps pages freed for `milliseconds` before they go back to the system (mimalloc's purge
/// delay; its default is 10 ms), unless mimalloc's own `MIMALLOC_PURGE_DELAY` says otherwise.
/// Called first thing in `main`: it holds for the pages freed after it.
pub fn keep_freed_pages(milliseconds: c_long) {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an option of the allocator, which it reads atomically.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, milliseconds) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // The environment variable would override both the default and the setting.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: reads an option of the allocator.
        let read = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        // The purge delay's default, which neither neighbouring option has.
        assert_eq!(read(), 10, "the constant names another option");
        keep_freed_pages(1234);
        assert_eq!(read(), 1234);
    }
}
