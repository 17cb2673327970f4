//! The language-neutral middle of SDK generation: a provider's schema turned into a package of
//! resources, functions and named types, with every name split into words, made unique among
//! its siblings and kept apart from the names an emitter's code uses itself. Emitters only
//! case the words their language's way and spell its keywords.

use std::collections::{BTreeMap, BTreeSet};

use heck::ToSnakeCase;
use plinth_engine::provider::{
    FunctionSchema, ObjectType, PropertySchema, PropertyType, ProviderInfo, ResourceSchema,
};
use plinth_engine::value::Value;

/// A name as words, lower-case; each language cases them its own way.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name {
    words: Vec<String>,
}

impl Name {
    /// The words of `text` (`minUpper`, `min_upper`, `min-upper` and `MinUpper` are
    /// `min upper`); a name without letters or digits has none.
    pub(crate) fn split(text: &str) -> Name {
        let words = text
            .to_snake_case()
            .split('_')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        Name { words }
    }

    /// `words` followed by `more`.
    fn joined(&self, more: &Name) -> Name {
        Name {
            words: self.words.iter().chain(&more.words).cloned().collect(),
        }
    }

    /// This name with a last word `word`.
    fn with(&self, word: &str) -> Name {
        let mut name = self.clone();
        name.words.push(word.to_owned());
        name
    }

    /// `min_upper`.
    pub fn snake(&self) -> String {
        self.words.join("_")
    }

    /// `minUpper`.
    pub fn camel(&self) -> String {
        let mut words = self.words.iter();
        let first = words.next().cloned().unwrap_or_default();
        first + &words.map(|w| capitalized(w)).collect::<String>()
    }

    /// `MinUpper`.
    pub fn pascal(&self) -> String {
        self.words.iter().map(|w| capitalized(w)).collect()
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The names an emitter's generated code uses itself, which the model's names must not take.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reserved {
    /// Members that sit beside a resource's input setters (`register`, and the parameters of
    /// the function taking required inputs).
    pub input_names: &'static [&'static str],
    /// Members that sit beside a resource's output accessors (`id`, `urn`).
    pub output_names: &'static [&'static str],
    /// Suffixes the emitter appends to a resource's or function's type name (`Args`): a named
    /// type must not take `<Resource><Suffix>`.
    pub type_suffixes: &'static [&'static str],
    /// Type-level names the generated module declares or imports itself (`Input`): no
    /// resource, function or named type takes them.
    pub type_names: &'static [&'static str],
}

/// A provider's SDK, ready to emit in any language.
#[derive(Debug, Clone)]
pub struct Package {
    /// The provider's name, the package part of its type tokens (`random`).
    pub name: String,
    pub version: String,
    pub description: String,
    pub resources: Vec<Resource>,
    pub functions: Vec<Function>,
    /// Named object types, ordered by name.
    pub objects: Vec<ObjectDef>,
    /// Enums, ordered by name.
    pub enums: Vec<EnumDef>,
    /// What was renamed or skipped, and why: said to whoever runs the generator.
    pub notes: Vec<String>,
}

/// A resource type.
#[derive(Debug, Clone)]
pub struct Resource {
    /// `random:RandomString`.
    pub token: String,
    /// `RandomString`, unique among resources, functions and named types.
    pub name: Name,
    pub description: String,
    pub inputs: Vec<Property>,
    pub outputs: Vec<Property>,
}

/// A function `invoke` accepts.
#[derive(Debug, Clone)]
pub struct Function {
    pub token: String,
    pub name: Name,
    pub description: String,
    pub inputs: Vec<Property>,
    pub output: TypeRef,
}

/// A property of a resource, a function or an object type.
#[derive(Debug, Clone)]
pub struct Property {
    /// The name the provider knows it by.
    pub wire: String,
    /// Its name in the SDK, unique among its siblings.
    pub name: Name,
    pub description: String,
    pub required: bool,
    pub secret: bool,
    pub replace_on_change: bool,
    pub ty: TypeRef,
    pub default: Option<Value>,
}

/// A property's type; objects and enums refer to the package's named types.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeRef {
    Any,
    String,
    Integer,
    Number,
    Boolean,
    Array(Box<TypeRef>),
    Map(Box<TypeRef>),
    /// An index into [`Package::objects`].
    Object(usize),
    /// An index into [`Package::enums`].
    Enum(usize),
}

