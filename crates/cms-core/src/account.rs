//! Users, roles and API keys. Only a SHA-256 hash of a key is ever stored.

use std::fmt;
use std::str::FromStr;

use ring::digest;

use crate::error::{CoreError, CoreResult};

/// Roles, lowest first, so that `>=` means "may do at least as much as".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    Editor,
    Admin,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Editor => "editor",
            Self::Admin => "admin",
            Self::Owner => "owner",
        }
    }
}

impl FromStr for Role {
    type Err = CoreError;

    fn from_str(s: &str) -> CoreResult<Self> {
        match s {
            "owner" => Ok(Self::Owner),
            "admin" => Ok(Self::Admin),
            "editor" => Ok(Self::Editor),
            other => Err(CoreError::invalid(format!("role must be owner, admin or editor, got {other:?}"))),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A user account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub email: String,
    pub role: Role,
    /// Unix seconds.
    pub created: i64,
}

/// Checks the shape of an email address (one `@`, something on each side, no spaces).
pub fn parse_email(raw: &str) -> CoreResult<String> {
    let email = raw.trim().to_ascii_lowercase();
    let valid = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@') && domain.contains('.')
        });
    if valid { Ok(email) } else { Err(CoreError::invalid(format!("{raw:?} is not an email address"))) }
}

/// A stored key: its hash and who it acts as, never the plaintext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Short public id, used to list and revoke.
    pub id: String,
    pub name: String,
    pub email: String,
    /// Lowercase hex SHA-256 of the plaintext key.
    pub hash: String,
    /// Unix seconds.
    pub created: i64,
}

pub const KEY_PREFIX: &str = "api_";
pub const AGENT_KEY_PREFIX: &str = "mcp_";
/// Bytes of randomness in a key (hex-encoded after the prefix).
pub const KEY_RANDOM_BYTES: usize = 32;

/// Which endpoint a key opens: the REST API (`api_`) or the AI-agent endpoint `/mcp`
/// (`mcp_`). The family is in the plaintext, so the stored hash of one family can never
/// match a key of the other; the id says it too, so that `cms keys list` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFamily {
    Api,
    Agent,
}

impl KeyFamily {
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Api => KEY_PREFIX,
            Self::Agent => AGENT_KEY_PREFIX,
        }
    }

    /// `key_...` for REST keys, `mcpkey_...` for agent keys.
    fn id_prefix(self) -> &'static str {
        match self {
            Self::Api => "key_",
            Self::Agent => "mcpkey_",
        }
    }

    /// The family of a stored key, from its id.
    pub fn of(record: &KeyRecord) -> Self {
        if record.id.starts_with(Self::Agent.id_prefix()) { Self::Agent } else { Self::Api }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Agent => "mcp",
        }
    }
}

/// A freshly made key: the plaintext to show once and the record to store.
pub struct NewKey {
    pub plaintext: String,
    pub record: KeyRecord,
}

impl NewKey {
    /// Builds a REST key from caller-supplied randomness (the core does no I/O, so it does
    /// not draw random bytes itself).
    pub fn from_random(random: [u8; KEY_RANDOM_BYTES], email: &str, name: &str, created: i64) -> Self {
        Self::of_family(KeyFamily::Api, random, email, name, created)
    }

    /// Builds a key of either family from caller-supplied randomness.
    pub fn of_family(
        family: KeyFamily,
        random: [u8; KEY_RANDOM_BYTES],
        email: &str,
        name: &str,
        created: i64,
    ) -> Self {
        let plaintext = format!("{}{}", family.prefix(), hex::encode(random));
        let hash = hash_key(&plaintext);
        let id = format!("{}{}", family.id_prefix(), &hash[..10]);
        Self {
            record: KeyRecord { id, name: name.to_owned(), email: email.to_owned(), hash, created },
            plaintext,
        }
    }
}

/// SHA-256 of a key's plaintext, lowercase hex.
pub fn hash_key(plaintext: &str) -> String {
    hex::encode(digest::digest(&digest::SHA256, plaintext.as_bytes()))
}

/// Sorts a presented key into its family before any lookup.
pub fn check_key_family(presented: &str) -> CoreResult<()> {
    if presented.starts_with(AGENT_KEY_PREFIX) {
        return Err(CoreError::Unauthorized(
            "mcp_ keys belong to the AI-agent endpoint and do not work on this API; use an api_ key".into(),
        ));
    }
    if !presented.starts_with(KEY_PREFIX) {
        return Err(CoreError::Unauthorized("invalid API key: keys for this API start with api_".into()));
    }
    Ok(())
}

/// Sorts a key presented to the AI-agent endpoint into its family before any lookup.
pub fn check_agent_key_family(presented: &str) -> CoreResult<()> {
    if presented.starts_with(KEY_PREFIX) {
        return Err(CoreError::Unauthorized(
            "api_ keys belong to the REST API and do not work on /mcp; use an mcp_ key \
             (cms keys create --user EMAIL --mcp)"
                .into(),
        ));
    }
    if !presented.starts_with(AGENT_KEY_PREFIX) {
        return Err(CoreError::Unauthorized("invalid key: keys for /mcp start with mcp_".into()));
    }
    Ok(())
}

// ---- passwords -----------------------------------------------------------------------

/// Bytes of salt in a password hash (supplied by the caller: the core draws no randomness).
pub const PASSWORD_SALT_BYTES: usize = 16;
/// Shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest password accepted, in bytes (hashing cost grows with the length).
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// A password's argon2id hash as a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$...`),
/// which carries its own parameters and salt. Never the password itself.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(String);

