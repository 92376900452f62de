//! Web editor sessions: who signed in, until when, and the CSRF token of their forms.
//!
//! Kept in the site's store through the [`SessionStore`] port (a file per session in the
//! folder's `.cms/sessions/`, an object per session in a bucket), so that a restart keeps
//! everyone signed in and every server of a bucket site knows every session. The token in
//! the cookie is never stored: a session is filed under its token's SHA-256, as API keys
//! are. A session stands only while its user exists as it did at sign-in (same account,
//! same password): [`Session::stands_for`] is checked on every request against the user
//! as stored now, so removing a user or changing their password ends their sessions at
//! once on every server, even when the CLI does it. Signing out removes the record, so the
//! cookie is refused at once by every server.
//!
//! Use is recorded at most once a [`TOUCH_EVERY`] (a conditional write, so that a request
//! that read the session before a sign-out cannot bring it back): the idle limit may end a
//! session up to that much early, never late.

use std::sync::Arc;

use ring::digest;
use time::{Duration, OffsetDateTime};

use crate::account::{self, User};
use crate::error::CoreResult;
use crate::ports::SessionStore;

/// Bytes of randomness in a session token and in a CSRF token.
pub const TOKEN_RANDOM_BYTES: usize = 32;

/// How often a session in use has its last use written to the store.
pub const TOUCH_EVERY: Duration = Duration::minutes(1);

/// How long sessions last.
#[derive(Debug, Clone, Copy)]
pub struct SessionPolicy {
    /// A session unused this long ends.
    pub idle: Duration,
    /// A session ends this long after sign-in, used or not.
    pub absolute: Duration,
    /// Sessions kept at most (the least recently used go first): the store stays bounded.
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

    /// The record's text in the store (JSON; times as Unix seconds).
    fn encode(&self) -> String {
        serde_json::json!({
            "email": self.email,
            "user_created": self.user_created,
            "password": self.password,
            "csrf": self.csrf,
            "started": self.started.unix_timestamp(),
            "last_seen": self.last_seen.unix_timestamp(),
        })
        .to_string()
    }

    /// A record read back; `None` when it is damaged (it then names no session).
    fn decode(text: &str) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct Record {
            email: String,
            user_created: i64,
            password: String,
            csrf: String,
            started: i64,
            last_seen: i64,
        }
        let record: Record = serde_json::from_str(text).ok()?;
        Some(Self {
            email: record.email,
            user_created: record.user_created,
            password: record.password,
            csrf: record.csrf,
            started: OffsetDateTime::from_unix_timestamp(record.started).ok()?,
            last_seen: OffsetDateTime::from_unix_timestamp(record.last_seen).ok()?,
        })
    }
}

/// A session just started: the token for the cookie, shown once.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub session: Session,
}

/// The sessions of a site, in its store (shared by every server of the site).
#[derive(Clone)]
pub struct Sessions {
    policy: SessionPolicy,
    store: Arc<dyn SessionStore>,
}

impl Sessions {
    pub fn new(policy: SessionPolicy, store: Arc<dyn SessionStore>) -> Self {
        Self { policy, store }
    }

    pub fn policy(&self) -> &SessionPolicy {
        &self.policy
    }

    /// Starts a session for `user`, whose password hash is `password_hash`. Randomness
    /// comes from the caller (the core draws none). Sessions unused past the idle limit
    /// are removed on the way, and the least recently used ones while there are
    /// `max_sessions`.
    pub async fn start(
        &self,
        user: &User,
        password_hash: Option<&str>,
        token_random: [u8; TOKEN_RANDOM_BYTES],
        csrf_random: [u8; TOKEN_RANDOM_BYTES],
        now: OffsetDateTime,
    ) -> CoreResult<NewSession> {
        let token = hex::encode(token_random);
        let session = Session {
            email: user.email.clone(),
            user_created: user.created,
            password: account::password_fingerprint(password_hash),
            csrf: hex::encode(csrf_random),
            started: now,
            last_seen: now,
        };
        self.make_room(now).await?;
        self.store.put(&token_hash(&token), &session.encode()).await?;
        Ok(NewSession { token, session })
    }

