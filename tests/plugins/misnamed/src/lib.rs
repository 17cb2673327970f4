//! A provider that calls itself by a name that would print a line of its own on a terminal:
//! plinth must refuse the name and show it escaped, wherever the plugin is installed, inspected
//! or loaded.

use plinth_sdk::{Provider, ResourceType};

/// A newline, then what a terminal would show as a line of plinth's own, then an erase-line.
pub const NAME: &str = "misnamed\n[fake] created\u{1b}[2K";

#[derive(Default)]
struct Misnamed;

impl Provider for Misnamed {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn resource_types(&self) -> Vec<Box<dyn ResourceType>> {
        Vec::new()
    }
}

plinth_sdk::export_provider!(Misnamed);
