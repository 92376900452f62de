use cms_core::ports::Clock;
use time::OffsetDateTime;

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// This process's resident size in bytes, from `VmRSS` in `/proc/self/status` (Linux,
/// in KiB whatever the page size); `None` where it cannot be read.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_resident_size_of_this_process() {
        let resident = super::resident_bytes().expect("Linux has /proc/self/status");
        assert!((1 << 20..1 << 40).contains(&resident), "{resident}");
    }
}
