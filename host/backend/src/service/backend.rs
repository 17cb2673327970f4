//! `plinth serve` behind the [`Backend`] interface. A stack is resolved with one request; an
//! update begins with one more, which returns its lease and the state to start from; its journal
//! goes to the service in numbered batches and each phase becomes a version there. The service
//! never sees a secret in plaintext: everything is sealed here by the stack's crypter. Which
//! stack a project has selected is the client's own business, kept under `workspaces`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plinth_engine::events::ChangeSummary;
use plinth_engine::names::{ProjectName, StackName};
use plinth_engine::shown::escape_controls;
use plinth_engine::snapshot::Snapshot;
use plinth_state::protocol::{
    BeginRequest, Begun, CompleteRequest, ConfigKey, HISTORY_PAGE, HistoryPage, Holder,
    PhaseRequest, Recorded, Removed, RenameRequest, StackFound, StackList, TagList, TagValue,
    Whoami,
};
use plinth_state::tags::{self, StackTags};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::events::{ServiceEventLog, fetch_log};
use super::lease::{LeaseKeeper, LeaseState};
use super::persister::ServicePersister;
use super::policy_packs;
use super::transport::{SHORT_BUDGET, ServiceError, Transport};
use crate::api::{Backend, FetchedPack, Recording, StackRef, Update};
use plinth_state::protocol::policy::RequiredPack;
use plinth_state::{
    CREATED_AS_BEGUN, Checkpoint, HistoryEntry, ImportReport, LoadedStack, LockHolder, LockInfo,
    StackSummary, StateError, UpdateKind, UpdateLog, UpdateResult, UsedPlugins,
    imported_checkpoint,
};

use crate::edit::StateEdit;
use crate::error::BackendError;
use crate::files::write_atomically;
use crate::secrets::{Crypter, Redacted, SecretsProvider};

/// The log target of the line that tells a command's traffic with the service.
const TRAFFIC_TARGET: &str = "plinth::traffic";

/// Stacks kept by a `plinth serve` service.
pub struct ServiceBackend {
    url: String,
    transport: Transport,
    secrets: Arc<dyn SecretsProvider>,
    /// One file per project, naming its selected stack.
    workspaces: PathBuf,
}

impl ServiceBackend {
    /// The service at `url` (`http(s)://host[:port]`), acting with access token `token`; the
    /// stacks' secrets sealed by `secrets`, the selected stacks remembered under `workspaces`.
    pub fn new(
        url: &str,
        token: &str,
        secrets: Arc<dyn SecretsProvider>,
        workspaces: PathBuf,
    ) -> ServiceBackend {
        ServiceBackend::over(Transport::new(url, token), secrets, workspaces)
    }

    /// [`new`](Self::new), through `transport`: what else reaches the service with it (the
    /// crypter of service-managed secrets) shares its connections and its retry policy.
    pub fn over(
        transport: Transport,
        secrets: Arc<dyn SecretsProvider>,
        workspaces: PathBuf,
    ) -> ServiceBackend {
        ServiceBackend {
            url: transport.base().to_owned(),
            transport,
            secrets,
            workspaces,
        }
    }

    fn stack_path(stack: &StackRef, tail: &str) -> String {
        format!("stacks/{}/{}{tail}", stack.project, stack.name)
    }

    fn workspace_file(&self, project: &ProjectName) -> PathBuf {
        self.workspaces.join(project.as_str())
    }

    /// Where a stack's state comes from, in errors.
    fn origin(&self, stack: &StackRef) -> PathBuf {
        PathBuf::from(format!(
            "{}/api/v1/{}",
            self.url,
            ServiceBackend::stack_path(stack, "")
        ))
    }

    /// The checkpoint of the stack's latest version, its secrets opened by `crypter`.
    fn load_with(
        &self,
        stack: &StackRef,
        crypter: &dyn Crypter,
    ) -> Result<LoadedStack, BackendError> {
        let bytes = self.checkpoint(stack, None)?;
        loaded(&bytes, stack, &self.origin(stack), crypter, false)
    }

