//! The load generator: wrk (installed from Debian when missing), one run per case, and
//! the parser of its `--latency` report.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};

use super::process::ChildGuard;

/// One wrk configuration, the same for the ceiling and every case.
pub struct Settings {
    pub threads: u32,
    pub connections: u32,
    pub duration: Duration,
    /// A request slower than this counts as a time-out (a socket error), not a latency.
    pub timeout: Duration,
}

impl Settings {
    pub fn new(duration: Duration) -> Self {
        Self { threads: 2, connections: 32, duration, timeout: Duration::from_secs(5) }
    }

    fn args(&self) -> Vec<String> {
        vec![
            format!("-t{}", self.threads),
            format!("-c{}", self.connections),
            format!("-d{}s", self.duration.as_secs()),
            "--latency".into(),
            "--timeout".into(),
            format!("{}s", self.timeout.as_secs()),
        ]
    }

    /// The command line, for the report.
    pub fn describe(&self) -> String {
        format!("wrk {}", self.args().join(" "))
    }

    /// [`Self::run`], measured again (twice at most) while the hypervisor took more than
    /// [`STOLEN_LIMIT`] of the machine's CPU during the run: such a run measures the
    /// machine's neighbours, not the server against its ceiling. The least disturbed
    /// run is kept; the report shows what was taken from it.
    pub fn run_undisturbed(&self, url: &str, script: Option<&Path>) -> anyhow::Result<Figures> {
        self.run_undisturbed_with(url, script, &[])
    }

    /// [`Self::run_undisturbed`] with request headers (`Name: value`).
    pub fn run_undisturbed_with(
        &self,
        url: &str,
        script: Option<&Path>,
        headers: &[String],
    ) -> anyhow::Result<Figures> {
        let mut kept = self.run_with(url, script, headers)?;
        for _ in 0..2 {
            let Some(stolen) = kept.stolen.filter(|stolen| *stolen > STOLEN_LIMIT) else { break };
            eprintln!("  {:.1}% of the CPU was stolen during the run; measuring again", stolen * 100.0);
            let again = self.run_with(url, script, headers)?;
            if again.stolen.unwrap_or(0.0) < stolen {
                kept = again;
            }
        }
        Ok(kept)
    }

    /// Runs wrk against `url` (with a Lua `script` if given) and parses its report. wrk
    /// stops itself after the duration; past that plus a grace period it is killed.
    pub fn run(&self, url: &str, script: Option<&Path>) -> anyhow::Result<Figures> {
        self.run_with(url, script, &[])
    }

    /// [`Self::run`] with request headers (`Name: value`).
    pub fn run_with(&self, url: &str, script: Option<&Path>, headers: &[String]) -> anyhow::Result<Figures> {
        let output = std::env::temp_dir().join(format!("xtask-wrk-{}.txt", std::process::id()));
        let mut command = Command::new("wrk");
        command.args(self.args());
        for header in headers {
            command.arg("-H").arg(header);
        }
        if let Some(script) = script {
            command.arg("--script").arg(script);
        }
        // A file, not a pipe: nobody reads while wrk runs, and a full pipe would stall it.
        let out_file = std::fs::File::create(&output)?;
        command.arg(url).stdin(Stdio::null()).stderr(out_file.try_clone()?).stdout(out_file);
        let before = CpuTimes::now();
        let read_before = disk_read_kib();
        let mut wrk = ChildGuard::spawn(&mut command, "wrk")?;
        let status = wrk.wait_at_most(self.duration + self.timeout + Duration::from_secs(15))?;
        let stolen = before.zip(CpuTimes::now()).and_then(|(before, after)| after.stolen_since(&before));
        let disk_read_kib =
            read_before.zip(disk_read_kib()).map(|(before, after)| after.saturating_sub(before));
        let report = std::fs::read_to_string(&output).unwrap_or_default();
        let _ = std::fs::remove_file(&output);
        if !status.success() {
            bail!("wrk failed ({status}): {report}");
        }
        let figures = parse(&report).with_context(|| format!("unexpected wrk output:\n{report}"))?;
        Ok(Figures { stolen, disk_read_kib, ..figures })
    }
}

/// KiB the machine has read from its disks since it started (`pgpgin` in `/proc/vmstat`).
/// A read case should read none: its answers are in memory or in the page cache, unless
/// the host took them back (see docs/performance.md, 2026-12-01 evening, on DAMON).
fn disk_read_kib() -> Option<u64> {
    parse_pgpgin(&std::fs::read_to_string("/proc/vmstat").ok()?)
}

