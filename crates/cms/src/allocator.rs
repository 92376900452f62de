//! glibc's allocator settings for the server, applied by starting the binary again with
//! them in its environment: glibc reads them only as a process starts, and setting them
//! from inside (`mallopt`) needs FFI, which the workspace forbids.
//!
//! Why: glibc gives each thread that allocates under contention an arena of its own (up to
//! eight per core) and keeps what is freed in it, and it raises its trim and mmap
//! thresholds after large frees, so buffers freed after start-up stay in the process. At
//! 100,000 items the server held 297 MB at rest with the defaults and 243 MB with one arena
//! per core and fixed thresholds, at the same throughput (docs/performance.md). Settings
//! an operator gives (these variables, or `glibc.malloc.*` in `GLIBC_TUNABLES`) are kept
//! as given.

/// Set in the environment of the restarted process: it is never restarted twice.
const APPLIED: &str = "CMS_MALLOC_TUNED";
/// Above this, blocks are mapped on their own and given back when freed; below it, free
/// memory at the top of the heap is given back.
const THRESHOLD_BYTES: &str = "1048576";

/// Starts this process again with the allocator settings, unless they are set already;
/// returns only if they are (or the restart is impossible: then it runs as it is).
pub fn tune_or_continue() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;

        let arenas = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get).to_string();
        let settings = [
            ("MALLOC_ARENA_MAX", arenas.as_str()),
            ("MALLOC_TRIM_THRESHOLD_", THRESHOLD_BYTES),
            ("MALLOC_MMAP_THRESHOLD_", THRESHOLD_BYTES),
        ];
        let given = |name: &str| std::env::var_os(name).is_some();
        let tunables_given =
            std::env::var("GLIBC_TUNABLES").is_ok_and(|tunables| tunables.contains("glibc.malloc."));
        if given(APPLIED) || tunables_given || settings.iter().any(|(name, _)| given(name)) {
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let mut command = std::process::Command::new(exe);
        command.args(std::env::args_os().skip(1)).env(APPLIED, "1").envs(settings);
        // `exec` returns only when it failed (say, the binary was replaced on disk).
        let error = command.exec();
        eprintln!("note: running with glibc's default allocator settings: {error}");
    }
}
