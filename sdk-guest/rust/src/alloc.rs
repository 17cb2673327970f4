//! A cache of small blocks in front of the system allocator, the global allocator of Rust guests
//! (feature `allocator`, on by default).
//!
//! A provider call moves a handful of small strings and lists across the component boundary, and
//! each one is allocated and freed once. On `wasm32-wasip2` each of those goes through four
//! layers down to wasi-libc's dlmalloc, which costs over 400 instructions a pair: a fifth of a
//! whole `check`. Freed small blocks are kept on a free list per size class instead and handed
//! out again, which costs a few dozen instructions. The lists are bounded, at 8 KiB of free
//! blocks per class (48 KiB in all); bigger blocks, and blocks freed past the bound, go to the
//! system allocator as before. Blocks are never shared between threads: a `wasm32-wasip2` guest
//! has exactly one.
//!
//! A guest that wants another global allocator turns the feature off
//! (`default-features = false`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// The block sizes of the classes, smallest first; each holds a free-list link. The biggest
/// fits a leaf of a [`PropertyMap`](crate::PropertyMap) on wasm32.
const CLASSES: [usize; 6] = [16, 32, 64, 128, 256, 512];

/// The most memory the free blocks of one class may hold.
const CLASS_BYTES: usize = 8 * 1024;

/// Blocks kept in `class`'s list at most.
fn max_cached(class: usize) -> usize {
    CLASS_BYTES / CLASSES[class]
}

/// The alignment every block of a class has: what the system allocator gives by plain `malloc`
/// on every target (wasm32 and 64-bit hosts alike). Stricter requests bypass the cache.
const BLOCK_ALIGN: usize = 8;

/// The class of a request, if the cache serves it.
fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > BLOCK_ALIGN {
        return None;
    }
    CLASSES.iter().position(|&size| layout.size() <= size)
}

/// The layout a block of class `class` is allocated with from the system.
fn block_layout(class: usize) -> Layout {
    Layout::from_size_align(CLASSES[class], BLOCK_ALIGN).expect("the classes are valid layouts")
}

/// The free blocks of one class: a singly linked list through the blocks' first word.
#[derive(Clone, Copy)]
struct FreeList {
    head: *mut u8,
    len: usize,
}

/// The free lists of all classes. Not synchronized: see [`SmallBlocks`]'s `Sync`.
struct SmallBlocks {
    lists: UnsafeCell<[FreeList; CLASSES.len()]>,
}

impl SmallBlocks {
    /// An empty cache.
    const fn new() -> SmallBlocks {
        SmallBlocks {
            lists: UnsafeCell::new(
                [FreeList {
                    head: ptr::null_mut(),
                    len: 0,
                }; CLASSES.len()],
            ),
        }
    }

    /// The free list of `class`.
    ///
    /// # Safety
    /// No other reference to the lists may be alive: the cache is used by one thread.
    #[allow(clippy::mut_from_ref)]
    unsafe fn list(&self, class: usize) -> &mut FreeList {
        // SAFETY: the caller guarantees exclusive access.
        unsafe { &mut (*self.lists.get())[class] }
    }
}

// SAFETY: the global instance is only installed on wasm32 without the `atomics` feature, where a
// guest has exactly one thread; tests use their own instance from one thread.
unsafe impl Sync for SmallBlocks {}

// SAFETY: every block of a class is allocated from the system with the class's size and
// `BLOCK_ALIGN`, which satisfy any request mapped to that class. A block is on at most one free
// list, and only while it is free. Even a block freed with a smaller size than it was allocated
// with (which the allocator contract forbids, but which glue code freeing a string by its length
// could do, and which dlmalloc tolerates) lands in a class no bigger than the block, so it still
// fits every request of that list; the system allocator frees by address and ignores the size.
unsafe impl GlobalAlloc for SmallBlocks {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            // SAFETY: the caller's layout, passed on.
            return unsafe { System.alloc(layout) };
        };
        // SAFETY: one thread (see `Sync`); the block at `head` is free and holds the link.
        unsafe {
            let list = self.list(class);
            if list.head.is_null() {
                return System.alloc(block_layout(class));
            }
            let block = list.head;
            list.head = block.cast::<*mut u8>().read();
            list.len -= 1;
            block
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: allocated from the system with this layout (see `alloc`).
            return unsafe { System.dealloc(block, layout) };
        };
        // SAFETY: one thread; the block is of this class (same layout as at `alloc`), at least a
        // pointer long and aligned for one, and no longer used by the caller.
        unsafe {
            let list = self.list(class);
            if list.len == max_cached(class) {
                return System.dealloc(block, block_layout(class));
            }
            block.cast::<*mut u8>().write(list.head);
            list.head = block;
            list.len += 1;
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees a valid new size for this alignment.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (class_of(layout), class_of(new_layout)) {
            // The block is already big enough.
            (Some(old), Some(new)) if old == new => block,
            // SAFETY: a system block stays one; the system may grow it in place.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            // SAFETY: a new block of the right kind, the contents copied, the old one freed.
            _ => unsafe {
                let moved = self.alloc(new_layout);
                if !moved.is_null() {
                    ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                    self.dealloc(block, layout);
                }
                moved
            },
        }
    }
}

