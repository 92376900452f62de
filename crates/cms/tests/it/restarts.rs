//! Stopping without dropping anything (issue 49): told to stop, a server says so to
//! systemd and to `/readyz`, keeps serving for `server.drain_secs` with every answer
//! closing its connection, then finishes what it has. A rolling restart of a two-node
//! bucket site under load, behind a balancer that follows `/readyz`, fails no request.
//! (The webhook outbox surviving even `kill -9` is `retries.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::{BIN, Server, demo_site};

fn signal(server: &Server, name: &str) {
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args([&format!("-{name}"), &pid]).status().unwrap().success());
}

/// Waits for the server's process to end; its exit status and how long that took.
fn wait_for_exit(server: &mut Server, within: Duration) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return (status, started.elapsed());
        }
        assert!(started.elapsed() < within, "the server did not stop within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn with_server_section(site: &Path, section: &str) {
    let config = site.join("cms.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("\nserver:"), "the demo has no server: section to merge with");
    std::fs::write(&config, format!("{text}server:\n{section}")).unwrap();
}

/// One request on a raw connection (a balancer's view: the status, whether the server
/// closes the connection after it, or the I/O error).
fn request(stream: &mut BufReader<TcpStream>, path: &str) -> std::io::Result<(u16, bool)> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.get_mut().write_all(request.as_bytes())?;
    let mut line = String::new();
    if stream.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (mut length, mut closes) = (0, false);
    loop {
        line.clear();
        stream.read_line(&mut line)?;
        let header = line.trim_end().to_ascii_lowercase();
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        closes |= header == "connection: close";
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body)?;
    Ok((status, closes))
}

