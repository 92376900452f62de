pub mod discovery;
pub mod items;
pub mod service;
pub mod versions;
