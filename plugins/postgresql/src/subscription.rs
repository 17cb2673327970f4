//! `postgresql:Subscription`: logical replication from publications on another server
//! (`CREATE SUBSCRIPTION`). The server the provider manages connects to the publisher itself,
//! with `conninfo` (secret: it usually holds a password); the provider's sandbox grants reach
//! only the server it manages.
//!
//! The id is `DATABASE-OID/SUBSCRIPTION-OID`; import takes `DATABASE/NAME`. The connection and
//! the publications change in place; the name, the database and the slot are fixed.

use plinth_sdk::{
    CheckFailure, Created, ProviderError, ReadResult, ResourceContext, ResourceSchema, Secret,
    TypedResource,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::defaults::yes;
use crate::in_database::{self, InDatabase};
use crate::server::{Lookup, Server, Session, text};
use crate::sql::{self, ident, literal};

/// The inputs of `postgresql:Subscription`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SubscriptionInputs {
    /// The subscription's name.
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) name: String,
    /// The database the changes are applied to; absent: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) database: Option<String>,
    /// How the server connects to the publisher, in libpq's `key=value` form
    /// (`host=... port=... dbname=... user=... password=...`).
    pub(crate) conninfo: Secret<String>,
    /// The publications on the publisher to subscribe to.
    pub(crate) publications: Vec<String>,
    /// Create the replication slot on the publisher (otherwise it must exist).
    #[serde(default = "yes")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) create_slot: bool,
    /// The slot on the publisher; absent: the subscription's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-plinth-replace-on-change" = true))]
    pub(crate) slot_name: Option<String>,
}

/// The outputs: the subscription as it is (its connection stays secret).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub(crate) struct SubscriptionOutputs {
    pub(crate) name: String,
    pub(crate) database: String,
    pub(crate) conninfo: Secret<String>,
    pub(crate) publications: Vec<String>,
    /// The slot it uses on the publisher.
    pub(crate) slot_name: Option<String>,
    /// Whether it is replicating.
    pub(crate) enabled: bool,
    /// Its OID.
    pub(crate) oid: i64,
}

/// The `postgresql:Subscription` resource type.
pub(crate) struct Subscription(pub(crate) Server);

