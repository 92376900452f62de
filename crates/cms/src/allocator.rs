//! The server's memory allocator: mimalloc (the global allocator, see `main.rs`), with
//! settings applied by starting the binary again with them in its environment: mimalloc
//! reads them only as the process starts, and setting them from inside
//! (`mi_option_set`) needs FFI, which the workspace forbids.
//!
//! Why mimalloc: on 2 cores, the same build with glibc's allocator (tuned to one arena per
//! core) answered single items, lists and `/status` 15-40% slower at 100,000 items (the
//! same at 10,000, and writes the same) and restarted a three-language site in 3.3-3.5 s
//! against 2.2-2.8 s (docs/performance.md).
//!
//! Why these settings: by default mimalloc commits its arenas eagerly and gives freed pages
//! back to the system a second later, so a restart, which decodes the index snapshots on
//! every core, peaked at 238 MB against glibc's 198 MB. Given back at once and committed
//! as used, the restart peaked at 183-188 MB and the server held 156 MB after load
//! against glibc's 182 MB, with the throughput above. Settings an operator gives (any
//! `MIMALLOC_*` variable) are kept as given.

/// Set in the environment of the restarted process: it is never restarted twice.
const APPLIED: &str = "CMS_MALLOC_TUNED";

/// The settings, each a `MIMALLOC_*` environment variable.
const SETTINGS: [(&str, &str); 2] = [
    // Freed pages go back to the system now rather than after a delay (1 s by default).
    ("MIMALLOC_PURGE_DELAY", "0"),
    // An arena's memory is committed as it is used, not all at once.
    ("MIMALLOC_ARENA_EAGER_COMMIT", "0"),
];

/// The global allocator of the `cms` binary.
pub type Allocator = mimalloc::MiMalloc;

/// Starts this process again with the allocator settings, unless they are set already;
/// returns only if they are (or the restart is impossible: then it runs as it is).
pub fn tune_or_continue() {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;

        let given = std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("MIMALLOC_"));
        if given || std::env::var_os(APPLIED).is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let mut command = std::process::Command::new(exe);
        command.args(std::env::args_os().skip(1)).env(APPLIED, "1").envs(SETTINGS);
        // `exec` returns only when it failed (say, the binary was replaced on disk).
        let error = command.exec();
        eprintln!("note: running with mimalloc's default settings: {error}");
    }
}