    /// The checkpoint of `version` of the stack (the latest if `None`), as the service keeps it.
    fn checkpoint(&self, stack: &StackRef, version: Option<i64>) -> Result<Vec<u8>, BackendError> {
        let query = version.map_or_else(String::new, |v| format!("?version={v}"));
        let path = ServiceBackend::stack_path(stack, &format!("/export{query}"));
        (self.transport.get_bytes(&path)).map_err(|e| stack_error(e, stack))
    }
}

/// Tells what the command exchanged with the service (`plinth -v` shows it; a benchmark reads
/// it with `RUST_LOG=plinth::traffic=info`): requests, and bodies as they crossed the wire.
impl Drop for ServiceBackend {
    fn drop(&mut self) {
        let traffic = self.transport.traffic();
        tracing::info!(
            target: TRAFFIC_TARGET,
            requests = traffic.requests,
            sent = traffic.body_bytes,
            received = traffic.answer_bytes,
            "traffic with {}",
            self.url
        );
    }
}

/// `error`, a stack not found being the stack's own error.
fn stack_error(error: ServiceError, stack: &StackRef) -> BackendError {
    match error {
        ServiceError::NotFound(_) => BackendError::NoSuchStack(stack.name.to_string()),
        other => other.into(),
    }
}

/// The answer to `request`, as `T`.
/// A typed body as the transport sends it.
fn body(body: &impl serde::Serialize) -> Value {
    serde_json::to_value(body).expect("a protocol body serializes")
}

fn decode<T: DeserializeOwned>(answer: Value, request: &str) -> Result<T, BackendError> {
    serde_json::from_value(answer).map_err(|e| {
        BackendError::Service(ServiceError::Unreadable {
            request: request.to_owned(),
            reason: e.to_string(),
        })
    })
}

/// The state in checkpoint `bytes`.
fn loaded(
    bytes: &[u8],
    stack: &StackRef,
    origin: &Path,
    crypter: &dyn Crypter,
    recovered: bool,
) -> Result<LoadedStack, BackendError> {
    let checkpoint = Checkpoint::parse(bytes, &stack.name, origin, crypter)?;
    Ok(LoadedStack {
        snapshot: checkpoint.snapshot,
        recovered,
        plugins: checkpoint.plugins,
        torn: None,
        running: None,
    })
}

/// The update running on a stack, as the service describes it, as a lock's holder.
fn holder_info(holder: Holder) -> LockInfo {
    LockInfo {
        pid: 0,
        host: String::new(),
        user: holder.user,
        command: holder.kind,
        started: holder.started,
        lease_expires: Some(holder.lease_expires),
    }
}

/// The kind of update a command makes, as the service records it (and names it to others).
fn update_kind(command: &str) -> UpdateKind {
    match command {
        "destroy" => UpdateKind::Destroy,
        "refresh" => UpdateKind::Refresh,
        // `plinth import` adopts resources; `plinth stack import` writes a whole checkpoint.
        "import" | "stack import" => UpdateKind::Import,
        "stack rollback" => UpdateKind::Rollback,
        _ if command.starts_with("state ") => UpdateKind::StateEdit,
        _ => UpdateKind::Update,
    }
}

impl Backend for ServiceBackend {
    fn url(&self) -> String {
        self.url.clone()
    }

    fn user(&self) -> Result<String, BackendError> {
        let answer = self.transport.call("GET", "user", None, None)?;
        Ok(decode::<Whoami>(answer, "GET user")?.name)
    }

    /// The token stays valid on the service (revoking it is an administrator's act); the
    /// caller forgets it.
    fn logout(&self) -> Result<(), BackendError> {
        Ok(())
    }

    fn create_stack(
        &self,
        project: &ProjectName,
        name: &StackName,
    ) -> Result<StackRef, BackendError> {
        let stack = StackRef {
            project: project.clone(),
            name: name.clone(),
        };
        let path = ServiceBackend::stack_path(&stack, "");
        match self.transport.call("POST", &path, None, None) {
            Ok(_) => {}
            Err(ServiceError::Conflict { .. }) => {
                return Err(BackendError::StackExists(name.to_string()));
            }
            Err(e) => return Err(e.into()),
        }
        self.select_stack(&stack)?;
        Ok(stack)
    }

