//! The generator's tests: what the model and the Rust emitter make of schemas with keywords,
//! nested objects, enums, maps, arrays and secrets, and that the code is rustfmt-clean.

use plinth_engine::provider::{
    FunctionSchema, ObjectType, PropertySchema, PropertyType, ProviderInfo, ResourceSchema,
};
use plinth_engine::value::Value;

use super::{EMITTERS, GeneratedFile, Options, emitter, generate};

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
        functions: vec![
            FunctionSchema {
                token: "net:lookup".into(),
                description: "Looks a host up.".into(),
                inputs: vec![required("host", PropertyType::String)],
                output: PropertyType::Array {
                    items: Box::new(PropertyType::String),
                },
            },
            // Keywords of TypeScript and Python as a function's and its arguments' names.
            FunctionSchema {
                token: "net:import".into(),
                description: String::new(),
                inputs: vec![
                    required("from", PropertyType::String),
                    prop("class", PropertyType::Integer),
                ],
                output: PropertyType::Boolean,
            },
        ],
    }
}

fn library(files: &[GeneratedFile]) -> &str {
    &files
        .iter()
        .find(|f| f.path == "src/lib.rs")
        .unwrap()
        .contents
}

fn file<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("no {path} among {files:?}"))
        .contents
}

fn rust(info: &ProviderInfo) -> (Vec<GeneratedFile>, Vec<String>) {
    generate(info, emitter("rust").unwrap(), &Options::default())
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
        emitter("rust").unwrap(),
        &Options {
            sdk_path: Some("../../sdk-guest/rust".into()),
        },
    );
    let manifest = &files
        .iter()
        .find(|f| f.path == "Cargo.toml")
        .unwrap()
        .contents;
    assert!(manifest.contains("name = \"plinth-net-sdk\""), "{manifest}");
    assert!(
        manifest
            .contains("plinth-sdk = { path = \"../../sdk-guest/rust\", features = [\"program\"] }"),
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

fn assert_contains(code: &str, needles: &[&str]) {
    for needle in needles {
        assert!(code.contains(needle), "missing\n{needle}\nin:\n{code}");
    }
}

fn typescript(info: &ProviderInfo) -> Vec<GeneratedFile> {
    generate(info, emitter("ts").unwrap(), &Options::default()).0
}

#[test]
fn typescript_types_follow_the_schema() {
    let files = typescript(&kitchen_sink());
    let code = file(&files, "index.ts");
    assert_contains(
        code,
        &[
            "import * as sdk from \"@plinth/sdk\";",
            "export type Input<T> = T | sdk.Output<T>;",
            // Resources: a class with the token, an args interface of inputs.
            "export class Firewall extends sdk.Resource {",
            "static readonly TYPE = \"net:Firewall\";",
            "constructor(ctx: sdk.Context, name: string, args: FirewallArgs, options?: sdk.ResourceOptions) {",
            "export interface FirewallArgs {",
            // Required inputs are required fields, optional ones optional; inputs may be
            // outputs, down to the items of arrays and values of maps.
            "  name: Input<string>;",
            "  rules: Input<Array<Input<Rule>>>;",
            "  labels?: Input<Record<string, Input<string>>>;",
            "  retries?: Input<number>;",
            "  ratio?: Input<number>;",
            "  enabled?: Input<boolean>;",
            "  extra?: Input<unknown>;",
            // Secrets are said to be secrets.
            "Always a secret.",
            // Outputs are typed getters; optional ones may be undefined.
            "get token(): sdk.Output<string> {",
            "return this.output(\"token\");",
            "get firstRule(): sdk.Output<Rule | undefined> {",
            "return this.output(\"first_rule\");",
            // camelCase in TypeScript, the provider's names on the wire.
            "  fooBar?: Input<string>;",
            "  fooBar2?: Input<string>;",
            "      fooBar: args.fooBar,",
            "      foo_bar: args.fooBar2,",
            "      a_long_input_name_that_wraps_signatures: args.aLongInputNameThatWrapsSignatures,",
            // Keys the schema does not know go on to the provider's check, not to nothing.
            "function __unknownKeys(args: object, known: string[]): Record<string, unknown> {",
            "      ...__unknownKeys(args, [\"name\", \"rules\",",
            // Nested objects are interfaces keyed as their values travel; anonymous ones
            // are named after where they are.
            "export interface Rule {",
            "  port: number;",
            "  protocol?: RuleProtocol;",
            "  settings?: Input<FirewallSettings>;",
            "export interface FirewallSettings {",
            "  mode?: FirewallSettingsMode;",
            // Enums are string unions.
            "export type RuleProtocol = \"tcp\" | \"udp\";",
            "export type FirewallSettingsMode = \"0644\" | \"read-only\";",
            // Descriptions, defaults and replacement are documented.
            "   * The firewall's name.\n   *\n   * Changing it replaces the resource.",
            "Default: `3`.",
            "/**\n * A firewall.\n *\n * It filters packets.",
            // Functions are typed calls.
            "export function lookup(ctx: sdk.Context, args: LookupArgs): Promise<Array<string>> {",
            "return ctx.invoke<Array<string>>(\"net:lookup\", {",
            // A resource without inputs takes no args.
            "constructor(ctx: sdk.Context, name: string, args: EmptyArgs = {}, options?: sdk.ResourceOptions) {",
        ],
    );
}

#[test]
fn typescript_keywords_and_collisions_become_valid_distinct_names() {
    let files = typescript(&kitchen_sink());
    let code = file(&files, "index.ts");
    assert_contains(
        code,
        &[
            // Keywords may name properties, not functions.
            "  type?: string;",
            "  match?: Input<string>;",
            "  self?: Input<string>;",
            "export function import_(ctx: sdk.Context, args: ImportArgs): Promise<boolean> {",
            "  from: string;",
            "  class?: number;",
            // `Resource`'s own members are not outputs' names.
            "get idValue(): sdk.Output<string> {",
            "return this.output(\"id\");",
        ],
    );
    // Keys that are not identifiers are quoted.
    let mut info = kitchen_sink();
    info.resources[0]
        .outputs
        .push(prop("with-dash", PropertyType::String));
    let files = typescript(&info);
    assert_contains(
        file(&files, "index.ts"),
        &["return this.output(\"with-dash\");", "get withDash()"],
    );
}

#[test]
fn the_typescript_package_depends_on_the_sdk_by_path_or_version() {
    let (files, _) = generate(
        &kitchen_sink(),
        emitter("ts").unwrap(),
        &Options {
            sdk_path: Some("../../../sdk-guest/js".into()),
        },
    );
    let manifest: serde_json::Value = serde_json::from_str(file(&files, "package.json")).unwrap();
    assert_eq!(manifest["name"], "@plinth/net");
    assert_eq!(manifest["main"], "index.ts");
    assert_eq!(
        manifest["peerDependencies"]["@plinth/sdk"],
        "file:../../../sdk-guest/js"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(file(&typescript(&kitchen_sink()), "package.json")).unwrap();
    assert!(
        (manifest["peerDependencies"]["@plinth/sdk"]
            .as_str()
            .unwrap())
        .starts_with('^'),
        "{manifest}"
    );
}

fn python(info: &ProviderInfo) -> Vec<GeneratedFile> {
    generate(info, emitter("python").unwrap(), &Options::default()).0
}

#[test]
fn python_types_follow_the_schema() {
    let files = python(&kitchen_sink());
    let manifest = file(&files, "pyproject.toml");
    assert!(manifest.contains("name = \"plinth-net\""));
    // The SDK by version, as pip installs it.
    let dependency = format!(
        "dependencies = [\"plinth-sdk ~= {}\"]",
        env!("CARGO_PKG_VERSION")
    );
    assert!(manifest.contains(&dependency), "{manifest}");
    let code = file(&files, "plinth_net/__init__.py");
    assert_contains(
        code,
        &[
            "import plinth as sdk",
            "__all__ = [\n    \"Input\",\n    \"FirewallSettingsMode\",\n    \"RuleProtocol\",\n    \"FirewallSettings\",\n    \"Rule\",\n    \"Empty\",\n    \"Firewall\",\n    \"import_\",\n    \"lookup\",\n]",
            "Input = Union[_T, sdk.Output[_T]]",
            // Resources: a class with the token; required inputs are parameters, optional
            // ones keyword-only; inputs may be outputs, down to items and values.
            "class Firewall(sdk.Resource):",
            "    TYPE = \"net:Firewall\"",
            "            self,\n            ctx: sdk.Context,\n            resource_name: str,\n            name: Input[str],\n            rules: Input[List[Input[Rule]]],\n            *,\n",
            "            labels: Optional[Input[Dict[str, Input[str]]]] = None,",
            "            retries: Optional[Input[int]] = None,",
            "            ratio: Optional[Input[float]] = None,",
            "            enabled: Optional[Input[bool]] = None,",
            "            extra: Optional[Input[Any]] = None,",
            "            opts: Optional[sdk.ResourceOptions] = None,\n            **unknown: Never,\n    ) -> None:",
            // Absent inputs are not sent; the provider's names are; unknown keywords (a
            // type error) are sent for the provider's check to name.
            "inputs = _present({",
            "        }, unknown)",
            "    return {**given, **unknown}",
            "            \"fooBar\": foo_bar,",
            "            \"foo_bar\": foo_bar_2,",
            // Secrets are said to be secrets.
            "Always a secret.",
            // Outputs are typed properties.
            "    @property\n    def token(self) -> sdk.Output[str]:",
            "    def first_rule(self) -> sdk.Output[Optional[Rule]]:",
            "        return self.output(\"first_rule\")",
            // Nested objects are TypedDicts keyed as their values travel, required keys
            // marked; anonymous ones are named after where they are.
            "Rule = TypedDict(\"Rule\", {",
            "    \"port\": Required[int],",
            "    \"protocol\": RuleProtocol,",
            "    \"type\": str,",
            "}, total=False)",
            "FirewallSettings = TypedDict(\"FirewallSettings\", {",
            // Enums are Literals.
            "RuleProtocol = Literal[\"tcp\", \"udp\"]",
            "FirewallSettingsMode = Literal[\"0644\", \"read-only\"]",
            // Functions are typed calls.
            "def lookup(\n        ctx: sdk.Context,\n        host: str,\n        **unknown: Never,\n) -> List[str]:",
            "return ctx.invoke(\"net:lookup\", _present({",
        ],
    );
}

#[test]
fn python_keywords_and_collisions_become_valid_distinct_names() {
    let files = python(&kitchen_sink());
    let code = file(&files, "plinth_net/__init__.py");
    assert_contains(
        code,
        &[
            // Keywords get a `_`; soft keywords stay.
            "def import_(\n        ctx: sdk.Context,\n        from_: str,\n        *,\n        class_: Optional[int] = None,\n        **unknown: Never,\n) -> bool:",
            "        \"from\": from_,",
            "            match: Optional[Input[str]] = None,",
            // Names the SDK uses itself are renamed.
            "            self_value: Optional[Input[str]] = None,",
            "            \"self\": self_value,",
            "            register: Optional[Input[bool]] = None,",
            "    def id_value(self) -> sdk.Output[str]:",
        ],
    );
}

#[test]
fn typescript_and_python_generation_is_deterministic_whatever_the_schema_order() {
    let info = kitchen_sink();
    let mut reversed = info.clone();
    reversed.resources.reverse();
    reversed.functions.reverse();
    assert_eq!(typescript(&info), typescript(&reversed));
    assert_eq!(python(&info), python(&reversed));
}

/// `--lang` takes a guest language's id or alias, and each emitter is keyed by its language.
#[test]
fn emitters_are_keyed_by_their_guest_language() {
    let ids: Vec<&str> = EMITTERS.iter().map(|e| e.language()).collect();
    assert_eq!(ids, ["rust", "ts", "python"]);
    for id in ids {
        assert_eq!(emitter(id).unwrap().language(), id);
        assert!(
            crate::guest::by_id(id).is_some(),
            "{id} is a guest language"
        );
    }
    assert_eq!(emitter("typescript").unwrap().language(), "ts");
    assert_eq!(emitter("py").unwrap().language(), "python");
    assert!(emitter("cobol").is_none());
}
