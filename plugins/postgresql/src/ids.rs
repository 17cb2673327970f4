//! Ids of objects inside a database, `DATABASE/OBJECT`: the database by OID (so that renaming
//! it in place keeps what is in it) and the object by OID or name; import takes names.

use plinth_sdk::ProviderError;

/// The database part and the object part of `id`; the object is what follows the first `/`
/// (a database's name may not hold one: ids are made with its OID).
pub(crate) fn split<'a>(id: &'a str, what: &str) -> Result<(&'a str, &'a str), ProviderError> {
    id.split_once('/')
        .filter(|(db, object)| !db.is_empty() && !object.is_empty())
        .ok_or_else(|| {
            ProviderError::failed(format!(
                "`{id}` is not the id of a {what}; it is `DATABASE/NAME` (the database by \
                 name or OID)"
            ))
        })
}
