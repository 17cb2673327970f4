//! The service's address, resolved once rather than for every request. ureq resolves a request's
//! host before it looks for a pooled connection, and with a timeout set (every request here has
//! one) it starts a thread for each lookup: an update of 10,000 resources started some 800
//! threads, each paying for a fresh stack and allocator heap, for a connection already open.
//! An address is kept until it is [`forgotten`](CachingResolver::forget) (a request could not
//! reach it) or is older than [`FRESH_FOR`], so a service that moved is found again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// How long a resolved address is used before it is looked up again.
const FRESH_FOR: Duration = Duration::from_secs(60);

/// Clones share the addresses kept.
#[derive(Debug, Clone, Default)]
pub(super) struct CachingResolver {
    resolved: Arc<Mutex<HashMap<String, Resolved>>>,
}

#[derive(Debug)]
struct Resolved {
    addrs: ResolvedSocketAddrs,
    at: Instant,
}

impl CachingResolver {
    /// Forgets every address kept: the next request looks its host up again.
    pub(super) fn forget(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Resolved>> {
        // A panic holding it leaves a map that is still whole: go on with it.
        self.resolved.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        // The scheme counts: it decides the port when the URL names none.
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or_default(),
            uri.authority().map_or("", |a| a.as_str())
        );
        if let Some(kept) = self.lock().get(&key)
            && kept.at.elapsed() < FRESH_FOR
        {
            return Ok(kept.addrs.clone());
        }
        // A lookup that fails is a name that does not resolve (ureq says so as an I/O error).
        let addrs =
            (DefaultResolver::default().resolve(uri, config, timeout)).map_err(|e| match e {
                ureq::Error::Io(_) => ureq::Error::HostNotFound,
                other => other,
            })?;
        let resolved = Resolved {
            addrs: addrs.clone(),
            at: Instant::now(),
        };
        self.lock().insert(key, resolved);
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn lookup(resolver: &CachingResolver, url: &str) -> Vec<SocketAddr> {
        let uri: Uri = url.parse().unwrap();
        let config = Config::default();
        let timeout = NextTimeout {
            after: Duration::from_secs(5).into(),
            reason: ureq::Timeout::Resolve,
            per_read: None,
            per_write: None,
        };
        let addrs = resolver.resolve(&uri, &config, timeout).unwrap();
        addrs.iter().copied().collect()
    }

    #[test]
    fn an_address_is_kept_per_scheme_and_authority_until_forgotten() {
        let resolver = CachingResolver::default();
        assert_eq!(
            lookup(&resolver, "http://127.0.0.1:8080/api/v1/user"),
            ["127.0.0.1:8080".parse::<SocketAddr>().unwrap()]
        );
        // Another path on the same service: the address kept.
        lookup(&resolver, "http://127.0.0.1:8080/api/v1/stacks");
        assert_eq!(resolver.lock().len(), 1);
        // The port a scheme implies is not mixed up with another scheme's.
        assert_eq!(
            lookup(&resolver, "https://127.0.0.1/"),
            ["127.0.0.1:443".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(
            lookup(&resolver, "http://127.0.0.1/"),
            ["127.0.0.1:80".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(resolver.lock().len(), 3);
        let clone = resolver.clone();
        clone.forget();
        assert!(resolver.lock().is_empty(), "clones share what is kept");
    }
}
