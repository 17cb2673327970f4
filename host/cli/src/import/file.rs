//! `plinth import --file`: the resources to import, in Pulumi's format:
//! `{"resources": [{"type": T, "name": N, "id": I, "parent": URN, "provider": URN}]}`.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;

use super::wanted::Wanted;
use plinth_engine::shown::escape_controls;

/// The largest file read: far beyond any list of resources a person writes.
const MAX_BYTES: u64 = 16 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportFile {
    resources: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "type")]
    ty: String,
    name: String,
    id: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    provider: Option<String>,
}

/// The resources `path` lists; an error names the file and the entry that is wrong.
pub fn read(path: &Path) -> Result<Vec<Wanted>> {
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    if size > MAX_BYTES {
        bail!("{}: larger than {MAX_BYTES} bytes", path.display());
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Vec<Wanted>> {
    let file: ImportFile = serde_json::from_str(text).map_err(|e| {
        anyhow!(
            "not an import file ({}); expected {{\"resources\": [{{\"type\", \"name\", \"id\"}}, ...]}}",
            escape_controls(&e.to_string())
        )
    })?;
    if file.resources.is_empty() {
        bail!("`resources` lists nothing to import");
    }
    let mut wanted = Vec::with_capacity(file.resources.len());
    for (i, value) in file.resources.into_iter().enumerate() {
        let entry: Entry = serde_json::from_value(value).map_err(|e| {
            anyhow!(
                "resources[{i}]: {}; each entry has `type`, `name` and `id` (strings), and \
                 optionally `parent` and `provider`",
                escape_controls(&e.to_string())
            )
        })?;
        let want = Wanted {
            ty: entry.ty,
            name: entry.name,
            id: entry.id,
            parent: entry.parent,
            provider: entry.provider,
        };
        want.check()
            .map_err(|e| anyhow!("resources[{i}] ({}): {e}", want.describe()))?;
        wanted.push(want);
    }
    Ok(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_with_their_optional_parent_and_provider() {
        let wanted = parse(
            r#"{"resources": [
                {"type": "random:RandomPet", "name": "pet", "id": "brave-lion"},
                {"type": "postgresql:Role", "name": "app", "id": "app", "parent": "web",
                 "provider": "urn:plinth:dev::p::plinth:providers:postgresql::db"}
            ]}"#,
        )
        .unwrap();
        assert_eq!(wanted.len(), 2);
        assert_eq!(wanted[0].id, "brave-lion");
        assert_eq!(wanted[0].parent, None);
        assert_eq!(wanted[1].parent.as_deref(), Some("web"));
        assert!(wanted[1].provider.as_deref().unwrap().ends_with("::db"));
    }

    #[test]
    fn a_bad_entry_is_named_by_its_place() {
        let error = parse(
            r#"{"resources": [{"type": "random:RandomPet", "name": "a", "id": "x"},
                              {"type": "random:RandomPet", "name": "b"}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("resources[1]:") && error.contains("missing field `id`"),
            "{error}"
        );
        let error = parse(
            r#"{"resources": [{"type": "random:RandomPet", "name": "a", "id": "x", "colour": 1}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("unknown field `colour`"), "{error}");
        let error = parse(r#"{"resources": [{"type": "nocolon", "name": "a", "id": "x"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("resources[0] (nocolon `a` (id `x`)):"),
            "{error}"
        );
        let error =
            parse(r#"{"resources": [{"type": "random:RandomPet", "name": "a\nb", "id": "x"}]}"#)
                .unwrap_err()
                .to_string();
        assert!(
            error.contains("control characters") && !error.contains('\n'),
            "{error}"
        );
    }

    #[test]
    fn a_file_of_another_shape_says_what_is_expected() {
        for text in ["[]", "{}", "not json", r#"{"resources": []}"#] {
            let error = parse(text).unwrap_err().to_string();
            assert!(
                error.contains("expected {\"resources\"") || error.contains("lists nothing"),
                "{text}: {error}"
            );
        }
    }
}
