//! Sign-in attempts slow down further tries, per account and per address.
//!
//! Each account (email) and each client address counts its recent attempts that did not
//! succeed. An attempt is counted when it starts, before the password is hashed, and an
//! account has at most one password check in flight: a burst of parallel posts cannot all
//! pass the check before the first failure is recorded. After a few free tries, every
//! further one locks the account or address for a while, doubling each time up to a cap;
//! while locked, sign-ins are refused before the password is even checked (so a locked
//! account costs no hashing). A success takes its own attempt off the account's count (not
//! the address's). Counts are forgotten after a quiet spell. Kept in memory, bounded.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cms_core::config::SigninConfig;

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
        Self::from(&SigninConfig::default())
    }
}

impl From<&SigninConfig> for ThrottlePolicy {
    fn from(config: &SigninConfig) -> Self {
        let max_lock = Duration::from_secs(config.max_lock_secs);
        Self {
            free_per_account: config.failures_per_account,
            free_per_address: config.failures_per_address,
            first_lock: Duration::from_secs(config.lock_secs),
            max_lock,
            forget_after: max_lock.max(Duration::from_secs(15 * 60)),
            max_entries: 10_000,
        }
    }
}

/// How long a sign-in waits for another check of the same account to end: it is refused
/// at once, with this as its `Retry-After`.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(1);

/// What a sign-in is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    Account(String),
    Address(String),
}

impl Subject {
    /// A client address: an IPv6 one by its /64, which one client usually holds whole
    /// (counting each address would let it rotate through them).
    pub fn address(ip: Option<std::net::IpAddr>) -> Self {
        let shown = match ip {
            Some(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                format!("{}/64", std::net::Ipv6Addr::from(prefix))
            }
            Some(std::net::IpAddr::V6(v6)) => {
                v6.to_ipv4_mapped().map(|v4| v4.to_string()).unwrap_or_default()
            }
            Some(v4) => v4.to_string(),
            None => String::new(),
        };
        Self::Address(shown)
    }
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last: Instant,
}

#[derive(Debug, Default)]
struct Counts {
    failures: HashMap<Subject, Failures>,
    /// Accounts whose password is being checked now.
    in_flight: HashSet<Subject>,
}

#[derive(Debug)]
pub struct Throttle {
    policy: ThrottlePolicy,
    counts: Mutex<Counts>,
    /// Sign-ins refused before their password was checked, since the start.
    refused: AtomicU64,
}

/// A sign-in allowed to check its password, already counted as a failure; dropping it
/// ends its account's check in flight. [`Attempt::succeeded`] takes the count back.
#[must_use = "the attempt holds its account's only check in flight until dropped"]
#[derive(Debug)]
pub struct Attempt<'a> {
    throttle: &'a Throttle,
    account: Subject,
    address: Subject,
}

impl Attempt<'_> {
    /// The password was right: the account's count is cleared, and this attempt is taken
    /// off the address's (only this one: a good password must not reset the count of
    /// guesses at other accounts, and people signing in from one office must not lock it).
    pub fn succeeded(self) {
        let mut counts = self.throttle.lock();
        counts.failures.remove(&self.account);
        if let Some(entry) = counts.failures.get_mut(&self.address) {
            entry.count = entry.count.saturating_sub(1);
        }
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.throttle.lock().in_flight.remove(&self.account);
    }
}

impl Throttle {
    pub fn new(policy: ThrottlePolicy) -> Self {
        Self { policy, counts: Mutex::default(), refused: AtomicU64::new(0) }
    }

