//! Child processes of the benchmark: every one is held by a [`ChildGuard`], which kills
//! and reaps it when dropped (normal end, error, panic), and is listed for the Ctrl-C
//! handler, which kills whatever is still running before the benchmark exits.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Process ids of the children alive now, for the Ctrl-C handler.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// On Ctrl-C: kill every child still running, then exit. (From a terminal the children
/// get the SIGINT too, but `cms serve` would then wait for in-flight requests; and a
/// SIGINT sent to this process alone would otherwise leave them running.)
pub fn stop_children_on_ctrl_c() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        std::thread::spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
                let pids = RUNNING.lock().map(|pids| pids.clone()).unwrap_or_default();
                for pid in pids {
                    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                }
                eprintln!("\ninterrupted; child processes stopped");
                std::process::exit(130);
            }
        });
    });
}

/// A child process that is killed and reaped when this guard is dropped.
pub struct ChildGuard {
    child: Child,
    what: String,
}

impl ChildGuard {
    pub fn spawn(command: &mut Command, what: &str) -> anyhow::Result<Self> {
        let child = command.spawn().with_context(|| format!("cannot start {what} ({command:?})"))?;
        if let Ok(mut pids) = RUNNING.lock() {
            pids.push(child.id());
        }
        Ok(Self { child, what: what.to_owned() })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child to exit, at most `limit`; past it the child is killed and
    /// this is an error.
    pub fn wait_at_most(&mut self, limit: Duration) -> anyhow::Result<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                self.kill();
                bail!("{} did not finish within {limit:?} and was killed", self.what);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Ok(mut pids) = RUNNING.lock() {
            pids.retain(|&pid| pid != self.child.id());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A server child that printed `listening on http://ADDR` (as `cms serve` and
/// `xtask hello` do) on standard output; its standard error is read as a log collector
/// (journald, a container runtime) reads it (see [`drain_log`]).
pub struct Server {
    child: ChildGuard,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// When the process was started: start-up time is measured from here.
    pub started: Instant,
    /// Request lines read from its log, and their bytes.
    pub access_lines: Arc<AccessLines>,
}

/// What the log collector counted of the request lines (target `cms::access`).
#[derive(Debug, Default)]
pub struct AccessLines {
    pub lines: AtomicU64,
    pub bytes: AtomicU64,
}

impl Server {
    /// Starts the server and waits, at most `deadline`, for the address it bound. Bind
    /// to port 0 so that the system picks a free port and nothing can race for it.
    /// The server logs as it does by default, unless the command sets `RUST_LOG`.
    pub fn start(command: &mut Command, what: &str, log: &Path, deadline: Duration) -> anyhow::Result<Self> {
        let log_file = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = ChildGuard::spawn(command, what)?;
        let stderr = child.child.stderr.take().context("no standard error")?;
        let access_lines = Arc::new(AccessLines::default());
        let counted = access_lines.clone();
        std::thread::spawn(move || drain_log(stderr, log_file, &counted));
        let stdout = child.child.stdout.take().context("no standard output")?;
        let (address_tx, address_rx) = mpsc::channel();
        // Reads the address, then drains the rest so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(base) = line.strip_prefix("listening on ") {
                    let _ = address_tx.send(base.trim().to_owned());
                }
            }
        });
        let base = match address_rx.recv_timeout(deadline) {
            Ok(base) => base,
            Err(RecvTimeoutError::Timeout) => bail!("{what} printed no address within {deadline:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                bail!("{what} exited before listening; see {}", log.display())
            }
        };
        Ok(Self { child, base, started, access_lines })
    }

    /// Waits, at most `limit`, until the server uses almost no CPU. A slow server is still
    /// answering requests that wrk gave up on when its run ended; without this pause they
    /// would be measured as part of the next case. False when it never settled.
    pub fn wait_until_idle(&self, limit: Duration) -> bool {
        const SAMPLE: Duration = Duration::from_millis(250);
        // Busy if it used more than 2 clock ticks (at Linux's 100 per second) in a sample.
        const IDLE_TICKS: u64 = 2;
        let started = Instant::now();
        let mut before = self.cpu_ticks();
        while started.elapsed() < limit {
            std::thread::sleep(SAMPLE);
            let now = self.cpu_ticks();
            match (before, now) {
                (Some(before), Some(now)) if now.saturating_sub(before) <= IDLE_TICKS => return true,
                (_, None) => return false,
                _ => before = now,
            }
        }
        false
    }

