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

use crate::server::{Lookup, Server, Session, gone, text};
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

fn yes() -> bool {
    true
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

impl Subscription {
    fn open(&self, id: &str) -> Result<Option<(String, Session, String)>, ProviderError> {
        self.0.open_in_database(id, "subscription")
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
        let database = s
            .database
            .clone()
            .unwrap_or_else(|| self.0.home().to_owned());
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
        let outputs = fetch(&mut session, &database, Lookup::Name(&s.name))?
            .ok_or_else(|| gone("subscription", &s.name))?;
        Ok(Created {
            id: format!("{}/{}", session.database_oid()?, outputs.oid),
            outputs,
        })
    }

    fn read(
        &self,
        _: &ResourceContext<'_>,
        id: String,
        inputs: SubscriptionInputs,
        _: SubscriptionOutputs,
    ) -> Result<Option<ReadResult<SubscriptionInputs, SubscriptionOutputs>>, ProviderError> {
        let Some((database, mut session, subscription)) = self.open(&id)? else {
            return Ok(None);
        };
        let Some(found) = fetch(&mut session, &database, Lookup::of(&subscription))? else {
            return Ok(None);
        };
        let read = SubscriptionInputs {
            name: found.name.clone(),
            database: match &inputs.database {
                None if database == self.0.home() => None,
                _ => Some(database.clone()),
            },
            conninfo: found.conninfo.clone(),
            publications: if same_names(&inputs.publications, &found.publications) {
                inputs.publications.clone()
            } else {
                found.publications.clone()
            },
            // What the slot was made with is not recorded: it stays as given.
            create_slot: inputs.create_slot,
            slot_name: match &inputs.slot_name {
                None if found.slot_name.as_deref() == Some(found.name.as_str()) => None,
                _ => found.slot_name.clone(),
            },
        };
        Ok(Some(ReadResult {
            id: format!("{}/{}", session.database_oid()?, found.oid),
            inputs: read,
            outputs: found,
        }))
    }

    fn update(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        old: SubscriptionInputs,
        _: SubscriptionOutputs,
        new: SubscriptionInputs,
    ) -> Result<SubscriptionOutputs, ProviderError> {
        let (database, mut session, subscription) = self
            .open(id)?
            .ok_or_else(|| gone("subscription", &old.name))?;
        let current = fetch(&mut session, &database, Lookup::of(&subscription))?
            .ok_or_else(|| gone("subscription", &old.name))?;
        let doing = format!("updating subscription `{}`", new.name);
        let name = ident(&current.name);
        if current.conninfo.expose() != new.conninfo.expose() {
            session.run(
                &doing,
                &format!(
                    "ALTER SUBSCRIPTION {name} CONNECTION {}",
                    literal(new.conninfo.expose())
                ),
            )?;
        }
        if !same_names(&current.publications, &new.publications) {
            // Its own statement: refreshing the tables cannot run in a transaction.
            session.run(
                &doing,
                &format!(
                    "ALTER SUBSCRIPTION {name} SET PUBLICATION {}",
                    publication_list(&new.publications)
                ),
            )?;
        }
        fetch(&mut session, &database, Lookup::of(&subscription))?
            .ok_or_else(|| gone("subscription", &new.name))
    }

    fn delete(
        &self,
        _: &ResourceContext<'_>,
        id: &str,
        _: SubscriptionInputs,
        _: SubscriptionOutputs,
    ) -> Result<(), ProviderError> {
        let Some((database, mut session, subscription)) = self.open(id)? else {
            return Ok(());
        };
        let Some(current) = fetch(&mut session, &database, Lookup::of(&subscription))? else {
            return Ok(());
        };
        // Also drops its slot on the publisher, which must be reachable.
        session.run(
            &format!("dropping subscription `{}`", current.name),
            &format!("DROP SUBSCRIPTION {}", ident(&current.name)),
        )
    }
}
