pub mod discovery;
pub mod files;
pub mod items;
pub mod resources;
pub mod service;
pub mod settings;
pub mod versions;
