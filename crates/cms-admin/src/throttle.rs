//! Failed sign-ins slow down further tries, per account and per address.
//!
//! Each account (email) and each client address counts its recent failures. After a few
//! free tries, every further failure locks the account or address for a while, doubling
//! each time up to a cap; while locked, sign-ins are refused before the password is even
//! checked (so a locked account costs no hashing). Counts are forgotten after a quiet
//! spell. Kept in memory, bounded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct ThrottlePolicy {
    /// Failures an account may have before it is locked.
    pub free_per_account: u32,
    /// Failures an address may have before it is locked (higher: an office shares one).
    pub free_per_address: u32,
    /// The first lock; each further failure doubles it.
    pub first_lock: Duration,
    pub max_lock: Duration,
    /// Counts with no failure for this long are forgotten.
    pub forget_after: Duration,
    /// Accounts and addresses tracked at most.
    pub max_entries: usize,
}

impl Default for ThrottlePolicy {
    fn default() -> Self {
        Self {
            free_per_account: 5,
            free_per_address: 20,
            first_lock: Duration::from_secs(30),
            max_lock: Duration::from_secs(15 * 60),
            forget_after: Duration::from_secs(15 * 60),
            max_entries: 10_000,
        }
    }
}

/// What a sign-in is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    Account(String),
    Address(String),
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

#[derive(Debug)]
pub struct Throttle {
    policy: ThrottlePolicy,
    failures: Mutex<HashMap<Subject, Failures>>,
}

impl Throttle {
    pub fn new(policy: ThrottlePolicy) -> Self {
        Self { policy, failures: Mutex::default() }
    }

    /// `Err(wait)` while any of the subjects is locked.
    pub fn check(&self, subjects: &[Subject], now: Instant) -> Result<(), Duration> {
        let failures = self.lock();
        let wait = subjects
            .iter()
            .filter_map(|subject| {
                let entry = failures.get(subject)?;
                let until = entry.last + self.lock_for(subject, entry.count)?;
                (until > now).then(|| until - now)
            })
            .max();
        match wait {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    /// Counts a failed sign-in against each subject.
    pub fn failed(&self, subjects: &[Subject], now: Instant) {
        let mut failures = self.lock();
        failures.retain(|_, f| now.duration_since(f.last) < self.policy.forget_after);
        for subject in subjects {
            if failures.len() >= self.policy.max_entries && !failures.contains_key(subject) {
                let oldest = failures.iter().min_by_key(|(_, f)| f.last).map(|(s, _)| s.clone());
                if let Some(oldest) = oldest {
                    failures.remove(&oldest);
                }
            }
            let entry = failures.entry(subject.clone()).or_insert(Failures { count: 0, last: now });
            if now.duration_since(entry.last) >= self.policy.forget_after {
                entry.count = 0;
            }
            entry.count += 1;
            entry.last = now;
        }
    }

    /// A successful sign-in clears its account's count (not its address's: one good
    /// password must not reset the count of guesses at other accounts).
    pub fn succeeded(&self, account: &Subject) {
        self.lock().remove(account);
    }

    /// How long a subject with `count` failures is locked after its last one.
    fn lock_for(&self, subject: &Subject, count: u32) -> Option<Duration> {
        let free = match subject {
            Subject::Account(_) => self.policy.free_per_account,
            Subject::Address(_) => self.policy.free_per_address,
        };
        let over = count.checked_sub(free)?;
        let lock = self.policy.first_lock.saturating_mul(2u32.saturating_pow(over.min(16)));
        Some(lock.min(self.policy.max_lock))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Subject, Failures>> {
        self.failures.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle() -> Throttle {
        Throttle::new(ThrottlePolicy {
            free_per_account: 2,
            free_per_address: 3,
            first_lock: Duration::from_secs(10),
            max_lock: Duration::from_secs(40),
            forget_after: Duration::from_secs(100),
            max_entries: 100,
        })
    }

    #[test]
    fn an_account_is_locked_after_its_free_failures_and_longer_each_time() {
        let t = throttle();
        let start = Instant::now();
        let ann = [Subject::Account("ann".into())];
        t.failed(&ann, start);
        assert!(t.check(&ann, start).is_ok(), "one failure is free");
        t.failed(&ann, start);
        assert_eq!(t.check(&ann, start), Err(Duration::from_secs(10)));
        assert!(t.check(&ann, start + Duration::from_secs(10)).is_ok());
        t.failed(&ann, start + Duration::from_secs(10));
        assert_eq!(t.check(&ann, start + Duration::from_secs(10)), Err(Duration::from_secs(20)));
        for _ in 0..5 {
            t.failed(&ann, start + Duration::from_secs(10));
        }
        assert_eq!(t.check(&ann, start + Duration::from_secs(10)), Err(Duration::from_secs(40)), "capped");
        assert!(t.check(&[Subject::Account("bob".into())], start).is_ok(), "other accounts are not locked");
        t.succeeded(&ann[0]);
        assert!(t.check(&ann, start + Duration::from_secs(10)).is_ok());
    }

    #[test]
    fn an_address_is_locked_across_accounts_and_counts_are_forgotten() {
        let t = throttle();
        let start = Instant::now();
        let address = Subject::Address("10.0.0.1".into());
        for name in ["a", "b", "c"] {
            t.failed(&[Subject::Account(name.into()), address.clone()], start);
        }
        assert!(t.check(&[Subject::Account("d".into()), address.clone()], start).is_err());
        let later = start + Duration::from_secs(100);
        t.failed(std::slice::from_ref(&address), later);
        assert!(t.check(&[address], later).is_ok(), "the old failures were forgotten");
    }
}