fn parse_pgpgin(vmstat: &str) -> Option<u64> {
    vmstat.lines().find_map(|line| line.strip_prefix("pgpgin "))?.trim().parse().ok()
}

/// More CPU time than this share taken by the hypervisor during a run, and the run is
/// measured again (see [`Settings::run_undisturbed`]).
pub const STOLEN_LIMIT: f64 = 0.02;

/// The machine's CPU time so far (`/proc/stat`, all CPUs, in ticks): in total, and what
/// the hypervisor gave to other guests ("steal").
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuTimes {
    total: u64,
    steal: u64,
}

impl CpuTimes {
    fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The `cpu` line: user, nice, system, idle, iowait, irq, softirq, steal, ...
    fn parse(stat: &str) -> Option<Self> {
        let line = stat.lines().find(|line| line.starts_with("cpu "))?;
        let ticks: Vec<u64> = line.split_whitespace().skip(1).map_while(|t| t.parse().ok()).collect();
        // guest and guest_nice (after steal) are already counted in user and nice.
        let counted = ticks.get(..8)?;
        Some(Self { total: counted.iter().sum(), steal: counted[7] })
    }

    /// The share of the CPU time since `before` that was stolen; `None` if no time passed.
    fn stolen_since(&self, before: &Self) -> Option<f64> {
        let total = self.total.checked_sub(before.total).filter(|t| *t > 0)?;
        Some(self.steal.saturating_sub(before.steal) as f64 / total as f64)
    }
}

/// What one wrk run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    pub requests: u64,
    pub requests_per_sec: f64,
    pub p50: Duration,
    pub p99: Duration,
    /// Answers with a status outside 2xx and 3xx (counted in `requests`).
    pub non_2xx: u64,
    /// Requests that took longer than the time-out (not counted in `requests`).
    pub timeouts: u64,
    /// Connect, read and write errors.
    pub socket_errors: u64,
    /// The share of the machine's CPU time that the hypervisor took during the run
    /// (`None` where `/proc/stat` does not say).
    pub stolen: Option<f64>,
    /// KiB the machine read from its disks during the run (`None` where `/proc/vmstat`
    /// does not say).
    pub disk_read_kib: Option<u64>,
}

