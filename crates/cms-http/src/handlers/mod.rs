pub mod items;
pub mod service;
pub mod settings;
pub mod versions;
