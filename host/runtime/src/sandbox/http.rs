//! Outbound `wasi:http` under the HTTP grants. The socket address check does not see these
//! requests (the host makes the connection), so the allow-list is enforced where the host
//! sends them: in the `send_request` hook.

use std::sync::Arc;

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::access::endpoint::AuthorityPattern;
use crate::sandbox::denial::{Denial, Denials};

/// The hooks of one sandbox: requests to granted authorities go out, others are refused
/// with `HTTP-request-denied`.
pub(crate) struct HttpGuard {
    grants: Vec<AuthorityPattern>,
    denials: Arc<Denials>,
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl HttpGuard {
    pub(crate) fn new(grants: Vec<AuthorityPattern>, denials: Arc<Denials>) -> HttpGuard {
        HttpGuard { grants, denials }
    }

    /// Whether a grant covers the request's authority; refusals are recorded.
    fn allows(&self, uri: &http::Uri) -> bool {
        let Some(authority) = uri.authority() else {
            // wasmtime-wasi-http fails such a request itself.
            return true;
        };
        let default_port = if uri.scheme() == Some(&http::uri::Scheme::HTTP) {
            80
        } else {
            443
        };
        let port = authority.port_u16().unwrap_or(default_port);
        let host = authority.host();
        if self
            .grants
            .iter()
            .any(|g| g.matches(host, port, default_port))
        {
            return true;
        }
        let host = crate::access::endpoint::normalize_name(host);
        self.denials.refuse(Denial::Http {
            authority: if port == default_port {
                host
            } else {
                format!("{host}:{port}")
            },
        });
        false
    }
}

impl WasiHttpHooks for HttpGuard {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        // `fut` reports failures to read the response; the default sender ignores it too.
        drop(fut);
        if !self.allows(request.uri()) {
            // The guest's body is still read, to its end, and dropped: a guest still writing
            // it when its stream closes under it (componentize-js's engine, on a `fetch` with
            // a body) traps instead of seeing the refusal it could catch. The reading ends
            // when the guest ends the body or its instance goes.
            let mut body = request.into_body();
            wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| {
                tokio::spawn(async move { while let Some(Ok(_)) = body.frame().await {} })
            });
            return Box::new(async { Err(Error::HttpRequestDenied) });
        }
        Box::new(async move {
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), Error>> + Send>,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::denial::Owner;

    fn guard(grants: &[&str]) -> HttpGuard {
        HttpGuard::new(
            grants.iter().map(|s| s.parse().unwrap()).collect(),
            Arc::new(Denials::new(
                Owner::Plugin("p".into()),
                Arc::new(crate::access::advice::PlainAdvice),
            )),
        )
    }

    fn uri(s: &str) -> http::Uri {
        s.parse().unwrap()
    }

    #[test]
    fn allows_granted_authorities_only() {
        let guard = guard(&["api.example.com", "*.svc.example:*", "127.0.0.1:8080"]);
        assert!(guard.allows(&uri("https://api.example.com/v1")));
        assert!(guard.allows(&uri("https://api.example.com:443/v1")));
        assert!(!guard.allows(&uri("https://api.example.com:8443/")));
        // Without a port, a grant covers the default port of either scheme.
        assert!(guard.allows(&uri("http://api.example.com/")));
        assert!(!guard.allows(&uri("http://api.example.com:443/")));
        assert!(guard.allows(&uri("http://a.svc.example:9000/")));
        assert!(guard.allows(&uri("http://127.0.0.1:8080/x")));
        assert!(!guard.allows(&uri("http://127.0.0.1:8081/x")));
        assert!(!guard.allows(&uri("https://evil.example/")));
    }

    #[test]
    fn refusals_name_the_authority_to_grant() {
        let guard = guard(&[]);
        assert!(!guard.allows(&uri("https://Evil.Example/path")));
        assert!(!guard.allows(&uri("http://127.0.0.1:8081/")));
        let note = guard.denials.explain("", &[]).unwrap();
        assert!(note.contains("HTTP request to evil.example;"), "{note}");
        assert!(note.contains("HTTP requests to evil.example"), "{note}");
        assert!(note.contains("HTTP requests to 127.0.0.1:8081"), "{note}");
    }
}
