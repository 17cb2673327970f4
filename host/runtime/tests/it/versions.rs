//! WIT package versions and declared capabilities: providers built against
//! `plinth:plugin@0.1.0` and `0.2.0` keep loading and working (their numbers are floats: an
//! integer reaches them as one, theirs come back as numbers), a 0.3 provider's schema is typed,
//! a component of an unknown version is a clear error, a provider asking for more than it is
//! granted does not load, and `inspect` describes any plinth component.

use crate::support;

use std::path::Path;

use plinth_engine::provider::{PropertyType, ProviderError};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{
    Access, CapabilityError, DirGrant, DirRequest, Grants, Kind, Limits, LoadError, Missing,
    Runtime, Tier, WitVersion,
};
use sha2::{Digest, Sha256};

fn runtime(cache: &tempfile::TempDir) -> Runtime {
    Runtime::new(cache.path().to_owned()).unwrap()
}

fn props(entries: &[(&str, Value)]) -> PropertyMap {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn note_urn() -> Urn {
    Urn::new("dev", "proj", None, "legacy:Note", "hi")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_built_against_0_1_loads_and_works() {
    let cache = tempfile::tempdir().unwrap();
    let legacy = runtime(&cache)
        .load_provider(
            "legacy",
            &support::guest("plinth-legacy-v01"),
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .unwrap();
    let info = legacy.info();
    assert_eq!(info.name, "legacy");
    assert_eq!(info.resources[0].token, "legacy:Note");
    assert!(info.resources[0].inputs[0].replace_on_change);
    // A 0.1 schema is untyped.
    assert_eq!(info.resources[0].inputs[0].ty, PropertyType::Any);
    assert_eq!(info.functions[0].token, "legacy:length");

    legacy.configure(&PropertyMap::new()).await.unwrap();
    let urn = note_urn();
    let bad = legacy
        .check(&urn, None, &props(&[("text", 1.0.into())]))
        .await
        .unwrap();
    assert_eq!(bad.failures[0].property, "text");
    let inputs = props(&[("text", "hello".into())]);
    let checked = legacy.check(&urn, None, &inputs).await.unwrap();
    assert!(checked.failures.is_empty());

    let planned = legacy.create(&urn, &inputs, true).await.unwrap();
    assert!(matches!(planned.outputs["length"], Value::Number(n) if n == 5.0));
    let created = legacy.create(&urn, &inputs, false).await.unwrap();
    assert_eq!(created.id, "note-hi");

    let news = props(&[("text", "bye".into())]);
    let diff = legacy
        .diff(&urn, &created.id, &inputs, &created.outputs, &news)
        .await
        .unwrap();
    assert_eq!(diff.replaces, ["text"]);

    let length = legacy
        .invoke("legacy:length", &props(&[("text", "four".into())]))
        .await
        .unwrap();
    assert!(matches!(length, Value::Number(n) if n == 4.0), "{length:?}");
    // The 0.1 provider's errors come through typed.
    let unknown = legacy.invoke("legacy:nope", &PropertyMap::new()).await;
    assert!(
        matches!(&unknown, Err(ProviderError::UnknownType(t)) if t == "legacy:nope"),
        "{unknown:?}"
    );
    legacy
        .delete(&urn, &created.id, &inputs, &created.outputs)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_built_against_0_2_gets_integers_as_floats_and_keeps_its_config() {
    let cache = tempfile::tempdir().unwrap();
    let runtime = runtime(&cache);
    let path = support::guest("plinth-legacy-v02");
    let scale = runtime
        .load_provider(
            "scale",
            &path,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .unwrap();
    let info = scale.info();
    assert_eq!(info.config[0].name, "factor");
    assert_eq!(info.config[0].ty, PropertyType::Any);
    assert!(info.resources[0].inputs[0].replace_on_change);

    let config = props(&[("factor", Value::Integer(3))]);
    let checked = scale.check_config(&config).await.unwrap();
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    // The guest's number comes back a float: the integer reached it as one.
    assert!(matches!(checked.inputs["factor"], Value::Number(n) if n == 3.0));
    scale.configure(&config).await.unwrap();

    let urn = Urn::new("dev", "proj", None, "scale:Product", "p");
    let inputs = props(&[("value", Value::Integer(8402))]);
    let checked = scale.check(&urn, None, &inputs).await.unwrap();
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    let bad = scale
        .check(&urn, None, &props(&[("value", "many".into())]))
        .await
        .unwrap();
    assert_eq!(bad.failures[0].property, "value");

    let created = scale.create(&urn, &inputs, false).await.unwrap();
    assert_eq!(created.id, "product-p");
    assert!(matches!(created.outputs["product"], Value::Number(n) if n == 25206.0));
    // The float the old guest returned equals the integer it is.
    assert_eq!(created.outputs["value"], Value::Integer(8402));
    // A float and the same integer are no change to the 0.2 guest either.
    let diff = scale
        .diff(
            &urn,
            &created.id,
            &checked.inputs,
            &created.outputs,
            &inputs,
        )
        .await
        .unwrap();
    assert!(diff.changed.is_empty(), "{diff:?}");
    // Beyond 2^53, the float it gets is the nearest one.
    let big = props(&[("value", Value::Integer((1 << 53) + 1))]);
    let created = scale.create(&urn, &big, false).await.unwrap();
    assert!(matches!(created.outputs["value"], Value::Number(n) if n == 9007199254740992.0));

    let described = runtime.inspect(&path).await.unwrap();
    assert_eq!(described.wit_version, WitVersion::V0_2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_0_3_provider_describes_typed_properties() {
    let cache = tempfile::tempdir().unwrap();
    let random = runtime(&cache)
        .load_provider(
            "random",
            &support::guest("plinth-random"),
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .unwrap();
    let info = random.info();
    let integer = (info.resources.iter())
        .find(|r| r.token == "random:RandomInteger")
        .unwrap();
    assert_eq!(integer.inputs[0].name, "min");
    assert_eq!(integer.inputs[0].ty, PropertyType::Integer);
    assert!(integer.inputs[0].required && integer.inputs[0].replace_on_change);
    let keepers = integer.inputs.iter().find(|p| p.name == "keepers").unwrap();
    assert_eq!(
        keepers.ty,
        PropertyType::Map {
            values: Box::new(PropertyType::Any)
        }
    );
    let result = integer.outputs.iter().find(|p| p.name == "result").unwrap();
    assert_eq!(result.ty, PropertyType::Integer);
    let pet = (info.resources.iter())
        .find(|r| r.token == "random:RandomPet")
        .unwrap();
    let length = pet.inputs.iter().find(|p| p.name == "length").unwrap();
    assert_eq!(length.default, Some(Value::Integer(2)));
    assert!(!info.description.is_empty());

    let urn = Urn::new("dev", "proj", None, "random:RandomInteger", "n");
    random.configure(&PropertyMap::new()).await.unwrap();
    let inputs = props(&[
        ("min", Value::Integer(8000)),
        ("max", Value::Number(8999.0)),
    ]);
    let checked = random.check(&urn, None, &inputs).await.unwrap();
    assert!(checked.failures.is_empty(), "{:?}", checked.failures);
    assert!(matches!(checked.inputs["max"], Value::Integer(8999)));
    let created = random.create(&urn, &checked.inputs, false).await.unwrap();
    let Value::Integer(n) = created.outputs["result"] else {
        panic!("an integer result: {:?}", created.outputs);
    };
    assert!((8000..=8999).contains(&n));
    assert_eq!(created.id, n.to_string());
}

/// A component exporting only `interface` (an empty instance of it).
fn component_exporting(dir: &Path, interface: &str) -> std::path::PathBuf {
    let wasm = wat::parse_str(format!(
        r#"(component (instance $i) (export "{interface}" (instance $i)))"#
    ))
    .unwrap();
    let path = dir.join("future.wasm");
    std::fs::write(&path, wasm).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_version_is_a_clear_error_naming_the_supported_ones() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir);
    let future = component_exporting(dir.path(), "plinth:plugin/provider@0.4.0");
    let error = runtime
        .load_provider(
            "future",
            &future,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("0.4 is refused");
    assert!(
        matches!(&error, LoadError::UnsupportedVersion { version, world: "provider", .. } if version == "0.4.0"),
        "{error}"
    );
    let message = error.to_string();
    for needle in [
        "future.wasm",
        "plinth:plugin@0.4.0",
        "0.1.0, 0.2.0 and 0.3.0",
    ] {
        assert!(message.contains(needle), "{needle} not in: {message}");
    }
    let error = runtime.inspect(&future).await.expect_err("0.4 is refused");
    assert!(
        matches!(error, LoadError::UnsupportedVersion { .. }),
        "{error}"
    );

    let program = component_exporting(dir.path(), "plinth:plugin/callbacks@9.0.0");
    let error = runtime
        .load_program(&program, Limits::default(), Tier::Optimized)
        .await
        .err()
        .expect("9.0 is refused");
    assert!(
        error.to_string().contains("0.1.0, 0.2.0 and 0.3.0"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_component_of_no_plinth_world_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir);
    let other = component_exporting(dir.path(), "example:other/thing@1.0.0");
    let error = runtime
        .load_provider(
            "other",
            &other,
            Limits::default(),
            Grants::default(),
            Tier::Optimized,
        )
        .await
        .err()
        .expect("not a provider");
    let message = error.to_string();
    assert!(
        matches!(
            error,
            LoadError::Link {
                world: "provider",
                ..
            }
        ),
        "{message}"
    );
    assert!(
        message.contains("plinth:plugin/provider") && message.contains("0.1.0, 0.2.0 and 0.3.0"),
        "{message}"
    );
    let error = runtime.inspect(&other).await.expect_err("not plinth");
    assert!(matches!(error, LoadError::NotPlinth { .. }), "{error}");
    assert!(error.to_string().contains("neither"), "{error}");
}

fn notes_grant(host: &Path, access: Access) -> Grants {
    Grants {
        dirs: vec![DirGrant {
            host: host.to_owned(),
            guest: "/notes".into(),
            access,
        }],
        ..Grants::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_provider_asking_for_more_than_granted_does_not_load() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir);
    let notes = support::guest("plinth-notes");
    let load =
        |grants| runtime.load_provider("notes", &notes, Limits::default(), grants, Tier::Optimized);

    let asked = DirRequest {
        guest: "/notes".into(),
        access: Access::ReadWrite,
        why: "each note is a file there".into(),
    };
    let error = load(Grants::default()).await.err().expect("refused");
    match &error {
        LoadError::Capabilities(CapabilityError::NotGranted {
            plugin, missing, ..
        }) => {
            assert_eq!(plugin, "notes");
            assert_eq!(missing, &[Missing::Dir(asked.clone())]);
        }
        other => panic!("unexpected {other}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("read-write access to the directory /notes"),
        "{message}"
    );

    let error = load(notes_grant(dir.path(), Access::ReadOnly))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&error, LoadError::Capabilities(CapabilityError::NotGranted { missing, .. }) if missing == &[Missing::DirWrite(asked)]),
        "{error}"
    );

    let provider = load(notes_grant(dir.path(), Access::ReadWrite))
        .await
        .unwrap();
    let urn = Urn::new("dev", "proj", None, "notes:Note", "first");
    let created = provider
        .create(&urn, &props(&[("text", "remember".into())]), false)
        .await
        .unwrap();
    let file = dir.path().join(&created.id);
    assert_eq!(std::fs::read_to_string(file).unwrap(), "remember");
}

fn sha256_hex(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_describes_providers_and_programs_of_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime(&dir);

    let notes = support::guest("plinth-notes");
    let info = runtime.inspect(&notes).await.unwrap();
    assert_eq!(
        (info.kind, info.wit_version),
        (Kind::Provider, WitVersion::V0_3)
    );
    assert_eq!(info.sha256, sha256_hex(&notes));
    assert_eq!(info.size, std::fs::metadata(&notes).unwrap().len());
    let provider = info.provider.expect("a provider's info");
    assert_eq!(provider.name, "notes");
    assert_eq!(provider.resources[0].token, "notes:Note");
    assert_eq!(info.capabilities.dirs[0].guest, "/notes");
    assert_eq!(info.capabilities.dirs[0].access, Access::ReadWrite);

    let legacy = runtime
        .inspect(&support::guest("plinth-legacy-v01"))
        .await
        .unwrap();
    assert_eq!(
        (legacy.kind, legacy.wit_version),
        (Kind::Provider, WitVersion::V0_1)
    );
    assert_eq!(legacy.provider.unwrap().functions[0].token, "legacy:length");
    assert!(legacy.capabilities.is_empty());

    let scenario = runtime
        .inspect(&support::guest("plinth-scenario"))
        .await
        .unwrap();
    assert_eq!(
        (scenario.kind, scenario.wit_version),
        (Kind::Program, WitVersion::V0_3)
    );
    assert!(scenario.provider.is_none() && scenario.capabilities.is_empty());

    let old_program = runtime
        .inspect(&support::guest("plinth-legacy-program-v01"))
        .await
        .unwrap();
    assert_eq!(
        (old_program.kind, old_program.wit_version),
        (Kind::Program, WitVersion::V0_1)
    );
}
