//! The templates `plinth new` writes, compiled into the binary so that it works offline: each
//! file's text comes from `host/cli/templates/<template>/`, rendered with minijinja. A variable
//! a template names but is not given is an error, never an empty string.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, UndefinedBehavior, Value};

/// The values a template's `{{ … }}` name, by name.
pub type Vars = BTreeMap<String, String>;

/// `(path in the project, text)` of a template's files.
type Files = &'static [(&'static str, &'static str)];

/// `(path, text)` of files under `host/cli/templates/<dir>/`, embedded in the binary.
macro_rules! files {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../templates/", $dir, "/", $path)))),*]
    };
}

/// What a template makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A program on the random provider, whose SDK `plinth new` generates into the project.
    Program,
    /// A provider with its unit tests; no stack.
    Provider,
    /// A policy pack, for `--policy-pack`; no stack.
    PolicyPack,
}

pub struct Template {
    pub name: &'static str,
    /// The guest language's id (`crate::guest::by_id`), for the SDK generated into it.
    pub language: &'static str,
    pub kind: Kind,
    pub description: &'static str,
    files: Files,
}

pub static TEMPLATES: &[Template] = &[
    Template {
        name: "rust",
        language: "rust",
        kind: Kind::Program,
        description: "A program in Rust on the random provider",
        files: files!["rust": "Cargo.toml", "Plinth.yaml", "src/lib.rs", ".gitignore"],
    },
    Template {
        name: "typescript",
        language: "ts",
        kind: Kind::Program,
        description: "A program in TypeScript on the random provider",
        files: files!["typescript": "package.json", "Plinth.yaml", "index.ts"],
    },
    Template {
        name: "python",
        language: "python",
        kind: Kind::Program,
        description: "A program in Python on the random provider",
        files: files!["python": "pyproject.toml", "Plinth.yaml", "main.py"],
    },
    Template {
        name: "rust-provider",
        language: "rust",
        kind: Kind::Provider,
        description: "A typed provider in Rust, with its unit tests",
        files: files!["rust-provider": "Cargo.toml", "src/lib.rs", ".gitignore"],
    },
    Template {
        name: "typescript-provider",
        language: "ts",
        kind: Kind::Provider,
        description: "A typed provider in TypeScript, with its unit tests",
        files: files!["typescript-provider":
            "package.json", "index.ts", "greeting.ts", "greeting.test.ts", "test.mjs"],
    },
    Template {
        name: "python-provider",
        language: "python",
        kind: Kind::Provider,
        description: "A typed provider in Python, with its unit tests",
        files: files!["python-provider":
            "pyproject.toml", "provider.py", "greeting.py", "test_greeting.py"],
    },
    Template {
        name: "rust-policy",
        language: "rust",
        kind: Kind::PolicyPack,
        description: "A policy pack in Rust for the random provider, with its unit tests",
        files: files!["rust-policy": "Cargo.toml", "src/lib.rs", ".gitignore"],
    },
    Template {
        name: "typescript-policy",
        language: "ts",
        kind: Kind::PolicyPack,
        description: "A policy pack in TypeScript for the random provider",
        files: files!["typescript-policy": "package.json", "index.ts"],
    },
    Template {
        name: "python-policy",
        language: "python",
        kind: Kind::PolicyPack,
        description: "A policy pack in Python for the random provider",
        files: files!["python-policy": "pyproject.toml", "rules.py"],
    },
];

/// The template called `name`.
pub fn find(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

/// The names of every template, for messages.
pub fn names() -> String {
    TEMPLATES
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Template {
    /// Each file's path in the project and its text with `vars` substituted.
    pub fn render(&self, vars: &Vars) -> Result<Vec<(&'static str, String)>> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // The files are not HTML: nothing is escaped, the values are checked or quoted before.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // A file keeps its last newline.
        env.set_syntax(
            SyntaxConfig::builder()
                .keep_trailing_newline(true)
                .build()?,
        );
        let vars = Value::from(vars.clone());
        self.files
            .iter()
            .map(|(path, text)| {
                let rendered = env
                    .render_str(text, vars.clone())
                    .with_context(|| format!("template `{}`: cannot render {path}", self.name))?;
                Ok((*path, rendered))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_renders_with_the_variables_new_gives() {
        let vars = Vars::from([
            ("name".into(), "demo".into()),
            ("random".into(), "version: \"0.1.0\"".into()),
            ("rust_sdk".into(), "version = \"0.1.0\"".into()),
        ]);
        for template in TEMPLATES {
            let files = template.render(&vars).unwrap();
            let has_project = files.iter().any(|(p, _)| *p == "Plinth.yaml");
            assert_eq!(
                has_project,
                template.kind == Kind::Program,
                "{}",
                template.name
            );
            for (path, text) in files {
                assert!(!text.contains("{{"), "{}/{path}: {text}", template.name);
            }
        }
    }

    #[test]
    fn a_missing_variable_is_an_error() {
        let err = TEMPLATES[0]
            .render(&Vars::from([("name".into(), "demo".into())]))
            .unwrap_err();
        assert!(format!("{err:#}").contains("cannot render"), "{err:#}");
    }
}