    /// Removes the sessions surely past their idle limit (their record was last written
    /// longer ago than the limit plus [`TOUCH_EVERY`]), then the least recently written
    /// while the store holds `max_sessions`.
    async fn make_room(&self, now: OffsetDateTime) -> CoreResult<()> {
        let mut records = self.store.list().await?;
        let stale_before = (now - self.policy.idle - TOUCH_EVERY).unix_timestamp();
        let (stale, mut live): (Vec<_>, Vec<_>) =
            records.drain(..).partition(|(_, written)| *written < stale_before);
        let max = self.policy.max_sessions.max(1);
        let over = (live.len() + 1).saturating_sub(max);
        live.sort_by_key(|(_, written)| *written);
        for (key, _) in stale.iter().chain(live.iter().take(over)) {
            self.store.remove(key).await?;
        }
        Ok(())
    }

    /// The session a cookie's token names, if it has not expired; its use is recorded
    /// (at most once a [`TOUCH_EVERY`]). An expired or damaged session is removed.
    pub async fn resume(&self, token: &str, now: OffsetDateTime) -> CoreResult<Option<Session>> {
        if !is_token(token) {
            return Ok(None);
        }
        let key = token_hash(token);
        let Some(stored) = self.store.get(&key).await? else { return Ok(None) };
        let Some(mut session) = Session::decode(&stored.text) else {
            self.store.remove(&key).await?;
            return Ok(None);
        };
        if session.expires(&self.policy) <= now {
            self.store.remove(&key).await?;
            return Ok(None);
        }
        if now - session.last_seen >= TOUCH_EVERY {
            session.last_seen = now;
            // Refused when the record changed since it was read: signed out in between (or
            // touched by another request, which did the same).
            if !self.store.replace(&key, &session.encode(), &stored.version).await? {
                return Ok(self.store.get(&key).await?.and_then(|again| Session::decode(&again.text)));
            }
        }
        Ok(Some(session))
    }

    /// Ends one session (signing out), on every server at once.
    pub async fn end(&self, token: &str) -> CoreResult<()> {
        if is_token(token) {
            self.store.remove(&token_hash(token)).await?;
        }
        Ok(())
    }
}

