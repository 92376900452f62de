//! `cms schema export`: the content models of a site's collections as JSON Schemas or
//! TypeScript types, for front ends and code generators (read from `cms.yaml` alone; the
//! content is not opened).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use cms_core::collection::Collection;
use cms_core::model::type_name;

use crate::site::Site;

#[derive(Subcommand)]
pub enum SchemaCommand {
    /// Write the schema of every collection with a content model (`fields:` in cms.yaml).
    #[command(
        after_help = "Examples:\n  cms schema export --site /srv/my-site --format typescript > content.d.ts\n  \
                            cms schema export --format json-schema --out schemas/   (one file per collection)"
    )]
    Export(ExportArgs),
}

#[derive(Args)]
pub struct ExportArgs {
    /// json-schema: a JSON Schema (2020-12) per collection; typescript: an interface per
    /// collection, in one file.
    #[arg(long, value_enum, default_value = "json-schema")]
    format: Format,
    /// A folder to write into (COLLECTION.schema.json, or content.d.ts); standard output
    /// when absent (JSON Schemas then as one object by collection).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    JsonSchema,
    Typescript,
}

pub fn run(site: &Site, command: SchemaCommand) -> anyhow::Result<()> {
    let SchemaCommand::Export(args) = command;
    let config = cms_fs::load_config(&site.root)?;
    let collections = Collection::all_from_config(&config.collections);
    let modelled: Vec<&Collection> = collections.iter().filter(|c| c.model.is_some()).collect();
    if modelled.is_empty() {
        eprintln!("note: no collection of {} has a content model (fields: in cms.yaml)", site.root.display());
    }
    let mut files: Vec<(String, String)> = Vec::new();
    match args.format {
        Format::JsonSchema => {
            let schemas: Vec<(String, serde_json::Value)> = modelled
                .iter()
                .filter_map(|c| c.model.as_ref().map(|m| (c.slug.clone(), m.json_schema(&c.label))))
                .collect();
            if args.out.is_some() {
                for (slug, schema) in &schemas {
                    files.push((format!("{slug}.schema.json"), serde_json::to_string_pretty(schema)? + "\n"));
                }
            } else {
                let all: serde_json::Map<String, serde_json::Value> = schemas.into_iter().collect();
                files.push((String::new(), serde_json::to_string_pretty(&all)? + "\n"));
            }
        }
        Format::Typescript => {
            let mut text = format!(
                "// The frontmatter of the content of {}, from its content models (cms schema export).\n",
                config.site.name
            );
            for collection in &modelled {
                if let Some(model) = &collection.model {
                    text.push('\n');
                    text.push_str(&model.typescript(&type_name(&collection.slug)));
                }
            }
            files.push(("content.d.ts".to_owned(), text));
        }
    }
    match &args.out {
        None => {
            for (_, text) in files {
                print!("{text}");
            }
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot make {}", dir.display()))?;
            for (name, text) in files {
                let path = dir.join(name);
                std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
                println!("wrote {}", path.display());
            }
        }
    }
    Ok(())
}
