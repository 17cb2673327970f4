//! What plinth reads artifacts from and writes them to: a registry (over the distribution
//! API, [`super::Client`]) or an OCI image-layout directory ([`super::Layout`]), the same
//! operations on either, so that pulling, verifying and mirroring do not care which.

use anyhow::Result;

use super::artifact::Descriptor;

pub trait Endpoint {
    /// The manifest `reference` (a tag or a `sha256:` digest) names in `repository`, and its
    /// digest; an error if there is none.
    fn manifest(&mut self, repository: &str, reference: &str) -> Result<(Vec<u8>, String)>;
    /// The same, or none if the endpoint holds no such manifest.
    fn manifest_if_any(
        &mut self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<(Vec<u8>, String)>>;
    /// The blob `descriptor` names, refused unless its size and digest are the descriptor's
    /// or if it is larger than `max`.
    fn blob(&mut self, repository: &str, descriptor: &Descriptor, max: u64) -> Result<Vec<u8>>;
    /// The repository's valid tags.
    fn tags(&mut self, repository: &str) -> Result<Vec<String>>;
    /// Stores `bytes` as a blob; returns its digest.
    fn push_blob(&mut self, repository: &str, bytes: &[u8]) -> Result<String>;
    /// Stores a manifest under `tag`; returns its digest.
    fn push_manifest(&mut self, repository: &str, tag: &str, manifest: &[u8]) -> Result<String>;
}
