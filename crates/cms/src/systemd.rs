//! What a server under systemd (`Type=notify`, dist/cms.service) tells it: that it is ready
//! (its first index built), how far that indexing is meanwhile (`systemctl status`), that
//! it is stopping, and that it answers, every half of `WatchdogSec=`. Without
//! `NOTIFY_SOCKET` (not under systemd) each call does nothing.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use cms_core::Cms;

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

/// Pings systemd's watchdog while the server answers its own `/livez` on `address` (a
/// thread of its own asks every half of `WatchdogSec=`, so that a server whose HTTP
/// workers stop answering gets restarted, whatever its other work); once it was told to
/// stop, the pings go on without asking (the listener closes while requests finish, and
/// `TimeoutStopSec=` bounds the stop). Nothing without `WatchdogSec=`.
pub fn keep_watchdog(address: SocketAddr, cms: Arc<Cms>) {
    let mut usec = 0;
    if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
        return;
    }
    let every = Duration::from_micros(usec) / 2;
    let address = match address.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => SocketAddr::from((Ipv4Addr::LOCALHOST, address.port())),
        ip if ip.is_unspecified() => SocketAddr::from((Ipv6Addr::LOCALHOST, address.port())),
        _ => address,
    };
    let watching = thread::Builder::new().name("cms-watchdog".into()).spawn(move || {
        loop {
            if cms.is_draining() || answers(address, every) {
                send(&[NotifyState::Watchdog]);
            } else {
                tracing::warn!(
                    "the server did not answer its own /livez within {every:?}; systemd restarts it if this goes on (WatchdogSec)"
                );
            }
            thread::sleep(every);
        }
    });
    if let Err(error) = watching {
        tracing::warn!(%error, "cannot start the watchdog's thread; systemd will restart the server (WatchdogSec)");
    }
}

/// Whether `GET /livez` on `address` answers 200 within `within`.
fn answers(address: SocketAddr, within: Duration) -> bool {
    let asked = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect_timeout(&address, within)?;
        stream.set_read_timeout(Some(within))?;
        stream.set_write_timeout(Some(within))?;
        write!(stream, "GET /livez HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")?;
        let mut head = [0; 12];
        stream.read_exact(&mut head)?;
        Ok(&head == b"HTTP/1.1 200")
    };
    asked().unwrap_or(false)
}

fn send(states: &[NotifyState<'_>]) {
    if let Err(error) = sd_notify::notify(false, states) {
        tracing::warn!(%error, "cannot tell systemd (NOTIFY_SOCKET) how the server is");
    }
}
