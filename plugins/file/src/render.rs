//! Rendering `file:Template`: Jinja-style templates (minijinja) in which every variable used must
//! be given. Whitespace is kept as written, trailing newline included, and nothing is escaped
//! unless the template says so (`{{ title | e }}`).

use std::collections::BTreeMap;

use minijinja::syntax::SyntaxConfig;
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use plinth_sdk::{PropertyMap, Value};

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RenderError {
    /// The template is malformed: the fault of the `template` input.
    Template(String),
    /// The template uses variables that `vars` does not give (dotted for attributes).
    Missing(Vec<String>),
    /// Rendering failed for another reason, such as a filter given the wrong kind of value.
    Render(String),
}

/// Checks that `template` parses, before its variables are known.
pub(crate) fn parse(template: &str) -> Result<(), RenderError> {
    environment()
        .template_from_str(template)
        .map(|_| ())
        .map_err(|e| RenderError::Template(describe(&e)))
}

/// Renders `template` with `vars`; a variable the template uses and `vars` lacks is an error.
pub(crate) fn render(template: &str, vars: &PropertyMap) -> Result<String, RenderError> {
    let env = environment();
    let compiled = env
        .template_from_str(template)
        .map_err(|e| RenderError::Template(describe(&e)))?;
    let context: BTreeMap<String, minijinja::Value> = vars
        .iter()
        .map(|(name, value)| (name.clone(), template_value(value)))
        .collect();
    compiled.render(context).map_err(|e| {
        if e.kind() == ErrorKind::UndefinedError {
            let mut missing: Vec<String> = compiled
                .undeclared_variables(true)
                .into_iter()
                .filter(|name| !given(vars, name))
                .collect();
            if !missing.is_empty() {
                missing.sort();
                return RenderError::Missing(missing);
            }
        }
        RenderError::Render(describe(&e))
    })
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    // A file's last newline is part of its content; Jinja drops it by default.
    if let Ok(syntax) = SyntaxConfig::builder().keep_trailing_newline(true).build() {
        env.set_syntax(syntax);
    }
    env
}

/// True if `vars` holds the (possibly dotted) name, or the name is one of the template
/// engine's own globals (such as `range`).
fn given(vars: &PropertyMap, name: &str) -> bool {
    let mut parts = name.split('.');
    let Some(first) = parts.next() else {
        return false;
    };
    let Some(mut value) = vars.get(first) else {
        return environment().globals().any(|(global, _)| global == first);
    };
    for part in parts {
        match value.get(part) {
            Some(inner) => value = inner,
            None => return false,
        }
    }
    true
}

/// A property value as the template sees it. Whole numbers render without a fraction (`8080`,
/// not `8080.0`); secrets render as their plaintext, since the file needs it.
fn template_value(value: &Value) -> minijinja::Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if let Some(b) = value.as_bool() {
        b.into()
    } else if let Some(n) = value.as_f64() {
        if n.fract() == 0.0 && n.abs() <= EXACT {
            (n as i64).into()
        } else {
            n.into()
        }
    } else if let Some(s) = value.as_str() {
        s.into()
    } else if let Some(items) = value.as_array() {
        items.iter().map(template_value).collect::<Vec<_>>().into()
    } else if let Some(map) = value.as_object() {
        map.iter()
            .map(|(k, v)| (k.clone(), template_value(v)))
            .collect::<BTreeMap<_, _>>()
            .into()
    } else if value.is_null() {
        minijinja::Value::from(())
    } else {
        // Unknown values never reach rendering: the caller renders only known inputs.
        minijinja::Value::UNDEFINED
    }
}

/// A template error as one line: what went wrong and where.
fn describe(error: &minijinja::Error) -> String {
    let what = match error.detail() {
        Some(detail) => format!("{}: {detail}", error.kind()),
        None => error.kind().to_string(),
    };
    match error.line() {
        Some(line) => format!("line {line}: {what}"),
        None => what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(entries: &[(&str, Value)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn renders_placeholders_and_keeps_the_last_newline() {
        let out = render(
            "<h1>{{ title }}</h1>\nport={{ port }} ratio={{ ratio }}\n",
            &vars(&[
                ("title", "Hi".into()),
                ("port", 8080.into()),
                ("ratio", 0.5.into()),
            ]),
        );
        assert_eq!(out.unwrap(), "<h1>Hi</h1>\nport=8080 ratio=0.5\n");
    }

    #[test]
    fn renders_lists_objects_filters_and_secrets() {
        let out = render(
            "{% for p in pages %}{{ p.name | upper }};{% endfor %}{{ key }}",
            &vars(&[
                (
                    "pages",
                    Value::Array(vec![
                        Value::object([("name", "home")]),
                        Value::object([("name", "about")]),
                    ]),
                ),
                ("key", Value::secret("s3cret")),
            ]),
        );
        assert_eq!(out.unwrap(), "HOME;ABOUT;s3cret");
    }

    #[test]
    fn nothing_is_escaped_unless_asked() {
        let v = vars(&[("x", "<b>&</b>".into())]);
        assert_eq!(render("{{ x }}", &v).unwrap(), "<b>&</b>");
        assert_eq!(
            render("{{ x | e }}", &v).unwrap(),
            "&lt;b&gt;&amp;&lt;&#x2f;b&gt;"
        );
    }

    #[test]
    fn unknown_variables_are_named() {
        let err = render(
            "{{ title }} {{ site.name }} {{ given }}",
            &vars(&[("given", 1.into()), ("site", Value::object([("other", 1)]))]),
        );
        assert_eq!(
            err,
            Err(RenderError::Missing(vec![
                "site.name".into(),
                "title".into()
            ]))
        );
    }

    #[test]
    fn defaults_and_globals_are_not_missing() {
        let out = render(
            "{{ missing | default('none') }}{% for i in range(2) %}{{ i }}{% endfor %}",
            &vars(&[]),
        );
        assert_eq!(out.unwrap(), "none01");
    }

    #[test]
    fn syntax_errors_blame_the_template() {
        let err = parse("line one\n{{ unclosed").unwrap_err();
        match err {
            RenderError::Template(message) => {
                assert!(message.starts_with("line 2: syntax error"), "{message}")
            }
            other => panic!("expected a template error, got {other:?}"),
        }
        assert!(parse("{% if x %}ok{% endif %}").is_ok());
    }
}
