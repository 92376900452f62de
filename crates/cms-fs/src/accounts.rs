use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cms_core::account::{KeyRecord, Role, User};
use cms_core::ports::{KeyStore, UserStore};
use cms_core::{CoreError, CoreResult};
use serde::{Deserialize, Serialize};

use crate::state_file::{read_rows, write_rows};

/// Users in `.cms/users.yaml`, key hashes in `.cms/keys.yaml`. Both are re-read on every
/// lookup, so that a key revoked by the CLI stops working on the server's next request.
#[derive(Debug)]
pub struct FsAccounts {
    users_file: PathBuf,
    keys_file: PathBuf,
    /// Serializes this process's read-modify-write cycles.
    write_lock: Mutex<()>,
}

#[derive(Serialize, Deserialize)]
struct UserRow {
    email: String,
    role: String,
    created: i64,
}

#[derive(Serialize, Deserialize)]
struct KeyRow {
    id: String,
    name: String,
    email: String,
    sha256: String,
    created: i64,
}

impl FsAccounts {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            users_file: state_dir.join("users.yaml"),
            keys_file: state_dir.join("keys.yaml"),
            write_lock: Mutex::new(()),
        }
    }

    fn write_guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.write_lock.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl UserStore for FsAccounts {
    fn list_users(&self) -> CoreResult<Vec<User>> {
        read_rows::<UserRow>(&self.users_file)?
            .into_iter()
            .map(|row| {
                let role: Role = row.role.parse().map_err(|e: CoreError| {
                    CoreError::Corrupt(format!("{}: {e}", self.users_file.display()))
                })?;
                Ok(User { email: row.email, role, created: row.created })
            })
            .collect()
    }

    fn put_user(&self, user: User) -> CoreResult<()> {
        let _guard = self.write_guard();
        let mut rows: Vec<UserRow> = read_rows(&self.users_file)?;
        let row = UserRow { email: user.email, role: user.role.as_str().into(), created: user.created };
        match rows.iter_mut().find(|r| r.email == row.email) {
            Some(existing) => *existing = row,
            None => rows.push(row),
        }
        write_rows(&self.users_file, &rows)
    }

    fn remove_user(&self, email: &str) -> CoreResult<bool> {
        let _guard = self.write_guard();
        let mut rows: Vec<UserRow> = read_rows(&self.users_file)?;
        let before = rows.len();
        rows.retain(|r| r.email != email);
        if rows.len() == before {
            return Ok(false);
        }
        write_rows(&self.users_file, &rows)?;
        Ok(true)
    }
}

impl KeyStore for FsAccounts {
    fn list_keys(&self) -> CoreResult<Vec<KeyRecord>> {
        Ok(read_rows::<KeyRow>(&self.keys_file)?
            .into_iter()
            .map(|r| KeyRecord { id: r.id, name: r.name, email: r.email, hash: r.sha256, created: r.created })
            .collect())
    }

    fn add_key(&self, key: KeyRecord) -> CoreResult<()> {
        let _guard = self.write_guard();
        let mut rows: Vec<KeyRow> = read_rows(&self.keys_file)?;
        rows.push(KeyRow {
            id: key.id,
            name: key.name,
            email: key.email,
            sha256: key.hash,
            created: key.created,
        });
        write_rows(&self.keys_file, &rows)
    }

    fn remove_keys(&self, doomed: &dyn Fn(&KeyRecord) -> bool) -> CoreResult<usize> {
        let _guard = self.write_guard();
        let keys = self.list_keys()?;
        let before = keys.len();
        let kept: Vec<KeyRow> = keys
            .into_iter()
            .filter(|k| !doomed(k))
            .map(|k| KeyRow { id: k.id, name: k.name, email: k.email, sha256: k.hash, created: k.created })
            .collect();
        let removed = before - kept.len();
        if removed > 0 {
            write_rows(&self.keys_file, &kept)?;
        }
        Ok(removed)
    }
}
