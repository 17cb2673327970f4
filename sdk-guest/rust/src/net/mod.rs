//! Network connections for providers (feature `net`): a TCP client over `wasi:sockets`, and TLS
//! done by the host over it (`plinth:tls`).
//!
//! ```no_run
//! use std::io::{Read, Write};
//! use plinth_sdk::net::{TcpStream, TlsOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The project grants `tcp: ["db.example.com:5432"]`; nothing else is reachable.
//! let tcp = TcpStream::connect("db.example.com", 5432, None)?;
//! let root = "-----BEGIN CERTIFICATE-----\n...";
//! let mut tls = tcp.into_tls(&TlsOptions::new("db.example.com").roots(root))?;
//! tls.write_all(b"hello")?;
//! # Ok(())
//! # }
//! ```
//!
//! The host checks the server's certificate ([`Verification::Full`] unless asked otherwise)
//! against the roots given and, unless they replace them, the system's; a failed check is a
//! [`TlsError`] whose [`kind`](TlsError::kind) says why. A connection, TLS or not, reaches only
//! what the project granted.

mod bindings;
mod streams;
mod tcp;
mod tls;

pub use tcp::TcpStream;
pub use tls::{TlsError, TlsErrorKind, TlsOptions, TlsStream, Verification};