impl PasswordHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

/// The password rules: at least [`MIN_PASSWORD_CHARS`] characters, at most
/// [`MAX_PASSWORD_BYTES`] bytes, not only spaces.
pub fn check_password_rules(password: &str) -> CoreResult<()> {
    if password.chars().count() < MIN_PASSWORD_CHARS || password.trim().is_empty() {
        return Err(CoreError::invalid(format!("a password needs at least {MIN_PASSWORD_CHARS} characters")));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(CoreError::invalid(format!("a password may have at most {MAX_PASSWORD_BYTES} bytes")));
    }
    Ok(())
}

/// Hashes a password with argon2id (the OWASP parameters argon2's defaults are: 19 MiB,
/// two passes, one lane). Takes tens of milliseconds on purpose: callers on an async
/// worker run it on a blocking thread.
pub fn hash_password(password: &str, salt: [u8; PASSWORD_SALT_BYTES]) -> CoreResult<PasswordHash> {
    use argon2::password_hash::PasswordHasher;
    check_password_rules(password)?;
    argon2::Argon2::default()
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|hash| PasswordHash(hash.to_string()))
        .map_err(|e| CoreError::internal("hashing a password", e.to_string()))
}

/// Whether `password` matches a stored PHC string. `None` (no password set) runs the
/// same work against a decoy hash and says no, so that the answer takes as long whether or
/// not the account exists.
pub fn verify_password(stored: Option<&str>, password: &str) -> bool {
    use argon2::password_hash::PasswordVerifier;
    let candidate = if password.len() > MAX_PASSWORD_BYTES { "" } else { password };
    let verifies = |phc: &str| argon2::Argon2::default().verify_password(candidate.as_bytes(), phc).is_ok();
    match stored {
        Some(phc) => verifies(phc) && !candidate.is_empty(),
        None => {
            verifies(&DECOY_HASH);
            false
        }
    }
}

/// A hash no password is tested against for real (see [`verify_password`]).
static DECOY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    hash_password("decoy password, never matched", [0x5a; PASSWORD_SALT_BYTES])
        .map(|hash| hash.0)
        .unwrap_or_default()
});

/// A short fingerprint of a stored password hash: a session remembers it, so that
/// changing the password ends the sessions started with the old one.
pub fn password_fingerprint(stored: Option<&str>) -> String {
    match stored {
        Some(phc) => hex::encode(&digest::digest(&digest::SHA256, phc.as_bytes()).as_ref()[..8]),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Owner > Role::Admin && Role::Admin > Role::Editor);
        assert_eq!("admin".parse::<Role>().unwrap(), Role::Admin);
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn keys_hash_and_families() {
        let key = NewKey::from_random([7; 32], "a@b.co", "ci", 0);
        assert!(key.plaintext.starts_with("api_") && key.plaintext.len() == 4 + 64);
        assert_eq!(key.record.hash, hash_key(&key.plaintext));
        assert!(!key.record.hash.contains(&key.plaintext[4..]));
        assert!(check_key_family(&key.plaintext).is_ok());
        let mcp = check_key_family("mcp_abc").unwrap_err().to_string();
        assert!(mcp.contains("AI-agent"), "{mcp}");
        assert!(check_key_family("Basic xyz").is_err());
        assert_eq!(KeyFamily::of(&key.record), KeyFamily::Api);
    }

    #[test]
    fn agent_keys() {
        let key = NewKey::of_family(KeyFamily::Agent, [7; 32], "a@b.co", "agent", 0);
        assert!(key.plaintext.starts_with("mcp_") && key.plaintext.len() == 4 + 64);
        assert!(key.record.id.starts_with("mcpkey_"));
        assert_eq!(KeyFamily::of(&key.record), KeyFamily::Agent);
        assert!(check_agent_key_family(&key.plaintext).is_ok());
        let api = check_agent_key_family("api_abc").unwrap_err().to_string();
        assert!(api.contains("REST API"), "{api}");
        assert!(check_agent_key_family("xyz").is_err());
        assert!(check_key_family(&key.plaintext).is_err(), "an mcp_ key never opens the REST API");
    }

    #[test]
    fn passwords_hash_with_argon2id_and_verify() {
        let hash = hash_password("correct horse", [1; PASSWORD_SALT_BYTES]).unwrap();
        assert!(hash.as_str().starts_with("$argon2id$v=19$"), "{}", hash.as_str());
        assert!(!hash.as_str().contains("correct horse"));
        assert!(verify_password(Some(hash.as_str()), "correct horse"));
        assert!(!verify_password(Some(hash.as_str()), "correct horsE"));
        assert!(!verify_password(None, "correct horse"));
        assert!(!verify_password(Some("not a phc string"), "correct horse"));
        let other_salt = hash_password("correct horse", [2; PASSWORD_SALT_BYTES]).unwrap();
        assert_ne!(hash, other_salt);
        assert_ne!(
            password_fingerprint(Some(hash.as_str())),
            password_fingerprint(Some(other_salt.as_str()))
        );
        for bad in ["short", "        ", &"x".repeat(MAX_PASSWORD_BYTES + 1)] {
            assert!(hash_password(bad, [1; PASSWORD_SALT_BYTES]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn emails() {
        assert_eq!(parse_email(" Ann@Example.com ").unwrap(), "ann@example.com");
        for bad in ["", "ann", "@x.com", "a@", "a b@x.com", "a@b@c.com", "a@localhost"] {
            assert!(parse_email(bad).is_err(), "{bad}");
        }
    }
}