/// Installs wrk with apt-get unless it is already on the PATH.
pub fn install_if_missing() -> anyhow::Result<()> {
    if on_path("wrk") {
        return Ok(());
    }
    eprintln!("$ apt-get update -qq && apt-get install -y -qq wrk");
    let installed = Command::new("sh")
        .args(["-c", "apt-get update -qq && apt-get install -y -qq wrk"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status();
    match installed {
        Ok(status) if status.success() && on_path("wrk") => Ok(()),
        Ok(status) => bail!(
            "could not install wrk with apt-get ({status}); install it by hand (it is the Debian package `wrk`) and rerun"
        ),
        Err(error) => {
            bail!("could not run apt-get to install wrk ({error}); install the Debian package `wrk`")
        }
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Writes a wrk script at `script` that asks for `prefix` followed by a random line of
/// `lines_file` on every request, and beside it the lines as records of one width
/// (`script` with the extension `records`).
///
/// A thread reads the records in one piece and cuts a request's line out of them. A
/// table of every request, made in each thread's `init`, took wrk 10 s per thread at
/// 900,000 lines, and wrk makes its threads' states one after the other, each thread
/// loading the server as soon as it is made, while its clock starts once all are made
/// (`main` in wrk.c): the first thread's requests of those seconds were counted in a
/// run of 3 (a single item at 1,000,000 items read 62k requests/s, above the ceiling).
pub fn write_random_path_script(lines_file: &Path, prefix: &str, script: &Path) -> anyhow::Result<()> {
    let records = script.with_extension("records");
    let file = records.to_str().context("the records file's path is not UTF-8")?;
    if file.contains("]]") || prefix.contains("]]") {
        bail!("cannot quote {file:?} or {prefix:?} in Lua");
    }
    let text = std::fs::read_to_string(lines_file)
        .with_context(|| format!("cannot read {}", lines_file.display()))?;
    let lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    let (bytes, width) = fixed_width_records(&lines)?;
    std::fs::write(&records, bytes)?;
    std::fs::write(script, random_path_lua(file, width, prefix))?;
    Ok(())
}

/// Each line as a record of one width: a byte of its length, the line, spaces to the
/// width. A record is cut out with one `sub` and no pattern. The records and their width.
fn fixed_width_records(lines: &[&str]) -> anyhow::Result<(Vec<u8>, usize)> {
    let longest = lines.iter().map(|line| line.len()).max().context("no line to ask for")?;
    let Ok(longest_byte) = u8::try_from(longest) else {
        bail!("a line of {longest} bytes is too long for a record (255 at most)")
    };
    let width = usize::from(longest_byte) + 1;
    let mut records = Vec::with_capacity(width * lines.len());
    for line in lines {
        records.push(line.len() as u8);
        records.extend_from_slice(line.as_bytes());
        records.resize(records.len() + longest - line.len(), b' ');
    }
    Ok((records, width))
}

fn random_path_lua(records: &str, width: usize, prefix: &str) -> String {
    format!(
        r#"-- Written by `cargo xtask bench`: one random item per request. The lines to ask for are
-- records of {width} bytes in one file (a byte of the line's length, the line, spaces),
-- read by each thread at once.

-- A different random sequence in each thread.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("seed", threads)
end

local records, count, head, tail
function init(args)
  math.randomseed(seed)
  local file = assert(io.open([[{records}]], "rb"))
  records = file:read("*a")
  file:close()
  count = #records / {width}
  local sample = wrk.format("GET", [[{prefix}]] .. "@LINE@")
  local cut = sample:find("@LINE@", 1, true)
  head, tail = sample:sub(1, cut - 1), sample:sub(cut + 6)
end

function request()
  local at = (math.random(count) - 1) * {width}
  return head .. records:sub(at + 2, at + 1 + records:byte(at + 1)) .. tail
end
"#
    )
}

/// Parses wrk's report (run with `--latency`).
pub fn parse(report: &str) -> anyhow::Result<Figures> {
    let percentile = |name: &str| -> anyhow::Result<Duration> {
        let value = report
            .lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(name))
            .with_context(|| format!("no {name} latency percentile (was --latency given?)"))?;
        parse_latency(value.trim()).with_context(|| format!("cannot read the {name} latency {value:?}"))
    };
    let requests_per_sec = field_after(report, "Requests/sec:")
        .and_then(|value| value.parse().ok())
        .context("no Requests/sec line")?;
    let requests = report
        .lines()
        .find_map(|line| line.trim().split_once(" requests in "))
        .and_then(|(count, _)| count.trim().parse().ok())
        .context("no `N requests in` line")?;
    let non_2xx = field_after(report, "Non-2xx or 3xx responses:").map_or(Ok(0), str::parse)?;
    let (socket_errors, timeouts) = socket_errors(report)?;
    Ok(Figures {
        requests,
        requests_per_sec,
        p50: percentile("50%")?,
        p99: percentile("99%")?,
        non_2xx,
        timeouts,
        socket_errors,
        stolen: None,
        disk_read_kib: None,
    })
}

/// The text after `label` on the line that starts with it.
fn field_after<'a>(report: &'a str, label: &str) -> Option<&'a str> {
    report.lines().find_map(|line| line.trim().strip_prefix(label)).map(str::trim)
}

/// `Socket errors: connect 0, read 1, write 0, timeout 12` (absent when all are zero):
/// connect+read+write, and timeouts.
fn socket_errors(report: &str) -> anyhow::Result<(u64, u64)> {
    let Some(counts) = field_after(report, "Socket errors:") else {
        return Ok((0, 0));
    };
    let (mut errors, mut timeouts) = (0, 0);
    for count in counts.split(',') {
        let (kind, number) = count.trim().split_once(' ').context("unexpected socket error count")?;
        let number: u64 = number.trim().parse()?;
        if kind == "timeout" {
            timeouts += number;
        } else {
            errors += number;
        }
    }
    Ok((errors, timeouts))
}

/// wrk's latency format: a number and one of `us`, `ms`, `s`, `m`, `h`.
fn parse_latency(text: &str) -> Option<Duration> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.trim().parse().ok()?;
    let seconds_per_unit = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(number * seconds_per_unit).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_give_back_each_line_as_the_script_cuts_them() {
        let lines = ["a", "three-word-slug", "zz"];
        let (records, width) = fixed_width_records(&lines).unwrap();
        assert_eq!(width, 16);
        assert_eq!(records.len(), width * lines.len());
        // As `request()` does: the length byte at the record's start, then the line.
        let cut: Vec<&[u8]> =
            records.chunks(width).map(|record| &record[1..=usize::from(record[0])]).collect();
        assert_eq!(cut, lines.map(str::as_bytes));
        assert!(fixed_width_records(&[]).is_err());
        assert!(fixed_width_records(&[&"x".repeat(256)]).is_err());
    }

    /// Captured from `wrk -t2 -c32 -d5s --latency --timeout 5s` against `xtask hello`.
    const HEALTHY: &str = "Running 5s test @ http://127.0.0.1:41235/
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   635.91us    0.89ms  12.92ms   93.69%
    Req/Sec    28.35k     2.60k   33.38k    78.00%
  Latency Distribution
     50%  491.00us
     75%  644.00us
     90%    0.99ms
     99%    4.83ms
  282146 requests in 5.00s, 35.79MB read
Requests/sec:  56402.37
Transfer/sec:      7.15MB
";

    /// An overloaded server: errors, time-outs and latencies in seconds.
    const OVERLOADED: &str =
        "Running 3s test @ http://127.0.0.1:40000/cms/collections/posts/items?per_page=20
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.52s   401.11ms   2.00s    70.00%
    Req/Sec     4.10      3.00    10.00     60.00%
  Latency Distribution
     50%    1.61s
     75%    1.80s
     90%    1.95s
     99%    2.00s
  40 requests in 3.01s, 1.02MB read
  Socket errors: connect 0, read 2, write 1, timeout 17
  Non-2xx or 3xx responses: 5
Requests/sec:     13.29
Transfer/sec:    346.50KB
";

    #[test]
    fn reads_throughput_and_percentiles() {
        let figures = parse(HEALTHY).unwrap();
        assert_eq!(figures.requests, 282_146);
        assert!((figures.requests_per_sec - 56_402.37).abs() < 1e-6);
        assert_eq!(figures.p50, Duration::from_micros(491));
        assert_eq!(figures.p99, Duration::from_micros(4830));
        assert_eq!((figures.non_2xx, figures.timeouts, figures.socket_errors), (0, 0, 0));
    }

    #[test]
    fn reads_errors_and_latencies_in_seconds() {
        let figures = parse(OVERLOADED).unwrap();
        assert_eq!(figures.requests, 40);
        assert_eq!(figures.p50, Duration::from_millis(1610));
        assert_eq!(figures.p99, Duration::from_secs(2));
        assert_eq!((figures.non_2xx, figures.timeouts, figures.socket_errors), (5, 17, 3));
    }

    #[test]
    fn refuses_a_report_without_the_latency_distribution() {
        let without: String =
            HEALTHY.lines().filter(|line| !line.contains('%')).collect::<Vec<_>>().join("\n");
        assert!(parse(&without).unwrap_err().to_string().contains("50%"));
        assert!(parse("").is_err());
    }

    #[test]
    fn reads_the_kib_paged_in_from_vmstat() {
        assert_eq!(parse_pgpgin("nr_free_pages 5\npgpgin 123456\npgpgout 7\n"), Some(123_456));
        assert_eq!(parse_pgpgin("pgpgout 7\n"), None);
    }

    #[test]
    fn tells_the_share_of_stolen_cpu_time() {
        let before = CpuTimes::parse("cpu  100 0 50 800 10 0 5 35 7 0\ncpu0 1 2 3\n").unwrap();
        assert_eq!(before, CpuTimes { total: 1000, steal: 35 });
        let after = CpuTimes::parse("cpu  300 0 100 1300 10 0 10 85 9 0\n").unwrap();
        assert_eq!(after.stolen_since(&before), Some(50.0 / 805.0));
        assert_eq!(before.stolen_since(&before), None, "no time passed");
        assert_eq!(CpuTimes::parse("cpu  1 2 3\n"), None, "a kernel without steal time");
    }

    #[test]
    fn reads_every_latency_unit() {
        assert_eq!(parse_latency("0.00us"), Some(Duration::ZERO));
        assert_eq!(parse_latency("12.50ms"), Some(Duration::from_micros(12_500)));
        assert_eq!(parse_latency("1.00m"), Some(Duration::from_secs(60)));
        assert_eq!(parse_latency("12.5"), None);
        assert_eq!(parse_latency("3.0days"), None);
    }
}
