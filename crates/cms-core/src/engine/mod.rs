//! The engine: what the facade keeps in memory so that no request reads storage for a
//! list, a filter, a search or a count. Each collection's kept index (`index/`: slots,
//! slug maps, the sorted lists, tags, the schedule, paging), its search index
//! (`search.rs`), the model's fields packed per item (`kept.rs`) and the snapshots that
//! carry an index across restarts (`snapshot.rs`).
//!
//! Private to the crate and without I/O: the facade (`service/index.rs`,
//! `service/search.rs`) builds it from what the ports read, changes it only through
//! `Cms::change_entry` and the schedule's advance (each change then goes on the change
//! log, `crate::changes`), and asks it queries. Its public types reach adapters through
//! `cms_core::service` (an item as listed: `IndexedItem`).

pub mod index;
pub mod kept;
pub mod names;
pub mod search;
pub mod snapshot;
