//! What a provider asks to be granted beyond the bare sandbox: directories, environment
//! variables, network peers. The host refuses to load a provider whose project does not grant
//! all of it, and tells the user the lines to add to `Plinth.yaml`.

/// A directory the provider asks to see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRequest {
    /// Where the provider expects it: an absolute path such as `/data`.
    pub guest: String,
    /// The provider writes there; otherwise read-only access is enough.
    pub write: bool,
    /// Why the provider needs it, shown to the user who is asked to grant it.
    pub why: String,
}

/// The capabilities a provider asks for. Build them with the methods below:
///
/// ```
/// use plinth_sdk::Capabilities;
///
/// let asked = Capabilities::new()
///     .dir("/data", true, "the files this provider manages live there")
///     .env("API_TOKEN")
///     .http("api.example.com");
/// assert_eq!(asked.dirs[0].guest, "/data");
/// assert!(!asked.is_empty());
/// assert!(Capabilities::new().is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Directories, by the path the provider sees them at.
    pub dirs: Vec<DirRequest>,
    /// Names of environment variables the provider reads.
    pub env: Vec<String>,
    /// `host:port` patterns of the TCP connections the provider opens.
    pub tcp: Vec<String>,
    /// `host:port` patterns of the UDP peers the provider talks to.
    pub udp: Vec<String>,
    /// Authorities (`host` or `host:port`) of the outbound HTTP requests the provider sends.
    pub http: Vec<String>,
}

impl Capabilities {
    /// Asks for nothing.
    pub fn new() -> Capabilities {
        Capabilities::default()
    }

    /// Asks for the directory seen at `guest`, writable if `write`, for the reason `why`.
    pub fn dir(mut self, guest: impl Into<String>, write: bool, why: impl Into<String>) -> Self {
        self.dirs.push(DirRequest {
            guest: guest.into(),
            write,
            why: why.into(),
        });
        self
    }

    /// Asks for the environment variable `name`.
    pub fn env(mut self, name: impl Into<String>) -> Self {
        self.env.push(name.into());
        self
    }

    /// Asks to open TCP connections to `pattern` (`host:port`). A pattern may refer to the
    /// provider's configuration keys in braces, `{host}:{port}`: the host resolves it when the
    /// provider is configured (a key not set takes its schema default) and checks that the
    /// project grants exactly that endpoint. The same works for [`udp`](Self::udp) and
    /// [`http`](Self::http).
    pub fn tcp(mut self, pattern: impl Into<String>) -> Self {
        self.tcp.push(pattern.into());
        self
    }

    /// Asks to exchange UDP datagrams with `pattern` (`host:port`).
    pub fn udp(mut self, pattern: impl Into<String>) -> Self {
        self.udp.push(pattern.into());
        self
    }

    /// Asks to send HTTP requests to `authority` (`host` or `host:port`).
    pub fn http(mut self, authority: impl Into<String>) -> Self {
        self.http.push(authority.into());
        self
    }

    /// Whether nothing is asked for.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
            && self.env.is_empty()
            && self.tcp.is_empty()
            && self.udp.is_empty()
            && self.http.is_empty()
    }
}
