//! `plinth plugin …`: install plugins into the content-addressed store, list, inspect and remove
//! them, and pin the project's plugins in `Plinth.lock`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use super::describe::{self, describe};
use super::download;
use super::keys::{Keys, Protection};
use super::locate::{check_name, locate, split_id};
use super::mirror;
use super::oci::{Reference, artifact};
use super::publish;
use super::registry::{self, Upgrade};
use super::signature::{self, TrustPolicy, Verified};
use super::store::{Added, Store, StoredKind, StoredPlugin, sha256_hex};
use super::{lockfile, resolve};
use crate::home::plinth_home;
use crate::project::{PluginSource, Project};
use plinth_engine::shown::escape_controls;

#[derive(Subcommand)]
pub enum PluginCommand {
    /// Install a plugin from a .wasm file or an https:// URL into the plugin store.
    Install {
        /// A `.wasm` component, or the https:// URL of one.
        source: String,
        /// Install only if the file's SHA-256 is this (hex).
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Replace another build installed under the same name and version.
        #[arg(long)]
        force: bool,
    },
    /// List the installed plugins.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed plugin: `name`, or `name@version` when several are installed.
    Rm {
        #[arg(value_name = "NAME[@VERSION]")]
        plugin: String,
    },
    /// Show what a plugin is and asks for: an installed `name[@version]`, a .wasm file, a
    /// plugin's source directory (a Rust crate, or a TypeScript/JavaScript or Python guest,
    /// built first), or `oci://HOST/REPOSITORY[:TAG|@sha256:…]` (without a tag, its newest
    /// version), fetched without installing it.
    Inspect {
        #[arg(value_name = "NAME[@VERSION] | FILE | DIR | oci://…")]
        plugin: String,
        #[arg(long)]
        json: bool,
    },
    /// Pin the project's plugins in Plinth.lock: those not pinned yet are resolved (a
    /// registry's to the newest version its range allows), the others kept.
    Lock {
        /// Re-resolve the registry plugins' ranges (all, or NAME's) and move to the newest
        /// matching version.
        #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
        upgrade: Option<String>,
        /// Take a new build although it asks for more than the pinned one.
        #[arg(long)]
        accept_capabilities: bool,
    },
    /// Publish a plugin (or a policy pack) to an OCI registry, in the standard Wasm artifact
    /// layout.
    Publish {
        /// A `.wasm` component, or a plugin's source directory (built first).
        #[arg(value_name = "FILE | DIR")]
        plugin: String,
        /// Where: `oci://HOST[:PORT]/REPOSITORY:VERSION`; the tag must be the plugin's version.
        #[arg(value_name = "oci://HOST/REPOSITORY:VERSION")]
        reference: String,
        /// Sign it with this key (`plinth plugin key create`), pushing the signature beside it.
        #[arg(long, value_name = "NAME")]
        key: Option<String>,
        /// It is a policy pack (a directory is built as one), for `--policy-pack oci://…` and
        /// `policy-packs:`.
        #[arg(long)]
        policy_pack: bool,
    },
    /// Fetch a plugin from an OCI registry into the plugin store.
    Pull {
        /// `oci://HOST[:PORT]/REPOSITORY:TAG` or `…@sha256:DIGEST`.
        #[arg(value_name = "oci://HOST/REPOSITORY[:TAG|@sha256:…]")]
        reference: String,
        /// Replace another build installed under the same name and version.
        #[arg(long)]
        force: bool,
    },
    /// Copy every plugin and policy pack the project's Plinth.lock pins from an OCI registry,
    /// with its signature, byte for byte, to a mirror: a registry (`oci://HOST[:PORT]/PREFIX`)
    /// or an OCI image-layout directory (`DIR`), for `PLINTH_PLUGIN_MIRROR` or `mirrors:`.
    Mirror {
        #[arg(long, value_name = "oci://HOST/PREFIX | DIR")]
        to: String,
    },
    /// Make and list the keys that sign published plugins.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Make a minisign key pair under $PLINTH_HOME/keys and print its public key. The secret key
    /// is encrypted with a password (PLINTH_KEY_PASSWORD, or asked for at the terminal).
    Create {
        name: String,
        /// Keep the secret key unencrypted (still readable by you alone, mode 0600), for a
        /// machine that signs unattended.
        #[arg(long)]
        unencrypted: bool,
    },
    /// List the key pairs: name, key id, public key.
    Ls {
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `plinth plugin` command; only `lock` needs a project, found from `start`.
pub async fn run(start: &Path, cmd: PluginCommand) -> Result<ExitCode> {
    let store = Store::in_home(&plinth_home()?);
    match cmd {
        PluginCommand::Install {
            source,
            sha256,
            force,
        } => install(&store, &source, sha256.as_deref(), force).await?,
        PluginCommand::Ls { json } => list(&store, json)?,
        PluginCommand::Rm { plugin } => {
            let (name, version) = split_id(&plugin)?;
            let removed = store.remove(name, version)?;
            println!(
                "Removed {} {} (sha256 {}).",
                removed.name, removed.version, removed.sha256
            );
        }
        PluginCommand::Inspect { plugin, json } if plugin.starts_with("oci://") => {
            inspect_remote(&store, &plugin, json).await?
        }
        PluginCommand::Inspect { plugin, json } => inspect(&store, &plugin, json).await?,
        PluginCommand::Lock {
            upgrade,
            accept_capabilities,
        } => {
            let upgrade = match upgrade.as_deref() {
                None => Upgrade::None,
                Some("") => Upgrade::All,
                Some(name) => Upgrade::Only(name.to_owned()),
            };
            let options = registry::Options {
                accept_capabilities,
                upgrade,
            };
            lock(start, &store, &options).await?
        }
        PluginCommand::Publish {
            plugin,
            reference,
            key,
            policy_pack,
        } => publish::publish(&store, &plugin, &reference, key.as_deref(), policy_pack).await?,
        PluginCommand::Key(cmd) => key(cmd)?,
        PluginCommand::Mirror { to } => mirror::mirror(start, &store, &to).await?,
        PluginCommand::Pull { reference, force } => {
            let located = mirror::rewrite(Reference::parse(&reference)?)?;
            let pulled = publish::pull(&located).await?;
            // Verified before it is described (compiled) or stored.
            check_pulled(start, &located.reference, &pulled)?;
            add_to_store(&store, &pulled.component, &pulled.origin, true, force).await?;
            if let Some(signature) = &pulled.signature {
                store.add_signature(&sha256_hex(&pulled.component), signature)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Verifies a pulled plugin against the trust policy of the project `start` is in; outside a
/// project, only says who signed it (a project's runs verify it).
fn check_pulled(start: &Path, reference: &Reference, pulled: &publish::Pulled) -> Result<()> {
    let plugin = reference.repository.rsplit('/').next().unwrap_or_default();
    let digest = artifact::digest_of(&pulled.component);
    let Ok(project) = Project::find(start) else {
        if let Some(text) = &pulled.signature {
            let signer = signature::signer(text)
                .map_err(|e| anyhow::anyhow!("the signature of {reference} is not one: {e}"))?;
            println!("Signed by key {signer} (not checked here: no project names trusted keys).");
        }
        return Ok(());
    };
    let policy = TrustPolicy::new(&project.file.trust).map_err(|e| anyhow::anyhow!(e))?;
    match policy.verify(
        &format!("plugin `{plugin}`"),
        &digest,
        &pulled.component,
        pulled.signature.as_deref(),
    ) {
        Ok(Verified::Signed { signer }) => println!("Signed by trusted key {signer}."),
        Ok(Verified::Warn(warning)) => eprintln!("warning: {warning}"),
        Err(refused) => bail!("{refused}; nothing was stored"),
    }
    Ok(())
}

/// The bytes of `source`, a file or a URL, and how to name where they came from.
async fn fetch(source: &str) -> Result<(Vec<u8>, String)> {
    if source.contains("://") {
        let url = download::parse_url(source)?;
        let fetched = url.clone();
        let bytes = tokio::task::spawn_blocking(move || download::download(&fetched)).await??;
        return Ok((bytes, url.to_string()));
    }
    let path = Path::new(source);
    // Refuses a directory, a device, a FIFO, a huge file or one that is no component before
    // reading it whole.
    let bytes = plinth_runtime::read_component_file(path)?;
    let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    Ok((bytes, path.display().to_string()))
}

async fn install(store: &Store, source: &str, expected: Option<&str>, force: bool) -> Result<()> {
    let expected = expected.map(parse_sha256).transpose()?;
    let is_url = source.contains("://");
    let (bytes, origin) = fetch(source).await?;
    let sha256 = sha256_hex(&bytes);
    if let Some(expected) = expected
        && expected != sha256
    {
        bail!(
            "{origin} has sha256 {sha256}, not the {expected} given with --sha256: it is not the \
             file you meant to install; nothing was installed"
        );
    }
    add_to_store(store, &bytes, &origin, is_url, force).await
}

/// Checks that `bytes` are a plinth provider and adds them to the store. `downloaded` bytes are
/// described from a file of the store's own; a file, where it is (so that errors name it), then
/// checked to be the bytes that were hashed.
async fn add_to_store(
    store: &Store,
    bytes: &[u8],
    origin: &str,
    downloaded: bool,
    force: bool,
) -> Result<()> {
    let sha256 = sha256_hex(bytes);
    let staged = if downloaded {
        let mut staged = store.staging_file()?;
        staged
            .write_all(bytes)
            .and_then(|()| staged.flush())
            .with_context(|| format!("cannot write {}", staged.path().display()))?;
        Some(staged)
    } else {
        None
    };
    let described = match &staged {
        Some(file) => describe(file.path()).await,
        None => describe(Path::new(origin)).await,
    }
    .with_context(|| format!("{origin} is not a plinth plugin"))?;
    drop(staged);
    if described.sha256 != sha256 {
        bail!("{origin} changed while it was being installed; try again");
    }
    let (Some(name), Some(version)) = (described.name.clone(), described.version.clone()) else {
        bail!(
            "{origin} is a {} component, not a provider plugin; a project names its program with \
             `program:` in Plinth.yaml",
            described.kind
        );
    };
    check_name(&name, &version)?;
    let plugin = StoredPlugin {
        name: name.clone(),
        version: version.clone(),
        wit: described.wit_version.clone(),
        sha256,
        size: bytes.len() as u64,
        installed_at: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        source: origin.to_owned(),
        kind: StoredKind::Plugin,
    };
    let what = format!(
        "{name} {version} (sha256 {}, {}, WIT {})",
        short(&plugin.sha256),
        size(plugin.size),
        plugin.wit
    );
    match store.add(bytes, plugin, force)? {
        Added::AlreadyInstalled => {
            println!("{what} is already installed; nothing to do.");
            return Ok(());
        }
        Added::Installed => println!("Installed {what} from {origin}."),
        Added::Replaced { old_sha256 } => println!(
            "Installed {what} from {origin}, replacing the build with sha256 {}.",
            short(&old_sha256)
        ),
    }
    println!("Use it in Plinth.yaml:\n  plugins:\n    {name}:\n      version: {version}");
    Ok(())
}

/// One component of the store as `plugin ls` shows it.
#[derive(serde::Serialize)]
struct Listed {
    #[serde(flatten)]
    stored: StoredPlugin,
    /// Fetched by digest for a project's Plinth.lock, not installed under its name.
    pinned: bool,
    /// The key id of the signature it came with, if any (verified by each project's
    /// `trust:`, not here).
    signer: Option<String>,
}

fn list(store: &Store, json: bool) -> Result<()> {
    let installed = store.list()?.into_iter().map(|p| (p, false));
    let pinned = store.list_pinned()?.into_iter().map(|p| (p, true));
    let listed = installed
        .chain(pinned)
        .map(|(stored, pinned)| {
            let signer = store.signature(&stored.sha256)?.map(|text| {
                signature::signer(&text).unwrap_or_else(|e| format!("(a malformed signature: {e})"))
            });
            Ok(Listed {
                stored,
                pinned,
                signer,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    if listed.is_empty() {
        println!(
            "No plugins installed; install one with `plinth plugin install <file.wasm | https://…>`."
        );
        return Ok(());
    }
    println!(
        "{:20} {:12} {:18} {:6} {:14} {:>10} {:16} SOURCE",
        "NAME", "VERSION", "KIND", "WIT", "SHA256", "SIZE", "SIGNER"
    );
    for l in listed {
        let p = &l.stored;
        // Names and sources were checked when stored, but the index is a file anyone with
        // the home directory can edit.
        let kind = match (p.kind, l.pinned) {
            (kind, false) => kind.shown().to_owned(),
            (kind, true) => format!("{} (lock)", kind.shown()),
        };
        println!(
            "{:20} {:12} {:18} {:6} {:14} {:>10} {:16} {}",
            escape_controls(&p.name),
            escape_controls(&p.version),
            kind,
            escape_controls(&p.wit),
            short(&p.sha256),
            size(p.size),
            escape_controls(l.signer.as_deref().unwrap_or("-")),
            escape_controls(&p.source)
        );
    }
    Ok(())
}

async fn inspect(store: &Store, plugin: &str, json: bool) -> Result<()> {
    let (path, installed) = locate(store, plugin).await?;
    let description = describe(&path).await?;
    if json {
        #[derive(serde::Serialize)]
        struct Inspected<'a> {
            #[serde(flatten)]
            description: &'a describe::Description,
            /// Where and when it was installed, for a plugin from the store.
            #[serde(skip_serializing_if = "Option::is_none")]
            installed: Option<&'a StoredPlugin>,
        }
        let inspected = Inspected {
            description: &description,
            installed: installed.as_ref(),
        };
        println!("{}", serde_json::to_string_pretty(&inspected)?);
        return Ok(());
    }
    print!("{}", description.render());
    if let Some(installed) = installed {
        println!(
            "installed:    from {}, at {}",
            installed.source,
            crate::display::local_time(installed.installed_at)
        );
    }
    Ok(())
}

fn key(cmd: KeyCommand) -> Result<()> {
    let keys = Keys::in_home(&plinth_home()?);
    match cmd {
        KeyCommand::Create { name, unencrypted } => {
            let protection = if unencrypted {
                Protection::Unencrypted
            } else {
                Protection::Password
            };
            let made = keys.create(&name, protection)?;
            println!(
                "Made the key `{}` (key id {}{}), its secret key in {}.\nIts public key, for \
                 `trust.keys` in Plinth.yaml (and `minisign -P`):\n{}",
                made.name,
                made.id,
                if made.encrypted {
                    ", encrypted with its password"
                } else {
                    ", unencrypted"
                },
                keys.secret_path(&made.name).display(),
                made.public_key
            );
        }
        KeyCommand::Ls { json } => {
            let listed = keys.list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&listed)?);
            } else if listed.is_empty() {
                println!("No keys; make one with `plinth plugin key create NAME`.");
            } else {
                println!("{:20} {:16} {:9} PUBLIC KEY", "NAME", "KEY ID", "PASSWORD");
                for k in listed {
                    let password = if k.encrypted { "yes" } else { "no" };
                    println!("{:20} {:16} {password:9} {}", k.name, k.id, k.public_key);
                }
            }
        }
    }
    Ok(())
}

/// `plugin inspect oci://…`: the component fetched into a staging file of the store, described,
/// and dropped; neither the store's index nor any project changes.
async fn inspect_remote(store: &Store, reference: &str, json: bool) -> Result<()> {
    let located = mirror::rewrite(Reference::parse(reference)?)?;
    let (version, pulled) = if located.reference.manifest_reference().is_some() {
        (None, publish::pull(&located).await?)
    } else {
        let any = semver::VersionReq::STAR;
        let (version, pulled) = registry::pull_newest(&located, &any).await?;
        (Some(version), pulled)
    };
    let description = registry::describe_bytes(store, &pulled.component).await?;
    if json {
        #[derive(serde::Serialize)]
        struct Inspected<'a> {
            #[serde(flatten)]
            description: &'a describe::Description,
            reference: String,
            manifest: &'a str,
            signer: String,
        }
        let inspected = Inspected {
            description: &description,
            reference: pulled.origin.clone(),
            manifest: &pulled.manifest,
            signer: signer_line(pulled.signature.as_deref()),
        };
        println!("{}", serde_json::to_string_pretty(&inspected)?);
        return Ok(());
    }
    print!("{}", description.render());
    if let Some(version) = version {
        println!("newest tag:   {version}");
    }
    println!("manifest:     {}", pulled.manifest);
    println!("reference:    {}", pulled.origin);
    println!("signer:       {}", signer_line(pulled.signature.as_deref()));
    Ok(())
}

/// Who signed a registry's plugin, as `inspect` shows it: the key id the signature names (not
/// verified here: a project's trust policy does that).
fn signer_line(signature: Option<&str>) -> String {
    match signature.map(signature::signer) {
        None => "none: not signed".to_owned(),
        Some(Ok(id)) => {
            format!("key {id} (its signature checked against a project's `trust.keys`)")
        }
        Some(Err(e)) => format!("a malformed signature ({e})"),
    }
}

async fn lock(start: &Path, store: &Store, options: &registry::Options) -> Result<()> {
    let project = Project::find(start)?;
    if let Upgrade::Only(name) = &options.upgrade {
        match project.file.plugins.get(name).map(|spec| spec.source()) {
            Some(PluginSource::Registry { .. }) => {}
            Some(_) => bail!(
                "plugin `{name}` does not come from a registry (`source: oci://…`): there is no \
                 range to upgrade it in"
            ),
            None => bail!("the project has no plugin `{name}` (see `plugins:` in Plinth.yaml)"),
        }
    }
    let mut resolved = resolve::resolve(&project, store, options).await?;
    super::trusted::check(&project, &mut resolved)?;
    let policy_packs =
        super::packs::lock_all(&project, store, options.upgrade == Upgrade::All).await?;
    let pins = lockfile::Lock {
        plugins: resolve::pins(&resolved),
        policy_packs,
    };
    let changes = lockfile::relock(&project.dir, &pins)?;
    let file = project.dir.join(lockfile::LOCK_FILE);
    if changes.is_empty() {
        println!("{} is up to date.", file.display());
    } else {
        println!("Wrote {}:", file.display());
        for change in changes {
            println!("  {change}");
        }
    }
    Ok(())
}

/// A SHA-256 as given on the command line: 64 hex digits, optionally `sha256:`-prefixed.
fn parse_sha256(text: &str) -> Result<String> {
    let hex = text
        .strip_prefix("sha256:")
        .unwrap_or(text)
        .to_ascii_lowercase();
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        bail!("--sha256 `{text}` is not a SHA-256: give its 64 hexadecimal digits");
    }
    Ok(hex)
}

/// The first 12 hex digits of a SHA-256, enough to tell builds apart at a glance.
/// What a state file or a service recorded may be anything: a digest cut inside a character
/// is shown whole rather than panicking.
pub fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_hashes() {
        assert_eq!(split_id("random").unwrap(), ("random", None));
        assert_eq!(split_id("random@0.1.0").unwrap(), ("random", Some("0.1.0")));
        assert!(split_id("@0.1.0").is_err() && split_id("random@").is_err());
        let hex = "AB".repeat(32);
        assert_eq!(
            parse_sha256(&format!("sha256:{hex}")).unwrap(),
            "ab".repeat(32)
        );
        assert!(
            parse_sha256("abc")
                .unwrap_err()
                .to_string()
                .contains("64 hexadecimal")
        );
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
    }
}
