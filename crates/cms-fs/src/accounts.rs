use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use cms_core::CoreResult;
use cms_core::account::{KeyRecord, User};
use cms_core::ports::{KeyStore, UserStore};
use cms_core::state_rows::{self, KEYS_FILE, KeyRow, USERS_FILE, UserRow};

use crate::blocking;
use crate::state_file::{CachedRows, read_rows, write_rows};

/// Users in `.cms/users.yaml`, key hashes in `.cms/keys.yaml`. Every lookup checks the
/// file's stamp and reads it again when it changed, so that a key revoked by the CLI stops
/// working on the server's next request. Cheap to clone (clones share the write lock and
/// the rows last read).
#[derive(Debug, Clone)]
pub struct FsAccounts {
    files: Arc<Files>,
    /// Serializes this process's read-modify-write cycles. An async lock, because
    /// `remove_keys` holds it across an await; every write moves its guard into the
    /// blocking task, so the lock is held until the file is written even if the caller's
    /// future is dropped meanwhile.
    write_lock: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Debug)]
struct Files {
    users: CachedRows<UserRow>,
    keys: CachedRows<KeyRow>,
}

impl FsAccounts {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            files: Arc::new(Files {
                users: CachedRows::new(state_dir.join(USERS_FILE)),
                keys: CachedRows::new(state_dir.join(KEYS_FILE)),
            }),
            write_lock: Arc::default(),
        }
    }

    /// Runs `f` (a read-modify-write of the files) on the blocking pool under the write lock.
    async fn write_locked<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Files) -> CoreResult<T> + Send + 'static,
    ) -> CoreResult<T> {
        let guard = self.write_lock.clone().lock_owned().await;
        let files = self.files.clone();
        blocking::run(move || {
            let _guard = guard;
            f(&files)
        })
        .await
    }
}

impl Files {
    fn users_file(&self) -> String {
        self.users.path().display().to_string()
    }

    fn list_users(&self, rows: &[UserRow]) -> CoreResult<Vec<User>> {
        let file = self.users_file();
        rows.iter().map(|row| row.user(&file)).collect()
    }

    fn find_user_with_password(
        &self,
        rows: &[UserRow],
        email: &str,
    ) -> CoreResult<Option<(User, Option<String>)>> {
        match rows.iter().find(|r| r.email == email) {
            Some(row) => Ok(Some((row.user(&self.users_file())?, row.password.clone()))),
            None => Ok(None),
        }
    }

    fn put_user(&self, user: User) -> CoreResult<()> {
        let mut rows: Vec<UserRow> = read_rows(self.users.path())?;
        state_rows::put_user(&mut rows, user);
        write_rows(self.users.path(), &rows)
    }

    fn set_password_hash(&self, email: &str, hash: String) -> CoreResult<bool> {
        let mut rows: Vec<UserRow> = read_rows(self.users.path())?;
        if !state_rows::set_password_hash(&mut rows, email, hash) {
            return Ok(false);
        }
        write_rows(self.users.path(), &rows)?;
        Ok(true)
    }

    fn remove_user(&self, email: &str) -> CoreResult<bool> {
        let mut rows: Vec<UserRow> = read_rows(self.users.path())?;
        if !state_rows::remove_user(&mut rows, email) {
            return Ok(false);
        }
        write_rows(self.users.path(), &rows)?;
        Ok(true)
    }

    fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        Ok(self.keys.read()?.iter().cloned().map(KeyRecord::from).collect())
    }

    /// `answer` from the user rows: on the caller's thread while the rows kept are current
    /// (one `stat`, see [`CachedRows::kept_now`]), else after reading the file on the
    /// blocking pool. A signed-in request, and every request with a key, asks this.
    async fn with_users<A: Send + 'static>(
        self: &Arc<Self>,
        answer: impl FnOnce(&Files, &[UserRow]) -> CoreResult<A> + Send + 'static,
    ) -> CoreResult<A> {
        if let Some(rows) = self.users.kept_now() {
            return answer(self, &rows);
        }
        let files = Arc::clone(self);
        blocking::run(move || answer(&files, &files.users.read()?)).await
    }

    /// Like [`Self::with_users`], for the key rows.
    async fn with_keys<A: Send + 'static>(
        self: &Arc<Self>,
        answer: impl FnOnce(&[KeyRow]) -> A + Send + 'static,
    ) -> CoreResult<A> {
        if let Some(rows) = self.keys.kept_now() {
            return Ok(answer(&rows));
        }
        let files = Arc::clone(self);
        blocking::run(move || Ok(answer(&files.keys.read()?))).await
    }

    fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        let mut rows: Vec<KeyRow> = read_rows(self.keys.path())?;
        rows.push(KeyRow::from(key));
        write_rows(self.keys.path(), &rows)
    }
}

#[async_trait]
impl UserStore for FsAccounts {
    async fn list_users(&self) -> CoreResult<Vec<User>> {
        self.files.with_users(|files, rows| files.list_users(rows)).await
    }

    async fn find_user(&self, email: &str) -> CoreResult<Option<User>> {
        let email = email.to_owned();
        self.files
            .with_users(move |files, rows| {
                rows.iter()
                    .find(|row| row.email == email)
                    .map(|row| row.user(&files.users_file()))
                    .transpose()
            })
            .await
    }

