//! The host side of the baseline: starts the native gRPC plugin as a subprocess and drives it
//! through plinth's engine [`Provider`] trait, as the runtime drives a Wasm component.

use std::path::Path;
use std::process::Stdio;

use async_trait::async_trait;
use plinth_bench::proto::resource_provider_client::ResourceProviderClient;
use plinth_bench::proto::{self, Empty};
use plinth_bench::wire;
use plinth_engine::provider::{
    CheckFailure, CheckResult, Created, DiffResult, Provider, ProviderError, ProviderInfo,
    ReadResult,
};
use plinth_engine::urn::Urn;
use plinth_engine::value::{PropertyMap, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tonic::transport::Channel;

/// A provider served by a native plugin process over gRPC.
pub struct GrpcProvider {
    client: ResourceProviderClient<Channel>,
    info: ProviderInfo,
    /// Killed when the provider is dropped.
    _process: Child,
}

impl GrpcProvider {
    /// Starts the plugin at `binary`: spawns it, reads the port it announces, connects, and asks
    /// for its info, as Pulumi and OpenTofu start a provider plugin.
    pub async fn start(binary: &Path) -> anyhow::Result<GrpcProvider> {
        let mut process = Command::new(binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", binary.display()))?;
        let stdout = process.stdout.take().expect("stdout is piped");
        let mut handshake = String::new();
        BufReader::new(stdout).read_line(&mut handshake).await?;
        let port: u16 = handshake.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "the plugin's handshake is not a port: `{}`",
                handshake.trim()
            )
        })?;
        let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))?
            .connect()
            .await?;
        let mut client = ResourceProviderClient::new(channel);
        let info = client.get_info(Empty {}).await?.into_inner();
        Ok(GrpcProvider {
            client,
            info: ProviderInfo {
                name: info.name,
                version: info.version,
                ..ProviderInfo::default()
            },
            _process: process,
        })
    }

    /// A client for one call: tonic clients are cheap handles on one shared HTTP/2 connection.
    fn client(&self) -> ResourceProviderClient<Channel> {
        self.client.clone()
    }
}

fn status(status: tonic::Status) -> ProviderError {
    match status.code() {
        tonic::Code::NotFound => ProviderError::NotFound,
        _ => ProviderError::Failed(status.message().to_owned()),
    }
}

fn properties(map: Option<proto::Properties>) -> Result<PropertyMap, ProviderError> {
    wire::map_from_proto(map).map_err(|e| ProviderError::Failed(e.to_string()))
}

fn check_result(response: proto::CheckResponse) -> Result<CheckResult, ProviderError> {
    Ok(CheckResult {
        inputs: properties(response.inputs)?,
        failures: (response.failures.into_iter())
            .map(|f| CheckFailure {
                property: f.property,
                reason: f.reason,
            })
            .collect(),
    })
}

#[async_trait]
impl Provider for GrpcProvider {
    fn info(&self) -> &ProviderInfo {
        &self.info
    }

    async fn check_config(&self, config: &PropertyMap) -> Result<CheckResult, ProviderError> {
        let response = self.client().check_config(wire::map_to_proto(config)).await;
        check_result(response.map_err(status)?.into_inner())
    }

    async fn configure(&self, config: &PropertyMap) -> Result<(), ProviderError> {
        let response = self.client().configure(wire::map_to_proto(config)).await;
        response.map(drop).map_err(status)
    }

    async fn check(
        &self,
        urn: &Urn,
        olds: Option<&PropertyMap>,
        news: &PropertyMap,
    ) -> Result<CheckResult, ProviderError> {
        let request = proto::CheckRequest {
            urn: urn.as_str().to_owned(),
            olds: olds.map(wire::map_to_proto),
            news: Some(wire::map_to_proto(news)),
        };
        let response = self.client().check(request).await;
        check_result(response.map_err(status)?.into_inner())
    }

    async fn diff(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
    ) -> Result<DiffResult, ProviderError> {
        let request = proto::DiffRequest {
            urn: urn.as_str().to_owned(),
            id: id.to_owned(),
            old_inputs: Some(wire::map_to_proto(old_inputs)),
            old_outputs: Some(wire::map_to_proto(old_outputs)),
            new_inputs: Some(wire::map_to_proto(new_inputs)),
        };
        let diff = self.client().diff(request).await.map_err(status)?;
        let diff = diff.into_inner();
        Ok(DiffResult {
            changed: diff.changed,
            replaces: diff.replaces,
            delete_before_replace: diff.delete_before_replace,
        })
    }

    async fn create(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<Created, ProviderError> {
        let request = proto::CreateRequest {
            urn: urn.as_str().to_owned(),
            inputs: Some(wire::map_to_proto(inputs)),
            preview,
        };
        let created = self.client().create(request).await.map_err(status)?;
        let created = created.into_inner();
        Ok(Created {
            id: created.id,
            outputs: properties(created.outputs)?,
        })
    }

    async fn read(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<Option<ReadResult>, ProviderError> {
        let request = proto::ReadRequest {
            urn: urn.as_str().to_owned(),
            id: id.to_owned(),
            inputs: Some(wire::map_to_proto(inputs)),
            outputs: Some(wire::map_to_proto(outputs)),
        };
        let read = self.client().read(request).await.map_err(status)?;
        let read = read.into_inner();
        if read.gone {
            return Ok(None);
        }
        Ok(Some(ReadResult {
            id: read.id,
            inputs: properties(read.inputs)?,
            outputs: properties(read.outputs)?,
        }))
    }

    async fn update(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: &PropertyMap,
        old_outputs: &PropertyMap,
        new_inputs: &PropertyMap,
        preview: bool,
    ) -> Result<PropertyMap, ProviderError> {
        let request = proto::UpdateRequest {
            urn: urn.as_str().to_owned(),
            id: id.to_owned(),
            old_inputs: Some(wire::map_to_proto(old_inputs)),
            old_outputs: Some(wire::map_to_proto(old_outputs)),
            new_inputs: Some(wire::map_to_proto(new_inputs)),
            preview,
        };
        let outputs = self.client().update(request).await.map_err(status)?;
        properties(Some(outputs.into_inner()))
    }

    async fn delete(
        &self,
        urn: &Urn,
        id: &str,
        inputs: &PropertyMap,
        outputs: &PropertyMap,
    ) -> Result<(), ProviderError> {
        let request = proto::DeleteRequest {
            urn: urn.as_str().to_owned(),
            id: id.to_owned(),
            inputs: Some(wire::map_to_proto(inputs)),
            outputs: Some(wire::map_to_proto(outputs)),
        };
        self.client()
            .delete(request)
            .await
            .map(drop)
            .map_err(status)
    }

    async fn invoke(&self, token: &str, args: &PropertyMap) -> Result<Value, ProviderError> {
        let request = proto::InvokeRequest {
            token: token.to_owned(),
            args: Some(wire::map_to_proto(args)),
        };
        let value = self.client().invoke(request).await.map_err(status)?;
        wire::from_proto(value.into_inner()).map_err(|e| ProviderError::Failed(e.to_string()))
    }
}
