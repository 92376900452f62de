//! The JSON Schema against the checks and the reference page `docs/configuration.md`
//! (the binary runs the same checks on the schema with every backend's settings).

use super::SiteConfig;
use crate::testing::config_schema;

fn parse(text: &str) -> Result<(), String> {
    SiteConfig::from_yaml(text).map(drop).map_err(|e| e.to_string())
}

#[test]
fn the_schemas_ranges_are_the_checks_ranges() {
    let checked = config_schema::ranges_are_the_checks_ranges(&SiteConfig::json_schema(), &parse);
    assert!(checked >= 22, "{checked} ranges");
}

#[test]
fn the_schema_names_every_key_with_its_default() {
    config_schema::names_every_key_with_its_default(
        &SiteConfig::json_schema(),
        &["site.per_page", "collections[].path", "images.presets.<name>.w", "mcp.max_sessions"],
    );
}

#[test]
fn the_reference_page_covers_every_key_with_its_default_and_an_example() {
    config_schema::reference_page_covers_every_key(
        &SiteConfig::json_schema(),
        &parse,
        include_str!("../../../../docs/configuration.md"),
    );
}
