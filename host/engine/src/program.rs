//! The engine's view of a program. A program registers resources through a [`Monitor`]; no
//! registration blocks on the engine. The runtime implements [`Program`] over Wasm components.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::budget::{BudgetExceeded, ProgramBudget, Spent, map_size, size_of};
use crate::events::Severity;
use crate::provider::ProviderSource;
use crate::urn::package_of;
use crate::value::{PropertyMap, Value};

/// Why a program failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ProgramError(pub String);

/// A program: its body, and the apply closures it asks the engine to resume.
#[async_trait]
pub trait Program: Send {
    /// Runs the program's body. Registrations go to `monitor`.
    async fn run(&mut self, monitor: &Monitor) -> Result<(), ProgramError>;
    /// Resumes the apply closure registered as `apply` with its resolved inputs.
    async fn resume(
        &mut self,
        monitor: &Monitor,
        apply: u64,
        inputs: Vec<Value>,
    ) -> Result<Value, ProgramError>;
    /// Whether the engine registers the stack's root resource for this program: every program
    /// that declares resources has one; the empty program of `destroy` does not, so the root
    /// goes with everything else.
    fn registers_root(&self) -> bool {
        true
    }
}

/// A program that declares nothing: `destroy` runs it, so every resource is deleted.
pub struct EmptyProgram;

#[async_trait]
impl Program for EmptyProgram {
    async fn run(&mut self, _: &Monitor) -> Result<(), ProgramError> {
        Ok(())
    }
    async fn resume(
        &mut self,
        _: &Monitor,
        apply: u64,
        _: Vec<Value>,
    ) -> Result<Value, ProgramError> {
        Err(ProgramError(format!("no apply {apply} was registered")))
    }
    fn registers_root(&self) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CustomTimeouts {
    pub create_seconds: Option<u32>,
    pub update_seconds: Option<u32>,
    pub delete_seconds: Option<u32>,
}

/// Options that change how the engine treats a resource.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResourceOptions {
    pub depends_on: Vec<u64>,
    pub parent: Option<u64>,
    pub provider: Option<u64>,
    pub protect: bool,
    pub retain_on_delete: bool,
    pub delete_before_replace: bool,
    pub ignore_changes: Vec<String>,
    pub replace_on_changes: Vec<String>,
    pub aliases: Vec<String>,
    pub custom_timeouts: Option<CustomTimeouts>,
    pub import_id: Option<String>,
}

/// A resource the program declares.
#[derive(Debug, Clone)]
pub struct RegisterRequest {
    pub ty: String,
    pub name: String,
    pub custom: bool,
    /// May contain `Value::Output` references to other registrations.
    pub inputs: PropertyMap,
    pub options: ResourceOptions,
}

/// What a program sent through the monitor, in order.
#[derive(Debug, Clone)]
pub enum Registration {
    Resource {
        handle: u64,
        request: RegisterRequest,
    },
    Read {
        handle: u64,
        ty: String,
        name: String,
        id: String,
        inputs: PropertyMap,
        options: ResourceOptions,
    },
    Apply {
        handle: u64,
        inputs: Vec<Value>,
    },
    Outputs {
        /// A component resource, or the stack when `None`.
        handle: Option<u64>,
        outputs: PropertyMap,
    },
    Log {
        severity: Severity,
        message: String,
    },
}

/// Facts a program may ask about the run.
#[derive(Debug, Clone)]
pub struct StackInfo {
    pub project: String,
    pub stack: String,
    pub dry_run: bool,
}

/// The program's side of the engine: cheap to clone, never blocks.
#[derive(Clone)]
pub struct Monitor {
    tx: mpsc::UnboundedSender<Registration>,
    next_handle: Arc<AtomicU64>,
    info: Arc<StackInfo>,
    config: Arc<BTreeMap<String, Value>>,
    providers: Arc<dyn ProviderSource>,
    budget: ProgramBudget,
    spent: Arc<Spent>,
}