#[cfg(all(
    feature = "allocator",
    target_arch = "wasm32",
    not(target_feature = "atomics")
))]
#[global_allocator]
static GLOBAL: SmallBlocks = SmallBlocks::new();

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    fn cached(cache: &SmallBlocks, class: usize) -> usize {
        unsafe { cache.list(class).len }
    }

    #[test]
    fn requests_map_to_the_smallest_class_that_fits() {
        assert_eq!(class_of(layout(0, 1)), Some(0));
        assert_eq!(class_of(layout(16, 8)), Some(0));
        assert_eq!(class_of(layout(17, 1)), Some(1));
        assert_eq!(class_of(layout(128, 4)), Some(3));
        assert_eq!(class_of(layout(512, 8)), Some(5));
        assert_eq!(class_of(layout(513, 1)), None);
        assert_eq!(class_of(layout(8, 16)), None);
    }

    #[test]
    fn a_freed_block_is_handed_out_again_for_its_class() {
        let cache = SmallBlocks::new();
        unsafe {
            let a = cache.alloc(layout(24, 8));
            a.write_bytes(0xAB, 24);
            cache.dealloc(a, layout(24, 8));
            assert_eq!(cached(&cache, 1), 1);
            // Another size of the same class gets the same block.
            let b = cache.alloc(layout(20, 4));
            assert_eq!(a, b);
            assert_eq!(cached(&cache, 1), 0);
            // Another class does not.
            let c = cache.alloc(layout(10, 1));
            assert_ne!(c, b);
            cache.dealloc(b, layout(20, 4));
            cache.dealloc(c, layout(10, 1));
        }
    }

    #[test]
    fn blocks_are_distinct_and_keep_their_contents() {
        let cache = SmallBlocks::new();
        let sizes = [1, 7, 16, 17, 33, 64, 100, 128, 129, 300, 512, 513, 4096];
        unsafe {
            for round in 0..3u8 {
                let blocks: Vec<_> = sizes
                    .iter()
                    .map(|&size| {
                        let block = cache.alloc(layout(size, 1));
                        assert!(!block.is_null());
                        assert_eq!(block as usize % BLOCK_ALIGN, 0);
                        block.write_bytes(size as u8 ^ round, size);
                        block
                    })
                    .collect();
                for (&block, &size) in blocks.iter().zip(&sizes) {
                    let bytes = std::slice::from_raw_parts(block, size);
                    assert!(bytes.iter().all(|&b| b == size as u8 ^ round));
                }
                for (&block, &size) in blocks.iter().zip(&sizes) {
                    cache.dealloc(block, layout(size, 1));
                }
            }
        }
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = SmallBlocks::new();
        for (class, &size) in CLASSES.iter().enumerate() {
            let block_layout = layout(size, 8);
            unsafe {
                let blocks: Vec<_> = (0..max_cached(class) + 10)
                    .map(|_| cache.alloc(block_layout))
                    .collect();
                for block in blocks {
                    cache.dealloc(block, block_layout);
                }
            }
            assert_eq!(cached(&cache, class) * size, CLASS_BYTES);
        }
    }

    #[test]
    fn realloc_keeps_the_contents_across_classes_and_to_the_system() {
        let cache = SmallBlocks::new();
        unsafe {
            let mut block = cache.alloc(layout(4, 4));
            block.write_bytes(7, 4);
            let mut size = 4;
            // Within a class, then across classes, then beyond them, and back down.
            for new_size in [12, 16, 40, 128, 300, 5000, 90, 8] {
                let moved = cache.realloc(block, layout(size, 4), new_size);
                assert!(!moved.is_null());
                let kept = size.min(new_size).min(4);
                assert!(
                    std::slice::from_raw_parts(moved, kept)
                        .iter()
                        .all(|&b| b == 7)
                );
                if class_of(layout(size, 4)) == class_of(layout(new_size, 4))
                    && class_of(layout(size, 4)).is_some()
                {
                    assert_eq!(moved, block);
                }
                block = moved;
                size = new_size;
            }
            cache.dealloc(block, layout(size, 4));
        }
    }

    #[test]
    fn a_block_freed_by_a_smaller_size_serves_its_smaller_class() {
        let cache = SmallBlocks::new();
        unsafe {
            // Blocks of 100 and 1000 bytes freed as if they had 10 and 50.
            for (capacity, len) in [(100, 10), (1000, 50)] {
                let block = cache.alloc(layout(capacity, 1));
                cache.dealloc(block, layout(len, 1));
                let again = cache.alloc(layout(len, 1));
                assert_eq!(again, block);
                again.write_bytes(1, len);
                cache.dealloc(again, layout(len, 1));
            }
        }
    }

    #[test]
    fn strict_alignments_go_to_the_system() {
        let cache = SmallBlocks::new();
        unsafe {
            let block = cache.alloc(layout(32, 64));
            assert_eq!(block as usize % 64, 0);
            cache.dealloc(block, layout(32, 64));
        }
        assert!((0..CLASSES.len()).all(|class| cached(&cache, class) == 0));
    }
}
