//! `cms init DIR`: a new site in an empty or new folder, ready to serve: the folders, a
//! commented `cms.yaml` with its JSON Schema beside it, the site's own license, a first
//! post and page, and (with `--owner`, or asked on a terminal) the first owner, whose key
//! and password are printed once.

use std::fs;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use cms_core::account::Role;
use cms_core::license::Feature;
use cms_core::policy::Caller;

use crate::site::{OpenSite, Purpose, Site, random_key_bytes};

#[derive(Args)]
pub struct InitArgs {
    /// The folder to make the site in: new, or empty.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// The email address of the site's first owner; their API key and web editor password
    /// are printed once. Asked for on a terminal when absent.
    #[arg(long, value_name = "EMAIL")]
    owner: Option<String>,
    /// The site's name (site.name). Default: the folder's name.
    #[arg(long)]
    name: Option<String>,
    /// The site's public address (site.url), where readers will find it.
    #[arg(long, default_value = "http://localhost:8080")]
    url: String,
    /// The features the site's license turns on, comma-separated: json_api (the REST API
    /// and the web editor; without it every route answers 402), theme_customization,
    /// webhooks, mcp. Default: all of them.
    #[arg(long, value_name = "LIST")]
    features: Option<String>,
    /// Keep the site in git: the folder becomes a git repository on branch main (the
    /// site's private state .cms/ ignored), the new site its first commit, and the server
    /// commits every change by its author (git: in cms.yaml; docs/git.md).
    #[arg(long)]
    git: bool,
}

/// The schema `cms config schema` prints and `cms init` saves as `cms.schema.json`.
pub fn schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&crate::backend::config_schema()).unwrap_or_default();
    text.push('\n');
    text
}

/// Where `cms.yaml`'s first line points editors to.
pub const SCHEMA_FILE: &str = "cms.schema.json";

pub fn run(args: InitArgs) -> anyhow::Result<()> {
    // Everything that can be refused is refused before anything is written.
    let features = features(args.features.as_deref())?;
    let name = match &args.name {
        Some(name) => name.clone(),
        None => folder_name(&args.dir),
    };
    let owner = match args.owner {
        Some(owner) => Some(cms_core::account::parse_email(&owner)?),
        None => ask_owner()?,
    };
    let mut config = config_text(&name, &args.url);
    if args.git {
        config.push_str(GIT_SECTION);
    }
    crate::backend::parse_config(&config).context("the site name or --url")?;
    let made_folder = prepare_folder(&args.dir)?;
    let result = make(&args.dir, &name, &config, &features, owner.as_deref(), args.git);
    if result.is_err() {
        // Leave nothing half made: the folder is as it was (missing, or empty).
        let _ = if made_folder { fs::remove_dir_all(&args.dir) } else { empty_folder(&args.dir) };
    }
    result
}

/// `--features`, checked: every name known (with a "did you mean"), none twice.
fn features(list: Option<&str>) -> anyhow::Result<Vec<Feature>> {
    let Some(list) = list else { return Ok(Feature::ALL.to_vec()) };
    let mut features = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match Feature::parse(name) {
            Ok(feature) if !features.contains(&feature) => features.push(feature),
            Ok(_) => {}
            Err(near) => bail!(
                "--features: unknown feature {name:?}{}; the features are: {}",
                near.map(|f| format!(" (did you mean {}?)", f.as_str())).unwrap_or_default(),
                Feature::names()
            ),
        }
    }
    Ok(features)
}

fn folder_name(dir: &Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    absolute.file_name().map_or_else(|| "My Site".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// On a terminal, asks for the owner's email (empty: none yet).
fn ask_owner() -> anyhow::Result<Option<String>> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    eprint!("email address of the site's owner (Enter: add one later): ");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).context("reading the owner's email")?;
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    Ok(Some(cms_core::account::parse_email(line)?))
}

/// Makes the folder if it is missing (`true`), or checks that it is empty.
fn prepare_folder(dir: &Path) -> anyhow::Result<bool> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} is not empty; cms init makes a new site in a new or empty folder (an existing site is served with `cms serve --site {}`)",
                    dir.display(),
                    dir.display()
                );
            }
            Ok(false)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
            Ok(true)
        }
        Err(error) => Err(error).with_context(|| format!("reading {}", dir.display())),
    }
}

fn empty_folder(dir: &Path) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() { fs::remove_dir_all(path)? } else { fs::remove_file(path)? }
    }
    Ok(())
}

