//! One delivery: a signed JSON `POST` over HTTPS with ureq, attempted once, to a public
//! address unless the site allows others (see [`crate::address`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cms_core::events::EventKind;
use cms_core::ports::Clock;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::unversioned::transport::DefaultConnector;

use crate::address::{self, AddressRefused, PolicyResolver};
use crate::model::{LogEntry, Subscription};
use crate::payload;

/// How deliveries are made.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Time-out of one whole delivery (connect, TLS, request, response head).
    pub timeout: Duration,
    /// A PEM file of extra CA certificates, trusted beside the bundled roots.
    pub ca_file: Option<PathBuf>,
    /// `User-Agent` of every request.
    pub user_agent: String,
    /// `webhooks.allow_private_addresses`: deliver to loopback, private, link-local and
    /// other non-public addresses too. Off, such deliveries are refused after the host
    /// is resolved.
    pub allow_private_addresses: bool,
}

/// Why deliveries cannot be set up (at start-up, not per delivery).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("webhooks.ca_file {path}: {message}")]
    CaFile { path: PathBuf, message: String },
}

/// What one attempt did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration: Duration,
}

impl Attempt {
    pub fn success(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Sends deliveries: an agent that speaks HTTPS only, follows no redirects, gives up
/// after the time-out and (unless allowed otherwise) connects to public addresses only.
pub struct Deliverer {
    agent: ureq::Agent,
    user_agent: String,
    /// Whether the address policy applies (`webhooks.allow_private_addresses` is false).
    public_only: bool,
    timeout: Duration,
    /// Set when the configuration could not be used (e.g. an unreadable `ca_file`):
    /// every delivery is then logged as not sent, with this reason.
    unusable: Option<String>,
    /// Dates each attempt (its signed `webhook-timestamp`) and its log entry.
    clock: Arc<dyn Clock>,
}

impl Deliverer {
    pub fn new(config: &DeliveryConfig, clock: Arc<dyn Clock>) -> Result<Self, SetupError> {
        let mut tls = TlsConfig::builder();
        if let Some(path) = &config.ca_file {
            tls = tls.root_certs(roots_with(path)?);
        }
        let agent_config = ureq::Agent::config_builder()
            .https_only(true)
            .timeout_global(Some(config.timeout))
            // A 3xx is not a success and is not followed: a redirect would turn the POST
            // into a GET or send the signed body somewhere unvetted.
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(config.user_agent.as_str())
            .tls_config(tls.build())
            .build();
        let public_only = !config.allow_private_addresses;
        let agent = if public_only {
            // The resolver checks every address and ureq connects only to those.
            ureq::Agent::with_parts(agent_config, DefaultConnector::default(), PolicyResolver::default())
        } else {
            agent_config.new_agent()
        };
        Ok(Self {
            agent,
            user_agent: config.user_agent.clone(),
            public_only,
            timeout: config.timeout,
            unusable: None,
            clock,
        })
    }

    /// A delivery through a proxy that resolves the target itself never reaches the
    /// resolver with the target's name: its addresses are checked here first.
    fn check_proxied(&self, url: &str) -> Result<(), ureq::Error> {
        let Some(proxy) = self.agent.config().proxy().filter(|_| self.public_only) else { return Ok(()) };
        let Ok(uri) = url.parse::<ureq::http::Uri>() else { return Ok(()) }; // ureq reports it.
        if proxy.resolve_target() || proxy.is_no_proxy(&uri) {
            return Ok(()); // The resolver sees the target.
        }
        address::check_proxied_target(&uri, self.timeout)
    }

    /// One `POST` of `body` to the subscription, signed with its secret.
    pub fn send(
        &self,
        subscription: &Subscription,
        event: EventKind,
        body: &[u8],
        delivery: &str,
    ) -> Attempt {
        let started = Instant::now();
        // Standard Webhooks: the id is the delivery id (the same on every attempt, so
        // receivers drop duplicates); the timestamp is this attempt's (replays refused).
        let timestamp = self.clock.now().unix_timestamp();
        let result = self.check_proxied(&subscription.url).and_then(|()| {
            self.agent
                .post(&subscription.url)
                .header("Content-Type", "application/json")
                .header("User-Agent", &self.user_agent)
                .header("X-Webhook-Event", event.as_str())
                .header("X-Webhook-Delivery", delivery)
                .header("X-Webhook-Signature", payload::signature(&subscription.secret, body))
                .header("webhook-id", delivery)
                .header("webhook-timestamp", timestamp.to_string())
                .header(
                    "webhook-signature",
                    payload::standard_signature(&subscription.secret, delivery, timestamp, body),
                )
                .send(body)
        });
        let duration = started.elapsed();
        match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let error = (!(200..300).contains(&status)).then(|| format!("HTTP {status}"));
                Attempt { status: Some(status), error, duration }
            }
            Err(error) => Attempt { status: None, error: Some(describe(&error)), duration },
        }
    }

