//! A small blocking client of the OCI distribution API on ureq (the HTTP stack `plugin install`
//! already uses): manifests, blobs and pushes; basic and bearer-token authentication.
//!
//! Every byte a registry sends is hostile: each answer is read up to a cap, a blob is refused
//! unless its size and SHA-256 are the ones its descriptor names, and anything shown from an
//! error body is escaped.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use plinth_engine::shown::escape_controls;
use serde::Deserialize;
use ureq::http::Response;
use ureq::{Agent, Body};
use url::{Host, Url};

use super::artifact::{Descriptor, INDEX_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, digest_of};
use super::auth::{Challenge, Credentials, credentials_for, parse_challenge};
use super::endpoint::Endpoint;

/// The largest manifest plinth reads (distribution's own default limit).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// The largest token answer plinth reads.
const MAX_SMALL_BYTES: u64 = 4 * 1024 * 1024;
/// How much of an error answer is read to show.
const MAX_ERROR_BYTES: u64 = 4 * 1024;
/// How many tags one page of `tags/list` is asked for.
const TAGS_PER_PAGE: usize = 1000;
/// The most pages of tags plinth follows, and the most tags it keeps.
const MAX_TAG_PAGES: usize = 50;
const MAX_TAGS: usize = 10_000;
/// A connection to one registry.
pub struct Client {
    agent: Agent,
    /// `https://host[:port]`, or `http://` for a loopback registry that speaks no TLS.
    base: Url,
    registry: String,
    credentials: Option<Credentials>,
    /// The `Authorization` value that last worked.
    authorization: Option<String>,
}

enum Method<'a> {
    Get(&'a str),
    Head,
    Post,
    Put(&'a str, &'a [u8]),
}

impl Client {
    /// Connects to `registry` (`host[:port]`): over TLS, or over plain HTTP when the registry
    /// is on a loopback address and speaks no TLS (the rule `plugin install` follows).
    pub fn connect(registry: &str) -> Result<Client> {
        let credentials = credentials_for(registry)?;
        let https = Url::parse(&format!("https://{registry}/"))
            .with_context(|| format!("`{registry}` is not a registry host"))?;
        let mut client = Client {
            agent: agent(true)?,
            base: https.clone(),
            registry: registry.to_owned(),
            credentials,
            authorization: None,
        };
        let tls_error = match client.ping() {
            Ok(()) => return Ok(client),
            Err(e) => e,
        };
        if !is_loopback(&https) || !speaks_no_tls(&tls_error) {
            return Err(tls_error);
        }
        client.agent = agent(false)?;
        client.base = Url::parse(&format!("http://{registry}/"))?;
        client
            .ping()
            .map_err(|e| anyhow!("{e} (and over TLS: {tls_error:#})"))?;
        Ok(client)
    }

    /// `GET /v2/`: the registry answers (401 counts; credentials are sent when asked for).
    fn ping(&mut self) -> Result<()> {
        let url = self.url("/v2/")?;
        let response = self.send_once(&url, &Method::Get("application/json"))?;
        match response.status().as_u16() {
            200 | 401 => Ok(()),
            status => bail!(
                "{} answered HTTP {status} to /v2/: it is not an OCI registry",
                self.registry
            ),
        }
    }

    fn get_manifest(
        &mut self,
        repository: &str,
        reference: &str,
        missing_ok: bool,
    ) -> Result<Option<(Vec<u8>, String)>> {
        let url = self.url(&format!("/v2/{repository}/manifests/{reference}"))?;
        let accept = format!("{MANIFEST_MEDIA_TYPE}, {INDEX_MEDIA_TYPE}");
        let mut response = self.send(&url, &Method::Get(&accept), repository, "pull")?;
        if missing_ok && response.status().as_u16() == 404 {
            return Ok(None);
        }
        let what = format!("{}/{repository}:{reference}", self.registry);
        expect(
            &mut response,
            &[200],
            &format!("fetching the manifest of {what}"),
        )?;
        let bytes = read_capped(&mut response, MAX_MANIFEST_BYTES, || {
            format!("the manifest of {what}")
        })?;
        let digest = digest_of(&bytes);
        if reference.starts_with("sha256:") && reference != digest {
            bail!(
                "{what}: the registry sent a manifest whose digest is {digest}, not the one asked \
                 for; refused"
            );
        }
        Ok(Some((bytes, digest)))
    }

