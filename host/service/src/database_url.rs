//! Where the database URL comes from: `--database`, `PLINTH_DATABASE_URL` or `--database-file`.
//! A password on the command line is seen by every user of the machine (`ps`, /proc), so the
//! other two are the ones to use; a URL given on the command line with a password is warned of.

use std::path::{Path, PathBuf};

/// Why no URL could be had.
#[derive(Debug, thiserror::Error)]
pub enum DatabaseUrlError {
    #[error(
        "no database: set PLINTH_DATABASE_URL=postgres://…, or pass --database-file FILE (a file \
         holding the URL) or --database postgres://…"
    )]
    Missing,
    #[error("cannot read the database URL from {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} does not hold a database URL: it is empty, write postgres://USER:PASSWORD@HOST:PORT/DB in it"
    )]
    Empty { path: PathBuf },
    #[error(
        "{path} holds more than one line: write only the URL in it, postgres://USER:PASSWORD@HOST:PORT/DB"
    )]
    Lines { path: PathBuf },
}

/// Whether `path` may be read by users other than its owner (and root), as a file holding a
/// password should not.
pub fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o044 != 0)
}

/// The URL in `path`: its one line, without the line end.
pub fn read_database_file(path: &Path) -> Result<String, DatabaseUrlError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatabaseUrlError::Unreadable {
        path: path.to_owned(),
        source,
    })?;
    let url = text.trim();
    if url.is_empty() {
        return Err(DatabaseUrlError::Empty {
            path: path.to_owned(),
        });
    }
    if url.lines().count() > 1 {
        return Err(DatabaseUrlError::Lines {
            path: path.to_owned(),
        });
    }
    Ok(url.to_owned())
}

/// Whether `url` carries a password (`scheme://user:password@…` or `?password=` in its query).
pub fn has_password(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let in_authority = authority
        .rsplit_once('@')
        .is_some_and(|(credentials, _)| credentials.contains(':'));
    let in_query = url.split_once('?').is_some_and(|(_, query)| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("password"))
    });
    in_authority || in_query
}

#[cfg(test)]
mod tests {
    use super::has_password;

    #[test]
    fn passwords_are_seen_wherever_the_url_holds_them() {
        assert!(has_password("postgres://plinth:hunter2@db:5432/plinth"));
        assert!(has_password(
            "postgres://plinth@db/plinth?sslmode=require&password=x"
        ));
        assert!(!has_password("postgres://plinth@db/plinth"));
        assert!(!has_password("postgres://db/plinth?user=a:b"));
        assert!(!has_password("not a url"));
    }
}
