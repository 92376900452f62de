pub mod discovery;
pub mod files;
pub mod items;
pub mod resources;
pub mod search;
pub mod service;
pub mod settings;
pub mod versions;
