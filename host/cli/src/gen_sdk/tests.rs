//! The generator's tests: what the model and the Rust emitter make of schemas with keywords,
//! nested objects, enums, maps, arrays and secrets, and that the code is rustfmt-clean.

use plinth_engine::provider::{
    FunctionSchema, ObjectType, PropertySchema, PropertyType, ProviderInfo, ResourceSchema,
};
use plinth_engine::value::Value;

use super::{GeneratedFile, Lang, Options, generate};

fn prop(name: &str, ty: PropertyType) -> PropertySchema {
    PropertySchema::new(name, ty)
}

fn required(name: &str, ty: PropertyType) -> PropertySchema {
    PropertySchema {
        required: true,
        ..prop(name, ty)
    }
}

/// A provider whose schema uses every kind of type, keywords and colliding names.
fn kitchen_sink() -> ProviderInfo {
    let rule = PropertyType::Object(ObjectType {
        name: Some("Rule".into()),
        description: "A firewall rule.".into(),
        properties: vec![
            required("port", PropertyType::Integer),
            prop(
                "protocol",
                PropertyType::Enum {
                    values: vec!["tcp".into(), "udp".into()],
                },
            ),
            prop("type", PropertyType::String),
        ],
    });
    let firewall = ResourceSchema {
        token: "net:Firewall".into(),
        description: "A firewall.\n\nIt filters packets.".into(),
        inputs: vec![
            PropertySchema {
                description: "The firewall's name.".into(),
                replace_on_change: true,
                ..required("name", PropertyType::String)
            },
            required(
                "rules",
                PropertyType::Array {
                    items: Box::new(rule.clone()),
                },
            ),
            prop(
                "labels",
                PropertyType::Map {
                    values: Box::new(PropertyType::String),
                },
            ),
            PropertySchema {
                secret: true,
                ..prop("token", PropertyType::String)
            },
            PropertySchema {
                default: Some(Value::Integer(3)),
                ..prop("retries", PropertyType::Integer)
            },
            prop("ratio", PropertyType::Number),
            prop("enabled", PropertyType::Boolean),
            prop("extra", PropertyType::Any),
            prop("self", PropertyType::String),
            prop("match", PropertyType::String),
            prop("register", PropertyType::Boolean),
            prop("fooBar", PropertyType::String),
            prop("foo_bar", PropertyType::String),
            prop(
                "settings",
                PropertyType::Object(ObjectType {
                    name: None,
                    description: String::new(),
                    properties: vec![prop(
                        "mode",
                        PropertyType::Enum {
                            values: vec!["0644".into(), "read-only".into()],
                        },
                    )],
                }),
            ),
            prop(
                "a_long_input_name_that_wraps_signatures",
                PropertyType::String,
            ),
        ],
        outputs: vec![
            required("id", PropertyType::String),
            PropertySchema {
                secret: true,
                ..required("token", PropertyType::String)
            },
            prop("first_rule", rule),
            prop(
                "an_output_whose_name_makes_the_chain_too_long",
                PropertyType::Integer,
            ),
        ],
    };
    ProviderInfo {
        name: "net".into(),
        version: "1.2.3".into(),
        description: "Networks.".into(),
        config: Vec::new(),
        resources: vec![
            firewall,
            ResourceSchema {
                token: "net:Empty".into(),
                ..ResourceSchema::default()
            },
        ],
        functions: vec![FunctionSchema {
            token: "net:lookup".into(),
            description: "Looks a host up.".into(),
            inputs: vec![required("host", PropertyType::String)],
            output: PropertyType::Array {
                items: Box::new(PropertyType::String),
            },
        }],
    }
}

fn library(files: &[GeneratedFile]) -> &str {
    &files
        .iter()
        .find(|f| f.path == "src/lib.rs")
        .unwrap()
        .contents
}

fn rust(info: &ProviderInfo) -> (Vec<GeneratedFile>, Vec<String>) {
    generate(info, Lang::Rust, &Options::default())
}