/// A session token as the editor makes them: 64 hex digits. Anything else names none.
fn is_token(token: &str) -> bool {
    token.len() == 2 * TOKEN_RANDOM_BYTES && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The name a session is filed under: the SHA-256 of its token, hex.
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
    use crate::testing::MemorySessionStore;

    fn user() -> User {
        User { email: "ann@example.com".into(), role: Role::Editor, created: 100 }
    }

    fn at(seconds: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_767_225_600 + seconds).unwrap()
    }

    fn sessions(policy: SessionPolicy) -> (Sessions, Arc<MemorySessionStore>) {
        let store = Arc::new(MemorySessionStore::default());
        (Sessions::new(policy, store.clone()), store)
    }

    #[tokio::test]
    async fn sessions_expire_when_idle_and_at_their_end() {
        let (sessions, store) = sessions(SessionPolicy {
            idle: Duration::minutes(10),
            absolute: Duration::minutes(30),
            max_sessions: 10,
        });
        let new = sessions.start(&user(), Some("$argon2id$x"), [1; 32], [2; 32], at(0)).await.unwrap();
        assert_eq!(new.token.len(), 64);
        assert_ne!(new.token, new.session.csrf);
        let resume = |token: String, seconds| {
            let sessions = sessions.clone();
            async move { sessions.resume(&token, at(seconds)).await.unwrap() }
        };
        assert!(resume(new.token.clone(), 9 * 60).await.is_some());
        assert!(resume(new.token.clone(), 18 * 60).await.is_some(), "use keeps it alive");
        assert!(resume(new.token.clone(), 27 * 60).await.is_some());
        assert!(resume(new.token.clone(), 30 * 60).await.is_none(), "absolute end");
        assert!(store.is_empty(), "an expired session is removed");

        let idle = sessions.start(&user(), Some("$argon2id$x"), [3; 32], [4; 32], at(0)).await.unwrap();
        assert!(resume(idle.token.clone(), 11 * 60).await.is_none());
        assert!(resume("not a token".into(), 0).await.is_none());
    }

    #[tokio::test]
    async fn a_session_is_kept_in_the_store_only_under_its_tokens_hash() {
        let (sessions, store) = sessions(SessionPolicy::default());
        let new = sessions.start(&user(), Some("h"), [1; 32], [2; 32], at(0)).await.unwrap();
        let texts = store.texts();
        assert_eq!(texts.len(), 1);
        let (key, text) = &texts[0];
        assert_eq!(key, &token_hash(&new.token));
        assert!(!key.contains(&new.token) && !text.contains(&new.token), "never in clear");
        // Another server (or this one after a restart) over the same store knows it.
        let other = Sessions::new(SessionPolicy::default(), store.clone());
        assert_eq!(other.resume(&new.token, at(1)).await.unwrap(), Some(new.session));
    }

    #[tokio::test]
    async fn sessions_end_on_sign_out_everywhere() {
        let (sessions, store) = sessions(SessionPolicy::default());
        let a = sessions.start(&user(), Some("h"), [1; 32], [2; 32], at(0)).await.unwrap();
        let b = sessions.start(&user(), Some("h"), [3; 32], [4; 32], at(0)).await.unwrap();
        let other = Sessions::new(SessionPolicy::default(), store);
        other.end(&a.token).await.unwrap();
        assert!(sessions.resume(&a.token, at(1)).await.unwrap().is_none());
        assert!(sessions.resume(&b.token, at(1)).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_use_read_before_a_sign_out_does_not_bring_the_session_back() {
        let (sessions, store) = sessions(SessionPolicy::default());
        let new = sessions.start(&user(), Some("h"), [1; 32], [2; 32], at(0)).await.unwrap();
        let key = token_hash(&new.token);
        let read = store.get(&key).await.unwrap().unwrap();
        sessions.end(&new.token).await.unwrap();
        assert!(!store.replace(&key, &read.text, &read.version).await.unwrap());
        assert!(sessions.resume(&new.token, at(120)).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn use_is_written_at_most_once_a_minute() {
        let (sessions, store) = sessions(SessionPolicy::default());
        let new = sessions.start(&user(), Some("h"), [1; 32], [2; 32], at(0)).await.unwrap();
        let written = |store: &MemorySessionStore| Session::decode(&store.texts()[0].1).unwrap().last_seen;
        sessions.resume(&new.token, at(30)).await.unwrap().unwrap();
        assert_eq!(written(&store), at(0));
        sessions.resume(&new.token, at(61)).await.unwrap().unwrap();
        assert_eq!(written(&store), at(61));
    }

    #[test]
    fn a_session_stands_only_for_the_same_account_and_password() {
        let session = Session {
            email: "ann@example.com".into(),
            user_created: 100,
            password: account::password_fingerprint(Some("hash-1")),
            csrf: "c".into(),
            started: at(0),
            last_seen: at(0),
        };
        assert_eq!(Session::decode(&session.encode()), Some(session.clone()));
        assert_eq!(Session::decode("{damaged"), None);
        assert!(session.stands_for(&user(), Some("hash-1")));
        assert!(!session.stands_for(&user(), Some("hash-2")), "password changed");
        assert!(!session.stands_for(&user(), None), "password removed");
        let again = User { created: 200, ..user() };
        assert!(!session.stands_for(&again, Some("hash-1")), "removed and added again");
        let promoted = User { role: Role::Owner, ..user() };
        assert!(session.stands_for(&promoted, Some("hash-1")), "a role change keeps the session");
    }

    #[tokio::test]
    async fn the_least_recently_used_sessions_go_when_full() {
        let (sessions, store) = sessions(SessionPolicy { max_sessions: 2, ..SessionPolicy::default() });
        let first = sessions.start(&user(), Some("h"), [1; 32], [1; 32], at(0)).await.unwrap();
        store.advance(1);
        let second = sessions.start(&user(), Some("h"), [2; 32], [2; 32], at(1)).await.unwrap();
        store.advance(1);
        let third = sessions.start(&user(), Some("h"), [3; 32], [3; 32], at(2)).await.unwrap();
        assert_eq!(store.texts().len(), 2);
        assert!(sessions.resume(&first.token, at(3)).await.unwrap().is_none());
        assert!(sessions.resume(&second.token, at(3)).await.unwrap().is_some());
        assert!(sessions.resume(&third.token, at(3)).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn sessions_idle_past_the_limit_are_removed_at_the_next_sign_in() {
        let (sessions, store) = sessions(SessionPolicy::default());
        sessions.start(&user(), Some("h"), [1; 32], [1; 32], at(0)).await.unwrap();
        store.advance(3 * 3600);
        sessions.start(&user(), Some("h"), [2; 32], [2; 32], at(3 * 3600)).await.unwrap();
        assert_eq!(store.texts().len(), 1);
    }

    #[test]
    fn secrets_compare() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
    }
}