    fn get_stack(&self, project: &ProjectName, name: &StackName) -> Result<StackRef, BackendError> {
        let stack = StackRef {
            project: project.clone(),
            name: name.clone(),
        };
        let path = ServiceBackend::stack_path(&stack, "");
        (self.transport.call("GET", &path, None, None)).map_err(|e| stack_error(e, &stack))?;
        Ok(stack)
    }

    fn list_stacks(&self, project: &ProjectName) -> Result<Vec<StackSummary>, BackendError> {
        let request = format!("stacks/{project}");
        let answer = self.transport.call("GET", &request, None, None)?;
        let listed: StackList = decode(answer, &request)?;
        (listed.stacks.into_iter())
            .map(|stack| {
                let name = StackName::new(&stack.name).map_err(|e| {
                    BackendError::Service(ServiceError::Unreadable {
                        request: request.clone(),
                        reason: format!("stack `{}`: {e}", escape_controls(&stack.name)),
                    })
                })?;
                Ok(StackSummary {
                    name,
                    resources: stack.resources,
                    locked: stack.locked,
                    tags: stack.tags,
                })
            })
            .collect()
    }

    fn remove_stack(&self, stack: &StackRef, force: bool) -> Result<Option<String>, BackendError> {
        let path = ServiceBackend::stack_path(stack, &format!("?force={force}"));
        let answer = (self.transport.call("DELETE", &path, None, None))
            .map_err(|e| stack_error(e, stack))?;
        if self.selected_stack(&stack.project).as_ref() == Some(&stack.name) {
            let file = self.workspace_file(&stack.project);
            std::fs::remove_file(&file).map_err(BackendError::io("removing", &file))?;
        }
        // The service's text: shown escaped, on one line.
        let removed: Option<Removed> = serde_json::from_value(answer).ok();
        Ok((removed.and_then(|removed| removed.note))
            .map(|note| plinth_engine::shown::escape_controls(&note).into_owned()))
    }

    fn rename_stack(&self, stack: &StackRef, new: &StackName) -> Result<StackRef, BackendError> {
        let path = ServiceBackend::stack_path(stack, "/rename");
        let request = body(&RenameRequest {
            name: new.to_string(),
        });
        match self.transport.call("POST", &path, None, Some(&request)) {
            Ok(_) => {}
            Err(ServiceError::Conflict { .. }) if self.get_stack(&stack.project, new).is_ok() => {
                return Err(BackendError::StackExists(new.to_string()));
            }
            Err(e) => return Err(stack_error(e, stack)),
        }
        let renamed = StackRef {
            project: stack.project.clone(),
            name: new.clone(),
        };
        if self.selected_stack(&stack.project).as_ref() == Some(&stack.name) {
            self.select_stack(&renamed)?;
        }
        Ok(renamed)
    }

    fn tags(&self, stack: &StackRef) -> Result<StackTags, BackendError> {
        let path = ServiceBackend::stack_path(stack, "/tags");
        let answer =
            (self.transport.call("GET", &path, None, None)).map_err(|e| stack_error(e, stack))?;
        Ok(decode::<TagList>(answer, &path)?.tags)
    }

    fn set_tag(&self, stack: &StackRef, name: &str, value: &str) -> Result<(), BackendError> {
        tags::check_name(name)?;
        tags::check_value(name, value)?;
        let path = ServiceBackend::stack_path(stack, &format!("/tags/{name}"));
        let request = body(&TagValue {
            value: value.to_owned(),
        });
        (self.transport.call("PUT", &path, None, Some(&request)))
            .map_err(|e| stack_error(e, stack))?;
        Ok(())
    }