#[test]
fn rust_types_follow_the_schema() {
    let (files, _) = rust(&kitchen_sink());
    let code = library(&files);
    for needle in [
        // Resources: a handle with typed outputs, the token as a constant.
        "pub struct Firewall {",
        "pub const TYPE: &str = \"net:Firewall\";",
        // Required inputs are parameters of `builder`, optional ones setters.
        "name: impl Into<sdk::Input<String>>,",
        "rules: impl Into<sdk::Input<Vec<Rule>>>,",
        "pub fn ratio(mut self, value: impl Into<sdk::Input<f64>>) -> FirewallBuilder {",
        "pub labels: Option<sdk::Input<BTreeMap<String, String>>>,",
        // Secrets stay secret-typed, in inputs and outputs.
        "pub token: Option<sdk::Input<sdk::Secret<String>>>,",
        "pub fn token(&self) -> sdk::Output<sdk::Secret<String>> {",
        "pub ratio: Option<sdk::Input<f64>>,",
        "pub enabled: Option<sdk::Input<bool>>,",
        "pub extra: Option<sdk::Input<sdk::Value>>,",
        // Optional outputs are options.
        "pub fn first_rule(&self) -> sdk::Output<Option<Rule>> {",
        // Nested objects are structs; anonymous ones named after where they are.
        "pub struct Rule {",
        "pub port: i64,",
        "pub protocol: Option<RuleProtocol>,",
        "pub struct FirewallSettings {",
        // Enums are enums, each value renamed to the provider's string.
        "pub enum RuleProtocol {",
        "#[serde(rename = \"tcp\")]\n    Tcp,",
        "#[serde(rename = \"0644\")]\n    V0644,",
        "#[serde(rename = \"read-only\")]\n    ReadOnly,",
        // Descriptions, defaults and replacement are documented.
        "/// The firewall's name.\n    ///\n    /// Changing it replaces the resource.",
        "/// Default: `3`.",
        "/// A firewall.\n///\n/// It filters packets.",
        // Functions are typed calls.
        "pub fn lookup(ctx: &sdk::Context, args: &LookupArgs) -> Result<Vec<String>, sdk::Error> {",
        "ctx.invoke_typed(\"net:lookup\", args)",
        // A resource without inputs.
        "pub struct EmptyArgs {}",
        "args: EmptyArgs {},",
    ] {
        assert!(code.contains(needle), "missing\n{needle}\nin:\n{code}");
    }
}

#[test]
fn keywords_and_collisions_become_valid_distinct_names() {
    let (files, notes) = rust(&kitchen_sink());
    let code = library(&files);
    for needle in [
        // A keyword is a raw identifier, or gets a `_` where it cannot be one.
        "pub r#type: Option<String>,",
        "pub fn r#match(mut self, value: impl Into<sdk::Input<String>>) -> FirewallBuilder {",
        "pub self_: Option<sdk::Input<String>>,",
        // The wire names stay the provider's.
        "#[serde(rename = \"self\", default, skip_serializing_if = \"Option::is_none\")]",
        // Names the SDK uses itself, and names that collide after casing, are renamed.
        "pub register_value: Option<sdk::Input<bool>>,",
        "pub fn id_value(&self) -> sdk::Output<String> {",
        "pub foo_bar: Option<sdk::Input<String>>,",
        "pub foo_bar_2: Option<sdk::Input<String>>,",
        "#[serde(rename = \"fooBar\", default, skip_serializing_if = \"Option::is_none\")]",
    ] {
        assert!(code.contains(needle), "missing\n{needle}\nin:\n{code}");
    }
    let notes = notes.join("\n");
    for needle in ["`register_value`", "`id_value`", "`foo_bar_2`"] {
        assert!(
            notes.contains(needle),
            "missing {needle} in notes:\n{notes}"
        );
    }
}

#[test]
fn long_descriptions_are_wrapped() {
    let mut info = kitchen_sink();
    info.resources[0].description = "word ".repeat(60);
    let (files, _) = rust(&info);
    let code = library(&files);
    assert!(code.lines().all(|l| l.len() <= 100), "{code}");
    assert!(code.contains("/// word word"), "{code}");
}

#[test]
fn generation_is_deterministic_whatever_the_schema_order() {
    let info = kitchen_sink();
    let mut reversed = info.clone();
    reversed.resources.reverse();
    assert_eq!(rust(&info), rust(&reversed));
}

#[test]
fn the_manifest_depends_on_the_sdk_by_path_or_version() {
    let (files, _) = generate(
        &kitchen_sink(),
        Lang::Rust,
        &Options {
            sdk_path: Some("../../sdk-guest".into()),
        },
    );
    let manifest = &files
        .iter()
        .find(|f| f.path == "Cargo.toml")
        .unwrap()
        .contents;
    assert!(manifest.contains("name = \"plinth-net-sdk\""), "{manifest}");
    assert!(
        manifest.contains("plinth-sdk = { path = \"../../sdk-guest\", features = [\"program\"] }"),
        "{manifest}"
    );
    let (files, _) = rust(&kitchen_sink());
    assert!(
        files[0].contents.contains("plinth-sdk = { version = "),
        "{}",
        files[0].contents
    );
}

/// The generated code is as rustfmt writes it.
#[test]
fn rust_code_is_rustfmt_clean() {
    let (files, _) = rust(&kitchen_sink());
    let code = library(&files);
    let mut rustfmt = std::process::Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rustfmt runs (rustup component add rustfmt)");
    std::io::Write::write_all(rustfmt.stdin.as_mut().unwrap(), code.as_bytes()).unwrap();
    let output = rustfmt.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let formatted = String::from_utf8(output.stdout).unwrap();
    if formatted != code {
        let first = (formatted.lines().zip(code.lines()))
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let context = |text: &str| {
            text.lines()
                .skip(first.saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "not rustfmt-clean from line {}:\n--- generated\n{}\n--- rustfmt\n{}",
            first + 1,
            context(code),
            context(&formatted)
        );
    }
}
