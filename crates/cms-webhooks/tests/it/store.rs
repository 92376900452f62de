use std::fs;
use std::os::unix::fs::PermissionsExt;

use cms_core::CoreError;
use cms_core::events::EventKind;
use cms_core::ports::WebhookDirectory;
use cms_webhooks::{LOG_KEEP, LogEntry};
use time::OffsetDateTime;

use crate::Fixture;

#[tokio::test]
async fn subscriptions_are_added_listed_toggled_and_removed() {
    let f = Fixture::new();
    let a = f.add("https://a.example.com/hook", "file.created,user.created");
    let b = f.add("https://b.example.com/hook", "file.deleted");
    assert_eq!(f.store.list().unwrap(), [a.clone(), b.clone()]);

    let listed = f.store.list_webhooks().await.unwrap();
    assert_eq!(listed.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(), [&a.id, &b.id]);
    assert_eq!(listed[0].events, [EventKind::FileCreated, EventKind::UserCreated]);
    assert_eq!(listed[0].created_at.unix_timestamp(), a.created_at.unix_timestamp());

    assert!(!f.store.set_enabled(&a.id, false).unwrap().enabled);
    assert!(!f.store.list().unwrap()[0].enabled);
    assert!(f.store.set_enabled(&a.id, true).unwrap().enabled);
    assert_eq!(f.store.remove(&a.id).unwrap().id, a.id);
    assert_eq!(f.store.list().unwrap(), [b]);
    for result in [f.store.remove(&a.id).map(drop), f.store.set_enabled("wh_nope", true).map(drop)] {
        assert!(matches!(result, Err(CoreError::NotFound(_))), "{result:?}");
    }

    let file = f.dir.path().join(".cms/webhooks.yaml");
    assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "the secrets stay private");
}

#[test]
fn refused_subscriptions_write_nothing() {
    let f = Fixture::new();
    for (url, events) in [
        ("http://a.example.com/hook", "file.created"),
        ("https://a.example.com/hook", "file.created,file.renamed"),
        ("https://a.example.com/hook", ""),
        ("not a url", "file.created"),
    ] {
        assert!(matches!(f.store.add(url, events), Err(CoreError::Invalid(_))), "{url} {events}");
    }
    assert!(!f.dir.path().join(".cms/webhooks.yaml").exists());
}

/// The editor's form and `cms webhooks add` both add through the store: unless the site
/// allows private addresses, an internal literal is refused there, naming the setting.
#[tokio::test]
async fn a_store_refuses_internal_receivers_unless_the_site_allows_them() {
    let f = Fixture::new();
    let strict = crate::folder_store(&f.dir.path().join(".cms"));
    for url in [
        "https://127.0.0.1:8443/hook",
        "https://2130706433/hook",
        "https://[::1]/hook",
        "https://localhost/hook",
    ] {
        let refused = strict.add_webhook(url, "file.created").await.unwrap_err();
        assert!(matches!(refused, CoreError::Invalid(_)), "{url}: {refused:?}");
        let message = refused.to_string();
        assert!(message.contains("webhooks.allow_private_addresses"), "{message}");
    }
    assert!(!f.dir.path().join(".cms/webhooks.yaml").exists(), "nothing was written");
    strict.add("https://hooks.example.com/hook", "file.created").unwrap();
    let allowing = strict.allowing_private_addresses(true);
    allowing.add("https://127.0.0.1:8443/hook", "file.created").unwrap();
    assert_eq!(f.store.list().unwrap().len(), 2);
}

#[test]
fn a_hand_edited_subscription_file_with_an_unknown_event_is_reported_with_its_path() {
    let f = Fixture::new();
    fs::create_dir_all(f.dir.path().join(".cms")).unwrap();
    fs::write(
        f.dir.path().join(".cms/webhooks.yaml"),
        "- id: wh_1\n  url: https://e.com\n  events: [file.moved]\n  enabled: true\n  secret: s\n  created_at: 2026-01-01T00:00:00Z\n",
    )
    .unwrap();
    let message = f.store.list().unwrap_err().to_string();
    assert!(message.contains("webhooks.yaml") && message.contains("file.moved"), "{message}");
}

fn entry(n: usize) -> LogEntry {
    LogEntry {
        time: OffsetDateTime::from_unix_timestamp(1_767_225_600 + n as i64).unwrap(),
        delivery: format!("d{n}"),
        webhook: "wh_1".into(),
        event: EventKind::FileCreated,
        url: "https://e.com/".into(),
        status: Some(200),
        success: true,
        error: None,
        duration_ms: Some(3),
        attempt: 1,
        body: None,
    }
}