/// A named object type.
#[derive(Debug, Clone)]
pub struct ObjectDef {
    pub name: Name,
    pub description: String,
    pub properties: Vec<Property>,
}

/// A named enum of strings.
#[derive(Debug, Clone)]
pub struct EnumDef {
    pub name: Name,
    pub values: Vec<EnumValue>,
}

#[derive(Debug, Clone)]
pub struct EnumValue {
    /// The string the provider knows it by.
    pub wire: String,
    /// Its name in the SDK, unique in the enum.
    pub name: Name,
}

impl Package {
    /// The package of `info`, with names kept apart from `reserved`.
    pub fn new(info: &ProviderInfo, reserved: Reserved) -> Package {
        let mut builder = Builder {
            reserved,
            taken: reserved.type_names.iter().map(|n| Name::split(n)).collect(),
            objects: Vec::new(),
            object_keys: BTreeMap::new(),
            enums: Vec::new(),
            enum_keys: BTreeMap::new(),
            notes: Vec::new(),
        };
        let mut resources: Vec<&ResourceSchema> = info.resources.iter().collect();
        resources.sort_by(|a, b| a.token.cmp(&b.token));
        let mut functions: Vec<&FunctionSchema> = info.functions.iter().collect();
        functions.sort_by(|a, b| a.token.cmp(&b.token));
        // Resources and functions name themselves first: named types yield to them.
        let resource_names: Vec<Option<Name>> = resources
            .iter()
            .map(|r| builder.top_level_name(&r.token, "resource type"))
            .collect();
        let function_names: Vec<Option<Name>> = functions
            .iter()
            .map(|f| builder.top_level_name(&f.token, "function"))
            .collect();
        let resources = resources
            .into_iter()
            .zip(resource_names)
            .filter_map(|(schema, name)| Some(builder.resource(schema, name?)))
            .collect();
        let functions = functions
            .into_iter()
            .zip(function_names)
            .filter_map(|(schema, name)| Some(builder.function(schema, name?)))
            .collect();
        builder.finish(info, resources, functions)
    }
}

/// A resource or function name taken, with the type names an emitter derives from it.
struct Builder {
    reserved: Reserved,
    /// Type-level names in use, by their words.
    taken: BTreeSet<Name>,
    objects: Vec<ObjectDef>,
    /// Objects already named, by what they are: the same object met twice is one type.
    object_keys: BTreeMap<String, usize>,
    enums: Vec<EnumDef>,
    enum_keys: BTreeMap<String, usize>,
    notes: Vec<String>,
}

impl Builder {
    /// The name of the resource or function `token`, taken with its derived names; `None`
    /// (and a note) if the token cannot give one.
    fn top_level_name(&mut self, token: &str, what: &str) -> Option<Name> {
        let base = token.split_once(':').map_or(token, |(_, name)| name);
        let name = Name::split(base);
        if name.words.is_empty() {
            self.notes.push(format!(
                "skipped {what} `{token}`: its token names no type (expected `package:Name`)"
            ));
            return None;
        }
        let unique = self.unique_type_name(name.clone());
        if unique != name {
            self.notes.push(format!(
                "{what} `{token}` is named {} in the SDK: {} is taken",
                unique.pascal(),
                name.pascal()
            ));
        }
        Some(unique)
    }

    /// `name`, or `name` with a number, such that it and its derived names are all free; taken.
    fn unique_type_name(&mut self, name: Name) -> Name {
        let free = |taken: &BTreeSet<Name>, candidate: &Name| {
            !taken.contains(candidate)
                && (self.reserved.type_suffixes.iter())
                    .all(|suffix| !taken.contains(&candidate.joined(&Name::split(suffix))))
        };
        let mut candidate = name.clone();
        let mut n = 2;
        while !free(&self.taken, &candidate) {
            candidate = name.with(&n.to_string());
            n += 1;
        }
        self.taken.insert(candidate.clone());
        for suffix in self.reserved.type_suffixes {
            self.taken.insert(candidate.joined(&Name::split(suffix)));
        }
        candidate
    }

    fn resource(&mut self, schema: &ResourceSchema, name: Name) -> Resource {
        let owner = format!("resource type `{}`", schema.token);
        let inputs = self.properties(
            &owner,
            "input",
            &name,
            &schema.inputs,
            self.reserved.input_names,
        );
        let outputs = self.properties(
            &owner,
            "output",
            &name,
            &schema.outputs,
            self.reserved.output_names,
        );
        Resource {
            token: schema.token.clone(),
            name,
            description: schema.description.clone(),
            inputs,
            outputs,
        }
    }