    fn remove_tag(&self, stack: &StackRef, name: &str) -> Result<bool, BackendError> {
        tags::check_name(name)?;
        // The stack is looked up first: the service answers 404 for a tag it does not have.
        self.get_stack(&stack.project, &stack.name)?;
        let path = ServiceBackend::stack_path(stack, &format!("/tags/{name}"));
        match self.transport.call("DELETE", &path, None, None) {
            Ok(_) => Ok(true),
            Err(ServiceError::NotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn selected_stack(&self, project: &ProjectName) -> Option<StackName> {
        std::fs::read_to_string(self.workspace_file(project))
            .ok()
            .and_then(|s| StackName::new(s.trim()).ok())
    }

    fn select_stack(&self, stack: &StackRef) -> Result<(), BackendError> {
        std::fs::create_dir_all(&self.workspaces)
            .map_err(BackendError::io("creating", &self.workspaces))?;
        let file = self.workspace_file(&stack.project);
        write_atomically(&file, stack.name.as_bytes()).map_err(BackendError::io("writing", &file))
    }

    fn crypter(&self, stack: &StackRef) -> Arc<dyn Crypter> {
        self.secrets.crypter(&stack.name)
    }

    fn load(&self, stack: &StackRef) -> Result<LoadedStack, BackendError> {
        self.load_with(stack, self.crypter(stack).as_ref())
    }

    fn load_redacted(&self, stack: &StackRef) -> Result<LoadedStack, BackendError> {
        self.load_with(stack, &Redacted)
    }

    fn begin_update(
        &self,
        stack: &StackRef,
        command: &str,
    ) -> Result<Box<dyn Update>, BackendError> {
        self.begin_update_with_config(stack, command, Vec::new())
    }

    fn begin_update_with_config(
        &self,
        stack: &StackRef,
        command: &str,
        config: Vec<ConfigKey>,
    ) -> Result<Box<dyn Update>, BackendError> {
        let kind = update_kind(command);
        // The same id goes with every retry of this request: a retry whose first answer was
        // lost gets the update that request began, not a 409 naming it.
        let body = body(&BeginRequest {
            kind: kind.to_string(),
            request_id: Some(uuid::Uuid::new_v4()),
            config,
            checkpoint_embedded: true,
        });
        let path = ServiceBackend::stack_path(stack, "/updates");
        // Read from the answer's text: the base checkpoint within it (embedded, from a service
        // that takes `checkpoint_embedded`) is kept as text, never built into a tree.
        let json = serde_json::to_vec(&body).expect("JSON serializes");
        let answer = match self.transport.send("POST", &path, None, Some(json)) {
            Ok(answer) => answer,
            Err(ServiceError::Conflict {
                holder: Some(holder),
                message,
            }) => {
                let holder = serde_json::from_value::<Holder>(holder).map_err(|e| {
                    BackendError::Service(ServiceError::Unreadable {
                        request: format!("POST {path}"),
                        reason: format!("{message}; its holder: {e}"),
                    })
                })?;
                return Err(BackendError::Locked {
                    stack: stack.name.to_string(),
                    holder: holder_info(holder).to_string(),
                });
            }
            Err(e) => return Err(stack_error(e, stack)),
        };
        let begun: Begun = serde_json::from_str(&answer).map_err(|e| {
            BackendError::Service(ServiceError::Unreadable {
                request: format!("POST {path}"),
                reason: e.to_string(),
            })
        })?;
        let keeper = LeaseKeeper::start(
            self.transport.clone(),
            &begun.update_id,
            &begun.lease_token,
            begun.lease_seconds,
            begun.lease_expires,
        );
        Ok(Box::new(ServiceUpdate {
            transport: self.transport.clone(),
            stack: stack.clone(),
            origin: self.origin(stack),
            crypter: self.crypter(stack),
            kind,
            id: begun.update_id,
            lease: begun.lease_token,
            keeper,
            base: Base::Sent(begun.base_checkpoint.map(|base| base.into_text())),
            recovered: begun.recovered,
            phases: 0,
            journal_batches: Arc::default(),
            short_creates: (begun.journal_extensions.iter()).any(|e| e == CREATED_AS_BEGUN),
            journal_batch: begun.journal_batch,
            events_batch: begun.events_batch,
            journal_in_flight: begun.journal_in_flight,
            open_phase: None,
            last_result: None,
            policy_packs: begun.policy_packs,
        }))
    }

    fn policy_packs(&self, stack: &StackRef) -> Result<Vec<FetchedPack>, BackendError> {
        let path = ServiceBackend::stack_path(stack, "/policy-packs");
        let fetched =
            policy_packs::fetch(&self.transport, &path).map_err(|e| stack_error(e, stack))?;
        policy_packs::checked(fetched)
    }

    fn holder(&self, stack: &StackRef) -> Result<Option<LockHolder>, BackendError> {
        let path = ServiceBackend::stack_path(stack, "");
        let answer =
            (self.transport.call("GET", &path, None, None)).map_err(|e| stack_error(e, stack))?;
        let found: StackFound = decode(answer, &format!("GET {path}"))?;
        Ok(found.holder.map(|holder| LockHolder {
            running: !holder.expired,
            info: Some(holder_info(holder)),
        }))
    }

    fn cancel(&self, stack: &StackRef) -> Result<(), BackendError> {
        let path = ServiceBackend::stack_path(stack, "/cancel");
        (self.transport.call("POST", &path, None, None)).map_err(|e| stack_error(e, stack))?;
        Ok(())
    }

    fn history(&self, stack: &StackRef) -> Result<Vec<HistoryEntry>, BackendError> {
        let mut entries = Vec::new();
        for page in 1.. {
            let path = ServiceBackend::stack_path(
                stack,
                &format!("/history?page={page}&per_page={HISTORY_PAGE}"),
            );
            let answer = (self.transport.call("GET", &path, None, None))
                .map_err(|e| stack_error(e, stack))?;
            let page: HistoryPage<HistoryEntry> = decode(answer, &format!("GET {path}"))?;
            let last = page.versions.is_empty();
            entries.extend((page.versions.into_iter()).map(|v| HistoryEntry {
                user: v.user,
                ..v.entry
            }));
            if last || i64::try_from(entries.len()).unwrap_or(i64::MAX) >= page.total {
                break;
            }
        }
        Ok(entries)
    }

    fn logs(
        &self,
        stack: &StackRef,
        number: Option<u64>,
    ) -> Result<Option<UpdateLog>, BackendError> {
        fetch_log(&self.transport, &stack.project, &stack.name, number)
            .map_err(|e| stack_error(e, stack))
    }

    fn export(&self, stack: &StackRef) -> Result<Vec<u8>, BackendError> {
        self.checkpoint(stack, None)
    }

    fn version(&self, stack: &StackRef, number: u64) -> Result<Vec<u8>, BackendError> {
        let version = i64::try_from(number).unwrap_or(i64::MAX);
        let path = ServiceBackend::stack_path(stack, &format!("/export?version={version}"));
        (self.transport.get_bytes(&path)).map_err(|e| match e {
            ServiceError::NotFound(reason) => BackendError::NoVersion {
                stack: stack.name.to_string(),
                version: number,
                reason,
            },
            other => other.into(),
        })
    }

    /// Calls stop retrying soon: a step's end that cannot be sent leaves its operation pending,
    /// as a crash would, and the update's lease ends it if the service cannot be told.
    fn interrupted(&self) {
        self.transport.hurry();
    }
}

/// Where an update's base comes from.
enum Base {
    /// The checkpoint the service sent when the update began (none: the empty state).
    Sent(Option<String>),
    /// A version a phase of the update made.
    Version(i64),
    /// Opened.
    Loaded(LoadedStack),
}

/// A stack held under a lease for a change. Each phase (a refresh, then the update; an import;
/// an edit by hand) becomes a version on the service; dropping it ends the update.
struct ServiceUpdate {
    transport: Transport,
    stack: StackRef,
    /// Names the stack's state in errors.
    origin: PathBuf,
    crypter: Arc<dyn Crypter>,
    kind: UpdateKind,
    id: String,
    lease: String,
    /// Renews the lease until the update ends.
    keeper: LeaseKeeper,
    base: Base,
    /// The base holds what an interrupted update journaled.
    recovered: bool,
    /// Phases recorded so far; the service numbers them from 1.
    phases: i32,
    /// Journal batches the service acknowledged, numbered across phases.
    journal_batches: Arc<AtomicU64>,
    /// The service takes `created-as-begun` journal entries.
    short_creates: bool,
    /// The most journal entries, and events, a batch may carry, as the service said.
    journal_batch: usize,
    events_batch: usize,
    /// How many journal batches may be under way at once, as the service said.
    journal_in_flight: usize,
    /// When the phase being recorded, not completed yet, started, and the plugins it loads.
    open_phase: Option<(SystemTime, UsedPlugins)>,
    /// How the last completed phase ended.
    last_result: Option<UpdateResult>,
    /// The policy packs the service told the update to run.
    policy_packs: Vec<RequiredPack>,
}

impl ServiceUpdate {
    /// `POST updates/ID/{action}` with the update's lease.
    fn call(&self, action: &str, body: &Value) -> Result<Value, ServiceError> {
        let path = format!("updates/{}/{action}", self.id);
        self.transport
            .call("POST", &path, Some(&self.lease), Some(body))
    }

    /// Fails once the keeper learned that the lease is lost: nothing more may be recorded.
    fn check_lease(&self) -> Result<(), BackendError> {
        match self.keeper.state() {
            LeaseState::Held { .. } => Ok(()),
            LeaseState::Lost(message) => Err(ServiceError::LeaseLost(message).into()),
        }
    }

    /// Records phase `self.phases + 1` as the stack's next version, from the journal sent
    /// since the last phase or from `checkpoint` replacing the state; its version becomes the
    /// base.
    fn record_phase(
        &mut self,
        entry: &HistoryEntry,
        checkpoint: Option<Vec<u8>>,
    ) -> Result<(), BackendError> {
        let phase = self.phases + 1;
        let mut request = PhaseRequest {
            checkpoint: None,
            entry: body(entry),
            phase,
            plugins: None,
        };
        match checkpoint {
            Some(bytes) => {
                let text = String::from_utf8(bytes)
                    .map_err(|e| BackendError::State(StateError::Encode(e.to_string())))?;
                request.checkpoint = Some(text);
            }
            // The checkpoint the journal makes records the plugins the phase loaded, as the
            // file backend's does.
            None => {
                if let Some((_, plugins)) = &self.open_phase {
                    request.plugins = Some(plugins.list());
                }
            }
        }
        let answer = self.call("phases", &body(&request))?;
        let recorded: Recorded = decode(answer, &format!("POST updates/{}/phases", self.id))?;
        self.phases = phase;
        self.open_phase = None;
        self.last_result = Some(entry.result);
        self.base = Base::Version(recorded.version);
        self.recovered = false;
        Ok(())
    }

    /// The base's checkpoint as the service keeps it; `None` for the empty state.
    fn base_bytes(&self) -> Result<Option<Vec<u8>>, BackendError> {
        let version = match &self.base {
            Base::Sent(text) => return Ok(text.as_ref().map(|t| t.as_bytes().to_vec())),
            Base::Version(version) => format!("?version={version}"),
            // Read again, for an edit, which keeps secrets sealed: the update holds the stack,
            // so its latest version is still the base.
            Base::Loaded(_) => String::new(),
        };
        let StackRef { project, name } = &self.stack;
        let path = format!("stacks/{project}/{name}/export{version}");
        Ok(Some(self.transport.get_bytes(&path)?))
    }
}

impl Update for ServiceUpdate {
    fn policy_packs(&self) -> &[RequiredPack] {
        &self.policy_packs
    }

    fn base(&mut self) -> Result<&LoadedStack, BackendError> {
        if !matches!(self.base, Base::Loaded(_)) {
            let loaded = match self.base_bytes()? {
                Some(bytes) => loaded(
                    &bytes,
                    &self.stack,
                    &self.origin,
                    self.crypter.as_ref(),
                    self.recovered,
                )?,
                None => LoadedStack {
                    snapshot: Snapshot::default(),
                    recovered: false,
                    plugins: Vec::new(),
                    torn: None,
                    running: None,
                },
            };
            self.base = Base::Loaded(loaded);
        }
        match &self.base {
            Base::Loaded(loaded) => Ok(loaded),
            _ => unreachable!("the base was just opened"),
        }
    }

    fn record(&mut self, plugins: UsedPlugins) -> Result<Recording, BackendError> {
        self.check_lease()?;
        self.open_phase = Some((SystemTime::now(), plugins));
        let persister = ServicePersister::new(
            self.transport.clone(),
            &self.id,
            &self.lease,
            self.crypter.clone(),
        )
        .continuing(self.journal_batches.clone())
        .in_batches_of(self.journal_batch)
        .in_flight(self.journal_in_flight);
        let persister = match self.short_creates {
            true => persister.shortening_creates(),
            false => persister,
        };
        let events = ServiceEventLog::start(
            self.transport.clone(),
            &self.id,
            &self.lease,
            self.events_batch,
        );
        Ok(Recording {
            persister: Box::new(persister),
            events: Box::new(events),
        })
    }

    fn complete(&mut self, entry: &HistoryEntry) -> Result<(), BackendError> {
        self.record_phase(entry, None)
    }

    fn load_for_edit(&mut self) -> Result<StateEdit, BackendError> {
        let bytes = match self.base_bytes()? {
            Some(bytes) => bytes,
            None => Checkpoint::new(&self.stack.project, &self.stack.name, Snapshot::default())
                .to_json(self.crypter.as_ref())?,
        };
        StateEdit::parse(
            &bytes,
            &self.stack.name,
            &self.origin,
            self.crypter.as_ref(),
            self.recovered,
        )
    }

    fn save_edit(&mut self, edit: StateEdit, entry: &HistoryEntry) -> Result<(), BackendError> {
        self.check_lease()?;
        let StackRef { project, name } = &self.stack;
        let json = edit.into_checkpoint(project, name, self.crypter.as_ref())?;
        self.record_phase(entry, Some(json))
    }

    fn import(
        &mut self,
        bytes: &[u8],
        force: bool,
        entry: &HistoryEntry,
    ) -> Result<ImportReport, BackendError> {
        self.check_lease()?;
        let StackRef { project, name } = &self.stack;
        let (json, report) =
            imported_checkpoint(project, name, bytes, force, self.crypter.as_ref())?;
        self.record_phase(entry, Some(json))?;
        Ok(report)
    }
}

/// Ends the update: a phase left open (the command stopped halfway) is recorded as failed,
/// with whatever its journal holds. If the lease is gone meanwhile, there is nothing to end. An
/// unreachable service gets [`SHORT_BUDGET`], not the 13 s a step's journal does: the command
/// is over, and its lease expiring ends the update as well.
impl Drop for ServiceUpdate {
    fn drop(&mut self) {
        let (result, entry) = match &self.open_phase {
            Some((started, _)) => {
                let entry = HistoryEntry::ended_now(
                    self.kind,
                    *started,
                    UpdateResult::Failed,
                    ChangeSummary::default(),
                )
                .with_note("stopped before its end was recorded");
                (UpdateResult::Failed, Some(entry))
            }
            None => (self.last_result.unwrap_or(UpdateResult::Succeeded), None),
        };
        let body = body(&CompleteRequest {
            entry: entry.as_ref().map(body),
            result: result.to_string(),
        });
        let path = format!("updates/{}/complete", self.id);
        let ended = (self.transport).call_within(
            "POST",
            &path,
            Some(&self.lease),
            Some(&body),
            SHORT_BUDGET,
        );
        match ended {
            Ok(_) | Err(ServiceError::LeaseLost(_)) => {}
            // A drop has no caller to tell: the user is told here, as the command ends.
            Err(e) => eprintln!("warning: {}", self.not_ended(&e)),
        }
    }
}

impl ServiceUpdate {
    /// What the user is told of an update the service could not be told to end.
    fn not_ended(&self, error: &ServiceError) -> String {
        let expiry = match self.keeper.state() {
            LeaseState::Held { expires } => {
                let at = UNIX_EPOCH + Duration::from_secs(expires.max(0).unsigned_abs());
                format!(
                    "its lease expires at {}",
                    humantime::format_rfc3339_seconds(at)
                )
            }
            LeaseState::Lost(_) => "its lease is gone".to_owned(),
        };
        format!(
            "the update of stack `{}` could not be ended: {error}\n  {expiry}, when another update \
             may take the stack; `plinth cancel` ends it sooner",
            self.stack.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_command_holds_the_stack_as_the_kind_its_history_entry_names() {
        for (command, kind) in [
            ("up", UpdateKind::Update),
            ("import", UpdateKind::Import),
            ("stack import", UpdateKind::Import),
            ("destroy", UpdateKind::Destroy),
            ("refresh", UpdateKind::Refresh),
            ("stack rollback", UpdateKind::Rollback),
            ("state delete", UpdateKind::StateEdit),
        ] {
            assert_eq!(update_kind(command), kind, "{command}");
        }
    }
}
