//! A transaction left open in a `psql` session of its own, holding its locks until committed.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::{Error, Result};

/// What the session prints once the transaction's statements have run.
const BEGUN: &str = "transaction open";

/// An open transaction; rolled back (its session ended) when dropped uncommitted.
pub struct OpenTransaction {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl OpenTransaction {
    pub(crate) fn begin(mut psql: Command, sql: &str) -> Result<OpenTransaction> {
        let mut child = (psql.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn())
            .map_err(|e| Error(format!("cannot run psql: {e}")))?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        writeln!(stdin, "BEGIN;\n{sql};\nSELECT '{BEGUN}';")
            .map_err(|e| Error(format!("cannot write to psql: {e}")))?;
        let mut open = OpenTransaction {
            child,
            stdin: Some(stdin),
        };
        // Whatever `sql` printed comes first; psql ends at its first error, closing stdout.
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| Error(format!("cannot read from psql: {e}")))?;
            if line == BEGUN {
                return Ok(open);
            }
        }
        open.stdin = None;
        let status = open.child.wait();
        Err(Error(format!(
            "psql ended before the transaction was open ({status:?}); its error is above"
        )))
    }

    /// Commits the transaction and ends the session.
    pub fn commit(mut self) -> Result<()> {
        let mut stdin = self.stdin.take().expect("open until committed");
        writeln!(stdin, "COMMIT;").map_err(|e| Error(format!("cannot write to psql: {e}")))?;
        drop(stdin);
        let status =
            (self.child.wait()).map_err(|e| Error(format!("cannot wait for psql: {e}")))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error(format!("psql failed committing: {status}")))
        }
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