    fn url(&self, path: &str) -> Result<Url> {
        self.base
            .join(path)
            .with_context(|| format!("cannot make a URL of {path}"))
    }

    /// Sends a request; answered 401, authenticates as the challenge asks and sends it again.
    fn send(
        &mut self,
        url: &Url,
        method: &Method<'_>,
        repository: &str,
        actions: &str,
    ) -> Result<Response<Body>> {
        let response = self.send_once(url, method)?;
        if response.status().as_u16() != 401 {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_challenge);
        let default_scope = format!("repository:{repository}:{actions}");
        self.authorization = Some(match challenge {
            Some(Challenge::Basic) => self.need_credentials()?.basic(),
            Some(Challenge::Bearer {
                realm,
                service,
                scope,
            }) => {
                let scope = scope.unwrap_or(default_scope);
                format!("Bearer {}", self.token(&realm, service.as_deref(), &scope)?)
            }
            None => bail!(
                "{} asks for authentication of a kind plinth does not know (neither basic nor bearer)",
                self.registry
            ),
        });
        let response = self.send_once(url, method)?;
        if response.status().as_u16() == 401 {
            bail!(
                "{} refused the credentials for {repository} ({}): check the `auths` entry of \
                 docker's config.json (`docker login {}`)",
                self.registry,
                if self.credentials.is_some() {
                    "from config.json"
                } else {
                    "anonymous"
                },
                self.registry
            );
        }
        Ok(response)
    }

    fn need_credentials(&self) -> Result<&Credentials> {
        self.credentials.as_ref().ok_or_else(|| {
            anyhow!(
                "{} asks for credentials and docker's config.json has none for it: run \
                 `docker login {}` (or add it to `auths` in $DOCKER_CONFIG/config.json)",
                self.registry,
                self.registry
            )
        })
    }

    /// A bearer token from the challenge's realm, asked for with the credentials if there are
    /// any (anonymous pulls get a token too).
    fn token(&self, realm: &str, service: Option<&str>, scope: &str) -> Result<String> {
        #[derive(Deserialize)]
        struct TokenAnswer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let mut url = super::super::download::parse_url(realm)
            .with_context(|| format!("{} names a token realm plinth refuses", self.registry))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", scope);
        }
        let mut request = self.agent.get(url.as_str());
        if let Some(credentials) = &self.credentials {
            request = request.header("Authorization", credentials.basic());
        }
        let what = format!("a token for {scope} from {}", escape_controls(realm));
        let mut response = request.call().map_err(|e| anyhow!("asking {what}: {e}"))?;
        expect(&mut response, &[200], &format!("asking {what}"))?;
        let body = read_capped(&mut response, MAX_SMALL_BYTES, || what.clone())?;
        let answer: TokenAnswer = serde_json::from_slice(&body)
            .with_context(|| format!("asking {what}: the answer is not a token"))?;
        answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| anyhow!("asking {what}: the answer holds no usable token"))
    }

    fn send_once(&self, url: &Url, method: &Method<'_>) -> Result<Response<Body>> {
        let auth = self.authorization.as_deref();
        let result = match method {
            Method::Get(accept) => authorized(self.agent.get(url.as_str()), auth)
                .header("Accept", *accept)
                .call(),
            Method::Head => authorized(self.agent.head(url.as_str()), auth).call(),
            Method::Post => authorized(self.agent.post(url.as_str()), auth).send_empty(),
            Method::Put(content_type, body) => authorized(self.agent.put(url.as_str()), auth)
                .header("Content-Type", *content_type)
                .send(*body),
        };
        result.map_err(|e| {
            let message = format!("cannot reach the registry {}: {e}", self.registry);
            anyhow::Error::new(e).context(message)
        })
    }
}

impl Endpoint for Client {
    /// The manifest `reference` (a tag or digest) names, and its digest. Refused if it is
    /// larger than [`MAX_MANIFEST_BYTES`], or, asked for by digest, has another one.
    fn manifest(&mut self, repository: &str, reference: &str) -> Result<(Vec<u8>, String)> {
        self.get_manifest(repository, reference, false)?
            .ok_or_else(|| anyhow!("unreachable: a missing manifest is an error"))
    }

