//! What the sandbox refused a guest during the current call, so that a call that fails because
//! of it can say so: what the guest tried, and (in the embedder's words) the grant that would
//! allow it.

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::access::advice::GrantAdvice;
use crate::access::missing::Missing;

/// At most this many refusals are remembered per call: a guest retrying in a loop should not
/// grow the error message without bound.
const MAX_REMEMBERED: usize = 8;

/// Who runs in a sandbox, for messages: grants exist for plugins only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Owner {
    Plugin(String),
    Program(String),
    /// A policy pack, granted nothing whatever the project says.
    PolicyPack(String),
}

/// One refused attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denial {
    /// A socket use the socket address check refused. `name` is the host name the address was
    /// looked up as, when the guest looked it up.
    Socket {
        protocol: Protocol,
        action: SocketAction,
        addr: SocketAddr,
        name: Option<String>,
    },
    /// A name lookup for a host no TCP or UDP grant names.
    Lookup { name: String },
    /// An outbound HTTP request to an authority no grant covers. `authority` is what the grant
    /// would have to say: the host, and the port unless it is the scheme's default.
    Http { authority: String },
    /// A TLS session to `endpoint` (`host:port`) asked to verify `what` of the server's
    /// certificate, less than all of it, where no `tls-insecure` grant covers the endpoint.
    TlsInsecure {
        endpoint: String,
        what: &'static str,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Tcp,
    Udp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketAction {
    Connect,
    Bind,
    Listen,
    Send,
}

/// The refusals of the current call, shared by every part of the sandbox that can refuse.
pub(crate) struct Denials {
    owner: Owner,
    advice: Arc<dyn GrantAdvice>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    refused: Vec<Denial>,
    /// The guest has read its environment (ever: guests read it once and keep it).
    read_env: bool,
}

impl Denials {
    pub(crate) fn new(owner: Owner, advice: Arc<dyn GrantAdvice>) -> Denials {
        Denials {
            owner,
            advice,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every critical section is a push or a clear: the data is consistent after a panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records and logs a refusal.
    pub(crate) fn refuse(&self, denial: Denial) {
        tracing::warn!(target: "plinth::sandbox", "{} was denied {}", self.owner, denial);
        let mut state = self.state();
        if !state.refused.contains(&denial) && state.refused.len() < MAX_REMEMBERED {
            state.refused.push(denial);
        }
    }

    /// How the embedder words the way to grant what was refused.
    pub(crate) fn advice(&self) -> &dyn GrantAdvice {
        self.advice.as_ref()
    }

    /// Notes that the guest read its environment.
    pub(crate) fn env_read(&self) {
        self.state().read_env = true;
    }

    /// Forgets the refusals of the previous call.
    pub(crate) fn clear(&self) {
        self.state().refused.clear();
    }

    /// Explains the refusals of this call, for the error of a call that failed; `message` is
    /// what the guest said about its failure, searched for the environment variables it may
    /// have missed (`env` holds the granted names). `None` if nothing explains the failure.
    pub(crate) fn explain(&self, message: &str, env: &[String]) -> Option<String> {
        let state = self.state();
        let mut lines: Vec<String> = state
            .refused
            .iter()
            .map(|denial| match &self.owner {
                Owner::Plugin(plugin) => format!(
                    "{} was denied {denial}; to allow it, {}",
                    self.owner,
                    self.advice.to_allow(plugin, &denial.needs())
                ),
                Owner::Program(_) => format!(
                    "{} was denied {denial}: programs are granted no network access",
                    self.owner
                ),
                Owner::PolicyPack(_) => format!(
                    "{} was denied {denial}: policy packs are granted nothing",
                    self.owner
                ),
            })
            .collect();
        if state.read_env {
            lines.extend(self.missing_env(message, env));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    /// The environment variables `message` names that the guest cannot see. A guest reads its
    /// whole environment at once, so the host cannot tell which variable it looked for; a
    /// name in its error message that plinth has but did not grant (or granted but lacks) is
    /// the likely culprit.
    fn missing_env(&self, message: &str, env: &[String]) -> Vec<String> {
        let mut seen = Vec::new();
        let mut lines = Vec::new();
        for word in message.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !looks_like_env_name(word) || seen.contains(&word) {
                continue;
            }
            seen.push(word);
            let on_host = std::env::var_os(word).is_some();
            let granted = env.iter().any(|name| name == word);
            match (&self.owner, granted, on_host) {
                (Owner::Plugin(plugin), false, true) => lines.push(format!(
                    "{} sees no environment variable `{word}`: plinth has it, but does not pass it; to pass it, {}",
                    self.owner,
                    self.advice.to_allow(plugin, &Missing::Env(word.to_owned()))
                )),
                (Owner::Plugin(_), true, false) => lines.push(format!(
                    "{} is granted the environment variable `{word}`, but it is not set in plinth's environment",
                    self.owner
                )),
                _ => {}
            }
        }
        lines
    }
}

/// Upper-case letters, digits and `_`, starting with a letter: how environment variables are
/// named by convention, and unlike the words of a sentence.
fn looks_like_env_name(word: &str) -> bool {
    word.len() > 1
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

impl Denial {
    /// The grant that would allow the attempt.
    fn needs(&self) -> Missing {
        match self {
            Denial::Socket {
                protocol,
                action,
                addr,
                name,
            } => {
                let pattern = match name {
                    Some(name) => format!("{name}:{}", addr.port()),
                    None => addr.to_string(),
                };
                let listens = matches!(action, SocketAction::Bind | SocketAction::Listen);
                match (protocol, listens) {
                    (Protocol::Tcp, false) => Missing::Tcp(pattern),
                    (Protocol::Udp, false) => Missing::Udp(pattern),
                    (Protocol::Tcp, true) => Missing::TcpListen(pattern),
                    (Protocol::Udp, true) => Missing::UdpListen(pattern),
                }
            }
            Denial::Lookup { name } => Missing::Lookup(name.clone()),
            Denial::Http { authority } => Missing::Http(authority.clone()),
            Denial::TlsInsecure { endpoint, .. } => Missing::TlsInsecure(endpoint.clone()),
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Plugin(name) => write!(f, "plugin `{name}`"),
            Owner::Program(name) => write!(f, "program `{name}`"),
            Owner::PolicyPack(name) => write!(f, "policy pack `{name}`"),
        }
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::Socket {
                protocol,
                action,
                addr,
                name,
            } => {
                let protocol = match protocol {
                    Protocol::Tcp => "TCP",
                    Protocol::Udp => "UDP",
                };
                match action {
                    SocketAction::Connect => write!(f, "{protocol} connect to {addr}")?,
                    SocketAction::Bind => write!(f, "{protocol} bind to {addr}")?,
                    SocketAction::Listen => write!(f, "{protocol} listen on {addr}")?,
                    SocketAction::Send => write!(f, "{protocol} send to {addr}")?,
                }
                if let Some(name) = name {
                    write!(f, " (an address of `{name}`)")?;
                }
                Ok(())
            }
            Denial::Lookup { name } => write!(f, "name lookup of `{name}`"),
            Denial::Http { authority } => write!(f, "HTTP request to {authority}"),
            Denial::TlsInsecure { endpoint, what } => {
                write!(
                    f,
                    "a TLS session to {endpoint} that verifies {what} of its certificate"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::advice::PlainAdvice;

    fn plugin() -> Denials {
        Denials::new(Owner::Plugin("reach".into()), Arc::new(PlainAdvice))
    }

    #[test]
    fn explains_each_refusal_with_the_grant_that_allows_it() {
        let denials = plugin();
        assert_eq!(denials.explain("boom", &[]), None);
        denials.refuse(Denial::Socket {
            protocol: Protocol::Tcp,
            action: SocketAction::Connect,
            addr: "10.1.2.3:80".parse().unwrap(),
            name: None,
        });
        denials.refuse(Denial::Http {
            authority: "evil.example".into(),
        });
        let note = denials.explain("boom", &[]).unwrap();
        assert_eq!(
            note,
            "plugin `reach` was denied TCP connect to 10.1.2.3:80; to allow it, grant plugin \
             `reach` TCP connections to 10.1.2.3:80\n\
             plugin `reach` was denied HTTP request to evil.example; to allow it, grant plugin \
             `reach` HTTP requests to evil.example"
        );
        denials.clear();
        assert_eq!(denials.explain("boom", &[]), None);
    }

    #[test]
    fn suggests_the_name_an_address_was_looked_up_as() {
        let denials = plugin();
        denials.refuse(Denial::Socket {
            protocol: Protocol::Udp,
            action: SocketAction::Send,
            addr: "127.0.0.1:9".parse().unwrap(),
            name: Some("localhost".into()),
        });
        let note = denials.explain("", &[]).unwrap();
        assert!(
            note.contains("UDP send to 127.0.0.1:9 (an address of `localhost`)"),
            "{note}"
        );
        assert!(note.contains("UDP datagrams with localhost:9"), "{note}");
    }

    #[test]
    fn repeated_refusals_are_remembered_once_and_within_bounds() {
        let denials = plugin();
        for port in 0..100 {
            denials.refuse(Denial::Lookup {
                name: format!("h{}", port % 20),
            });
        }
        let note = denials.explain("", &[]).unwrap();
        assert_eq!(note.lines().count(), MAX_REMEMBERED);
    }

    #[test]
    fn names_environment_variables_the_guest_missed_once_it_read_its_environment() {
        // PATH is set wherever tests run; the other name is set nowhere.
        let denials = plugin();
        let message = "PATH and PLINTH_TEST_SURELY_UNSET_4711 are not set; the path is empty";
        assert_eq!(
            denials.explain(message, &[]),
            None,
            "no environment read yet"
        );
        denials.env_read();
        let note = denials
            .explain(message, &["PLINTH_TEST_SURELY_UNSET_4711".into()])
            .unwrap();
        let lines: Vec<&str> = note.lines().collect();
        assert_eq!(lines.len(), 2, "{note}");
        assert!(
            lines[0].contains("grant plugin `reach` the environment variable PATH"),
            "{note}"
        );
        assert!(
            lines[1].contains("granted the environment variable `PLINTH_TEST_SURELY_UNSET_4711`, but it is not set"),
            "{note}"
        );
    }
}
