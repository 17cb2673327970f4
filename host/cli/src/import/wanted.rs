//! One resource to import, as the command line or an import file names it.

use plinth_engine::resource::is_recordable_id;
use plinth_engine::shown::escape_controls;
use plinth_engine::urn::{check_type_token, is_stack_type, provided_package};

/// One resource to import.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub ty: String,
    pub name: String,
    pub id: String,
    /// A URN or a name of a resource in the state.
    pub parent: Option<String>,
    pub provider: Option<String>,
}

impl Wanted {
    /// How errors name it: its type, name and id, escaped.
    pub fn describe(&self) -> String {
        format!(
            "{} `{}` (id `{}`)",
            escape_controls(&self.ty),
            escape_controls(&self.name),
            escape_controls(&self.id)
        )
    }

    /// Refuses what no resource to import can be.
    pub(super) fn check(&self) -> Result<(), String> {
        check_type_token(&self.ty).map_err(|e| e.to_string())?;
        if provided_package(&self.ty).is_some() || is_stack_type(&self.ty) {
            return Err(format!(
                "`{}` is plinth's own type, which is not imported",
                escape_controls(&self.ty)
            ));
        }
        if self.name.is_empty() || self.name.contains(char::is_control) {
            return Err("the name must be non-empty, without control characters".to_owned());
        }
        if self.id.is_empty() || !is_recordable_id(&self.id) {
            return Err("the id must be non-empty, without control characters".to_owned());
        }
        Ok(())
    }
}
