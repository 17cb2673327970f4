/// Why a secret could not be sealed or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretsError {
    #[error("incorrect passphrase for stack `{0}`")]
    WrongPassphrase(String),
    #[error("cannot use the secrets of stack `{stack}`: {reason}")]
    Unavailable { stack: String, reason: String },
    #[error("the encryptionsalt of stack `{stack}` is malformed: {reason}")]
    MalformedSalt { stack: String, reason: String },
    #[error("a secret of stack `{stack}` is malformed: {reason}")]
    Malformed { stack: String, reason: String },
    #[error(
        "a secret of stack `{0}` cannot be decrypted: it was altered, or sealed under another passphrase"
    )]
    Undecryptable(String),
    #[error("a sealed secret in the state is malformed: {0}")]
    MalformedState(String),
    #[error("deriving the key of stack `{stack}`: {reason}")]
    KeyDerivation { stack: String, reason: String },
    #[error("cannot draw random bytes: {0}")]
    Random(String),
    /// The secrets of something other than a stack of this backend: an exported state sealed
    /// by another provider, say.
    #[error("cannot open the secrets of {what}: {reason}")]
    Foreign { what: String, reason: String },
    #[error("the secrets provider sealed {got} values when asked to seal {asked}")]
    Miscounted { asked: usize, got: usize },
    #[error("redacted secrets cannot be sealed again")]
    Redacted,
    /// A secret of a state document that could not be opened, and where it is.
    #[error("cannot open the secret {place}: {error}")]
    At {
        place: String,
        error: Box<SecretsError>,
    },
}
