//! States and journal entries built by hand, for tests of what stores them.

use plinth_engine::journal::JournalEntry;
use plinth_engine::resource::ResourceState;
use plinth_engine::snapshot::PendingKind;
use plinth_engine::urn::Urn;
use plinth_engine::value::PropertyMap;

/// A custom resource `name` of type `t:T` in stack `dev` of project `p`, with `inputs`.
pub fn resource(name: &str, inputs: PropertyMap) -> ResourceState {
    ResourceState {
        urn: Urn::new("dev", "p", None, "t:T", name),
        ty: "t:T".into(),
        custom: true,
        id: format!("{name}-1"),
        inputs,
        outputs: Default::default(),
        parent: None,
        dependencies: vec![],
        protect: false,
        retain_on_delete: false,
        delete: false,
        provider: None,
        custom_timeouts: None,
    }
}

/// The journal entries of creating `resource` as operation `seq`: begun, and done unless
/// `interrupted`.
pub fn creating(seq: u64, resource: &ResourceState, interrupted: bool) -> Vec<JournalEntry> {
    let mut entries = vec![JournalEntry::Begin {
        seq,
        kind: PendingKind::Creating,
        resource: resource.clone(),
        old: None,
    }];
    if !interrupted {
        entries.push(JournalEntry::Created {
            seq,
            resource: resource.clone(),
            replaces: None,
        });
    }
    entries
}
