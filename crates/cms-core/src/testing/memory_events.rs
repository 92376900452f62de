//! The event history in memory ([`EventStore`]): one shared instance stands for a store
//! every server of a site appends to.

use std::sync::Mutex;

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::error::CoreResult;
use crate::ports::{EventStore, StoredEvent};

#[derive(Default)]
pub struct MemoryEventStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Kept records, oldest first, with when they were appended.
    records: Vec<(StoredEvent, OffsetDateTime)>,
    last: u64,
}

impl MemoryEventStore {
    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl EventStore for MemoryEventStore {
    async fn append(&self, at: OffsetDateTime, records: &[String]) -> CoreResult<Vec<u64>> {
        let mut state = self.state.lock().unwrap();
        let mut ids = Vec::with_capacity(records.len());
        for record in records {
            state.last += 1;
            let id = state.last;
            state.records.push((StoredEvent { id, record: record.clone() }, at));
            ids.push(id);
        }
        Ok(ids)
    }

    async fn read_after(&self, after: u64, limit: usize) -> CoreResult<Vec<StoredEvent>> {
        let state = self.state.lock().unwrap();
        let start = state.records.partition_point(|(stored, _)| stored.id <= after);
        Ok(state.records[start..].iter().take(limit).map(|(stored, _)| stored.clone()).collect())
    }

    async fn last_id(&self) -> CoreResult<u64> {
        Ok(self.state.lock().unwrap().last)
    }

    async fn forget_before(&self, cutoff: OffsetDateTime) -> CoreResult<()> {
        let mut state = self.state.lock().unwrap();
        let keep_from =
            state.records.partition_point(|(_, at)| *at < cutoff).min(state.records.len().saturating_sub(1));
        state.records.drain(..keep_from);
        Ok(())
    }
}
