//! The baseline plugin: the `bench` provider (`bench:Item`, as the Wasm component in
//! `bench/provider` implements it) as a native subprocess speaking gRPC, the architecture of
//! Pulumi's and OpenTofu's plugins. It listens on a loopback port, announces it on stdout (the
//! handshake), and serves until its host kills it or closes its stdin.

#[path = "../../item.rs"]
mod item;

use plinth_bench::proto::resource_provider_server::{ResourceProvider, ResourceProviderServer};
use plinth_bench::proto::{self, Empty};
use plinth_bench::wire;
use plinth_engine::value::{PropertyMap, Value};
use tokio::io::AsyncReadExt;
use tonic::{Request, Response, Status};

#[derive(Default)]
struct Bench;

type Reply<T> = Result<Response<T>, Status>;

fn properties(map: Option<proto::Properties>) -> Result<PropertyMap, Status> {
    wire::map_from_proto(map).map_err(|e| Status::invalid_argument(e.to_string()))
}

fn type_of(urn: &str) -> Result<(), Status> {
    // urn:plinth:<stack>::<project>::<type>::<name>
    match urn.split("::").nth(2) {
        Some(token) if token.rsplit('$').next() == Some(item::TOKEN) => Ok(()),
        Some(token) => Err(Status::not_found(format!(
            "unknown resource type `{token}`"
        ))),
        None => Err(Status::invalid_argument(format!("malformed URN `{urn}`"))),
    }
}

/// The failures of `inputs` against the item's schema; unknown values pass (a preview).
fn validate(inputs: &PropertyMap) -> Vec<proto::Failure> {
    let mut failures = Vec::new();
    let mut expect =
        |key: &str, required: bool, ok: fn(&Value) -> bool, what: &str| match inputs.get(key) {
            None | Some(Value::Null) if required => failures.push(proto::Failure {
                property: key.to_owned(),
                reason: "is required".to_owned(),
            }),
            None | Some(Value::Null) | Some(Value::Unknown) => {}
            Some(value) if ok(value) => {}
            Some(_) => failures.push(proto::Failure {
                property: key.to_owned(),
                reason: format!("must be {what}"),
            }),
        };
    expect("index", true, |v| v.as_i64().is_some(), "an integer");
    expect(
        "payload",
        true,
        |v| matches!(v, Value::String(_)),
        "a string",
    );
    expect(
        "after",
        false,
        |v| matches!(v, Value::String(_)),
        "a string",
    );
    failures
}

/// The inputs with `result`, unknown while the payload is.
fn outputs(mut inputs: PropertyMap) -> PropertyMap {
    let result = match inputs.get("payload") {
        Some(Value::String(payload)) => Value::String(item::result(payload)),
        _ => Value::Unknown,
    };
    inputs.insert("result".to_owned(), result);
    inputs
}

#[tonic::async_trait]
impl ResourceProvider for Bench {
    async fn get_info(&self, _: Request<Empty>) -> Reply<proto::Info> {
        Ok(Response::new(proto::Info {
            name: "bench".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            resource_types: vec![item::TOKEN.to_owned()],
        }))
    }

    async fn check_config(
        &self,
        request: Request<proto::Properties>,
    ) -> Reply<proto::CheckResponse> {
        Ok(Response::new(proto::CheckResponse {
            inputs: Some(request.into_inner()),
            failures: Vec::new(),
        }))
    }

    async fn configure(&self, _: Request<proto::Properties>) -> Reply<Empty> {
        Ok(Response::new(Empty {}))
    }

    async fn check(&self, request: Request<proto::CheckRequest>) -> Reply<proto::CheckResponse> {
        let request = request.into_inner();
        type_of(&request.urn)?;
        let news = properties(request.news)?;
        let failures = validate(&news);
        Ok(Response::new(proto::CheckResponse {
            inputs: Some(wire::map_to_proto(&news)),
            failures,
        }))
    }

    async fn diff(&self, request: Request<proto::DiffRequest>) -> Reply<proto::DiffResponse> {
        let request = request.into_inner();
        type_of(&request.urn)?;
        let olds = properties(request.old_inputs)?;
        let news = properties(request.new_inputs)?;
        let mut changed: Vec<String> = (news.iter())
            .filter(|(k, v)| olds.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        changed.extend(olds.keys().filter(|k| !news.contains_key(*k)).cloned());
        Ok(Response::new(proto::DiffResponse {
            changed,
            replaces: Vec::new(),
            delete_before_replace: false,
        }))
    }

    async fn create(&self, request: Request<proto::CreateRequest>) -> Reply<proto::CreateResponse> {
        let request = request.into_inner();
        type_of(&request.urn)?;
        let inputs = properties(request.inputs)?;
        Ok(Response::new(proto::CreateResponse {
            id: item::id(&request.urn),
            outputs: Some(wire::map_to_proto(&outputs(inputs))),
        }))
    }

    async fn read(&self, request: Request<proto::ReadRequest>) -> Reply<proto::ReadResponse> {
        let request = request.into_inner();
        type_of(&request.urn)?;
        let inputs = properties(request.inputs)?;
        let outputs = properties(request.outputs)?;
        Ok(Response::new(proto::ReadResponse {
            gone: false,
            id: request.id,
            inputs: Some(wire::map_to_proto(&inputs)),
            outputs: Some(wire::map_to_proto(&outputs)),
        }))
    }

    async fn update(&self, request: Request<proto::UpdateRequest>) -> Reply<proto::Properties> {
        let request = request.into_inner();
        type_of(&request.urn)?;
        let news = properties(request.new_inputs)?;
        Ok(Response::new(wire::map_to_proto(&outputs(news))))
    }

    async fn delete(&self, request: Request<proto::DeleteRequest>) -> Reply<Empty> {
        type_of(&request.into_inner().urn)?;
        Ok(Response::new(Empty {}))
    }

    async fn invoke(&self, request: Request<proto::InvokeRequest>) -> Reply<proto::Value> {
        let token = request.into_inner().token;
        Err(Status::not_found(format!("unknown function `{token}`")))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    // The handshake: the host reads the port from the first line.
    println!("{}", listener.local_addr()?.port());
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    // Serve until the host closes stdin (or kills the process).
    let host_gone = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    tonic::transport::Server::builder()
        .add_service(ResourceProviderServer::new(Bench))
        .serve_with_incoming_shutdown(incoming, host_gone)
        .await?;
    Ok(())
}