fn connect(address: SocketAddr) -> std::io::Result<BufReader<TcpStream>> {
    let stream = TcpStream::connect_timeout(&address, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    Ok(BufReader::new(stream))
}

fn address(server: &Server) -> SocketAddr {
    server.base.strip_prefix("http://").unwrap().parse().unwrap()
}

/// Under systemd (`Type=notify`, `WatchdogSec=`): the server reports its indexing, that
/// it is ready, pings the watchdog, and says it is stopping; while it drains `/readyz` is
/// 503 and answers close their connections; then it stops on its own, successfully.
#[test]
fn told_to_stop_it_tells_systemd_drains_and_stops_cleanly() {
    let site = demo_site();
    with_server_section(site.path(), "  drain_secs: 1\n");
    let folder = tempfile::tempdir().unwrap();
    let socket_path = folder.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // systemd names the main process in WATCHDOG_PID: the shell's pid is the server's
    // once it `exec`s.
    let mut command = Command::new("sh");
    command
        .args(["-c", "WATCHDOG_PID=$$ exec \"$0\" \"$@\"", BIN, "serve", "--listen", "127.0.0.1:0", "--site"])
        .arg(site.path())
        .env("NOTIFY_SOCKET", &socket_path)
        .env("WATCHDOG_USEC", "200000");
    let mut server = Server::spawn(command);

    let mut messages = Vec::new();
    let next = || {
        let mut buffer = [0; 4096];
        let read = socket.recv(&mut buffer).expect("a message from the server within 10 s");
        String::from_utf8_lossy(&buffer[..read]).into_owned()
    };
    while messages.iter().filter(|m: &&String| m.contains("WATCHDOG=1")).count() < 3
        || !messages.iter().any(|m| m.contains("READY=1"))
    {
        messages.push(next());
    }
    let ready = messages.iter().find(|m| m.contains("READY=1")).unwrap();
    assert!(ready.contains("STATUS=serving"), "{ready}");

    let before = server.get("/readyz", None);
    assert_eq!(before.0, 200, "{before:?}");
    let mut kept = connect(address(&server)).unwrap();
    assert_eq!(request(&mut kept, "/cms/collections").unwrap(), (200, false), "kept alive while serving");

    let told = Instant::now();
    signal(&server, "TERM");
    let stopping = loop {
        let message = next();
        if message.contains("STOPPING=1") {
            break message;
        }
    };
    assert!(stopping.contains("STATUS=draining"), "{stopping}");
    // Draining: still serving, not ready, and every answer closes its connection.
    let (status, body) = server.get("/readyz", None);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["checks"]["draining"], "yes", "{body}");
    assert_eq!(request(&mut kept, "/cms/collections").unwrap(), (200, true), "closed after the answer");
    let mut fresh = connect(address(&server)).unwrap();
    assert_eq!(request(&mut fresh, "/status").unwrap(), (200, true));

    let (status, _) = wait_for_exit(&mut server, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    assert!(told.elapsed() >= Duration::from_secs(1), "it served for drain_secs first");
}

/// A balancer in front of two nodes of a bucket site, which follows their `/readyz` every
/// 100 ms, sends 8 clients' requests to whichever is ready while each node in turn is
/// told to stop and started again: no request fails.
#[test]
fn a_rolling_restart_of_two_nodes_under_load_fails_no_request() {
    let Some(site) = crate::nodes::bucket_site(2) else { return };
    for node in &site.nodes {
        with_server_section(node.path(), "  drain_secs: 2\n");
    }
    let mut servers: Vec<Server> = site.nodes.iter().map(|node| crate::nodes::serve(node.path())).collect();
    // What the balancer knows of (each node's address, a restarted one's new port) and
    // what it sends requests to: the nodes whose /readyz said 200 last.
    let nodes: Mutex<Vec<SocketAddr>> = Mutex::new(servers.iter().map(address).collect());
    let ready = Mutex::new(nodes.lock().unwrap().clone());
    let (stop, answered) = (AtomicBool::new(false), AtomicU64::new(0));
    let failures = Mutex::new(Vec::<String>::new());

    std::thread::scope(|scope| {
        // The balancer's health checks.
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let mut up = Vec::new();
                let known = nodes.lock().unwrap().clone();
                for address in known {
                    let probe = connect(address).and_then(|mut c| request(&mut c, "/readyz"));
                    if matches!(probe, Ok((200, _))) {
                        up.push(address);
                    }
                }
                *ready.lock().unwrap() = up;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        for client in 0..8 {
            let (ready, stop, answered, failures) = (&ready, &stop, &answered, &failures);
            scope.spawn(move || {
                let mut connection: Option<BufReader<TcpStream>> = None;
                for turn in client.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut stream = match connection.take() {
                        Some(stream) => stream,
                        None => {
                            let nodes = ready.lock().unwrap().clone();
                            let Some(&node) = nodes.get(turn % nodes.len().max(1)) else { continue };
                            match connect(node) {
                                Ok(stream) => stream,
                                // Refused: not a request the server accepted.
                                Err(_) => continue,
                            }
                        }
                    };
                    match request(&mut stream, "/cms/collections/blog-posts/items") {
                        Ok((200, closes)) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                            if !closes {
                                connection = Some(stream);
                            }
                        }
                        Ok((status, _)) => failures.lock().unwrap().push(format!("status {status}")),
                        Err(error) => failures.lock().unwrap().push(error.to_string()),
                    }
                }
            });
        }

        // A failed assertion below must still stop the clients, or the scope never ends.
        let _stop_on_panic = StopOnDrop(&stop);
        for (index, node) in site.nodes.iter().enumerate() {
            std::thread::sleep(Duration::from_millis(500));
            signal(&servers[index], "TERM");
            let (status, _) = wait_for_exit(&mut servers[index], Duration::from_secs(30));
            assert!(status.success(), "node {index}: {status:?}");
            servers[index] = crate::nodes::serve(node.path());
            nodes.lock().unwrap()[index] = address(&servers[index]);
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let failures = failures.into_inner().unwrap();
    let answered = answered.into_inner();
    assert!(
        failures.is_empty(),
        "{} of {} requests failed: {:?}",
        failures.len(),
        answered,
        &failures[..failures.len().min(5)]
    );
    assert!(answered >= 200, "the load went on: {answered} answers");
}

/// Sets the flag when dropped (also while a panic unwinds).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// With a request in flight (its body still coming), the first SIGTERM waits for it; a
/// second stops the process at once.
#[test]
fn a_second_signal_stops_at_once_while_a_request_is_in_flight() {
    let site = demo_site();
    with_server_section(site.path(), "  stop_timeout_secs: 60\n");
    let key = crate::user_with_key(site.path(), "ed@example.com", "editor");
    let mut server = Server::start(site.path());
    let mut slow = TcpStream::connect(address(&server)).unwrap();
    let head = format!(
        "POST /cms/collections/posts/items HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"slug\":"
    );
    slow.write_all(head.as_bytes()).unwrap();
    // The server has the request once it answers another one after it.
    assert_eq!(server.get("/livez", None).0, 200);

    signal(&server, "TERM");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(server.child.try_wait().unwrap().is_none(), "the first signal waits for the request in flight");
    let told = Instant::now();
    signal(&server, "TERM");
    let (status, _) = wait_for_exit(&mut server, Duration::from_secs(10));
    assert!(told.elapsed() < Duration::from_secs(5), "{:?}", told.elapsed());
    assert_eq!(status.code(), Some(1), "a stop that cut requests short is not a clean one");
    drop(slow);
}
