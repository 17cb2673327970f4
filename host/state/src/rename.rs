//! Renaming a stack's state: every URN names its stack, and the stack's root is named after it,
//! so a renamed stack's state is the same resources under URNs in the new stack. Secrets stay
//! sealed throughout: a rename needs no key, on the client or on a service.

use std::path::Path;

use plinth_engine::names::StackName;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::{Urn, is_stack_type, stack_urn};

use crate::checkpoint::Checkpoint;
use crate::error::StateError;
use crate::rebuild::KeepSealed;

/// `urn` in stack `to`: the stack part replaced and, for the stack's root, its name
/// (`<project>-<stack>`) too.
fn in_stack(urn: &Urn, to: &StackName) -> Urn {
    if is_stack_type(urn.ty()) {
        return stack_urn(urn.project(), to);
    }
    Urn::new(to, urn.project(), None, urn.qualified_type(), urn.name())
}

/// Moves every resource of `snapshot` (and of its pending operations) into stack `to`: their
/// URNs, and the URNs they refer to (parent, dependencies, provider).
pub fn rename_snapshot(snapshot: &mut Snapshot, to: &StackName) {
    let states = (snapshot.resources.iter_mut()).chain(
        snapshot
            .pending_operations
            .iter_mut()
            .map(|op| &mut op.resource),
    );
    for state in states {
        state.urn = in_stack(&state.urn, to);
        if let Some(parent) = &mut state.parent {
            *parent = in_stack(parent, to);
        }
        for dependency in &mut state.dependencies {
            *dependency = in_stack(dependency, to);
        }
        if let Some(provider) = &mut state.provider {
            provider.urn = in_stack(&provider.urn, to);
        }
    }
}

/// Checkpoint `bytes` of stack `from` (named `origin` in errors) as the checkpoint of stack
/// `to`: the same state, moved ([`rename_snapshot`]), its secrets sealed as they were. A
/// checkpoint of another stack than `from` is refused.
pub fn renamed_checkpoint(
    bytes: &[u8],
    from: &StackName,
    to: &StackName,
    origin: &Path,
) -> Result<Vec<u8>, StateError> {
    let checkpoint = Checkpoint::parse(bytes, from, origin, &KeepSealed)?;
    renamed(checkpoint, to)
}

/// A checkpoint of a version of stack `to`'s history, which may have been written while the
/// stack had another name, moved into `to` if so; one of another project is refused (with
/// [`StateError::OtherStack`]).
pub fn version_as_stack(
    bytes: &[u8],
    project: &str,
    to: &StackName,
    origin: &Path,
) -> Result<Vec<u8>, StateError> {
    let checkpoint = Checkpoint::parse_any_stack(bytes, origin, &KeepSealed)?;
    if checkpoint.stack == *to {
        return Ok(bytes.to_vec());
    }
    if checkpoint.project.as_str() != project {
        return Err(StateError::OtherStack {
            path: origin.to_owned(),
            found: format!("{}/{}", checkpoint.project, checkpoint.stack),
            stack: to.to_string(),
        });
    }
    let checkpoint = Checkpoint::parse(bytes, &checkpoint.stack, origin, &KeepSealed)?;
    renamed(checkpoint, to)
}

fn renamed(mut checkpoint: Checkpoint, to: &StackName) -> Result<Vec<u8>, StateError> {
    rename_snapshot(&mut checkpoint.snapshot, to);
    checkpoint.stack = to.clone();
    checkpoint.to_json(&KeepSealed)
}

#[cfg(test)]
mod tests {
    use plinth_engine::names::ProjectName;
    use plinth_engine::resource::{ProviderRef, ResourceState};
    use plinth_engine::urn::provider_type;
    use plinth_engine::value::Value;

    use super::*;
    use crate::secrets::Crypter;