    fn function(&mut self, schema: &FunctionSchema, name: Name) -> Function {
        let owner = format!("function `{}`", schema.token);
        let inputs = self.properties(
            &owner,
            "argument",
            &name,
            &schema.inputs,
            self.reserved.input_names,
        );
        let output = self.type_ref(&name.with("result"), &schema.output);
        Function {
            token: schema.token.clone(),
            name,
            description: schema.description.clone(),
            inputs,
            output,
        }
    }

    /// The properties of `owner` (named `scope` for the types they define), each named
    /// uniquely and apart from `reserved`.
    fn properties(
        &mut self,
        owner: &str,
        what: &str,
        scope: &Name,
        schemas: &[PropertySchema],
        reserved: &[&str],
    ) -> Vec<Property> {
        let mut used: BTreeSet<Name> = reserved.iter().map(|r| Name::split(r)).collect();
        let mut properties = Vec::new();
        for schema in schemas {
            let mut name = Name::split(&schema.name);
            if name.words.is_empty() {
                self.notes.push(format!(
                    "skipped {what} `{}` of {owner}: its name has no letters or digits",
                    schema.name
                ));
                continue;
            }
            if name.words[0].starts_with(|c: char| c.is_ascii_digit()) {
                name.words.insert(0, "n".to_owned());
            }
            let wanted = name.clone();
            let mut n = 2;
            while used.contains(&name) {
                name = if reserved.contains(&wanted.snake().as_str()) && n == 2 {
                    wanted.with("value")
                } else {
                    wanted.with(&n.to_string())
                };
                n += 1;
            }
            if name != wanted || Name::split(&schema.name).words != wanted.words {
                self.notes.push(format!(
                    "{what} `{}` of {owner} is `{}` in the SDK: {}",
                    schema.name,
                    name.snake(),
                    if name == wanted {
                        "names start with a letter"
                    } else {
                        "its name collides with another property or a name the SDK uses"
                    }
                ));
            }
            used.insert(name.clone());
            let ty = self.type_ref(&scope.joined(&name), &schema.ty);
            properties.push(Property {
                wire: schema.name.clone(),
                name,
                description: described(schema),
                required: schema.required,
                secret: schema.secret,
                replace_on_change: schema.replace_on_change,
                ty,
                default: schema.default.clone(),
            });
        }
        properties
    }

    /// `ty`, with the objects and enums it holds named (after `path` when they have no name).
    fn type_ref(&mut self, path: &Name, ty: &PropertyType) -> TypeRef {
        match ty {
            PropertyType::Any => TypeRef::Any,
            PropertyType::String => TypeRef::String,
            PropertyType::Integer => TypeRef::Integer,
            PropertyType::Number => TypeRef::Number,
            PropertyType::Boolean => TypeRef::Boolean,
            PropertyType::Array { items } => TypeRef::Array(Box::new(self.type_ref(path, items))),
            PropertyType::Map { values } => TypeRef::Map(Box::new(self.type_ref(path, values))),
            PropertyType::Object(object) => TypeRef::Object(self.object(path, object)),
            PropertyType::Enum { values } if values.is_empty() => {
                self.notes.push(format!(
                    "the enum at {} has no values; it is a string in the SDK",
                    path.pascal()
                ));
                TypeRef::String
            }
            PropertyType::Enum { values } => TypeRef::Enum(self.enumeration(path, values)),
        }
    }

    fn object(&mut self, path: &Name, object: &ObjectType) -> usize {
        let wanted = object
            .name
            .as_deref()
            .map(Name::split)
            .filter(|n| !n.words.is_empty())
            .unwrap_or_else(|| path.clone());
        // Equal objects under one name are one type; anything else gets a name of its own.
        let key = format!("{}\0{}", wanted.pascal(), serde_json::json!(object));
        if let Some(&index) = self.object_keys.get(&key) {
            return index;
        }
        let name = self.unique_type_name(wanted.clone());
        if name != wanted {
            self.notes.push(format!(
                "object type {} is named {} in the SDK: another type has its name",
                wanted.pascal(),
                name.pascal()
            ));
        }
        let properties = self.properties(
            &format!("object type {}", name.pascal()),
            "property",
            &name,
            &object.properties,
            &[],
        );
        self.objects.push(ObjectDef {
            name,
            description: object.description.clone(),
            properties,
        });
        let index = self.objects.len() - 1;
        self.object_keys.insert(key, index);
        index
    }

