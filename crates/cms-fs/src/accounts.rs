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
    fn list_users(&self) -> CoreResult<Vec<User>> {
        let file = self.users.path().display().to_string();
        self.users.read()?.iter().map(|row| row.user(&file)).collect()
    }

    fn find_user_with_password(&self, email: &str) -> CoreResult<Option<(User, Option<String>)>> {
        let rows = self.users.read()?;
        match rows.iter().find(|r| r.email == email) {
            Some(row) => {
                Ok(Some((row.user(&self.users.path().display().to_string())?, row.password.clone())))
            }
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

    fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        let mut rows: Vec<KeyRow> = read_rows(self.keys.path())?;
        rows.push(KeyRow::from(key));
        write_rows(self.keys.path(), &rows)
    }
}

#[async_trait]
impl UserStore for FsAccounts {
    async fn list_users(&self) -> CoreResult<Vec<User>> {
        let files = self.files.clone();
        blocking::run(move || files.list_users()).await
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
        let (files, email) = (self.files.clone(), email.to_owned());
        blocking::run(move || files.find_user_with_password(&email)).await
    }

    async fn set_password_hash(&self, email: &str, hash: &str) -> CoreResult<bool> {
        let (email, hash) = (email.to_owned(), hash.to_owned());
        self.write_locked(move |files| files.set_password_hash(&email, hash)).await
    }
}

#[async_trait]
impl KeyStore for FsAccounts {
    async fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        let files = self.files.clone();
        blocking::run(move || files.list_keys()).await
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