    fn state(urn: Urn, ty: &str) -> ResourceState {
        ResourceState {
            urn,
            ty: ty.into(),
            custom: true,
            id: "id".into(),
            inputs: Default::default(),
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

    /// A root, a provider, a component under the root and a resource under the component that
    /// depends on a third, with a sealed secret.
    fn snapshot() -> Snapshot {
        let root = stack_urn("p", "dev");
        let mut stack = state(root.clone(), plinth_engine::urn::STACK_TYPE);
        stack.custom = false;
        stack.id.clear();
        let provider = state(
            Urn::new("dev", "p", None, &provider_type("t"), "default"),
            &provider_type("t"),
        );
        let mut component = state(Urn::new("dev", "p", None, "c:C", "web"), "c:C");
        component.custom = false;
        component.id.clear();
        component.parent = Some(root.clone());
        let mut other = state(Urn::new("dev", "p", None, "t:T", "other"), "t:T");
        other.parent = Some(root);
        let mut child = state(Urn::new("dev", "p", Some("c:C"), "t:T", "child"), "t:T");
        child.parent = Some(component.urn.clone());
        child.dependencies = vec![other.urn.clone()];
        child.provider = Some(ProviderRef {
            urn: provider.urn.clone(),
            id: "id".into(),
        });
        child.inputs.insert(
            "token".into(),
            Value::Secret(Box::new(Value::String("sealed-as-is".into()))),
        );
        Snapshot {
            resources: vec![stack, provider, component, other, child],
            pending_operations: vec![],
        }
    }

    #[test]
    fn every_urn_moves_to_the_new_stack_and_the_root_takes_its_name() {
        let mut renamed = snapshot();
        let prod = StackName::new("prod").unwrap();
        rename_snapshot(&mut renamed, &prod);
        renamed.verify_integrity().unwrap();
        let urns: Vec<&str> = renamed.resources.iter().map(|r| r.urn.as_str()).collect();
        assert_eq!(
            urns,
            [
                "urn:plinth:prod::p::plinth:plinth:Stack::p-prod",
                "urn:plinth:prod::p::plinth:providers:t::default",
                "urn:plinth:prod::p::c:C::web",
                "urn:plinth:prod::p::t:T::other",
                "urn:plinth:prod::p::c:C$t:T::child",
            ]
        );
        let child = &renamed.resources[4];
        assert_eq!(child.parent.as_ref(), Some(&renamed.resources[2].urn));
        assert_eq!(child.dependencies, [renamed.resources[3].urn.clone()]);
        assert_eq!(
            child.provider.as_ref().map(|p| &p.urn),
            Some(&renamed.resources[1].urn)
        );
        assert_eq!(renamed.resources[2].parent, Some(stack_urn("p", "prod")));
        // Nothing else changed.
        let mut back = renamed.clone();
        rename_snapshot(&mut back, &StackName::new("dev").unwrap());
        assert_eq!(back, snapshot());
    }

    /// Seals by prefixing, so that a test sees whether a value was sealed again.
    struct Prefix;
    impl Crypter for Prefix {
        fn seal(&self, plaintext: &str) -> Result<String, crate::secrets::SecretsError> {
            Ok(format!("sealed:{plaintext}"))
        }
        fn open(&self, sealed: &str) -> Result<String, crate::secrets::SecretsError> {
            Ok(sealed.strip_prefix("sealed:").unwrap_or(sealed).to_owned())
        }
    }

    #[test]
    fn a_checkpoint_is_renamed_with_its_secrets_sealed_as_they_were() {
        let (p, dev, prod) = (
            ProjectName::new("p").unwrap(),
            StackName::new("dev").unwrap(),
            StackName::new("prod").unwrap(),
        );
        let bytes = Checkpoint::new(&p, &dev, snapshot())
            .to_json(&Prefix)
            .unwrap();
        let origin = Path::new("test");
        let renamed = renamed_checkpoint(&bytes, &dev, &prod, origin).unwrap();
        let text = String::from_utf8(renamed.clone()).unwrap();
        assert!(text.contains("\"sealed:"), "{text}");
        assert!(!text.contains("urn:plinth:dev::"), "{text}");
        let back = Checkpoint::parse(&renamed, &prod, origin, &Prefix).unwrap();
        assert_eq!(back.stack, prod);
        assert_eq!(
            back.snapshot.resources[4].inputs["token"],
            Value::Secret(Box::new(Value::String("sealed-as-is".into())))
        );
        // Another stack's checkpoint is refused.
        assert!(matches!(
            renamed_checkpoint(&bytes, &prod, &dev, origin),
            Err(StateError::OtherStack { .. })
        ));
        // A version written under the old name is taken as the stack's, another project's not.
        let version = version_as_stack(&bytes, "p", &prod, origin).unwrap();
        assert_eq!(version, renamed);
        assert_eq!(
            version_as_stack(&renamed, "p", &prod, origin).unwrap(),
            renamed
        );
        assert!(matches!(
            version_as_stack(&bytes, "q", &prod, origin),
            Err(StateError::OtherStack { .. })
        ));
    }
}
