//! The file adapters: the shared contract, plus what only a real disk can show
//! (symlinks, outside edits, atomic writes, state files).

mod contract;
mod disk;
mod model;
mod resources;
mod sweep;
mod watch;
