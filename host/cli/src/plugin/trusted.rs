//! The project's trust policy applied to its plugins, before any is compiled: every plugin from
//! the store is verified against `trust:` in Plinth.yaml with the signature it came with (kept
//! beside it in the store) or the one `Plinth.lock` keeps, so that a run verifies offline.
//! Plugins given by path are development builds: neither signed nor checked.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Result, anyhow, bail};
use console::style;

use super::lockfile;
use super::resolve::Resolved;
use super::signature::{TrustPolicy, Verified};
use crate::project::Project;

/// Verifies the plugins of `resolved` that came from the store, recording in each pin the
/// signature checked and the trusted key that made it; warns about those the policy lets run
/// unsigned; refuses, naming every one, any other.
pub fn check(project: &Project, resolved: &mut BTreeMap<String, Resolved>) -> Result<()> {
    let policy = TrustPolicy::new(&project.file.trust).map_err(|e| anyhow!(e))?;
    let locked = lockfile::locked(&project.dir)?;
    let mut refusals = String::new();
    for (name, plugin) in resolved.iter_mut() {
        let (Some(pin), Some(component)) = (plugin.pin.as_mut(), plugin.component.as_ref()) else {
            continue;
        };
        if pin.version.is_none() {
            continue;
        }
        let kept = locked
            .get(name)
            .filter(|old| old.sha256 == pin.sha256)
            .and_then(|old| old.signature.clone());
        // The lock's, as committed with the project, before the one the store keeps.
        let signature = kept.or(pin.signature.clone());
        let digest = format!("sha256:{}", pin.sha256);
        let what = format!("plugin `{name}`");
        match policy.verify(&what, &digest, component.bytes(), signature.as_deref()) {
            Ok(Verified::Signed { signer }) => pin.signer = Some(signer),
            Ok(Verified::Warn(warning)) => {
                pin.signer = None;
                eprintln!("{} {warning}", style("warning:").yellow().bold());
            }
            Err(refused) => {
                let _ = write!(refusals, "\n  {refused}");
            }
        }
        pin.signature = signature;
    }
    if !refusals.is_empty() {
        bail!(
            "refusing plugins that Plinth.yaml's `trust` policy does not accept; nothing was \
             compiled or run:{refusals}"
        );
    }
    Ok(())
}
