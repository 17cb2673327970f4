//! Downloads a plugin for `plinth plugin install URL`.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use url::{Host, Url};

/// Larger downloads are refused, as larger files are: no plugin is this big, and a runaway
/// server must not fill the disk or the memory.
const MAX_SIZE: u64 = plinth_runtime::MAX_COMPONENT_BYTES;

/// Parses `source` as a URL plinth may download from: `https://`, or `http://` to a loopback
/// address only (a plugin fetched in clear text could be swapped on the way).
pub fn parse_url(source: &str) -> Result<Url> {
    let url = Url::parse(source).with_context(|| format!("`{source}` is not a valid URL"))?;
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => bail!(
            "refusing to download a plugin over plain http from `{}`: anyone on the way could \
             swap it. Use an https:// URL (plain http is allowed only from a loopback address, \
             such as 127.0.0.1 or localhost)",
            url.host_str().unwrap_or_default()
        ),
        other => bail!("cannot download from a `{other}:` URL; give an https:// URL or a file"),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Downloads `url` (as [`parse_url`] accepted it) into memory. Redirects are followed only
/// from https to https; a clear-text download follows none.
pub fn download(url: &Url) -> Result<Vec<u8>> {
    let secure = url.scheme() == "https";
    let agent = ureq::Agent::config_builder()
        .https_only(secure)
        .max_redirects(if secure { 10 } else { 0 })
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_per_read(Some(Duration::from_secs(60)))
        .user_agent(concat!("plinth/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent();
    let mut response = agent.get(url.as_str()).call().map_err(|e| match e {
        ureq::Error::StatusCode(code) => anyhow::anyhow!("downloading {url} failed: HTTP {code}"),
        ureq::Error::RequireHttpsOnly(to) => {
            anyhow::anyhow!("downloading {url}: refused a redirect to the insecure URL {to}")
        }
        e => anyhow::anyhow!("downloading {url} failed: {e}"),
    })?;
    if response.status().is_redirection() {
        bail!(
            "{url} redirects elsewhere; plinth follows no redirect of a plain http download: \
             give the final URL"
        );
    }
    response
        .body_mut()
        .with_config()
        .limit(MAX_SIZE)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => anyhow::anyhow!(
                "downloading {url}: the file is larger than {} MiB, too large for a plugin",
                MAX_SIZE / 1024 / 1024
            ),
            e => anyhow::anyhow!("downloading {url} failed: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_from_loopback() {
        for ok in [
            "https://example.com/p.wasm",
            "http://127.0.0.1:8080/p.wasm",
            "http://[::1]/p.wasm",
            "http://localhost/p.wasm",
        ] {
            assert!(parse_url(ok).is_ok(), "{ok}");
        }
        let err = parse_url("http://example.com/p.wasm")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("plain http") && err.contains("loopback"),
            "{err}"
        );
        let err = parse_url("ftp://example.com/p.wasm")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`ftp:`"), "{err}");
        assert!(parse_url("http://").is_err());
    }
}