    fn enumeration(&mut self, path: &Name, values: &[String]) -> usize {
        let key = format!("{}\0{}", path.pascal(), values.join("\0"));
        if let Some(&index) = self.enum_keys.get(&key) {
            return index;
        }
        let name = self.unique_type_name(path.clone());
        let mut used = BTreeSet::new();
        let values = values
            .iter()
            .map(|wire| {
                let mut wanted = Name::split(wire);
                if wanted
                    .words
                    .first()
                    .is_none_or(|w| w.starts_with(|c: char| c.is_ascii_digit()))
                {
                    wanted.words.insert(0, "v".to_owned());
                }
                let mut name = wanted.clone();
                let mut n = 2;
                while !used.insert(name.clone()) {
                    name = wanted.with(&n.to_string());
                    n += 1;
                }
                EnumValue {
                    wire: wire.clone(),
                    name,
                }
            })
            .collect();
        self.enums.push(EnumDef { name, values });
        let index = self.enums.len() - 1;
        self.enum_keys.insert(key, index);
        index
    }

    /// The package, with named types ordered by name (indices remapped) for stable output.
    fn finish(
        self,
        info: &ProviderInfo,
        mut resources: Vec<Resource>,
        mut functions: Vec<Function>,
    ) -> Package {
        let order = |names: Vec<&Name>| {
            let mut indices: Vec<usize> = (0..names.len()).collect();
            indices.sort_by_key(|&i| names[i].pascal());
            let mut new_index = vec![0; names.len()];
            for (new, &old) in indices.iter().enumerate() {
                new_index[old] = new;
            }
            (indices, new_index)
        };
        let (object_order, object_index) = order(self.objects.iter().map(|o| &o.name).collect());
        let (enum_order, enum_index) = order(self.enums.iter().map(|e| &e.name).collect());
        let remap = |ty: &mut TypeRef| remap_type(ty, &object_index, &enum_index);
        let mut objects: Vec<ObjectDef> = object_order
            .iter()
            .map(|&i| self.objects[i].clone())
            .collect();
        let enums = enum_order.iter().map(|&i| self.enums[i].clone()).collect();
        let properties = (resources.iter_mut())
            .flat_map(|r| r.inputs.iter_mut().chain(r.outputs.iter_mut()))
            .chain(functions.iter_mut().flat_map(|f| f.inputs.iter_mut()))
            .chain(objects.iter_mut().flat_map(|o| o.properties.iter_mut()));
        for property in properties {
            remap(&mut property.ty);
        }
        for function in &mut functions {
            remap(&mut function.output);
        }
        Package {
            name: info.name.clone(),
            version: info.version.clone(),
            description: info.description.clone(),
            resources,
            functions,
            objects,
            enums,
            notes: self.notes,
        }
    }
}

fn remap_type(ty: &mut TypeRef, objects: &[usize], enums: &[usize]) {
    match ty {
        TypeRef::Object(i) => *i = objects[*i],
        TypeRef::Enum(i) => *i = enums[*i],
        TypeRef::Array(inner) | TypeRef::Map(inner) => remap_type(inner, objects, enums),
        _ => {}
    }
}

