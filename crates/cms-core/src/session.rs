//! Web editor sessions: who signed in, until when, and the CSRF token of their forms.
//!
//! Kept in the server's memory (a restart signs everyone out). The token in the cookie is
//! never stored: only its SHA-256, as for API keys. A session stands only while its user
//! exists as it did at sign-in (same account, same password): [`Session::stands_for`] is
//! checked on every request against the user as stored now, so removing a user or changing
//! their password ends their sessions at once, even when the CLI does it.

use std::collections::HashMap;
use std::sync::Mutex;

use ring::digest;
use time::{Duration, OffsetDateTime};

use crate::account::{self, User};

/// Bytes of randomness in a session token and in a CSRF token.
pub const TOKEN_RANDOM_BYTES: usize = 32;

/// How long sessions last.
#[derive(Debug, Clone, Copy)]
pub struct SessionPolicy {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session ends this long after sign-in, used or not.
    pub absolute: Duration,
    /// Sessions kept at most (the oldest go first): memory stays bounded.
    pub max_sessions: usize,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        Self { idle: Duration::hours(2), absolute: Duration::hours(12), max_sessions: 10_000 }
    }
}

/// One signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub email: String,
    /// The account's `created` at sign-in: a user removed and added again is another account.
    pub user_created: i64,
    /// [`account::password_fingerprint`] of the password hash at sign-in.
    pub password: String,
    /// The token every state-changing form and request of this session must carry.
    pub csrf: String,
    pub started: OffsetDateTime,
    pub last_seen: OffsetDateTime,
}

impl Session {
    /// Whether the session still speaks for `user` (as stored now, with this password
    /// hash): same account, same password.
    pub fn stands_for(&self, user: &User, password_hash: Option<&str>) -> bool {
        user.email == self.email
            && user.created == self.user_created
            && password_hash.is_some()
            && account::password_fingerprint(password_hash) == self.password
    }

    /// When the session ends if it is not used before.
    pub fn expires(&self, policy: &SessionPolicy) -> OffsetDateTime {
        (self.last_seen + policy.idle).min(self.started + policy.absolute)
    }
}

/// A session just started: the token for the cookie, shown once.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub session: Session,
}

/// The sessions of one server.
#[derive(Debug, Default)]
pub struct Sessions {
    policy: SessionPolicy,
    by_token_hash: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn new(policy: SessionPolicy) -> Self {
        Self { policy, by_token_hash: Mutex::default() }
    }

    pub fn policy(&self) -> &SessionPolicy {
        &self.policy
    }

    /// Starts a session for `user`, whose password hash is `password_hash`. Randomness
    /// comes from the caller (the core draws none).
    pub fn start(
        &self,
        user: &User,
        password_hash: Option<&str>,
        token_random: [u8; TOKEN_RANDOM_BYTES],
        csrf_random: [u8; TOKEN_RANDOM_BYTES],
        now: OffsetDateTime,
    ) -> NewSession {
        let token = hex::encode(token_random);
        let session = Session {
            email: user.email.clone(),
            user_created: user.created,
            password: account::password_fingerprint(password_hash),
            csrf: hex::encode(csrf_random),
            started: now,
            last_seen: now,
        };
        let mut sessions = self.lock();
        sessions.retain(|_, s| s.expires(&self.policy) > now);
        while sessions.len() >= self.policy.max_sessions.max(1) {
            let oldest = sessions.iter().min_by_key(|(_, s)| s.last_seen).map(|(k, _)| k.clone());
            match oldest {
                Some(key) => sessions.remove(&key),
                None => break,
            };
        }
        sessions.insert(token_hash(&token), session.clone());
        NewSession { token, session }
    }

    /// The session a cookie's token names, if it has not expired; marks it used now. An
    /// expired session is forgotten.
    pub fn resume(&self, token: &str, now: OffsetDateTime) -> Option<Session> {
        let key = token_hash(token);
        let mut sessions = self.lock();
        let session = sessions.get_mut(&key)?;
        if session.expires(&self.policy) <= now {
            sessions.remove(&key);
            return None;
        }
        session.last_seen = now;
        Some(session.clone())
    }

    /// Ends one session (signing out). Returns whether there was one.
    pub fn end(&self, token: &str) -> bool {
        self.lock().remove(&token_hash(token)).is_some()
    }

