pub mod items;
pub mod service;