fn publication_list(publications: &[String]) -> String {
    publications
        .iter()
        .map(|p| ident(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether two lists hold the same names, in any order.
fn same_names(a: &[String], b: &[String]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    a == b
}

impl InDatabase for Subscription {
    const KIND: &'static str = "subscription";
    const KEYWORD: &'static str = "SUBSCRIPTION";
    type Outputs = SubscriptionOutputs;

    fn server(&self) -> &Server {
        &self.0
    }

    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<SubscriptionOutputs>, ProviderError> {
        let sql = format!(
            "SELECT oid, subname, subconninfo, array_to_json(subpublications), subslotname, \
             subenabled FROM pg_subscription WHERE subdbid = (SELECT oid FROM pg_database \
             WHERE datname = current_database()) AND {}",
            lookup.condition("oid", "subname")
        );
        Ok(session
            .row("reading the subscription", &sql)?
            .map(|row| SubscriptionOutputs {
                oid: text(&row, 0).parse().unwrap_or_default(),
                name: text(&row, 1),
                conninfo: Secret::new(text(&row, 2)),
                publications: serde_json::from_str(&text(&row, 3)).unwrap_or_default(),
                slot_name: row[4].clone(),
                enabled: sql::boolean(row[5].as_deref()),
                database: database.to_owned(),
            }))
    }

    fn key(outputs: &SubscriptionOutputs) -> String {
        outputs.oid.to_string()
    }

    fn name(outputs: &SubscriptionOutputs) -> &str {
        &outputs.name
    }
}

impl TypedResource for Subscription {
    type Inputs = SubscriptionInputs;
    type Outputs = SubscriptionOutputs;

    fn schema(&self) -> ResourceSchema {
        ResourceSchema::derive::<Self>("postgresql:Subscription")
            .describe("A subscription to publications on another server (logical replication).")
    }

    fn validate(&self, _: &ResourceContext<'_>, s: &SubscriptionInputs) -> Vec<CheckFailure> {
        let mut names = vec![("name", s.name.as_str())];
        names.extend(s.database.as_deref().map(|d| ("database", d)));
        names.extend(s.slot_name.as_deref().map(|n| ("slot_name", n)));
        names.extend(s.publications.iter().map(|p| ("publications", p.as_str())));
        let mut failures = sql::check_names(names);
        if s.publications.is_empty() {
            failures.push(CheckFailure::new(
                "publications",
                "name at least one publication",
            ));
        }
        if s.conninfo.expose().contains('\0') {
            failures.push(CheckFailure::new(
                "conninfo",
                "must not contain a NUL character",
            ));
        }
        failures
    }

    fn create(
        &self,
        _: &ResourceContext<'_>,
        s: SubscriptionInputs,
    ) -> Result<Created<SubscriptionOutputs>, ProviderError> {
        let mut session = self.0.connect(s.database.as_deref())?;
        let database = self.0.database_or_home(s.database.as_deref());
        let mut with = format!("create_slot = {}", s.create_slot);
        if let Some(slot) = &s.slot_name {
            with += &format!(", slot_name = {}", literal(slot));
        }
        // One statement: with `create_slot` it cannot run in a transaction.
        let sql = format!(
            "CREATE SUBSCRIPTION {} CONNECTION {} PUBLICATION {} WITH ({with})",
            ident(&s.name),
            literal(s.conninfo.expose()),
            publication_list(&s.publications)
        );
        session.run(&format!("creating subscription `{}`", s.name), &sql)?;
        in_database::created::<Self>(&mut session, database, &s.name)
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: SubscriptionInputs,
        _: SubscriptionOutputs,
    ) -> Result<Option<ReadResult<SubscriptionInputs, SubscriptionOutputs>>, ProviderError> {
        let Some(found) = self.find(&id)? else {
            return Ok(None);
        };
        let current = &found.current;
        let read = SubscriptionInputs {
            name: current.name.clone(),
            database: self
                .0
                .database_input(inputs.database.as_deref(), &found.database),
            conninfo: current.conninfo.clone(),
            publications: if same_names(&inputs.publications, &current.publications) {
                inputs.publications.clone()
            } else {
                current.publications.clone()
            },
            // What the slot was made with is not recorded: it stays as given.
            create_slot: inputs.create_slot,
            slot_name: match &inputs.slot_name {
                None if current.slot_name.as_deref() == Some(current.name.as_str()) => None,
                _ => current.slot_name.clone(),
            },
        };
        found.read_result(read).map(Some)
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: SubscriptionInputs,
        _: SubscriptionOutputs,
        new: SubscriptionInputs,
    ) -> Result<SubscriptionOutputs, ProviderError> {
        let mut found = self.find_recorded(id, &old.name)?;
        let current = &found.current;
        let doing = format!("updating subscription `{}`", new.name);
        let name = ident(&current.name);
        if current.conninfo.expose() != new.conninfo.expose() {
            found.session.run(
                &doing,
                &format!(
                    "ALTER SUBSCRIPTION {name} CONNECTION {}",
                    literal(new.conninfo.expose())
                ),
            )?;
        }
        if !same_names(&current.publications, &new.publications) {
            // Its own statement: refreshing the tables cannot run in a transaction.
            found.session.run(
                &doing,
                &format!(
                    "ALTER SUBSCRIPTION {name} SET PUBLICATION {}",
                    publication_list(&new.publications)
                ),
            )?;
        }
        found.reread(&new.name)
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: SubscriptionInputs,
        _: SubscriptionOutputs,
    ) -> Result<(), ProviderError> {
        // Also drops its slot on the publisher, which must be reachable.
        self.drop_object(id, false)
    }
}
