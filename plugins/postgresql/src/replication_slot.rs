//! `postgresql:ReplicationSlot` (logical, decoded by an output plugin such as `pgoutput` or
//! `test_decoding`) and `postgresql:PhysicalReplicationSlot`: slots keep the WAL a consumer
//! has not read yet. A slot cannot be changed, only dropped and created again: every input
//! replaces it. The id, which import takes too, is the slot's name (unique in the cluster).
//! A logical slot needs the server's `wal_level = logical`.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server::{Server, Session, text};
use crate::sql::{self, literal};

/// The inputs of `postgresql:ReplicationSlot`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ReplicationSlotInputs {
    /// The slot's name: lower-case letters, digits and underscores.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) name: String,
    /// The output plugin that decodes the WAL, such as `pgoutput` or `test_decoding`.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) plugin: String,
    /// The database whose changes the slot decodes; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
}

/// The inputs of `postgresql:PhysicalReplicationSlot`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PhysicalReplicationSlotInputs {
    /// The slot's name: lower-case letters, digits and underscores.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) name: String,
}

/// The outputs: the slot as the server has it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SlotOutputs {
    pub(crate) name: String,
    /// The output plugin (logical slots).
    pub(crate) plugin: Option<String>,
    /// The database (logical slots).
    pub(crate) database: Option<String>,
    /// `logical` or `physical`.
    pub(crate) slot_type: String,
    /// Whether a consumer is connected to it now.
    pub(crate) active: bool,
}

/// The `postgresql:ReplicationSlot` resource type.
pub(crate) struct ReplicationSlot(pub(crate) Server);

/// The `postgresql:PhysicalReplicationSlot` resource type.
pub(crate) struct PhysicalReplicationSlot(pub(crate) Server);

/// What the server rejects in a slot name, said before it is asked.
fn slot_name_problems(name: &str) -> Vec<CheckFailure> {
    let mut failures = sql::check_names([("name", name)]);
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if failures.is_empty() && !name.chars().all(allowed) {
        failures.push(CheckFailure::new(
            "name",
            "a replication slot's name may hold only lower-case letters, digits and \
             underscores",
        ));
    }
    failures
}

/// The slot named `name` of `slot_type`, if there is one.
fn fetch(
    session: &mut Session,
    name: &str,
    slot_type: &str,
) -> Result<Option<SlotOutputs>, ProviderError> {
    let sql = format!(
        "SELECT slot_name, plugin, database, slot_type, active FROM pg_replication_slots \
         WHERE slot_name = {} AND slot_type = {}",
        literal(name),
        literal(slot_type)
    );
    Ok(session
        .row("reading the replication slot", &sql)?
        .map(|row| SlotOutputs {
            name: text(&row, 0),
            plugin: row[1].clone(),
            database: row[2].clone(),
            slot_type: text(&row, 3),
            active: sql::boolean(row[4].as_deref()),
        }))
}

/// Drops the slot `name` of `slot_type` if it is there.
fn drop_slot(server: &Server, name: &str, slot_type: &str) -> Result<(), ProviderError> {
    let mut session = server.connect(None)?;
    if fetch(&mut session, name, slot_type)?.is_none() {
        return Ok(());
    }
    session.run(
        &format!("dropping replication slot `{name}`"),
        &format!("SELECT pg_drop_replication_slot({})", literal(name)),
    )
}

/// Creates the slot `name` of `slot_type` with `call`, the server's function for it; the id
/// is its name.
fn create_slot(
    session: &mut Session,
    name: String,
    slot_type: &str,
    call: &str,
) -> Result<Created<SlotOutputs>, ProviderError> {
    session.run(
        &format!("creating replication slot `{name}`"),
        &format!("SELECT {call}"),
    )?;
    let outputs = fetch(session, &name, slot_type)?.ok_or_else(|| {
        ProviderError::failed(format!(
            "replication slot `{name}` is gone after it was created"
        ))
    })?;
    Ok(Created { id: name, outputs })
}

impl TypedResource for ReplicationSlot {
    type Inputs = ReplicationSlotInputs;
    type Outputs = SlotOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:ReplicationSlot")
            .describe("A logical replication slot, decoded by an output plugin.")
    }

    fn validate(&self, _: &ResourceContext<'_>, s: &ReplicationSlotInputs) -> Vec<CheckFailure> {
        let mut failures = slot_name_problems(&s.name);
        let mut names = vec![("plugin", s.plugin.as_str())];
        names.extend(s.database.as_deref().map(|d| ("database", d)));
        failures.extend(sql::check_names(names));
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        s: ReplicationSlotInputs,
    ) -> Result<Created<SlotOutputs>, ProviderError> {
        let mut session = self.0.connect(s.database.as_deref())?;
        let call = format!(
            "pg_create_logical_replication_slot({}, {})",
            literal(&s.name),
            literal(&s.plugin)
        );
        create_slot(&mut session, s.name, "logical", &call)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: ReplicationSlotInputs,
        _: SlotOutputs,
    ) -> Result<Option<ReadResult<ReplicationSlotInputs, SlotOutputs>>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some(found) = fetch(&mut session, &id, "logical")? else {
            return Ok(None);
        };
        // The provider's database, when not named, is the one the slot is in or a difference.
        let database = found.database.clone().unwrap_or_default();
        let read = ReplicationSlotInputs {
            name: found.name.clone(),
            plugin: found.plugin.clone().unwrap_or_default(),
            database: self.0.database_input(inputs.database.as_deref(), &database),
        };
        Ok(Some(ReadResult {
            id,
            inputs: read,
            outputs: found,
        }))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: ReplicationSlotInputs,
        _: SlotOutputs,
    ) -> Result<(), ProviderError> {
        drop_slot(&self.0, id, "logical")
    }
}

impl TypedResource for PhysicalReplicationSlot {
    type Inputs = PhysicalReplicationSlotInputs;
    type Outputs = SlotOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:PhysicalReplicationSlot")
            .describe("A physical replication slot, for a standby or a WAL archiver.")
    }

    fn validate(
        &self,
        _: &ResourceContext<'_>,
        s: &PhysicalReplicationSlotInputs,
    ) -> Vec<CheckFailure> {
        slot_name_problems(&s.name)
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        s: PhysicalReplicationSlotInputs,
    ) -> Result<Created<SlotOutputs>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let call = format!("pg_create_physical_replication_slot({})", literal(&s.name));
        create_slot(&mut session, s.name, "physical", &call)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        _: PhysicalReplicationSlotInputs,
        _: SlotOutputs,
    ) -> Result<Option<ReadResult<PhysicalReplicationSlotInputs, SlotOutputs>>, ProviderError> {
        let mut session = self.0.connect(None)?;
        let Some(found) = fetch(&mut session, &id, "physical")? else {
            return Ok(None);
        };
        Ok(Some(ReadResult {
            id,
            inputs: PhysicalReplicationSlotInputs {
                name: found.name.clone(),
            },
            outputs: found,
        }))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: PhysicalReplicationSlotInputs,
        _: SlotOutputs,
    ) -> Result<(), ProviderError> {
        drop_slot(&self.0, id, "physical")
    }
}