    /// The manifest `reference` names, or none if the registry has no such one (HTTP 404).
    fn manifest_if_any(
        &mut self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<(Vec<u8>, String)>> {
        self.get_manifest(repository, reference, true)
    }

    /// The blob `descriptor` names, refused unless its size and digest are the descriptor's,
    /// or if it is larger than `max`.
    fn blob(&mut self, repository: &str, descriptor: &Descriptor, max: u64) -> Result<Vec<u8>> {
        let what = format!(
            "blob {} of {}/{repository}",
            descriptor.digest, self.registry
        );
        if descriptor.size > max {
            bail!(
                "{what} is {} bytes, larger than the {max} plinth accepts; refused",
                descriptor.size
            );
        }
        let url = self.url(&format!("/v2/{repository}/blobs/{}", descriptor.digest))?;
        let mut response = self.send(
            &url,
            &Method::Get("application/octet-stream"),
            repository,
            "pull",
        )?;
        expect(&mut response, &[200], &format!("fetching {what}"))?;
        // One byte more than the descriptor names, so that a longer blob is caught below.
        let bytes = read_capped(&mut response, descriptor.size + 1, || what.clone())?;
        let digest = digest_of(&bytes);
        if bytes.len() as u64 != descriptor.size || digest != descriptor.digest {
            bail!(
                "{what}: the registry sent {} bytes with digest {digest}, not the {} bytes the \
                 manifest names; refused, nothing was stored",
                bytes.len(),
                descriptor.size
            );
        }
        Ok(bytes)
    }

    /// The repository's tags (`tags/list`), following the `Link` header's pages on the same
    /// server; refused past [`MAX_TAG_PAGES`] pages or [`MAX_TAGS`] tags. Tags that break the
    /// distribution grammar are dropped: they can name nothing plinth pulls.
    fn tags(&mut self, repository: &str) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct TagList {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let what = format!("the tags of {}/{repository}", self.registry);
        let mut url = self.url(&format!("/v2/{repository}/tags/list?n={TAGS_PER_PAGE}"))?;
        let mut tags = Vec::new();
        for _ in 0..MAX_TAG_PAGES {
            let mut response =
                self.send(&url, &Method::Get("application/json"), repository, "pull")?;
            expect(&mut response, &[200], &format!("listing {what}"))?;
            let next = next_page(&response);
            let body = read_capped(&mut response, MAX_SMALL_BYTES, || what.clone())?;
            let page: TagList = serde_json::from_slice(&body)
                .with_context(|| format!("{what}: the registry's answer is not a tag list"))?;
            tags.extend(
                page.tags
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| super::reference::check_tag(t).is_ok()),
            );
            if tags.len() > MAX_TAGS {
                bail!("{what}: more than {MAX_TAGS} tags; refused");
            }
            let Some(next) = next else {
                return Ok(tags);
            };
            let next = self
                .base
                .join(&next)
                .with_context(|| format!("{what}: the next page is not a URL"))?;
            if next.origin() != self.base.origin() {
                bail!(
                    "{what}: the registry named a next page on another server ({}); refused",
                    escape_controls(next.as_str())
                );
            }
            url = next;
        }
        bail!("{what}: more than {MAX_TAG_PAGES} pages of tags; refused")
    }

    /// Uploads `bytes` as a blob (monolithically), unless the registry has it already.
    fn push_blob(&mut self, repository: &str, bytes: &[u8]) -> Result<String> {
        let digest = digest_of(bytes);
        let url = self.url(&format!("/v2/{repository}/blobs/{digest}"))?;
        let response = self.send(&url, &Method::Head, repository, "pull,push")?;
        if response.status().as_u16() == 200 {
            return Ok(digest);
        }
        let what = format!("uploading blob {digest} to {}/{repository}", self.registry);
        let url = self.url(&format!("/v2/{repository}/blobs/uploads/"))?;
        let mut response = self.send(&url, &Method::Post, repository, "pull,push")?;
        expect(&mut response, &[202], &what)?;
        let location = response
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| anyhow!("{what}: the registry named no upload location"))?;
        let mut upload = self
            .base
            .join(location)
            .with_context(|| format!("{what}: the upload location is not a URL"))?;
        if upload.origin() != self.base.origin() {
            bail!(
                "{what}: the registry asked for the upload at another server ({}); refused",
                escape_controls(upload.as_str())
            );
        }
        upload.query_pairs_mut().append_pair("digest", &digest);
        let mut response = self.send(
            &upload,
            &Method::Put("application/octet-stream", bytes),
            repository,
            "pull,push",
        )?;
        expect(&mut response, &[201], &what)?;
        Ok(digest)
    }

    /// Pushes a manifest under `tag`; returns its digest.
    fn push_manifest(&mut self, repository: &str, tag: &str, manifest: &[u8]) -> Result<String> {
        let url = self.url(&format!("/v2/{repository}/manifests/{tag}"))?;
        let mut response = self.send(
            &url,
            &Method::Put(MANIFEST_MEDIA_TYPE, manifest),
            repository,
            "pull,push",
        )?;
        expect(
            &mut response,
            &[201],
            &format!(
                "pushing the manifest of {}/{repository}:{tag}",
                self.registry
            ),
        )?;
        Ok(digest_of(manifest))
    }
}

