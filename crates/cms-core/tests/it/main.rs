//! The core driven through its facade with in-memory ports.

mod accounts;
mod changes;
mod contract;
mod discovery;
mod index;
mod invariants;
mod items;
mod model;
mod model_queries;
mod other_nodes;
mod previews;
mod schedule;
mod search;
mod versions;
mod webhooks;
