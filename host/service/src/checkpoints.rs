//! The checkpoints this replica wrote or read last, by the row holding each and that row's
//! version: a begin sends its stack's latest checkpoint, megabytes the database decompresses and
//! sends each time, though it changes only when an update changes the stack. One is taken from
//! here only under the identity the database gives the stack's latest checkpoint at that moment
//! ([`Holder`]): a version written since, or a checkpoint rewritten in place, is read again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::versions::Holder;

/// The most checkpoint bytes kept; one larger is not kept.
const CAPACITY: usize = 64 << 20;

pub(crate) static CHECKPOINTS: Checkpoints = Checkpoints::new(CAPACITY);

pub(crate) struct Checkpoints {
    kept: Mutex<Option<Kept>>,
    capacity: usize,
}

#[derive(Default)]
struct Kept {
    /// One per stack: its latest.
    stacks: HashMap<i64, (Holder, Arc<Vec<u8>>, u64)>,
    size: usize,
    /// Counts uses, for telling which stack's was used least recently.
    uses: u64,
}

impl Checkpoints {
    const fn new(capacity: usize) -> Checkpoints {
        Checkpoints {
            kept: Mutex::new(None),
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Kept>> {
        // Every change leaves whole entries: a panic holding it leaves nothing half done.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The checkpoint of stack `stack` held by `holder`, if kept.
    pub(crate) fn get(&self, stack: i64, holder: &Holder) -> Option<Arc<Vec<u8>>> {
        let mut kept = self.lock();
        let kept = kept.as_mut()?;
        kept.uses += 1;
        let uses = kept.uses;
        let (held, checkpoint, used) = kept.stacks.get_mut(&stack)?;
        (held == holder).then(|| {
            *used = uses;
            checkpoint.clone()
        })
    }

    /// Keeps `checkpoint` as stack `stack`'s, held by `holder`, in place of any other of it.
    pub(crate) fn keep(&self, stack: i64, holder: Holder, checkpoint: Arc<Vec<u8>>) {
        let mut kept = self.lock();
        let kept = kept.get_or_insert_with(Kept::default);
        if let Some((_, old, _)) = kept.stacks.remove(&stack) {
            kept.size -= old.len();
        }
        if checkpoint.len() > self.capacity {
            return;
        }
        while kept.size + checkpoint.len() > self.capacity {
            let oldest = (kept.stacks.iter())
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(stack, _)| *stack)
                .expect("something is kept while the size is over");
            let (_, old, _) = kept.stacks.remove(&oldest).expect("just found");
            kept.size -= old.len();
        }
        kept.uses += 1;
        kept.size += checkpoint.len();
        let uses = kept.uses;
        kept.stacks.insert(stack, (holder, checkpoint, uses));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(version: i64, row: &str) -> Holder {
        Holder {
            version,
            row: row.into(),
        }
    }

    #[test]
    fn a_checkpoint_is_taken_only_under_the_identity_it_was_kept_under() {
        let checkpoints = Checkpoints::new(10);
        let bytes = |n: usize| Arc::new(vec![b'x'; n]);
        checkpoints.keep(1, holder(3, "700"), bytes(4));
        assert_eq!(checkpoints.get(1, &holder(3, "700")).unwrap().len(), 4);
        assert!(
            checkpoints.get(1, &holder(3, "701")).is_none(),
            "rewritten in place"
        );
        assert!(
            checkpoints.get(1, &holder(4, "700")).is_none(),
            "a later version"
        );
        assert!(
            checkpoints.get(2, &holder(3, "700")).is_none(),
            "another stack"
        );

        // One per stack; the stack used least recently goes first; one too large is not kept.
        checkpoints.keep(2, holder(1, "9"), bytes(4));
        checkpoints.get(1, &holder(3, "700"));
        checkpoints.keep(3, holder(1, "9"), bytes(4));
        assert!(checkpoints.get(2, &holder(1, "9")).is_none());
        assert!(checkpoints.get(1, &holder(3, "700")).is_some());
        checkpoints.keep(1, holder(4, "800"), bytes(2));
        assert!(checkpoints.get(1, &holder(3, "700")).is_none(), "replaced");
        checkpoints.keep(3, holder(2, "9"), bytes(11));
        assert!(checkpoints.get(3, &holder(1, "9")).is_none());
        assert_eq!(checkpoints.lock().as_ref().unwrap().size, 2);
    }
}