    /// The CPU time the server has used so far, in clock ticks (100 a second on Linux).
    pub fn cpu_ticks(&self) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.pid())).ok()?;
        parse_cpu_ticks(&stat)
    }

    /// The server's peak resident memory so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.pid())).ok()?;
        parse_status_kib(&status, "VmHWM:")
    }

    /// The server's resident memory now (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.pid())).ok()?;
        parse_status_kib(&status, "VmRSS:")
    }
}

/// Reads a server's standard error to its end as a log collector does: every line is
/// read (so the server writes, and pays for, each one), the request lines are counted,
/// and the others are kept in `log`. Keeping a run's request lines would fill the disk
/// (100 MB in 20 seconds of load).
fn drain_log(stderr: impl Read, log: File, access: &AccessLines) {
    let mut lines = BufReader::with_capacity(1 << 16, stderr);
    let mut log = std::io::BufWriter::new(log);
    let mut line = Vec::with_capacity(512);
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                if is_access_line(&line) {
                    access.lines.fetch_add(1, Ordering::Relaxed);
                    access.bytes.fetch_add(read as u64, Ordering::Relaxed);
                } else {
                    let _ = log.write_all(&line).and_then(|()| log.flush());
                }
            }
        }
    }
}

/// A request line, in the text or the JSON format, told by where the target stands (the
/// collector shares the server's two cores: a search through each line cost the server a
/// fifth of its rate).
fn is_access_line(line: &[u8]) -> bool {
    // `2026-11-29T12:00:00.000001Z  INFO cms::access: request ...`
    const TEXT_AT: usize = "2026-11-29T12:00:00.000001Z  INFO ".len();
    const TEXT: &[u8] = b"cms::access: ";
    const JSON: &[u8] = b"\"target\":\"cms::access\"}";
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.get(TEXT_AT..).is_some_and(|rest| rest.starts_with(TEXT)) || line.ends_with(JSON)
}

/// User plus system CPU time, in clock ticks, from `/proc/PID/stat` (fields 14 and 15;
/// counted after the command name, which is in parentheses and may hold spaces).
fn parse_cpu_ticks(proc_stat: &str) -> Option<u64> {
    let after_name = &proc_stat[proc_stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3 (state), so fields 14 and 15 are at 11 and 12.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// A size in KiB from `/proc/PID/status` (`VmHWM:`, `VmRSS:`).
fn parse_status_kib(proc_status: &str, field: &str) -> Option<u64> {
    let line = proc_status.lines().find(|line| line.starts_with(field))?;
    line.trim_start_matches(field).trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_peak_resident_size() {
        let status = "Name:\tcms\nVmPeak:\t  123456 kB\nVmHWM:\t   45678 kB\nVmRSS:\t   40000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM:"), Some(45678));
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(40000));
        assert_eq!(parse_status_kib("Name:\tcms\n", "VmHWM:"), None);
    }

    #[test]
    fn tells_request_lines_from_the_others() {
        let text = b"2026-11-29T12:00:00.000001Z  INFO cms::access: request method=GET path=\"/status\"\n";
        let json = b"{\"timestamp\":\"x\",\"level\":\"INFO\",\"status\":200,\"target\":\"cms::access\"}\n";
        assert!(is_access_line(text) && is_access_line(json));
        assert!(!is_access_line(b"2026-11-29T12:00:00.000001Z  WARN cms::serve: slow\n"));
        assert!(!is_access_line(b"2026-11-29T12:00:00.000001Z  INFO cms::serve: cms::access: quoted\n"));
        assert!(!is_access_line(b"short\n"));
    }

    #[test]
    fn reads_cpu_time() {
        let stat = "4744 (cms serve) S 4664 4637 4637 0 -1 4194560 1339 0 0 0 250 31 0 0 20 0 3 0 1 2 3";
        assert_eq!(parse_cpu_ticks(stat), Some(281));
        assert_eq!(parse_cpu_ticks("4744 (cms) S 1"), None);
    }
}
