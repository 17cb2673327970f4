//! Directory grants: a plugin sees a granted directory, with the access granted, and nothing
//! else of the host. Driven through the `plinth-testkit` functions `testkit:readFile` and
//! `testkit:writeFile`, which touch whatever path they are given.

use crate::support;

use std::path::Path;
use std::sync::Arc;

use plinth_engine::provider::{Provider, ProviderError};
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Access, DirGrant, Grants, Limits, LoadError, Runtime, Tier};

/// A host directory tree: `world/inside.txt`, and `secret.txt` next to `world`.
struct Host {
    root: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("world")).unwrap();
        std::fs::write(root.path().join("world/inside.txt"), "inside").unwrap();
        std::fs::write(root.path().join("secret.txt"), "secret").unwrap();
        Host { root }
    }

    fn path(&self, relative: &str) -> std::path::PathBuf {
        self.root.path().join(relative)
    }

    fn world(&self, access: Access) -> Grants {
        Grants {
            dirs: vec![DirGrant {
                host: self.path("world"),
                guest: "/world".into(),
                access,
            }],
            ..Grants::default()
        }
    }
}

async fn testkit(cache: &Path, grants: Grants) -> Result<Arc<dyn Provider>, LoadError> {
    let runtime = Runtime::new(cache.to_owned()).unwrap();
    runtime
        .load_provider(
            "testkit",
            &support::guest("plinth-testkit"),
            Limits::default(),
            grants,
            Tier::Optimized,
        )
        .await
}

fn args(entries: &[(&str, &str)]) -> PropertyMap {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect()
}

async fn read(provider: &dyn Provider, path: &str) -> Result<String, String> {
    match provider
        .invoke("testkit:readFile", &args(&[("path", path)]))
        .await
    {
        Ok(Value::String(s)) => Ok(s),
        Ok(other) => panic!("readFile returned {other:?}"),
        Err(ProviderError::Failed(message)) => Err(message),
        Err(other) => panic!("readFile failed unexpectedly: {other:?}"),
    }
}

async fn write(provider: &dyn Provider, path: &str, content: &str) -> Result<(), String> {
    match provider
        .invoke(
            "testkit:writeFile",
            &args(&[("path", path), ("content", content)]),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(ProviderError::Failed(message)) => Err(message),
        Err(other) => panic!("writeFile failed unexpectedly: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_write_grant_can_be_read_and_written() {
    let host = Host::new();
    let provider = testkit(&host.path("cache"), host.world(Access::ReadWrite))
        .await
        .unwrap();
    assert_eq!(
        read(&*provider, "/world/inside.txt").await.unwrap(),
        "inside"
    );
    write(&*provider, "/world/new.txt", "hello").await.unwrap();
    assert_eq!(
        std::fs::read_to_string(host.path("world/new.txt")).unwrap(),
        "hello"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_grant_refuses_writes() {
    let host = Host::new();
    let provider = testkit(&host.path("cache"), host.world(Access::ReadOnly))
        .await
        .unwrap();
    assert_eq!(
        read(&*provider, "/world/inside.txt").await.unwrap(),
        "inside"
    );
    for path in ["/world/new.txt", "/world/inside.txt"] {
        let err = write(&*provider, path, "x").await.unwrap_err();
        assert!(err.contains("writing"), "{err}");
    }
    assert!(!host.path("world/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(host.path("world/inside.txt")).unwrap(),
        "inside"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_outside_a_grant_is_reachable() {
    let host = Host::new();
    let provider = testkit(&host.path("cache"), host.world(Access::ReadWrite))
        .await
        .unwrap();
    let secret = host.path("secret.txt");
    let outside = [
        secret.to_str().unwrap().to_owned(),
        "/world/../secret.txt".to_owned(),
        "/world/../../secret.txt".to_owned(),
        "../secret.txt".to_owned(),
        "/etc/hostname".to_owned(),
    ];
    for path in &outside {
        assert!(read(&*provider, path).await.is_err(), "{path} was readable");
        assert!(
            write(&*provider, path, "x").await.is_err(),
            "{path} was writable"
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_grant_no_directory_is_reachable() {
    let host = Host::new();
    let provider = testkit(&host.path("cache"), Grants::default())
        .await
        .unwrap();
    let err = read(&*provider, "/world/inside.txt").await.unwrap_err();
    assert!(err.contains("reading /world/inside.txt"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_granted_directory_is_a_load_error() {
    let host = Host::new();
    let grants = Grants {
        dirs: vec![DirGrant {
            host: host.path("nowhere"),
            guest: "/world".into(),
            access: Access::ReadOnly,
        }],
        ..Grants::default()
    };
    let err = testkit(&host.path("cache"), grants)
        .await
        .err()
        .expect("a missing directory is refused");
    assert!(matches!(err, LoadError::Grant { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("plugin `testkit`") && message.contains("nowhere"),
        "{message}"
    );
}