fn make(
    dir: &Path,
    name: &str,
    config: &str,
    features: &[Feature],
    owner: Option<&str>,
    git: bool,
) -> anyhow::Result<()> {
    for folder in ["content/posts", "content/pages", "media/uploads", cms_fs::STATE_DIR] {
        fs::create_dir_all(dir.join(folder)).with_context(|| format!("making {folder}"))?;
    }
    let write = |relative: &str, text: &str| {
        let path = dir.join(relative);
        fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write(cms_fs::CONFIG_FILE, config)?;
    write(SCHEMA_FILE, &schema_text())?;
    let today = time::OffsetDateTime::now_utc().date();
    write(&format!("content/posts/{today}-welcome.md"), WELCOME_POST)?;
    write("content/pages/about.md", ABOUT_PAGE)?;

    let site = Site { root: dir.canonicalize().unwrap_or_else(|_| dir.to_owned()), is_demo: false };
    // Adding the owner publishes `user.created`: with delivery workers, so that it is
    // handled as any command's event (a new site has no subscriptions to send it to).
    let open = site.open(Purpose::Command { emits_events: true })?;
    let first_owner = crate::admin::block_on(async {
        open.cms.install_license(Caller::Operator, &license_text(name, features)).await?;
        match owner {
            Some(email) => Ok(Some(add_owner(&open, email).await?)),
            None => Ok(None),
        }
    })?;
    open.finish_deliveries();
    if git {
        cms_git::init(&site.root, GIT_BRANCH).context("making the site folder a git repository")?;
    }
    report(&site.root, features, owner, first_owner, git);
    Ok(())
}

/// The owner, an API key and a web editor password (both to be printed once).
async fn add_owner(open: &OpenSite, email: &str) -> anyhow::Result<(String, String)> {
    open.cms.add_user(Caller::Operator, email, Role::Owner).await?;
    let key = open.cms.create_key(Caller::Operator, email, "init", random_key_bytes()?).await?.plaintext;
    let password = hex::encode(&random_key_bytes()?[..12]);
    let hash = cms_core::account::hash_password(&password, crate::password::random_salt()?)?;
    open.cms.set_password(Caller::Operator, email, &hash).await?;
    Ok((key, password))
}

fn report(
    root: &Path,
    features: &[Feature],
    owner: Option<&str>,
    first_owner: Option<(String, String)>,
    git: bool,
) {
    let site = root.display();
    let names: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
    println!("made a new site in {site}:");
    println!("  cms.yaml            the configuration, commented (every key: docs/configuration.md)");
    println!("  {SCHEMA_FILE:<19} its JSON Schema, so that editors check cms.yaml as you type");
    println!("  content/posts/      the Posts collection, with a first post");
    println!("  content/pages/      the Pages collection, with an About page");
    println!("  media/uploads/      media, served at /media/uploads");
    println!(
        "  .cms/license.yaml   this site's license, with the features {}",
        if names.is_empty() { "none".to_owned() } else { names.join(", ") }
    );
    if git {
        println!(
            "  .git/               a git repository on branch {GIT_BRANCH}, the new site its first commit;"
        );
        println!("                      the server commits each change by its author (docs/git.md)");
    }
    if !features.contains(&Feature::JsonApi) {
        println!(
            "warning: without json_api every route answers 402; `cms license install FILE` changes the features"
        );
    }
    match (owner, first_owner) {
        (Some(email), Some((key, password))) => {
            println!("added the owner {email} with this API key (shown once):");
            println!("{key}");
            println!("and this password for the web editor (shown once):");
            println!("{password}");
            println!("next:");
            println!(
                "  cms serve --site {site}      then open http://127.0.0.1:8080/admin/ and sign in as {email}"
            );
        }
        _ => {
            println!("next, add an owner, a key and a password, then serve the site:");
            println!("  cms users add --email YOU@EXAMPLE.COM --role owner --site {site}");
            println!("  cms keys create --user YOU@EXAMPLE.COM --site {site}");
            println!("  cms users passwd --email YOU@EXAMPLE.COM --site {site}");
            println!("  cms serve --site {site}");
        }
    }
    println!("  cms check --site {site}      checks the configuration, the license and the folders");
}

fn license_text(name: &str, features: &[Feature]) -> String {
    let names: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
    format!(
        "# The license of this self-hosted site, written by `cms init`: the features it turns on.\n\
         # Without json_api every route answers 402. `cms license show` shows it; to change the\n\
         # features, edit a copy and install it with `cms license install FILE`.\n\
         # The features: {}.\n\
         licensee: {}\n\
         features: [{}]\n",
        Feature::names(),
        yaml_string(name),
        names.join(", ")
    )
}

/// A YAML double-quoted string (JSON's escapes are YAML's).
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The commented `cms.yaml` of a new site.
fn config_text(name: &str, url: &str) -> String {
    CONFIG_TEMPLATE.replace("{name}", &yaml_string(name)).replace("{url}", &yaml_string(url))
}

const CONFIG_TEMPLATE: &str = r#"# yaml-language-server: $schema=./cms.schema.json
# The configuration of this site. docs/configuration.md lists every key with its default;
# `cms check` checks the file, and editors with a YAML language server check it as you
# type with cms.schema.json (after an upgrade: cms config schema > cms.schema.json).

site:
  name: {name}
  # The public address of the site: canonical and feed URLs start with it.
  url: {url}
  # Items in a page of a list when the client does not say (at most max_per_page).
  per_page: 10
  max_per_page: 100
  # Dates written without an offset are in this time zone (an IANA name).
  timezone: UTC

# Folders of Markdown files with YAML frontmatter, each served as a collection at
# /cms/collections/<the label's slug>/items.
collections:
  - label: Posts
    path: content/posts
    # Where the public site shows them: item URLs in feeds end in /blog/<slug>.
    page_path: /blog
    # New posts' files are named 2026-01-12-<slug>.md.
    date_prefix: true
  - label: Pages
    path: content/pages
    page_path: /

# Media folders: uploads land here and are served at `url`.
resources:
  - label: Media
    path: media/uploads
    url: /media/uploads

# Web pages of these origins may call the API from a browser (add your front end's).
cors:
  allowed_origins: []

# Responsive images: media URLs take ?w=&h=&fit=&format=&q= with only these values, and
# each preset is made when an image is uploaded (docs/images.md).
images:
  sizes: [320, 640, 960, 1280, 1920]
  qualities: [50, 75, 90]
  quality: 75
  presets:
    thumb: { w: 320, h: 320, fit: cover, format: webp }
    large: { w: 1280, format: webp }

# Webhooks (`cms webhooks add`): how deliveries are sent (docs/webhooks.md).
webhooks:
  timeout_secs: 10
  # Retry a failed delivery after these delays (seconds); [] sends each event once.
  retry_delays_secs: [10, 60, 600, 3600]
  # Disable a subscription after this many failed deliveries in a row.
  disable_after: 50

# Item history: the snapshots kept of each item.
versions:
  keep: 50
"#;

/// The branch `cms init --git` makes.
const GIT_BRANCH: &str = "main";

/// What `cms init --git` adds to `cms.yaml`.
const GIT_SECTION: &str = "
# The site folder is a git repository: the server commits each change by the user or key
# that made it (docs/git.md). Name a remote (`git remote add origin URL`) to push them.
git:
  branch: main
  # remote: origin
  # push_every_secs: 0      # 0: push after each commit
  # group_window_ms: 0      # writes of one author within this window may share a commit
";

const WELCOME_POST: &str = "---\n\
title: Welcome\n\
status: published\n\
tags: [welcome]\n\
---\n\
This site was made by `cms init`. Posts are Markdown files with YAML frontmatter in\n\
`content/posts`, pages in `content/pages`: edit them here, in the web editor at\n\
`/admin/`, or through the REST API.\n";

const ABOUT_PAGE: &str = "---\n\
title: About\n\
status: published\n\
---\n\
What this site is about.\n";

#[cfg(test)]
mod tests {
    use super::*;

    /// The template parses with every name a folder can have, and keeps its comments.
    #[test]
    fn the_config_template_parses() {
        for name in ["my-site", "Ann's \"blog\": notes # 1", "ünïcode"] {
            let text = config_text(name, "https://www.example.com");
            let (config, _) =
                crate::backend::parse_config(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
            assert_eq!(config.site.name, name);
            assert_eq!(config.collections.len(), 2);
        }
        let with_git = config_text("site", "https://www.example.com") + GIT_SECTION;
        let (config, _) = crate::backend::parse_config(&with_git).unwrap();
        assert_eq!(config.git.map(|git| git.branch), Some(GIT_BRANCH.to_owned()));
        assert!(features(Some("json_api, mcp")).unwrap() == [Feature::JsonApi, Feature::Mcp]);
        let refused = features(Some("jsonapi")).unwrap_err().to_string();
        assert!(refused.contains("did you mean json_api?"), "{refused}");
        let license = cms_core::license::License::from_yaml(&license_text("A \"B\"", &Feature::ALL)).unwrap();
        assert!(license.check_features().is_ok() && license.licensee == "A \"B\"");
    }
}