fn authorized<B>(request: ureq::RequestBuilder<B>, auth: Option<&str>) -> ureq::RequestBuilder<B> {
    match auth {
        Some(value) => request.header("Authorization", value),
        None => request,
    }
}

/// An agent that follows redirects only from https to https, and none of a plain http one.
fn agent(secure: bool) -> Result<Agent> {
    Ok(Agent::config_builder()
        .https_only(secure)
        .max_redirects(if secure { 10 } else { 0 })
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .user_agent(concat!("plinth/", env!("CARGO_PKG_VERSION")))
        .tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(root_certs())
                .build(),
        )
        .build()
        .new_agent())
}

/// The system's roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` replace them, as for OpenSSL and
/// curl); the roots plinth ships if the system has none.
fn root_certs() -> ureq::tls::RootCerts {
    let found = rustls_native_certs::load_native_certs();
    if found.certs.is_empty() {
        return ureq::tls::RootCerts::WebPki;
    }
    let certs = found
        .certs
        .iter()
        .map(|der| ureq::tls::Certificate::from_der(der.as_ref()).to_owned())
        .collect();
    ureq::tls::RootCerts::Specific(Arc::new(certs))
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether a TLS attempt failed because the server spoke something else (plain HTTP), not
/// because its certificate was refused: only then may a loopback registry be asked in clear.
fn speaks_no_tls(error: &anyhow::Error) -> bool {
    let refused_certificate = |e: &rustls::Error| {
        matches!(
            e,
            rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
        )
    };
    match error.downcast_ref::<ureq::Error>() {
        Some(ureq::Error::Rustls(e)) => !refused_certificate(e),
        // ureq hands some TLS failures over as I/O errors wrapping rustls's.
        Some(ureq::Error::Io(e)) => e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some_and(|e| !refused_certificate(e)),
        _ => false,
    }
}

/// The target of a `Link: <URL>; rel="next"` header (RFC 8288, as distribution pages tags).
fn next_page(response: &Response<Body>) -> Option<String> {
    let link = response.headers().get("link")?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let is_next = params.split(';').any(|p| {
            p.trim()
                .strip_prefix("rel=")
                .is_some_and(|rel| rel.trim_matches('"') == "next")
        });
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_owned())
    })
}

/// Fails unless the status is one of `ok`, with the registry's error (escaped) if it sent one.
fn expect(response: &mut Response<Body>, ok: &[u16], what: &str) -> Result<()> {
    let status = response.status().as_u16();
    if ok.contains(&status) {
        return Ok(());
    }
    #[derive(Deserialize)]
    struct Errors {
        errors: Vec<RegistryError>,
    }
    #[derive(Deserialize)]
    struct RegistryError {
        code: String,
        #[serde(default)]
        message: String,
    }
    let body = response
        .body_mut()
        .with_config()
        .limit(MAX_ERROR_BYTES)
        .read_to_vec()
        .unwrap_or_default();
    let detail = serde_json::from_slice::<Errors>(&body)
        .ok()
        .and_then(|e| e.errors.into_iter().next())
        .map(|e| {
            format!(
                ": {} {}",
                escape_controls(&e.code),
                escape_controls(&e.message)
            )
        })
        .unwrap_or_default();
    let hint = match status {
        404 => " (not found: check the repository and the tag)",
        403 => " (forbidden: the credentials lack the right)",
        _ => "",
    };
    bail!("{what} failed: HTTP {status}{detail}{hint}")
}

/// The body, refused if it is larger than `max`.
fn read_capped(
    response: &mut Response<Body>,
    max: u64,
    what: impl Fn() -> String,
) -> Result<Vec<u8>> {
    response
        .body_mut()
        .with_config()
        .limit(max)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => {
                anyhow!(
                    "{} is larger than the {max} bytes plinth accepts; refused",
                    what()
                )
            }
            e => anyhow!("reading {}: {e}", what()),
        })
}