impl Monitor {
    pub(crate) fn new(
        info: StackInfo,
        config: BTreeMap<String, Value>,
        providers: Arc<dyn ProviderSource>,
        budget: ProgramBudget,
    ) -> (Monitor, mpsc::UnboundedReceiver<Registration>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let monitor = Monitor {
            tx,
            next_handle: Arc::new(AtomicU64::new(1)),
            info: Arc::new(info),
            config: Arc::new(config),
            providers,
            budget,
            spent: Arc::default(),
        };
        (monitor, rx)
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn send(&self, registration: Registration) {
        // The engine outlives every program call; a closed channel means the run was abandoned.
        let _ = self.tx.send(registration);
    }

    /// Registers a resource or component; past the program's budget, an error instead.
    pub fn register_resource(&self, request: RegisterRequest) -> Result<u64, BudgetExceeded> {
        self.spent.registration(&self.budget, &request.inputs)?;
        let handle = self.handle();
        self.send(Registration::Resource { handle, request });
        Ok(handle)
    }

    /// Registers the read of an existing resource; past the program's budget, an error instead.
    pub fn read_resource(
        &self,
        ty: String,
        name: String,
        id: String,
        inputs: PropertyMap,
        options: ResourceOptions,
    ) -> Result<u64, BudgetExceeded> {
        self.spent.registration(&self.budget, &inputs)?;
        let handle = self.handle();
        self.send(Registration::Read {
            handle,
            ty,
            name,
            id,
            inputs,
            options,
        });
        Ok(handle)
    }

    /// Registers an apply closure; past the program's budget, an error instead.
    pub fn register_apply(&self, inputs: Vec<Value>) -> Result<u64, BudgetExceeded> {
        self.spent.apply(&self.budget, &inputs)?;
        let handle = self.handle();
        self.send(Registration::Apply { handle, inputs });
        Ok(handle)
    }

    /// Registers outputs; past the program's budget of bytes, an error instead.
    pub fn register_outputs(
        &self,
        handle: Option<u64>,
        outputs: PropertyMap,
    ) -> Result<(), BudgetExceeded> {
        self.spent.bytes(&self.budget, map_size(&outputs))?;
        self.send(Registration::Outputs { handle, outputs });
        Ok(())
    }

    /// Counts what an apply closure returned against the budget's bytes: the engine holds it
    /// as the apply's value.
    pub(crate) fn charge_result(&self, value: &Value) -> Result<(), BudgetExceeded> {
        self.spent.bytes(&self.budget, size_of(value))
    }

    /// Logs `message`; past the program's budget of log bytes, an error instead.
    pub fn log(&self, severity: Severity, message: String) -> Result<(), BudgetExceeded> {
        self.spent.log(&self.budget, &message)?;
        self.send(Registration::Log { severity, message });
        Ok(())
    }

    /// A configuration value: `key` is looked up as `<project>:key`, `ns:key` as given. A secret
    /// configuration value is a [`Value::Secret`].
    pub fn config(&self, key: &str) -> Option<Value> {
        if key.contains(':') {
            self.config.get(key).cloned()
        } else {
            self.config
                .get(&format!("{}:{key}", self.info.project))
                .cloned()
        }
    }

    pub fn stack_info(&self) -> &StackInfo {
        &self.info
    }

    /// Calls a provider function. Blocks the program (not the engine) until it returns.
    pub async fn invoke(&self, token: &str, args: PropertyMap) -> Result<Value, String> {
        if args.values().any(Value::contains_outputs) {
            return Err(format!(
                "invoke `{token}`: arguments must be known values, not outputs of other resources"
            ));
        }
        let provider = self
            .providers
            .provider(package_of(token))
            .await
            .map_err(|e| e.to_string())?;
        provider
            .invoke(token, &args)
            .await
            .map_err(|e| format!("invoke `{token}`: {e}"))
    }
}
