//! Objects that live inside one database (schemas, extensions, publications, subscriptions,
//! functions, foreign servers) share one kind of id, `DATABASE/OBJECT`: the database by OID,
//! so that a database renamed in place keeps them, and the object by what does not change
//! under it, usually its OID, so that a rename in place keeps it too; import takes names. Here
//! is the one way to open such an id, read the object back, record its id, rename it and drop
//! it.

use plinth_sdk::{Created, ProviderError, ReadResult};

use crate::server::{Lookup, Server, Session, gone};
use crate::sql::ident;

/// A resource type whose objects live inside one database.
pub(crate) trait InDatabase {
    /// The object's kind, as messages name it: `foreign server`.
    const KIND: &'static str;
    /// The keyword its `ALTER` and `DROP` statements take: `SERVER`.
    const KEYWORD: &'static str;
    /// The object as read back.
    type Outputs;

    /// The configured server.
    fn server(&self) -> &Server;

    /// The database part and the object part of `id`.
    fn split_id(id: &str) -> Result<(&str, &str), ProviderError> {
        crate::ids::split(id, Self::KIND)
    }

    /// The object `lookup` selects in `database`, as it is now.
    fn fetch(
        session: &mut Session,
        database: &str,
        lookup: Lookup<'_>,
    ) -> Result<Option<Self::Outputs>, ProviderError>;

    /// How an id's object part selects the object: by OID if it is one, else by name.
    fn lookup(object: &str) -> Lookup<'_> {
        Lookup::of(object)
    }

    /// What an id records of the object.
    fn key(outputs: &Self::Outputs) -> String;

    /// The object's name now.
    fn name(outputs: &Self::Outputs) -> &str;

    /// How `DROP` names the object: by its name.
    fn drop_target(outputs: &Self::Outputs) -> String {
        ident(Self::name(outputs))
    }

    /// The object `id` names and where it is; `None` if it or its database is gone.
    fn find(&self, id: &str) -> Result<Option<Found<Self>>, ProviderError> {
        let (database, object) = Self::split_id(id)?;
        let Some(database) = self.server().database_name(database)? else {
            return Ok(None);
        };
        let Some(mut session) = self.server().connect_if_exists(&database)? else {
            return Ok(None);
        };
        Ok(
            Self::fetch(&mut session, &database, Self::lookup(object))?.map(|current| Found {
                object: object.to_owned(),
                database,
                session,
                current,
            }),
        )
    }

    /// The object `id` names, which must be there: the error says `name` is gone.
    fn find_recorded(&self, id: &str, name: &str) -> Result<Found<Self>, ProviderError> {
        self.find(id)?.ok_or_else(|| gone(Self::KIND, name))
    }

    /// Drops the object `id` names, if it is still there (with what depends on it if
    /// `cascade`).
    fn drop_object(&self, id: &str, cascade: bool) -> Result<(), ProviderError> {
        let Some(mut found) = self.find(id)? else {
            return Ok(());
        };
        let cascade = if cascade { " CASCADE" } else { "" };
        found.session.run(
            &format!("dropping {} `{}`", Self::KIND, Self::name(&found.current)),
            &format!(
                "DROP {} {}{cascade}",
                Self::KEYWORD,
                Self::drop_target(&found.current)
            ),
        )
    }
}

/// An object found by its id.
pub(crate) struct Found<T: InDatabase + ?Sized> {
    /// The database's name now.
    pub(crate) database: String,
    /// A session in that database.
    pub(crate) session: Session,
    /// The id's object part.
    object: String,
    /// The object as it was found.
    pub(crate) current: T::Outputs,
}

impl<T: InDatabase + ?Sized> Found<T> {
    /// The object read again after a change; the error says `name` is gone.
    pub(crate) fn reread(&mut self, name: &str) -> Result<T::Outputs, ProviderError> {
        T::fetch(&mut self.session, &self.database, T::lookup(&self.object))?
            .ok_or_else(|| gone(T::KIND, name))
    }

    /// What `read` returns for the object as found, read back as `inputs`: under its id as of
    /// now, which names a renamed database by its OID.
    pub(crate) fn read_result<I>(
        mut self,
        inputs: I,
    ) -> Result<ReadResult<I, T::Outputs>, ProviderError> {
        Ok(ReadResult {
            id: id_in(&mut self.session, &T::key(&self.current))?,
            inputs,
            outputs: self.current,
        })
    }
}

/// What `create` returns for the object named `name` just made in `database` (`session`'s).
pub(crate) fn created<T: InDatabase + ?Sized>(
    session: &mut Session,
    database: &str,
    name: &str,
) -> Result<Created<T::Outputs>, ProviderError> {
    let outputs =
        T::fetch(session, database, Lookup::Name(name))?.ok_or_else(|| gone(T::KIND, name))?;
    Ok(Created {
        id: id_in(session, &T::key(&outputs))?,
        outputs,
    })
}

/// `ALTER KEYWORD current RENAME TO new;`, or nothing if the name stays.
pub(crate) fn rename<T: InDatabase + ?Sized>(current: &str, new: &str) -> String {
    if current == new {
        return String::new();
    }
    format!(
        "ALTER {} {} RENAME TO {};",
        T::KEYWORD,
        ident(current),
        ident(new)
    )
}

/// The id of the object `key` names in the database `session` is in.
fn id_in(session: &mut Session, key: &str) -> Result<String, ProviderError> {
    Ok(format!("{}/{key}", session.database_oid()?))
}

/// Refuses to move the `kind` `name` from `database` to `wanted` in place: an object cannot
/// change databases, only be made anew in the other one.
pub(crate) fn refuse_move(
    kind: &str,
    name: &str,
    database: &str,
    wanted: &str,
) -> Result<(), ProviderError> {
    if database == wanted {
        return Ok(());
    }
    Err(ProviderError::failed(format!(
        "{kind} `{name}` is in database `{database}` and cannot move to `{wanted}` in place; \
         replace it (`plinth up --replace` with its URN) to create it there"
    )))
}