    async fn put_user(&self, user: User) -> CoreResult<()> {
        self.write_locked(move |files| files.put_user(user)).await
    }

    async fn remove_user(&self, email: &str) -> CoreResult<bool> {
        let email = email.to_owned();
        self.write_locked(move |files| files.remove_user(&email)).await
    }

    /// One `stat` of `.cms/users.yaml` while it is unchanged: a signed-in request asks this
    /// every time.
    async fn find_user_with_password(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        let email = email.to_owned();
        self.files.with_users(move |files, rows| files.find_user_with_password(rows, &email)).await
    }

    async fn set_password_hash(&self, email: &str, hash: &str) -> CoreResult<bool> {
        let (email, hash) = (email.to_owned(), hash.to_owned());
        self.write_locked(move |files| files.set_password_hash(&email, hash)).await
    }
}

#[async_trait]
impl KeyStore for FsAccounts {
    async fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        self.files.with_keys(|rows| rows.iter().cloned().map(KeyRecord::from).collect()).await
    }

    /// One `stat` of `.cms/keys.yaml` while it is unchanged: every request with a key
    /// asks this.
    async fn find_key_by_hash(&self, hash: &str) -> CoreResult<Option<KeyRecord>> {
        let hash = hash.to_owned();
        self.files
            .with_keys(move |rows| rows.iter().find(|row| row.sha256 == hash).cloned().map(KeyRecord::from))
            .await
    }

    async fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        self.write_locked(move |files| files.add_key(key)).await
    }

    /// `doomed` borrows from the caller, so it cannot go to the blocking pool: the keys are
    /// read there, filtered here, and the kept ones written there, all under the write lock.
    async fn remove_keys(
        &self,
        doomed: &(dyn for<'k> Fn(&'k KeyRecord) -> bool + Send + Sync),
    ) -> CoreResult<usize> {
        let guard = self.write_lock.clone().lock_owned().await;
        let files = self.files.clone();
        let keys = blocking::run(move || files.list_keys()).await?;
        let before = keys.len();
        let kept: Vec<KeyRow> = keys.into_iter().filter(|k| !doomed(k)).map(KeyRow::from).collect();
        let removed = before - kept.len();
        if removed > 0 {
            let files = self.files.clone();
            blocking::run(move || {
                let _guard = guard;
                write_rows(files.keys.path(), &kept)
            })
            .await?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use futures_util::FutureExt;

    use super::*;

    /// Dates a state file back past the racy window, so that its rows may be kept.
    fn settle(path: &Path) {
        let past = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(path).unwrap().set_modified(past).unwrap();
    }

    fn key(id: &str, hash: &str) -> KeyRecord {
        KeyRecord {
            id: id.to_owned(),
            name: id.to_owned(),
            email: "ann@example.com".to_owned(),
            hash: hash.to_owned(),
            created: 0,
        }
    }

    #[test]
    fn kept_rows_answer_on_the_callers_thread_and_a_change_goes_to_the_blocking_pool() {
        let dir = tempfile::tempdir().unwrap();
        let accounts = FsAccounts::new(dir.path());
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let ann =
            User { email: "ann@example.com".to_owned(), role: cms_core::account::Role::Owner, created: 0 };
        runtime.block_on(accounts.put_user(ann.clone())).unwrap();
        runtime.block_on(accounts.add_key(key("k1", "hash-1"))).unwrap();
        settle(&dir.path().join(state_rows::USERS_FILE));
        settle(&dir.path().join(state_rows::KEYS_FILE));
        // The first lookups read the files (on the pool) and keep their rows.
        assert_eq!(runtime.block_on(accounts.find_key_by_hash("hash-1")).unwrap().unwrap().id, "k1");
        assert_eq!(runtime.block_on(accounts.find_user("ann@example.com")).unwrap(), Some(ann.clone()));

        // Outside any runtime, a hop to the blocking pool would panic: these answer at once.
        let found = accounts.find_key_by_hash("hash-1").now_or_never().expect("answered on this thread");
        assert_eq!(found.unwrap().unwrap().id, "k1");
        assert!(accounts.find_key_by_hash("hash-2").now_or_never().unwrap().unwrap().is_none());
        let user = accounts.find_user("ann@example.com").now_or_never().expect("answered on this thread");
        assert_eq!(user.unwrap(), Some(ann.clone()));
        let (_, password) =
            accounts.find_user_with_password("ann@example.com").now_or_never().unwrap().unwrap().unwrap();
        assert_eq!(password, None);
        assert_eq!(accounts.list_keys().now_or_never().unwrap().unwrap().len(), 1);

        // A key revoked by another process (the CLI) is gone on the next lookup, read again
        // on the pool; a missing file has no rows, also answered at once.
        write_rows::<KeyRow>(&dir.path().join(state_rows::KEYS_FILE), &[]).unwrap();
        assert!(runtime.block_on(accounts.find_key_by_hash("hash-1")).unwrap().is_none());
        std::fs::remove_file(dir.path().join(state_rows::KEYS_FILE)).unwrap();
        assert!(accounts.find_key_by_hash("hash-1").now_or_never().unwrap().unwrap().is_none());
    }
}