    /// Starts a sign-in of `account` from `address`: `Err(wait)` while either is locked or
    /// another check of the account is in flight; otherwise the attempt is counted against
    /// both now, before any password is hashed.
    pub fn begin(&self, account: Subject, address: Subject, now: Instant) -> Result<Attempt<'_>, Duration> {
        let mut counts = self.lock();
        let subjects = [account.clone(), address.clone()];
        if let Some(wait) = self.locked_for(&counts, &subjects, now) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(wait);
        }
        if !counts.in_flight.insert(account.clone()) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(IN_FLIGHT_WAIT);
        }
        self.count(&mut counts, &subjects, now);
        Ok(Attempt { throttle: self, account, address })
    }

    /// For `/metrics`: sign-ins refused since the start, and the accounts and addresses
    /// locked now (a walk over the entries kept, at most `max_entries`).
    pub fn readings(&self, now: Instant) -> Vec<cms_core::readings::Reading> {
        use cms_core::readings::Reading;
        let counts = self.lock();
        let (mut accounts, mut addresses) = (0, 0);
        for (subject, entry) in &counts.failures {
            let locked = self.lock_for(subject, entry.count).is_some_and(|span| entry.last + span > now);
            match subject {
                Subject::Account(_) if locked => accounts += 1,
                Subject::Address(_) if locked => addresses += 1,
                _ => {}
            }
        }
        let refused = self.refused.load(Ordering::Relaxed) as f64;
        let locked = "Accounts and addresses locked out of signing in to the editor now";
        vec![
            Reading::counter(
                "signin_refused",
                "Editor sign-ins refused before their password was checked (locked, or another in flight)",
                refused,
            ),
            Reading::gauge("signin_locked", locked, f64::from(accounts)).with("subject", "account"),
            Reading::gauge("signin_locked", locked, f64::from(addresses)).with("subject", "address"),
        ]
    }

    /// `Err(wait)` while any of the subjects is locked.
    pub fn check(&self, subjects: &[Subject], now: Instant) -> Result<(), Duration> {
        match self.locked_for(&self.lock(), subjects, now) {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    fn locked_for(&self, counts: &Counts, subjects: &[Subject], now: Instant) -> Option<Duration> {
        subjects
            .iter()
            .filter_map(|subject| {
                let entry = counts.failures.get(subject)?;
                let until = entry.last + self.lock_for(subject, entry.count)?;
                (until > now).then(|| until - now)
            })
            .max()
    }

    /// Counts a failed sign-in against each subject.
    #[cfg(test)]
    fn failed(&self, subjects: &[Subject], now: Instant) {
        self.count(&mut self.lock(), subjects, now);
    }

    fn count(&self, counts: &mut Counts, subjects: &[Subject], now: Instant) {
        let failures = &mut counts.failures;
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

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
    fn readings_count_refusals_and_locked_subjects() {
        let t = throttle();
        let start = Instant::now();
        let address = || Subject::Address("192.0.2.1".into());
        for _ in 0..2 {
            drop(t.begin(Subject::Account("ann".into()), address(), start).unwrap());
        }
        assert!(t.begin(Subject::Account("ann".into()), address(), start).is_err(), "ann is locked");
        let value = |readings: &[cms_core::readings::Reading], name: &str, subject: Option<&str>| {
            readings
                .iter()
                .find(|r| r.name == name && subject.is_none_or(|s| r.labels.iter().any(|(_, v)| v == s)))
                .unwrap()
                .value
        };
        let now = t.readings(start);
        assert_eq!(value(&now, "signin_refused", None), 1.0);
        assert_eq!(value(&now, "signin_locked", Some("account")), 1.0);
        assert_eq!(value(&now, "signin_locked", Some("address")), 0.0, "two of its three free failures");
        let later = t.readings(start + Duration::from_secs(11));
        assert_eq!(value(&later, "signin_locked", Some("account")), 0.0, "the lock ended");
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
        t.begin(ann[0].clone(), Subject::Address("10.0.0.9".into()), start + Duration::from_secs(60))
            .unwrap()
            .succeeded();
        assert!(t.check(&ann, start + Duration::from_secs(60)).is_ok());
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

    #[test]
    fn attempts_count_before_the_check_and_one_account_has_one_check_in_flight() {
        let t = throttle();
        let now = Instant::now();
        let (ann, here) = (Subject::Account("ann".into()), Subject::Address("10.0.0.1".into()));
        let first = t.begin(ann.clone(), here.clone(), now).unwrap();
        assert_eq!(t.begin(ann.clone(), here.clone(), now).unwrap_err(), IN_FLIGHT_WAIT);
        t.begin(Subject::Account("bob".into()), here.clone(), now).expect("other accounts go on").succeeded();
        drop(first);
        // Counted already: the second attempt's start locks the account (2 free).
        drop(t.begin(ann.clone(), here.clone(), now).unwrap());
        assert_eq!(t.begin(ann.clone(), here.clone(), now).unwrap_err(), Duration::from_secs(10));
        // A success clears the account, and takes only itself off the address's count.
        let later = now + Duration::from_secs(10);
        t.begin(ann.clone(), here.clone(), later).unwrap().succeeded();
        assert!(t.check(std::slice::from_ref(&ann), later).is_ok());
        assert!(t.check(std::slice::from_ref(&here), later).is_ok(), "2 failures, 3 free");
        t.failed(std::slice::from_ref(&here), later);
        assert!(t.check(&[here], later).is_err(), "the failures still count");
    }

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let ip = |s: &str| Some(s.parse::<std::net::IpAddr>().unwrap());
        assert_eq!(
            Subject::address(ip("2001:db8:1:2:aaaa::1")),
            Subject::address(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(Subject::address(ip("2001:db8:1:2::1")), Subject::address(ip("2001:db8:1:3::1")));
        assert_eq!(Subject::address(ip("::ffff:10.0.0.1")), Subject::Address("10.0.0.1".into()));
        assert_eq!(Subject::address(ip("10.0.0.1")), Subject::Address("10.0.0.1".into()));
    }

    #[test]
    fn people_signing_in_from_one_address_never_lock_it() {
        let t = throttle();
        let now = Instant::now();
        let office = Subject::Address("10.0.0.1".into());
        for person in 0..50 {
            let attempt = t.begin(Subject::Account(format!("p{person}")), office.clone(), now);
            attempt.unwrap_or_else(|wait| panic!("person {person} waits {wait:?}")).succeeded();
        }
    }
}
