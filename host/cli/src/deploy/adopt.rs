//! `plinth import`'s run: each resource is read through its provider, then adopted by a
//! deployment of a program that declares only the imported resources (with the `import`
//! option and the inputs read back) and what they hang from. The run targets the imported
//! resources alone, so every other resource of the stack stays exactly as it is.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use plinth_backend::UpdateKind;
use plinth_engine::program::Program;
use plinth_engine::provider::{ProviderInfo, ProviderSource};
use plinth_engine::resource::{ResourceState, is_recordable_id};
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::Snapshot;
use plinth_engine::urn::{Urn, is_stack_type, package_of, provided_package};
use plinth_engine::value::PropertyMap;

use super::{CommonArgs, DEFAULT_PARALLEL, Deployer, Request};
use crate::import::program::{ImportProgram, Node};
use crate::import::wanted::Wanted;
use crate::run_options::RunOptions;
use crate::{Workspace, confirm, targets};

/// A resource `plinth import` adopted.
pub struct Adopted {
    pub urn: Urn,
    /// The id its provider gave when it read it.
    pub id: String,
    /// Its inputs as read back, which the state now records.
    pub inputs: PropertyMap,
    /// Its parent, when not the stack's root.
    pub parent: Option<Urn>,
    /// Its explicit provider resource, if it has one.
    pub provider: Option<Urn>,
}

/// What an import did: the resources in the order asked, and the schemas of their providers by
/// package.
pub struct Imported {
    pub adopted: Vec<Adopted>,
    pub schemas: BTreeMap<String, ProviderInfo>,
}

/// How the run is shown and confirmed.
pub struct AdoptOptions {
    pub yes: bool,
    pub run: RunOptions,
}

/// Reads and adopts `wanted` into the workspace's stack after a preview, confirmed (or
/// `yes`); `None` if the user declined.
pub async fn adopt(
    ws: &Workspace,
    wanted: &[Wanted],
    options: AdoptOptions,
) -> Result<Option<Imported>> {
    let common = CommonArgs {
        parallel: DEFAULT_PARALLEL,
        show_sames: false,
        flat: false,
        tree: false,
        targets: Vec::new(),
        target_dependents: false,
        run: options.run,
    };
    let deployer = Deployer::for_update(ws, "import", &common.run, None).await?;
    let snapshot = ws.backend.load(&deployer.stack)?.snapshot;
    let project = ws.project.name().to_string();
    let stack = deployer.stack.to_string();
    let mut plan = Plan::default();
    let mut adopted: Vec<Adopted> = Vec::new();
    let mut schemas = BTreeMap::new();
    for want in wanted {
        let what = want.describe();
        let parent = (want.parent.as_deref())
            .map(|q| live(&snapshot, q, "--parent"))
            .transpose()?;
        if let Some(parent) = parent
            && provided_package(&parent.ty).is_some()
        {
            bail!("{what}: --parent names a provider resource, which cannot be a parent");
        }
        let package = package_of(&want.ty);
        let provider = (want.provider.as_deref())
            .map(|q| live(&snapshot, q, "--provider"))
            .transpose()?;
        if let Some(provider) = provider
            && provided_package(&provider.ty) != Some(package)
        {
            bail!(
                "{what}: --provider names `{}`, which is not a provider resource of package \
                 `{package}`",
                escape_controls(provider.urn.as_str())
            );
        }
        let parent_type = parent.and_then(|p| p.urn.type_for_children());
        let urn = Urn::new(&stack, &project, parent_type, &want.ty, &want.name);
        urn.validate().map_err(|e| anyhow!("{what}: {e}"))?;
        if snapshot.live_resources().any(|r| r.urn == urn) {
            bail!(
                "{what}: the stack already has `{}`; give the import another name, or forget \
                 the resource first (`plinth state delete`)",
                escape_controls(urn.as_str())
            );
        }
        if adopted.iter().any(|a| a.urn == urn) {
            bail!(
                "{what}: `{}` is imported twice",
                escape_controls(urn.as_str())
            );
        }
        let source = match provider {
            None => deployer.providers.provider(package).await,
            Some(state) => deployer.providers.configured(package, &state.outputs).await,
        }
        .map_err(|e| anyhow!("{what}: cannot load the provider of `{package}`: {e}"))?;
        if let Some(message) = source.info().unknown_resource_type(&want.ty) {
            bail!("{what}: {message}");
        }
        let read = (source.read(&urn, &want.id, &PropertyMap::new(), &PropertyMap::new()))
            .await
            .map_err(|e| anyhow!("{what}: the provider cannot read it: {e}"))?
            .ok_or_else(|| {
                anyhow!("{what}: the provider finds no resource with that id; nothing was imported")
            })?;
        if read.id.is_empty() || !is_recordable_id(&read.id) {
            bail!(
                "{what}: the provider read it back with the id \"{}\", which plinth cannot record",
                escape_controls(&read.id)
            );
        }
        schemas
            .entry(package.to_owned())
            .or_insert_with(|| source.info().clone());
        let parent_node = match parent {
            Some(p) => plan.ensure(&snapshot, &p.urn)?,
            None => None,
        };
        let provider_node = match provider {
            Some(p) => plan.ensure(&snapshot, &p.urn)?,
            None => None,
        };
        plan.nodes.push(Node {
            ty: want.ty.clone(),
            name: want.name.clone(),
            custom: true,
            inputs: read.inputs.clone(),
            parent: parent_node,
            provider: provider_node,
            import_id: Some(read.id.clone()),
        });
        adopted.push(Adopted {
            urn,
            id: read.id,
            inputs: read.inputs,
            parent: parent.map(|p| p.urn.clone()),
            provider: provider.map(|p| p.urn.clone()),
        });
    }
    let nodes = Arc::new(plan.nodes);
    let urns = adopted.iter().map(|a| a.urn.to_string()).collect();
    let request = Request {
        targets: Some((urns, false, false)),
        program: Some(Rc::new(move || {
            Box::new(ImportProgram::new(nodes.clone())) as Box<dyn Program>
        })),
        ..Request::default()
    };
    deployer
        .run(UpdateKind::Import, true, &common, &request)
        .await?;
    let asked = std::time::Instant::now();
    if !options.yes && !confirm("Do you want to import these resources?", "--yes")? {
        println!("Cancelled; nothing was changed.");
        return Ok(None);
    }
    deployer
        .started
        .set(deployer.started.get() + asked.elapsed());
    deployer
        .run(UpdateKind::Import, false, &common, &request)
        .await?;
    Ok(Some(Imported { adopted, schemas }))
}

