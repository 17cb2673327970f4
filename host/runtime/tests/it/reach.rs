//! Network and environment grants at the runtime level, driven through the `plinth-reach`
//! provider: what is granted works, what is not fails with an error that names the plugin,
//! the attempt and the grant that would allow it. (tests/e2e/reach.rs covers the same through
//! Plinth.yaml and the `plinth` binary, with the advice worded as Plinth.yaml lines.)

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

use plinth_engine::provider::{Provider, ProviderError};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use plinth_runtime::{Grants, Limits, Runtime, Tier};

async fn reach(cache: &std::path::Path, grants: Grants) -> Arc<dyn Provider> {
    let runtime = Runtime::new(cache.to_owned()).unwrap();
    runtime
        .load_provider(
            "reach",
            &support::guest("plinth-reach"),
            Limits::default(),
            grants,
            Tier::Optimized,
        )
        .await
        .unwrap()
}

/// Creates a `ty` resource with the string `inputs`; its outputs, or the error message.
async fn create(
    provider: &dyn Provider,
    ty: &str,
    inputs: &[(&str, &str)],
) -> Result<PropertyMap, String> {
    let inputs: PropertyMap = inputs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    let urn = Urn::new("test", "runtime", None, ty, "x");
    provider
        .create(&urn, &inputs, false)
        .await
        .map(|created| created.outputs)
        .map_err(|e: ProviderError| e.to_string())
}

/// A TCP server on 127.0.0.1 that answers one line per connection with `echo: ` and the line.
fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut line = String::new();
            if BufReader::new(&stream).read_line(&mut line).is_ok() {
                let _ = write!(&stream, "echo: {line}");
            }
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn tcp_and_http_follow_their_grants() {
    let cache = tempfile::tempdir().unwrap();
    let port = echo_server();
    let endpoint = format!("127.0.0.1:{port}");
    let tcp = [
        ("host", "127.0.0.1"),
        ("port", &port.to_string()),
        ("line", "hi"),
    ];

    let denied = reach(cache.path(), Grants::default()).await;
    let err = create(&*denied, "reach:Tcp", &tcp).await.unwrap_err();
    assert!(
        err.contains(&format!(
            "plugin `reach` was denied TCP connect to {endpoint}; to allow it, grant plugin \
             `reach` TCP connections to {endpoint}"
        )),
        "{err}"
    );
    let http = [("url", format!("http://{endpoint}/"))];
    let http = [("url", http[0].1.as_str())];
    let err = create(&*denied, "reach:Http", &http).await.unwrap_err();
    assert!(
        err.contains(&format!("HTTP request to {endpoint}")) && err.contains("HttpRequestDenied"),
        "{err}"
    );

    let granted = reach(
        cache.path(),
        Grants {
            tcp: vec![endpoint.parse().unwrap()],
            ..Grants::default()
        },
    )
    .await;
    let outputs = create(&*granted, "reach:Tcp", &tcp).await.unwrap();
    assert_eq!(outputs["reply"], Value::from("echo: hi"));
    // The TCP grant does not cover wasi:http.
    let err = create(&*granted, "reach:Http", &http).await.unwrap_err();
    assert!(
        err.contains(&format!("HTTP requests to {endpoint}")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_without_a_refusal_says_nothing_of_grants() {
    let cache = tempfile::tempdir().unwrap();
    let provider = reach(cache.path(), Grants::default()).await;
    let err = create(
        &*provider,
        "reach:Env",
        &[("name", "PLINTH_SURELY_UNSET_4711")],
    )
    .await
    .unwrap_err();
    assert!(err.contains("reading the environment variable"), "{err}");
    assert!(!err.contains("Plinth.yaml"), "{err}");
}