    /// Ends every session of a user (removed, or their password changed).
    pub fn end_user(&self, email: &str) -> usize {
        let mut sessions = self.lock();
        let before = sessions.len();
        sessions.retain(|_, s| s.email != email);
        before - sessions.len()
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        // A panic while holding the lock cannot leave a half-changed map behind.
        self.by_token_hash.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn token_hash(token: &str) -> String {
    hex::encode(digest::digest(&digest::SHA256, token.as_bytes()))
}

/// Compares two secrets without an early exit at their first difference: their digests are
/// compared, so the time taken tells nothing about how much of a guess was right.
pub fn same_secret(a: &str, b: &str) -> bool {
    let digest = |text: &str| digest::digest(&digest::SHA256, text.as_bytes());
    digest(a).as_ref() == digest(b).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::Role;

    fn user() -> User {
        User { email: "ann@example.com".into(), role: Role::Editor, created: 100 }
    }

    fn at(seconds: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_767_225_600 + seconds).unwrap()
    }

    #[test]
    fn sessions_expire_when_idle_and_at_their_end() {
        let sessions = Sessions::new(SessionPolicy {
            idle: Duration::minutes(10),
            absolute: Duration::minutes(30),
            max_sessions: 10,
        });
        let new = sessions.start(&user(), Some("$argon2id$x"), [1; 32], [2; 32], at(0));
        assert_eq!(new.token.len(), 64);
        assert_ne!(new.token, new.session.csrf);
        assert!(sessions.resume(&new.token, at(9 * 60)).is_some());
        assert!(sessions.resume(&new.token, at(18 * 60)).is_some(), "use keeps it alive");
        assert!(sessions.resume(&new.token, at(27 * 60)).is_some());
        assert!(sessions.resume(&new.token, at(30 * 60)).is_none(), "absolute end");
        assert!(sessions.is_empty(), "an expired session is forgotten");

        let idle = sessions.start(&user(), Some("$argon2id$x"), [3; 32], [4; 32], at(0));
        assert!(sessions.resume(&idle.token, at(11 * 60)).is_none());
        assert!(sessions.resume("not a token", at(0)).is_none());
    }

    #[test]
    fn sessions_end_on_sign_out_and_for_a_user() {
        let sessions = Sessions::default();
        let a = sessions.start(&user(), Some("h"), [1; 32], [2; 32], at(0));
        let b = sessions.start(&user(), Some("h"), [3; 32], [4; 32], at(0));
        assert!(sessions.end(&a.token));
        assert!(!sessions.end(&a.token));
        assert!(sessions.resume(&b.token, at(1)).is_some());
        assert_eq!(sessions.end_user("ann@example.com"), 1);
        assert!(sessions.resume(&b.token, at(2)).is_none());
    }

    #[test]
    fn a_session_stands_only_for_the_same_account_and_password() {
        let sessions = Sessions::default();
        let new = sessions.start(&user(), Some("hash-1"), [1; 32], [2; 32], at(0));
        let session = new.session;
        assert!(session.stands_for(&user(), Some("hash-1")));
        assert!(!session.stands_for(&user(), Some("hash-2")), "password changed");
        assert!(!session.stands_for(&user(), None), "password removed");
        let again = User { created: 200, ..user() };
        assert!(!session.stands_for(&again, Some("hash-1")), "removed and added again");
        let promoted = User { role: Role::Owner, ..user() };
        assert!(session.stands_for(&promoted, Some("hash-1")), "a role change keeps the session");
    }

    #[test]
    fn the_oldest_sessions_go_when_full() {
        let sessions = Sessions::new(SessionPolicy { max_sessions: 2, ..SessionPolicy::default() });
        let first = sessions.start(&user(), Some("h"), [1; 32], [1; 32], at(0));
        let second = sessions.start(&user(), Some("h"), [2; 32], [2; 32], at(1));
        let third = sessions.start(&user(), Some("h"), [3; 32], [3; 32], at(2));
        assert_eq!(sessions.len(), 2);
        assert!(sessions.resume(&first.token, at(3)).is_none());
        assert!(sessions.resume(&second.token, at(3)).is_some());
        assert!(sessions.resume(&third.token, at(3)).is_some());
    }

    #[test]
    fn secrets_compare() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
