//! Test helpers (feature `testing`): a CA and a server certificate made at test time with
//! rcgen, and an HTTPS webhook receiver on 127.0.0.1 served with rustls on a std
//! `TcpListener`. Nothing here reaches beyond the loopback interface.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A test CA and a server certificate it signed for `127.0.0.1` and `localhost`.
pub struct TestCa {
    /// The CA certificate, PEM: what `webhooks.ca_file` points to.
    pub ca_pem: String,
    server: Arc<rustls::ServerConfig>,
}

impl TestCa {
    pub fn new() -> Self {
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "cms webhook test CA");
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("server parameters");
        leaf.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        leaf.use_authority_key_identifier_extension = true;
        let leaf_key = KeyPair::generate().expect("server key");
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).expect("server certificate");

        let chain = vec![leaf_cert.der().clone(), CertificateDer::from(ca_cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let server =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_no_client_auth()
                .with_single_cert(chain, key)
                .expect("server TLS config");
        Self { ca_pem: ca_cert.pem(), server: Arc::new(server) }
    }

    /// Writes the CA certificate to `path` (for `webhooks.ca_file`).
    pub fn write_ca(&self, path: &Path) {
        fs::write(path, &self.ca_pem).expect("write the test CA");
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// Answers at once with this status.
    Status(u16),
    /// Waits this long (the one deliberate sleep of the tests), then answers `200`.
    Slow(Duration),
    /// Answers `500` to the first this many requests, then `200`.
    FailFirst(usize),
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
    /// The raw body, byte for byte.
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

#[derive(Default)]
struct Inbox {
    received: Mutex<Vec<Received>>,
    arrived: Condvar,
}

/// An HTTPS receiver on `127.0.0.1:<free port>`, one thread per connection. Each request
/// is recorded before the answer is sent, so once a sender has its answer the request is
/// in [`Receiver::received`]. Stops accepting when dropped.
pub struct Receiver {
    port: u16,
    inbox: Arc<Inbox>,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    pub fn start(ca: &TestCa, answer: Answer) -> Self {
        Self::start_on(ca, answer, 0)
    }

    /// The same on a given port (0: a free one), e.g. to bring a receiver back up where
    /// an earlier one was.
    pub fn start_on(ca: &TestCa, answer: Answer, port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let inbox = Arc::new(Inbox::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (config, accept_inbox, accept_stop) = (ca.server.clone(), inbox.clone(), stop.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (config, inbox) = (config.clone(), accept_inbox.clone());
                thread::spawn(move || {
                    let _ = serve(stream, config, &inbox, answer);
                });
            }
        });
        Self { port, inbox, stop }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `https://127.0.0.1:<port>/hook`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/hook", self.port)
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.inbox.received.lock().unwrap().clone()
    }

    /// Waits until at least `count` requests arrived, or `limit` passed; returns what came.
    pub fn wait_for(&self, count: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        let mut received = self.inbox.received.lock().unwrap();
        while received.len() < count {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { break };
            received = self.inbox.arrived.wait_timeout(received, left).unwrap().0;
        }
        received.clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// A `https://127.0.0.1:<port>/` URL where nothing listens (the port was just freed).
pub fn dead_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("https://127.0.0.1:{port}/hook")
}

fn serve(
    stream: TcpStream,
    config: Arc<rustls::ServerConfig>,
    inbox: &Inbox,
    answer: Answer,
) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let connection = rustls::ServerConnection::new(config).map_err(io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let request = read_request(&mut tls)?;
    let count = {
        let mut received = inbox.received.lock().unwrap();
        received.push(request);
        received.len()
    };
    inbox.arrived.notify_all();
    let status = match answer {
        Answer::Status(status) => status,
        Answer::FailFirst(failures) if count <= failures => 500,
        Answer::FailFirst(_) => 200,
        Answer::Slow(delay) => {
            thread::sleep(delay);
            200
        }
    };
    write!(tls, "HTTP/1.1 {status} Test\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")?;
    tls.conn.send_close_notify();
    tls.flush()
}

fn read_request(tls: &mut impl Read) -> io::Result<Received> {
    let mut bytes = Vec::new();
    let mut chunk = [0; 4096];
    let head_end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = tls.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        bytes.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let (method, path) =
        (request_line.next().unwrap_or("").to_owned(), request_line.next().unwrap_or("").to_owned());
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = bytes[head_end + 4..].to_vec();
    while body.len() < length {
        let n = tls.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Ok(Received { method, path, headers, body })
}