    /// A deliverer that sends nothing and logs every delivery as not sent, for a process
    /// that must run (a CLI command) although the delivery settings are broken.
    pub fn unusable(config: &DeliveryConfig, error: &SetupError, clock: Arc<dyn Clock>) -> Self {
        let agent = ureq::Agent::config_builder().https_only(true).build().into();
        let reason = format!("the webhook settings cannot be used ({error})");
        Self {
            agent,
            user_agent: config.user_agent.clone(),
            public_only: !config.allow_private_addresses,
            timeout: config.timeout,
            unusable: Some(reason),
            clock,
        }
    }

    /// Delivers and returns the log entry of the attempt.
    pub fn deliver(
        &self,
        subscription: &Subscription,
        event: EventKind,
        body: &[u8],
        delivery: &str,
        attempt: u32,
    ) -> LogEntry {
        if let Some(reason) = &self.unusable {
            return LogEntry::not_sent(subscription, event, reason, self.clock.now());
        }
        let sent = self.send(subscription, event, body, delivery);
        LogEntry {
            time: crate::model::log_time(self.clock.now()),
            delivery: delivery.to_owned(),
            webhook: subscription.id.clone(),
            event,
            url: subscription.url.clone(),
            status: sent.status,
            success: sent.success(),
            error: sent.error,
            duration_ms: Some(u64::try_from(sent.duration.as_millis()).unwrap_or(u64::MAX)),
            attempt,
            body: Some(String::from_utf8_lossy(body).into_owned()),
        }
    }
}

/// A ureq error in words an operator can act on. A refusal by the address policy says
/// only that: which address, and whether something listens there, is what it hides.
fn describe(error: &ureq::Error) -> String {
    if AddressRefused::is(error) {
        return address::REFUSED.to_owned();
    }
    match error {
        ureq::Error::Timeout(_) => "timed out (webhooks.timeout_secs)".to_owned(),
        ureq::Error::RequireHttpsOnly(_) => "refused: the URL is not HTTPS".to_owned(),
        other => format!("connection error: {other}"),
    }
}

/// The bundled Mozilla roots (what ureq trusts by default) plus the CA certificates in
/// `path`.
fn roots_with(path: &Path) -> Result<RootCerts, SetupError> {
    let fail = |message: String| SetupError::CaFile { path: path.to_owned(), message };
    let pem = fs::read(path).map_err(|e| fail(e.to_string()))?;
    let mut extra = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item.map_err(|e| fail(format!("not a PEM file: {e}")))? {
            PemItem::Certificate(cert) => extra.push(cert),
            _ => return Err(fail("holds something other than certificates".into())),
        }
    }
    if extra.is_empty() {
        return Err(fail("holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()));
    }
    let bundled =
        webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().map(|der| Certificate::from_der(der.as_ref()));
    Ok(RootCerts::new_with_certs(&bundled.chain(extra).collect::<Vec<_>>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Arc<dyn Clock> {
        Arc::new(cms_core::testing::FixedClock::at_unix(0))
    }

    #[test]
    fn a_ca_file_must_hold_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let config = |ca: &Path| DeliveryConfig {
            timeout: Duration::from_secs(1),
            ca_file: Some(ca.to_owned()),
            user_agent: "t".into(),
            allow_private_addresses: false,
        };
        let missing = dir.path().join("missing.pem");
        let message = Deliverer::new(&config(&missing), clock()).err().unwrap().to_string();
        assert!(message.starts_with("webhooks.ca_file") && message.contains("missing.pem"), "{message}");
        let empty = dir.path().join("empty.pem");
        fs::write(&empty, "nothing here\n").unwrap();
        let message = Deliverer::new(&config(&empty), clock()).err().unwrap().to_string();
        assert!(message.contains("no PEM certificate"), "{message}");
    }

    #[test]
    fn the_extra_ca_is_trusted_beside_the_bundled_roots() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        crate::testing::TestCa::new().write_ca(&ca);
        let RootCerts::Specific(roots) = roots_with(&ca).unwrap() else { panic!("specific roots") };
        let bundled = webpki_root_certs::TLS_SERVER_ROOT_CERTS.len();
        assert!(bundled > 100);
        assert_eq!(roots.len(), bundled + 1);
    }
}
