//! What a server under systemd (`Type=notify`, dist/cms.service) tells it: that it is ready
//! (its first index built), how far that indexing is meanwhile (`systemctl status`), that
//! it is stopping, and that it is alive, every half of `WatchdogSec=`. Without
//! `NOTIFY_SOCKET` (not under systemd) each call does nothing.

use std::time::Duration;

use sd_notify::NotifyState;

pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub fn stopping(status: &str) {
    send(&[NotifyState::Stopping, NotifyState::Status(status)]);
}

/// Pings systemd's watchdog from the server's runtime, so that a runtime that stops
/// turning gets the process restarted; nothing without `WatchdogSec=`.
pub fn keep_watchdog() {
    let mut usec = 0;
    if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
        return;
    }
    let every = Duration::from_micros(usec) / 2;
    actix_web::rt::spawn(async move {
        loop {
            send(&[NotifyState::Watchdog]);
            actix_web::rt::time::sleep(every).await;
        }
    });
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(error) = sd_notify::notify(false, states) {
        tracing::warn!(%error, "cannot tell systemd (NOTIFY_SOCKET) how the server is");
    }
}