#[test]
fn the_log_keeps_the_newest_entries_and_can_be_cleared() {
    let f = Fixture::new();
    assert!(f.store.log().unwrap().is_empty());
    let first: Vec<LogEntry> = (0..150).map(entry).collect();
    f.store.append_log(&first).unwrap();
    let more: Vec<LogEntry> = (150..260).map(entry).collect();
    f.store.append_log(&more).unwrap();
    let log = f.store.log().unwrap();
    assert_eq!(log.len(), LOG_KEEP);
    assert_eq!((log[0].delivery.as_str(), log[LOG_KEEP - 1].delivery.as_str()), ("d60", "d259"));
    assert_eq!(log[5], entry(65), "entries round-trip");

    assert_eq!(f.store.clear_log().unwrap(), LOG_KEEP);
    assert!(f.store.log().unwrap().is_empty());
    assert_eq!(f.store.clear_log().unwrap(), 0);
}

#[test]
fn a_damaged_log_is_replaced_on_the_next_append() {
    let f = Fixture::new();
    fs::create_dir_all(f.dir.path().join(".cms")).unwrap();
    fs::write(f.dir.path().join(".cms/webhook-log.yaml"), "- [not: a log").unwrap();
    assert!(matches!(f.store.log(), Err(CoreError::Corrupt(_))));
    f.store.append_log(&[entry(1)]).unwrap();
    assert_eq!(f.store.log().unwrap(), [entry(1)]);
}

#[test]
fn concurrent_appends_from_many_threads_lose_nothing() {
    let f = Fixture::new();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let store = &f.store;
            scope.spawn(move || {
                for n in 0..10 {
                    store.append_log(&[entry(t * 10 + n)]).unwrap();
                }
            });
        }
    });
    assert_eq!(f.store.log().unwrap().len(), 80);
}

/// State files somewhere else (a bucket several servers share), in memory: `update`
/// behaves like a conditional write that loses once to another writer, and every call
/// notes the thread it ran on.
#[derive(Default)]
struct SharedFiles {
    texts: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Written by "another server" just before the next update's write.
    interloper: std::sync::Mutex<Option<String>>,
    threads: std::sync::Mutex<Vec<Option<String>>>,
}

impl cms_core::ports::StateDocuments for SharedFiles {
    fn read(&self, name: &str) -> cms_core::CoreResult<Option<String>> {
        self.threads.lock().unwrap().push(std::thread::current().name().map(str::to_owned));
        Ok(self.texts.lock().unwrap().get(name).cloned())
    }

    fn update(&self, name: &str, mut change: cms_core::ports::TextChange) -> cms_core::CoreResult<()> {
        self.threads.lock().unwrap().push(std::thread::current().name().map(str::to_owned));
        loop {
            let read = self.texts.lock().unwrap().get(name).cloned();
            let new = change(read.as_deref())?;
            if let Some(other) = self.interloper.lock().unwrap().take() {
                self.texts.lock().unwrap().insert(name.to_owned(), other);
                continue;
            }
            if let Some(new) = new {
                self.texts.lock().unwrap().insert(name.to_owned(), new);
            }
            return Ok(());
        }
    }

    fn describe(&self, name: &str) -> String {
        format!("memory:{name}")
    }
}

#[tokio::test]
async fn a_store_on_shared_files_keeps_the_format_and_another_servers_change() {
    let folder = Fixture::new();
    let added = folder.add("https://a.example.com/hook", "file.created");
    let folder_text = fs::read_to_string(folder.dir.path().join(".cms/webhooks.yaml")).unwrap();

    let files = std::sync::Arc::new(SharedFiles::default());
    let store = cms_webhooks::WebhookStore::new(files.clone(), std::sync::Arc::new(cms_fs::SystemClock));
    // Another server adds its subscription while this one writes: both stay.
    *files.interloper.lock().unwrap() = Some(folder_text.clone());
    let (info, _secret) = store.add_webhook("https://b.example.com/hook", "file.deleted").await.unwrap();
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, [added.id.clone(), info.id.clone()]);
    assert!(files.texts.lock().unwrap()["webhooks.yaml"].starts_with(&folder_text), "the same format");

    store.append_log(&[entry(1)]).unwrap();
    assert_eq!(store.webhook_log().await.unwrap().len(), 1);
    assert_eq!(store.clear_webhook_log().await.unwrap(), 1);
    assert_eq!(files.texts.lock().unwrap()["webhook-log.yaml"], "[]\n");

    // The async directory never reads or writes on the caller's thread.
    let threads = files.threads.lock().unwrap().clone();
    let (test, settings) =
        (std::thread::current().name().map(str::to_owned), Some("webhook-settings".into()));
    assert!(threads.contains(&settings), "{threads:?}");
    let directory_calls = [0, 3, 4]; // add_webhook, webhook_log, clear_webhook_log
    for at in directory_calls {
        assert_eq!(threads[at], settings, "call {at} of {threads:?}");
        assert_ne!(threads[at], test);
    }
}