/// The live resource of `snapshot` that `query` (`flag`'s value) names.
fn live<'a>(snapshot: &'a Snapshot, query: &str, flag: &str) -> Result<&'a ResourceState> {
    let urn = targets::resolve_one(snapshot, query).map_err(|e| anyhow!("{flag}: {e}"))?;
    snapshot
        .live_resources()
        .find(|r| r.urn == urn)
        .ok_or_else(|| {
            anyhow!(
                "{flag}: the stack has no resource `{}`",
                escape_controls(urn.as_str())
            )
        })
}

/// The registrations of the import's program: the imported resources, after the resources of
/// the stack they hang from (parents and provider resources, and theirs), each once.
#[derive(Default)]
struct Plan {
    nodes: Vec<Node>,
    placed: HashMap<Urn, usize>,
}

impl Plan {
    /// The node of the recorded resource `urn`, registered as it is recorded (the run leaves
    /// it out, so it stays exactly so); `None` for the stack's root, which the engine
    /// registers itself.
    fn ensure(&mut self, snapshot: &Snapshot, urn: &Urn) -> Result<Option<usize>> {
        if is_stack_type(urn.ty()) {
            return Ok(None);
        }
        if let Some(&i) = self.placed.get(urn) {
            return Ok(Some(i));
        }
        let state = (snapshot.live_resources().find(|r| &r.urn == urn)).ok_or_else(|| {
            anyhow!(
                "the state names `{}`, which it does not hold",
                escape_controls(urn.as_str())
            )
        })?;
        let parent = match &state.parent {
            Some(p) => self.ensure(snapshot, p)?,
            None => None,
        };
        // A default provider is the engine's to register.
        let provider = match &state.provider {
            Some(p) if !is_default_provider(&p.urn) => self.ensure(snapshot, &p.urn)?,
            _ => None,
        };
        self.nodes.push(Node {
            ty: state.ty.clone(),
            name: urn.name().to_owned(),
            custom: state.custom,
            inputs: state.inputs.clone(),
            parent,
            provider,
            import_id: None,
        });
        self.placed.insert(urn.clone(), self.nodes.len() - 1);
        Ok(Some(self.nodes.len() - 1))
    }
}

/// Whether `urn` is a package's default provider resource, the one the engine registers.
fn is_default_provider(urn: &Urn) -> bool {
    provided_package(urn.ty()).is_some()
        && urn.name() == "default"
        && !urn.qualified_type().contains('$')
}