/// A property's description, with what a program must know of a write-only input.
fn described(schema: &PropertySchema) -> String {
    let Some(version) = &schema.write_only_version else {
        return schema.description.clone();
    };
    let note = format!(
        "Write-only: sent to the provider, never stored in the state; change `{version}` to \
         send a new value."
    );
    if schema.description.is_empty() {
        note
    } else {
        format!("{} {note}", schema.description)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESERVED: Reserved = Reserved {
        input_names: &["register"],
        output_names: &["id", "urn"],
        type_suffixes: &["Args"],
        type_names: &[],
    };

    fn prop(name: &str, ty: PropertyType) -> PropertySchema {
        PropertySchema::new(name, ty)
    }

    fn info(resources: Vec<ResourceSchema>) -> ProviderInfo {
        ProviderInfo {
            name: "t".into(),
            version: "1.0.0".into(),
            resources,
            ..ProviderInfo::default()
        }
    }

    fn resource(token: &str, inputs: Vec<PropertySchema>) -> ResourceSchema {
        ResourceSchema {
            token: token.into(),
            inputs,
            ..ResourceSchema::default()
        }
    }

    #[test]
    fn names_split_into_words_and_case_both_ways() {
        for text in ["minUpper", "min_upper", "min-upper", "MinUpper"] {
            let name = Name::split(text);
            assert_eq!(
                (name.snake(), name.pascal(), name.camel()),
                ("min_upper".into(), "MinUpper".into(), "minUpper".into()),
                "{text}"
            );
        }
        assert!(Name::split("--").words.is_empty());
    }

    #[test]
    fn colliding_and_reserved_properties_are_renamed_and_said() {
        let package = Package::new(
            &info(vec![ResourceSchema {
                token: "t:Thing".into(),
                inputs: vec![
                    prop("fooBar", PropertyType::String),
                    prop("foo_bar", PropertyType::Integer),
                    prop("register", PropertyType::Boolean),
                    prop("2fa", PropertyType::Boolean),
                    prop("--", PropertyType::Boolean),
                ],
                outputs: vec![prop("id", PropertyType::String)],
                ..ResourceSchema::default()
            }]),
            RESERVED,
        );
        let thing = &package.resources[0];
        let names: Vec<(String, String)> = (thing.inputs.iter())
            .map(|p| (p.wire.clone(), p.name.snake()))
            .collect();
        assert_eq!(
            names,
            [
                ("fooBar".into(), "foo_bar".into()),
                ("foo_bar".into(), "foo_bar_2".into()),
                ("register".into(), "register_value".into()),
                ("2fa".into(), "n_2fa".into()),
            ]
        );
        assert_eq!(thing.outputs[0].name.snake(), "id_value");
        let notes = package.notes.join("\n");
        for needle in [
            "`foo_bar_2`",
            "`register_value`",
            "`n_2fa`",
            "skipped input `--`",
        ] {
            assert!(notes.contains(needle), "missing {needle} in:\n{notes}");
        }
    }

    #[test]
    fn objects_and_enums_are_named_shared_and_kept_unique() {
        let rule = |port_ty| {
            PropertyType::Object(ObjectType {
                name: Some("Rule".into()),
                description: String::new(),
                properties: vec![prop("port", port_ty)],
            })
        };
        let anonymous = PropertyType::Object(ObjectType {
            name: None,
            description: String::new(),
            properties: vec![prop(
                "mode",
                PropertyType::Enum {
                    values: vec!["0644".into(), "read-only".into()],
                },
            )],
        });
        let package = Package::new(
            &info(vec![
                resource(
                    "t:Wall",
                    vec![
                        prop(
                            "rules",
                            PropertyType::Array {
                                items: Box::new(rule(PropertyType::Integer)),
                            },
                        ),
                        prop("first", rule(PropertyType::Integer)),
                        prop("settings", anonymous),
                    ],
                ),
                resource("t:Gate", vec![prop("rule", rule(PropertyType::String))]),
                resource("t:RuleArgs", vec![]),
            ]),
            RESERVED,
        );
        let objects: Vec<String> = package.objects.iter().map(|o| o.name.pascal()).collect();
        // The same Rule twice is one type; a different Rule gets a number; `Rule` is free,
        // but `RuleArgs` is a resource, so the first Rule counts as taken too.
        assert_eq!(objects, ["Rule2", "Rule3", "WallSettings"]);
        let wall = package
            .resources
            .iter()
            .find(|r| r.token == "t:Wall")
            .unwrap();
        assert_eq!(
            wall.inputs[0].ty,
            TypeRef::Array(Box::new(wall.inputs[1].ty.clone()))
        );
        let enum_def = &package.enums[0];
        assert_eq!(enum_def.name.pascal(), "WallSettingsMode");
        let variants: Vec<String> = enum_def.values.iter().map(|v| v.name.pascal()).collect();
        assert_eq!(variants, ["V0644", "ReadOnly"]);
        let TypeRef::Object(settings) = wall.inputs[2].ty else {
            panic!("settings is an object");
        };
        assert_eq!(package.objects[settings].name.pascal(), "WallSettings");
        assert_eq!(package.objects[settings].properties[0].ty, TypeRef::Enum(0));
    }

    #[test]
    fn tokens_without_a_name_are_skipped_and_said() {
        let package = Package::new(&info(vec![resource("t:", vec![])]), RESERVED);
        assert!(package.resources.is_empty());
        assert!(
            package.notes[0].contains("skipped resource type `t:`"),
            "{:?}",
            package.notes
        );
    }
}
