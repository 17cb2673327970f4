//! The generated code of each language: the SDK's names, escaped identifiers, literals of every
//! kind of value, secrets never written, and hostile strings that stay inert (the Python and
//! JavaScript are parsed by their own parsers; the e2e tests build all three languages).

use std::io::Write as _;
use std::process::{Command, Stdio};

use plinth_engine::provider::{
    ObjectType, PropertySchema, PropertyType, ProviderInfo, ResourceSchema,
};
use plinth_engine::value::{PropertyMap, Value};

use super::{Code, Declaration, Language, Reference, commented, generate, variable_name};
use crate::gen_sdk::model::Package;

fn prop(name: &str, ty: PropertyType) -> PropertySchema {
    PropertySchema::new(name, ty)
}

fn required(name: &str, ty: PropertyType) -> PropertySchema {
    PropertySchema {
        required: true,
        ..prop(name, ty)
    }
}

/// A provider `net` whose `net:Gate` has inputs of every kind, keyword names among them.
fn net() -> ProviderInfo {
    let rule = PropertyType::Object(ObjectType {
        name: Some("Rule".into()),
        description: String::new(),
        properties: vec![
            required("port", PropertyType::Integer),
            prop(
                "protocol",
                PropertyType::Enum {
                    values: vec!["tcp".into(), "udp".into()],
                },
            ),
            prop("match", PropertyType::String),
        ],
    });
    let gate = ResourceSchema {
        token: "net:Gate".into(),
        inputs: vec![
            required("name", PropertyType::String),
            required(
                "rules",
                PropertyType::Array {
                    items: Box::new(rule),
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
            prop("type", PropertyType::String),
        ],
        ..ResourceSchema::default()
    };
    ProviderInfo {
        name: "net".into(),
        version: "1.0.0".into(),
        resources: vec![gate],
        ..ProviderInfo::default()
    }
}

/// What a hostile provider could read back: strings that end literals and comments, start
/// lines, run commands, and a secret.
fn hostile_inputs() -> PropertyMap {
    let evil = "\"; rm -rf / # */ /* ''' \"\"\" \\ ${x} `y` \n\r\u{2028}\u{202e}\u{0}";
    let mut labels = PropertyMap::new();
    labels.insert(evil.into(), evil.into());
    labels.insert("__proto__".into(), "polluted".into());
    let mut rule = PropertyMap::new();
    rule.insert("port".into(), Value::Integer(443));
    rule.insert("protocol".into(), "udp".into());
    rule.insert("match".into(), evil.into());
    let mut extra = PropertyMap::new();
    extra.insert(
        "nested".into(),
        Value::Array(vec![
            Value::Null,
            Value::Bool(true),
            Value::Number(f64::NAN),
            Value::Number(-2.5e300),
            Value::Integer(i64::MIN),
            Value::Secret(Box::new("hidden-two".into())),
        ]),
    );
    let mut inputs = PropertyMap::new();
    inputs.insert("name".into(), evil.into());
    inputs.insert("rules".into(), Value::Array(vec![Value::Object(rule)]));
    inputs.insert("labels".into(), Value::Object(labels));
    inputs.insert("token".into(), Value::Secret(Box::new("hidden-one".into())));
    inputs.insert("retries".into(), Value::Integer(3));
    inputs.insert("ratio".into(), Value::Number(0.5));
    inputs.insert("enabled".into(), Value::Bool(false));
    inputs.insert("extra".into(), Value::Object(extra));
    inputs.insert("type".into(), "plain".into());
    inputs.insert("unknown-key".into(), "dropped */".into());
    inputs
}

/// The code for one `net:Gate` named `name` with `inputs` in `language`.
fn code(language: Language, name: &str, inputs: PropertyMap, with_refs: bool) -> Code {
    let emitter = crate::gen_sdk::emitter(language.id()).unwrap();
    let package = Package::new(&net(), emitter.reserved());
    let reference = |name: &str| Reference {
        urn: format!("urn:plinth:dev::p::acme:Web::{name}"),
        name: name.into(),
    };
    let declaration = Declaration {
        package: &package,
        resource: &package.resources[0],
        name: name.into(),
        id: "gate-1".into(),
        inputs,
        parent: with_refs.then(|| reference("my-web")),
        provider: with_refs.then(|| reference("net-eu")),
    };
    generate(language, &[declaration])
}

fn simple_inputs() -> PropertyMap {
    let mut rule = PropertyMap::new();
    rule.insert("port".into(), Value::Integer(80));
    rule.insert("protocol".into(), "tcp".into());
    let mut labels = PropertyMap::new();
    labels.insert("team".into(), "core".into());
    let mut inputs = PropertyMap::new();
    inputs.insert("name".into(), "edge".into());
    inputs.insert("rules".into(), Value::Array(vec![Value::Object(rule)]));
    inputs.insert("labels".into(), Value::Object(labels));
    inputs.insert("retries".into(), Value::Integer(3));
    inputs.insert("ratio".into(), Value::Integer(2));
    inputs.insert("enabled".into(), Value::Null);
    inputs
}

#[test]
fn rust_takes_required_inputs_as_arguments_and_the_rest_as_methods() {
    let code = code(Language::Rust, "edge-gate", simple_inputs(), true);
    assert_eq!(code.imports, ["use plinth_net_sdk::Gate;"]);
    let body = code.body.join("\n");
    assert!(
        body.contains(
            "let edge_gate = Gate::builder(ctx, \"edge-gate\", \"edge\", vec![plinth_net_sdk::Rule \
             { port: 80, protocol: Some(plinth_net_sdk::RuleProtocol::Tcp), r#match: None }])"
        ),
        "{body}"
    );
    assert!(
        body.contains(
            ".labels(std::collections::BTreeMap::from([(\"team\".to_owned(), \"core\".to_owned())]))"
        ),
        "{body}"
    );
    // An integer read back for a number is written as one; the default and nulls are left out.
    assert!(body.contains(".ratio(2.0)"), "{body}");
    assert!(
        !body.contains("retries") && !body.contains("enabled"),
        "{body}"
    );
    assert!(
        body.contains(".options(|o| o.parent(&my_web).provider(&net_eu))"),
        "{body}"
    );
    assert!(
        body.contains(
            "// `my_web` is your program's variable for urn:plinth:dev::p::acme:Web::my-web."
        ),
        "{body}"
    );
    assert!(body.ends_with(".register()?;"), "{body}");
}

#[test]
fn typescript_passes_an_args_object_keyed_by_the_sdk_s_names() {
    let code = code(Language::TypeScript, "edge-gate", simple_inputs(), true);
    assert_eq!(code.imports, ["import { Gate } from \"@plinth/net\";"]);
    let body = code.body.join("\n");
    assert!(
        body.contains("const edgeGate = new Gate(ctx, \"edge-gate\", {\n  name: \"edge\",\n"),
        "{body}"
    );
    assert!(
        body.contains("  rules: [{ port: 80, protocol: \"tcp\" }],\n  labels: { team: \"core\" },\n  ratio: 2,"),
        "{body}"
    );
    assert!(
        body.ends_with("}, { parent: myWeb, provider: netEu });"),
        "{body}"
    );
}

#[test]
fn python_passes_keywords_and_resource_options() {
    let code = code(Language::Python, "edge-gate", simple_inputs(), true);
    assert_eq!(
        code.imports,
        [
            "from plinth import ResourceOptions",
            "from plinth_net import Gate"
        ]
    );
    let body = code.body.join("\n");
    assert!(
        body.contains(
            "edge_gate = Gate(\n    ctx,\n    \"edge-gate\",\n    name=\"edge\",\n    \
             rules=[{\"port\": 80, \"protocol\": \"tcp\"}],\n    labels={\"team\": \"core\"},\n    \
             ratio=2,\n    opts=ResourceOptions(parent=my_web, provider=net_eu),\n)"
        ),
        "{body}"
    );
}

#[test]
fn secrets_are_read_from_the_configuration_never_written() {
    for language in [Language::Rust, Language::TypeScript, Language::Python] {
        let text = code(language, "gate", hostile_inputs(), false).text();
        assert!(
            !text.contains("hidden-one") && !text.contains("hidden-two"),
            "{text}"
        );
        assert!(
            text.contains("set it with `plinth config set --secret gate_token VALUE`")
                && text.contains("plinth config set --secret gate_extra_nested_5 VALUE"),
            "{language:?}:\n{text}"
        );
        let read = match language {
            Language::Rust => {
                ".token(ctx.require_secret_config(\"gate_token\")?.typed::<plinth_sdk::Secret<String>>())"
            }
            Language::TypeScript => "token: ctx.requireSecretConfig(\"gate_token\"),",
            Language::Python => "token=ctx.require_secret_config(\"gate_token\"),",
        };
        assert!(text.contains(read), "{language:?}:\n{text}");
        assert!(text.contains("left out: unknown-key."), "{text}");
    }
}

#[test]
fn every_line_of_hostile_code_is_one_line_and_its_comments_hold_no_controls() {
    for language in [Language::Rust, Language::TypeScript, Language::Python] {
        let code = code(language, "gate\n*/ -- rm", hostile_inputs(), false);
        for line in code.imports.iter().chain(&code.body) {
            assert!(
                !line.contains(['\n', '\r', '\u{2028}', '\u{202e}', '\0']),
                "{language:?}: {line:?}"
            );
        }
        let text = code.text();
        assert!(!text.contains("rm -rf /\n"), "{text}");
    }
}

#[test]
fn rust_literals_escape_what_would_end_or_disturb_them() {
    let text = code(Language::Rust, "gate", hostile_inputs(), false).text();
    assert!(
        text.contains(r#""\"; rm -rf / # */ /* ''' \"\"\" \\ ${x} `y` \n\r\u{2028}\u{202e}\0""#),
        "{text}"
    );
    assert!(text.contains("plinth_net_sdk::RuleProtocol::Udp"), "{text}");
    assert!(text.contains("plinth_sdk::Value::from(f64::NAN)"), "{text}");
    assert!(text.contains("plinth_sdk::Value::from(-2.5e300)"), "{text}");
    assert!(text.contains("plinth_sdk::Value::from(i64::MIN)"), "{text}");
    assert!(text.contains(".r#type(\"plain\")"), "{text}");
}

/// Runs `program` with `args`, `input` on its stdin; the parser's verdict.
fn parses(program: &str, args: &[&str], input: &str) -> Result<(), String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} runs the parse check: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn hostile_python_parses_and_keeps_the_strings_exactly() {
    let code = code(Language::Python, "gate", hostile_inputs(), true);
    // Inside a function, as pasted; the check compares a literal's value with the string.
    let mut program = String::from("def main(ctx, my_web, net_eu):\n");
    for line in code.imports.iter().chain(&code.body) {
        program += &format!("    {line}\n");
    }
    parses(
        "python3",
        &["-c", "import ast, sys; ast.parse(sys.stdin.read())"],
        &program,
    )
    .unwrap_or_else(|e| panic!("{e}\n{program}"));
    // The name's literal evaluates to the very string read back.
    let literal = (code.body.iter())
        .find(|l| l.trim_start().starts_with("name="))
        .unwrap()
        .trim()
        .trim_start_matches("name=")
        .trim_end_matches(',')
        .to_owned();
    let expected = "\"; rm -rf / # */ /* ''' \"\"\" \\ ${x} `y` \n\r\u{2028}\u{202e}\u{0}";
    let check = format!(
        "import ast, sys; v = ast.literal_eval(sys.stdin.read()); \
         sys.exit(0 if v == {} else 1)",
        crate::gen_sdk::code::json_string(expected)
    );
    parses("python3", &["-c", &check], &literal).unwrap_or_else(|e| panic!("{e}\n{literal}"));
}

#[test]
fn hostile_typescript_is_valid_javascript_module_code() {
    let code = code(Language::TypeScript, "gate", hostile_inputs(), true);
    // The declarations use no TypeScript syntax: node checks them as a module whose imports
    // it does not resolve (`--check` only parses).
    let mut program = code.imports.join("\n");
    program += "\nexport default function main(ctx, myWeb, netEu) {\n";
    program += &code.body.join("\n");
    program += "\n}\n";
    parses("node", &["--check", "--input-type=module"], &program)
        .unwrap_or_else(|e| panic!("{e}\n{program}"));
    assert!(
        program.contains("[\"__proto__\"]: \"polluted\""),
        "{program}"
    );
    // Valid raw, but a line end or a reordering of the line for some readers: escaped.
    assert!(program.contains(r"\n\r\u2028\u202e\u0000"), "{program}");
}

#[test]
fn variables_are_identifiers_of_the_language_and_unique() {
    assert_eq!(variable_name(Language::Rust, "type"), "r#type");
    assert_eq!(variable_name(Language::Rust, "self"), "self_");
    assert_eq!(variable_name(Language::Python, "class"), "class_");
    assert_eq!(variable_name(Language::TypeScript, "my-db"), "myDb");
    assert_eq!(variable_name(Language::Python, "my-db"), "my_db");
    assert_eq!(variable_name(Language::Rust, "1st"), "_1st");
    assert_eq!(variable_name(Language::TypeScript, "---"), "resource");
    assert_eq!(variable_name(Language::Python, "naïve"), "nave");
    let emitter = crate::gen_sdk::emitter("python").unwrap();
    let package = Package::new(&net(), emitter.reserved());
    let declaration = |name: &str| Declaration {
        package: &package,
        resource: &package.resources[0],
        name: name.into(),
        id: "x".into(),
        inputs: simple_inputs(),
        parent: None,
        provider: None,
    };
    let code = generate(
        Language::Python,
        &[declaration("a-b"), declaration("a_b"), declaration("A B")],
    );
    let heads: Vec<&String> = (code.body.iter())
        .filter(|l| l.ends_with(" = Gate("))
        .collect();
    assert_eq!(heads, ["a_b = Gate(", "a_b_2 = Gate(", "a_b_3 = Gate("]);
}

#[test]
fn comments_replace_line_ends_and_direction_overrides() {
    assert_eq!(commented("a\nb\r\u{2028}c\u{202e}d\u{85}"), "a?b??c?d?");
}
