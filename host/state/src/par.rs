//! Collecting fallible parallel work into vectors sized once.
//!
//! Rayon collects an `Option<Vec<_>>` or a `Result<Vec<_>, _>` as an iterator of unknown
//! length: a vector per split, grown by doubling, then all moved into one. At 100,000 resources
//! moving them through fresh pages took longer than parsing them. These collect every item once,
//! in its place, then keep that allocation (std collects a `Vec` of `Option`s or `Result`s into
//! a `Vec` of their values in place).

use rayon::prelude::*;

/// Every item of `items`, in order, or `None` if one is `None`.
pub(crate) fn collect_some<T: Send>(
    items: impl IndexedParallelIterator<Item = Option<T>>,
) -> Option<Vec<T>> {
    all_some(items.collect())
}

/// Every item of `items`, in order, or the first error in their order (not the first found).
pub(crate) fn collect_ok<T: Send, E: Send>(
    items: impl IndexedParallelIterator<Item = Result<T, E>>,
) -> Result<Vec<T>, E> {
    let items: Vec<_> = items.collect();
    items.into_iter().collect()
}

/// The values of `items` if none is `None`.
pub(crate) fn all_some<T>(items: Vec<Option<T>>) -> Option<Vec<T>> {
    items.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_in_order_or_the_first_failure_in_order() {
        let items: Vec<u32> = (0..10_000).collect();
        let squares = collect_some(items.par_iter().map(|i| Some(i * i))).unwrap();
        assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(
            collect_some(items.par_iter().map(|&i| (i != 7_000).then_some(i))),
            None
        );

        let failing = |i: &u32| match i % 3_000 == 2_999 {
            true => Err(*i),
            false => Ok(*i),
        };
        assert_eq!(collect_ok(items.par_iter().map(failing)), Err(2_999));
        assert_eq!(
            collect_ok(items.par_iter().map(|&i| Ok::<_, ()>(i))).unwrap(),
            items
        );
    }
}
