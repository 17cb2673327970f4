//! Functions that touch the plugin's file system, so that tests can check what a grant allows:
//!
//! - `testkit:readFile` `{path}` returns the file's contents as a string;
//! - `testkit:writeFile` `{path, content}` writes it and returns null.
//!
//! Both fail with the I/O error the sandbox gave.

use plinth_sdk::{PropertyMap, ProviderError, Value};

pub(crate) const READ_FILE: &str = "testkit:readFile";
pub(crate) const WRITE_FILE: &str = "testkit:writeFile";

/// Calls the function `token`.
pub(crate) fn invoke(token: &str, args: &PropertyMap) -> Result<Value, ProviderError> {
    match token {
        READ_FILE => {
            let path = string(args, "path")?;
            std::fs::read_to_string(path)
                .map(Value::from)
                .map_err(|e| ProviderError::failed(format!("reading {path}: {e}")))
        }
        WRITE_FILE => {
            let path = string(args, "path")?;
            std::fs::write(path, string(args, "content")?)
                .map(|()| Value::Null)
                .map_err(|e| ProviderError::failed(format!("writing {path}: {e}")))
        }
        other => Err(ProviderError::UnknownType(other.to_owned())),
    }
}

fn string<'a>(args: &'a PropertyMap, key: &str) -> Result<&'a str, ProviderError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::invalid(key, "a string is required"))
}
