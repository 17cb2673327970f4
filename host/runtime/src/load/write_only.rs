//! The optional `plinth:inputs/write-only` interface: the inputs a provider marks write-only,
//! read once when it starts and set on its schema (`write_only_version`), which the engine
//! honours. A provider that does not export it has no write-only inputs.

use plinth_engine::provider::ProviderInfo;
use wasmtime::Store;
use wasmtime::component::{ComponentExportIndex, ComponentType, Instance, Lift};

use crate::sandbox::Sandbox;

/// The interface, as a component exports it.
const INTERFACE: &str = "plinth:inputs/write-only@0.1.0";
/// Its one function.
const FUNCTION: &str = "write-only-inputs";
/// The call, as errors name it.
pub(crate) const OPERATION: &str = "write-only-inputs";

/// One write-only input, as the guest states it.
#[derive(Debug, Clone, ComponentType, Lift)]
#[component(record)]
pub(crate) struct WriteOnlyInput {
    #[component(name = "type")]
    ty: String,
    name: String,
    version: String,
}

/// Where `component` exports the function, if it does.
pub(crate) fn export_index(
    component: &wasmtime::component::Component,
) -> Option<ComponentExportIndex> {
    let interface = component.get_export_index(None, INTERFACE)?;
    component.get_export_index(Some(&interface), FUNCTION)
}

/// Asks `instance` for its write-only inputs; the function is at `index`.
pub(crate) async fn read(
    store: &mut Store<Sandbox>,
    instance: &Instance,
    index: &ComponentExportIndex,
) -> wasmtime::Result<Vec<WriteOnlyInput>> {
    let function = instance.get_typed_func::<(), (Vec<WriteOnlyInput>,)>(&mut *store, index)?;
    let (inputs,) = function.call_async(&mut *store, ()).await?;
    Ok(inputs)
}

/// Marks `inputs` on `info`'s resource schemas: write-only, paired with their version, and
/// secret (so that whatever carries one masks it). A mark that names no declared type or input,
/// or a version that is not a recordable input, is an error: a broken plugin, refused before it
/// is sent anything. The message quotes the guest's names unescaped: the caller escapes it.
pub(crate) fn apply(info: &mut ProviderInfo, inputs: Vec<WriteOnlyInput>) -> Result<(), String> {
    for mark in inputs {
        let Some(resource) = info.resources.iter_mut().find(|r| r.token == mark.ty) else {
            return Err(format!(
                "`{OPERATION}` names the resource type {}, which `info` does not declare",
                mark.ty
            ));
        };
        let Some(input) = resource.inputs.iter_mut().find(|p| p.name == mark.name) else {
            return Err(format!(
                "`{OPERATION}` names the input {} of {}, which `info` does not declare",
                mark.name, mark.ty
            ));
        };
        input.write_only_version = Some(mark.version);
        input.secret = true;
    }
    info.resources.iter().try_for_each(|r| r.check_write_only())
}

#[cfg(test)]
mod tests {
    use super::*;
    use plinth_engine::provider::{PropertySchema, PropertyType, ResourceSchema};

    fn info() -> ProviderInfo {
        let input = |name: &str| PropertySchema::new(name, PropertyType::String);
        ProviderInfo {
            resources: vec![ResourceSchema {
                token: "pg:Role".into(),
                inputs: vec![input("passwordWo"), input("passwordWoVersion")],
                ..ResourceSchema::default()
            }],
            ..ProviderInfo::default()
        }
    }

    fn mark(ty: &str, name: &str, version: &str) -> WriteOnlyInput {
        WriteOnlyInput {
            ty: ty.into(),
            name: name.into(),
            version: version.into(),
        }
    }

    #[test]
    fn a_mark_makes_the_input_write_only_and_secret() {
        let mut info = info();
        apply(
            &mut info,
            vec![mark("pg:Role", "passwordWo", "passwordWoVersion")],
        )
        .unwrap();
        let input = &info.resources[0].inputs[0];
        assert_eq!(
            input.write_only_version.as_deref(),
            Some("passwordWoVersion")
        );
        assert!(input.secret);
    }

    #[test]
    fn marks_of_what_info_does_not_declare_are_refused() {
        let refused = |m| apply(&mut info(), vec![m]).unwrap_err();
        assert!(refused(mark("pg:Nope", "passwordWo", "passwordWoVersion")).contains("pg:Nope"));
        assert!(refused(mark("pg:Role", "nope", "passwordWoVersion")).contains("input nope"));
        assert!(refused(mark("pg:Role", "passwordWo", "nope")).contains("not an input"));
    }
}
