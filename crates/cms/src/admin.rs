//! `cms users|keys|license|webhooks`: one-line output per record, one-line errors.

use std::fs;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use cms_core::account::{KeyFamily, Role};
use cms_core::events::EventKind;
use cms_core::license::{Feature, License, LicenseState};
use cms_core::policy::Caller;
use cms_webhooks::{LogEntry, Subscription};
use time::format_description::well_known::Rfc3339;

use crate::site::{OpenSite, Purpose, Site, random_key_bytes};

#[cfg(test)]
mod wording {
    #[test]
    fn counts_are_singular_or_plural() {
        assert_eq!(super::plural(1, "entry", "entries"), "1 entry");
        assert_eq!(super::plural(0, "entry", "entries"), "0 entries");
        assert_eq!(super::plural(2, "key", "keys"), "2 keys");
    }
}

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Manage user accounts (the web editor's and the API keys' owners).
    #[command(subcommand)]
    Users(UsersCommand),
    /// Manage API keys (api_ for the REST API, mcp_ for /mcp).
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Show or install the license (which features are on).
    #[command(subcommand)]
    License(LicenseCommand),
    /// Manage webhook subscriptions and their delivery log.
    #[command(subcommand)]
    Webhooks(WebhooksCommand),
    /// Manage preview links.
    #[command(subcommand)]
    Previews(PreviewsCommand),
}

/// `--yes`: what a destructive command takes to skip its question on a terminal.
#[derive(clap::Args, Clone, Copy)]
pub struct Confirm {
    /// Do not ask for confirmation (a command that is not run on a terminal never asks).
    #[arg(long, short)]
    yes: bool,
}

#[derive(Subcommand)]
pub enum PreviewsCommand {
    /// Rotate the site's preview key: every preview link made before stops working at once.
    #[command(after_help = "Examples:\n  cms previews revoke-all --site /srv/my-site")]
    RevokeAll {
        #[command(flatten)]
        confirm: Confirm,
    },
}

impl AdminCommand {
    /// Whether the command can publish events: only these start webhook delivery workers.
    /// No wildcard, so that a new command has to say.
    pub fn emits_events(&self) -> bool {
        match self {
            Self::Users(UsersCommand::Add { .. } | UsersCommand::Remove { .. }) => true,
            Self::Users(UsersCommand::List | UsersCommand::Passwd { .. })
            | Self::Keys(KeysCommand::Create { .. } | KeysCommand::List | KeysCommand::Revoke { .. })
            | Self::License(LicenseCommand::Show | LicenseCommand::Install { .. })
            | Self::Webhooks(_)
            | Self::Previews(PreviewsCommand::RevokeAll { .. }) => false,
        }
    }

    /// Whether the command changes the site: these say first which site they act on.
    /// No wildcard, so that a new command has to say.
    pub fn changes_site(&self) -> bool {
        match self {
            Self::Users(UsersCommand::List)
            | Self::Keys(KeysCommand::List)
            | Self::License(LicenseCommand::Show)
            | Self::Webhooks(WebhooksCommand::List | WebhooksCommand::Log) => false,
            Self::Users(
                UsersCommand::Add { .. } | UsersCommand::Remove { .. } | UsersCommand::Passwd { .. },
            )
            | Self::Keys(KeysCommand::Create { .. } | KeysCommand::Revoke { .. })
            | Self::License(LicenseCommand::Install { .. })
            | Self::Webhooks(
                WebhooksCommand::Add { .. }
                | WebhooksCommand::Enable { .. }
                | WebhooksCommand::Disable { .. }
                | WebhooksCommand::Remove { .. }
                | WebhooksCommand::Test { .. }
                | WebhooksCommand::Redeliver { .. }
                | WebhooksCommand::ClearLog { .. },
            )
            | Self::Previews(PreviewsCommand::RevokeAll { .. }) => true,
        }
    }
}

/// Opens the site for one command: with delivery workers only if it can emit events.
pub fn open(site: &Site, command: &AdminCommand) -> anyhow::Result<OpenSite> {
    site.open(Purpose::Command { emits_events: command.emits_events() })
}

/// Runs one administration command, then delivers the webhooks its changes triggered
/// (the `user.*` events of `users add|remove`) before the process exits. A command that
/// changes the site first says which (on standard error, so that standard output stays
/// the command's answer).
pub fn run(site: &Site, command: AdminCommand) -> anyhow::Result<()> {
    let open = open(site, &command)?;
    if command.changes_site() {
        eprintln!("{}", site_line(&open));
    }
    let result = block_on(async {
        match command {
            AdminCommand::Users(command) => users(&open, command).await,
            AdminCommand::Keys(command) => keys(&open, command).await,
            AdminCommand::License(command) => license(&open, command).await,
            AdminCommand::Webhooks(command) => webhooks(&open, command),
            AdminCommand::Previews(PreviewsCommand::RevokeAll { confirm }) => {
                ask(confirm, &open, "make every preview link of this site stop working")?;
                open.cms.revoke_previews(Caller::Operator).await?;
                println!("revoked every preview link (the preview key is new)");
                Ok(())
            }
        }
    });
    open.finish_deliveries();
    result
}

/// `site: /srv/my-site`, and the bucket when the content lives in one.
fn site_line(open: &OpenSite) -> String {
    match open.storage.strip_prefix("bucket: ") {
        Some(bucket) => format!("site: {} (content in {bucket})", open.root.display()),
        None => format!("site: {}", open.root.display()),
    }
}

/// Asks before a destructive change, on a terminal only (`--yes` skips the question);
/// anything but `y` or `yes` cancels, changing nothing.
fn ask(confirm: Confirm, open: &OpenSite, what: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    if confirm.yes || !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(());
    }
    eprint!("{what} on {}? [y/N] ", open.root.display());
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).context("reading the answer")?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => anyhow::bail!("cancelled; nothing was changed"),
    }
}

/// Runs one command's facade calls to completion. The file adapters move their blocking
/// I/O to tokio's blocking pool, so they need a tokio runtime; one thread (and its
/// blocking pool) is plenty for one command.
pub fn block_on<T>(work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(work)
}

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Add a user, or change an existing user's role (the last owner keeps theirs).
    #[command(after_help = "Examples:\n  cms users add --email me@example.com --role owner\n  \
                            cms users add --email ann@example.com --role editor --site /srv/my-site")]
    Add {
        /// The user's email address (their name when signing in to the web editor).
        #[arg(long, value_name = "EMAIL")]
        email: String,
        /// owner, admin or editor, highest first: a higher role can do all that a lower one
        /// can, and only owners manage users, keys, webhooks and the theme.
        #[arg(long, value_parser = ["owner", "admin", "editor"])]
        role: String,
    },
    /// List users: email and role, one per line.
    #[command(after_help = "Examples:\n  cms users list --site /srv/my-site")]
    List,
    /// Remove a user and revoke their keys (the last owner cannot be removed).
    #[command(after_help = "Examples:\n  cms users remove --email ann@example.com --site /srv/my-site\n  \
                            cms users remove --email ann@example.com --yes   (no question, in a script)")]
    Remove {
        /// The email address of the user to remove.
        #[arg(long, value_name = "EMAIL")]
        email: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Set a user's web editor password, read from standard input (one line; at least 8
    /// characters). Their signed-in sessions end.
    #[command(
        after_help = "Examples:\n  cms users passwd --email me@example.com          (asks, without echo)\n  \
                            echo 'a long password' | cms users passwd --email me@example.com"
    )]
    Passwd {
        /// The email address of the user whose password is set.
        #[arg(long, value_name = "EMAIL")]
        email: String,
    },
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create a key for a user; the plaintext is printed once, as the last line.
    #[command(after_help = "Examples:\n  cms keys create --user me@example.com\n  \
                            cms keys create --user me@example.com --name ci --site /srv/my-site\n  \
                            cms keys create --user me@example.com --mcp      (for an AI agent)\n  \
                            KEY=$(cms keys create --user me@example.com | tail -n 1)")]
    Create {
        /// The email address of the user the key acts as (with their role).
        #[arg(long, value_name = "EMAIL")]
        user: String,
        /// A name to tell the user's keys apart in `cms keys list`.
        #[arg(long, default_value = "default")]
        name: String,
        /// An `mcp_` key, for the AI-agent endpoint `/mcp` (it does not open the REST API,
        /// and an `api_` key does not open `/mcp`).
        #[arg(long)]
        mcp: bool,
    },
    /// List keys: id, user, name, created (RFC 3339), kind (api or mcp; never the plaintext).
    #[command(after_help = "Examples:\n  cms keys list --site /srv/my-site")]
    List,
    /// Revoke a key by id; it stops working on the next request.
    #[command(after_help = "Examples:\n  cms keys revoke key_3f9c2a71d0 --site /srv/my-site")]
    Revoke {
        /// The key's id, as `cms keys list` shows it (key_...).
        id: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

#[derive(Subcommand)]
pub enum LicenseCommand {
    /// Show the installed license and whether it opens the API; fails when it does not.
    #[command(after_help = "Examples:\n  cms license show --site /srv/my-site")]
    Show,
    /// Validate and install a license file (a YAML file: licensee, features, and optionally
    /// expires_at and signature).
    #[command(after_help = "Examples:\n  cms license install license.yaml --site /srv/my-site\n\n\
                            A license file for a self-hosted site:\n  \
                            licensee: My Site\n  \
                            features: [json_api, theme_customization, webhooks, mcp]")]
    Install {
        /// The license file to install.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
pub enum WebhooksCommand {
    /// Subscribe an HTTPS endpoint to events; the signing secret is printed once, as the
    /// last line.
    #[command(
        after_help = "Examples:\n  cms webhooks add --url https://hooks.example.com/cms --events file.created,file.updated"
    )]
    Add {
        /// The endpoint; must start with https://.
        #[arg(long)]
        url: String,
        /// Comma-separated: file.created, file.updated, file.deleted, user.created,
        /// user.updated, user.deleted, item.published, item.unpublished.
        #[arg(long)]
        events: String,
    },
    /// List subscriptions: id, state, URL, events, created (never the secret).
    #[command(after_help = "Examples:\n  cms webhooks list --site /srv/my-site")]
    List,
    /// Enable a subscription by id.
    #[command(after_help = "Examples:\n  cms webhooks enable wh_3f9c2a71d0")]
    Enable {
        /// The subscription's id, as `cms webhooks list` shows it (wh_...).
        id: String,
    },
    /// Disable a subscription by id (nothing is sent to it until enabled again).
    #[command(after_help = "Examples:\n  cms webhooks disable wh_3f9c2a71d0")]
    Disable {
        /// The subscription's id, as `cms webhooks list` shows it (wh_...).
        id: String,
    },
    /// Remove a subscription by id (its delivery log entries stay).
    #[command(after_help = "Examples:\n  cms webhooks remove wh_3f9c2a71d0")]
    Remove {
        /// The subscription's id, as `cms webhooks list` shows it (wh_...).
        id: String,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Show the delivery log, oldest first: time, delivery id, webhook, event, URL,
    /// attempt number, HTTP status, success or error.
    #[command(after_help = "Examples:\n  cms webhooks log --site /srv/my-site")]
    Log,
    /// Send a `ping` event to a subscription now, and say how it answered.
    #[command(after_help = "Examples:\n  cms webhooks test wh_3f9c2a71d0")]
    Test {
        /// The subscription's id, as `cms webhooks list` shows it (wh_...).
        id: String,
    },
    /// Send a logged delivery again (same body and delivery id, as a new attempt).
    #[command(after_help = "Examples:\n  cms webhooks redeliver dlv_0c8e1f5a2b")]
    Redeliver {
        /// The delivery's id, as `cms webhooks log` shows it.
        delivery_id: String,
    },
    /// Empty the delivery log.
    #[command(after_help = "Examples:\n  cms webhooks clear-log --site /srv/my-site")]
    ClearLog {
        #[command(flatten)]
        confirm: Confirm,
    },
}

pub async fn users(site: &OpenSite, command: UsersCommand) -> anyhow::Result<()> {
    match command {
        UsersCommand::Add { email, role } => {
            let role: Role = role.parse()?;
            let (user, created) = site.cms.add_user(Caller::Operator, &email, role).await?;
            let verb = if created { "added" } else { "updated" };
            println!("{verb} {} ({})", user.email, user.role);
        }
        UsersCommand::List => {
            for user in site.cms.users(Caller::Operator).await? {
                println!("{} {}", user.email, user.role);
            }
        }
        UsersCommand::Remove { email, confirm } => {
            let keys = site
                .cms
                .keys(Caller::Operator)
                .await?
                .iter()
                .filter(|k| k.email.eq_ignore_ascii_case(email.trim()))
                .count();
            ask(confirm, site, &format!("remove {email} and revoke their {}", plural(keys, "key", "keys")))?;
            site.cms.remove_user(Caller::Operator, &email).await?;
            println!("removed {email} and their keys");
        }
        UsersCommand::Passwd { email } => {
            let password = crate::password::read_new(&email)?;
            let hash = cms_core::account::hash_password(&password, crate::password::random_salt()?)?;
            site.cms.set_password(Caller::Operator, &email, &hash).await?;
            println!("set the password of {email}");
        }
    }
    Ok(())
}

pub async fn keys(site: &OpenSite, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create { user, name, mcp } => {
            let family = if mcp { KeyFamily::Agent } else { KeyFamily::Api };
            let key =
                site.cms.create_key_of(Caller::Operator, family, &user, &name, random_key_bytes()?).await?;
            let what = if mcp { "an mcp key (for /mcp)" } else { "key" };
            println!("created {what} {} for {} (the key is shown once):", key.record.id, key.record.email);
            println!("{}", key.plaintext);
        }
        KeysCommand::List => {
            for key in site.cms.keys(Caller::Operator).await? {
                let kind = KeyFamily::of(&key).as_str();
                println!("{} {} {} {} {kind}", key.id, key.email, key.name, unix_rfc3339(key.created));
            }
        }
        KeysCommand::Revoke { id, confirm } => {
            ask(confirm, site, &format!("revoke the key {id}"))?;
            site.cms.revoke_key(Caller::Operator, &id).await?;
            println!("revoked {id}");
        }
    }
    Ok(())
}

pub async fn license(site: &OpenSite, command: LicenseCommand) -> anyhow::Result<()> {
    match command {
        LicenseCommand::Show => {
            let state = site.cms.license_state().await?;
            match &state {
                LicenseState::Missing => println!("no license installed"),
                LicenseState::Invalid(reason) => println!("invalid license: {reason}"),
                LicenseState::Expired(license) => print_license(license, "expired"),
                LicenseState::Active(license) if !state.has(Feature::JsonApi) => {
                    print_license(license, "active, but without json_api: every route answers 402")
                }
                LicenseState::Active(license) => print_license(license, "active"),
            }
            // A license that does not open the API is a failure, with what fixes it.
            let problems = crate::site::license_problems(&site.root, &state);
            for line in problems.iter().flat_map(|p| p.lines()) {
                println!("problem: {line}");
            }
            if !problems.is_empty() {
                anyhow::bail!("the license has {} (above)", plural(problems.len(), "problem", "problems"));
            }
        }
        LicenseCommand::Install { file } => {
            let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let license = site.cms.install_license(Caller::Operator, &text).await?;
            println!("installed the license of {} ({})", license.licensee, license.features.join(", "));
        }
    }
    Ok(())
}

fn print_license(license: &License, state: &str) {
    println!("licensee: {}", license.licensee);
    println!("features: {}", license.features.join(", "));
    println!("expires_at: {}", license.expires_at.as_deref().unwrap_or("never"));
    println!("state: {state}");
}

pub fn webhooks(site: &OpenSite, command: WebhooksCommand) -> anyhow::Result<()> {
    let store = &site.webhook_store;
    match command {
        WebhooksCommand::Add { url, events } => {
            let added = store.add(&url, &events)?;
            println!("added webhook {} for {} to {}", added.id, event_names(&added), added.url);
            println!("its signing secret (shown once; receivers verify X-Webhook-Signature with it):");
            println!("{}", added.secret);
        }
        WebhooksCommand::List => {
            for hook in store.list()? {
                let state = if hook.enabled { "enabled" } else { "disabled" };
                println!(
                    "{} {state} {} {} {}",
                    hook.id,
                    hook.url,
                    event_names(&hook),
                    rfc3339(hook.created_at)
                );
            }
        }
        WebhooksCommand::Enable { id } => {
            store.set_enabled(&id, true)?;
            println!("enabled {id}");
        }
        WebhooksCommand::Disable { id } => {
            store.set_enabled(&id, false)?;
            println!("disabled {id}");
        }
        WebhooksCommand::Remove { id, confirm } => {
            ask(confirm, site, &format!("remove the webhook {id}"))?;
            store.remove(&id)?;
            println!("removed {id}");
        }
        WebhooksCommand::Log => {
            for entry in store.log()? {
                println!("{}", log_line(&entry));
            }
        }
        WebhooksCommand::ClearLog { confirm } => {
            ask(confirm, site, "empty the webhook delivery log")?;
            let count = store.clear_log()?;
            println!("cleared the delivery log ({})", plural(count, "entry", "entries"));
        }
        WebhooksCommand::Test { id } => {
            let hook = store
                .list()?
                .into_iter()
                .find(|h| h.id == id)
                .with_context(|| format!("no webhook with id {id:?}; `cms webhooks list` shows them"))?;
            let body = cms_webhooks::payload::ping_body(&hook.id, time::OffsetDateTime::now_utc());
            let entry = deliverer(site)?.deliver(
                &hook,
                EventKind::Ping,
                &body,
                &cms_webhooks::model::delivery_id(),
                1,
            );
            report_attempt(store, entry)?;
        }
        WebhooksCommand::Redeliver { delivery_id } => {
            let log = store.log()?;
            let logged = log.iter().rev().find(|e| e.delivery == delivery_id && e.body.is_some()).with_context(|| {
                format!("no delivery {delivery_id:?} with a body in the delivery log; `cms webhooks log` shows them")
            })?;
            let hook = store.list()?.into_iter().find(|h| h.id == logged.webhook).with_context(|| {
                format!("the webhook {} of that delivery no longer exists", logged.webhook)
            })?;
            let attempt =
                log.iter().filter(|e| e.delivery == delivery_id).map(|e| e.attempt).max().unwrap_or(1) + 1;
            let body = logged.body.clone().unwrap_or_default();
            let entry = deliverer(site)?.deliver(&hook, logged.event, body.as_bytes(), &delivery_id, attempt);
            report_attempt(store, entry)?;
        }
    }
    Ok(())
}

/// A deliverer with the site's settings, for the commands that send one request.
fn deliverer(site: &OpenSite) -> anyhow::Result<cms_webhooks::Deliverer> {
    let config = cms_webhooks::SinkConfig::for_site(
        &site.root,
        &site.root.join(cms_fs::STATE_DIR),
        &site.config.webhooks,
        site.webhook_store.clone(),
    );
    Ok(cms_webhooks::Deliverer::new(&config.delivery, site.webhook_store.clock())?)
}

/// Logs one attempt made by a command and prints it; a failure is the command's error.
fn report_attempt(store: &cms_webhooks::WebhookStore, entry: LogEntry) -> anyhow::Result<()> {
    store.append_log(std::slice::from_ref(&entry))?;
    let line = log_line(&entry);
    if !entry.success {
        anyhow::bail!("delivery failed: {line}");
    }
    println!("{line}");
    Ok(())
}

fn event_names(hook: &Subscription) -> String {
    hook.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(",")
}

fn rfc3339(time: time::OffsetDateTime) -> String {
    time.format(&Rfc3339).unwrap_or_default()
}

/// A Unix time (seconds) in RFC 3339, as every time the CLI prints.
fn unix_rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds).map_or_else(|_| seconds.to_string(), rfc3339)
}

/// `1 entry`, `2 entries`, `0 entries`.
pub fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 { format!("1 {one}") } else { format!("{count} {many}") }
}

/// `<time> <delivery> <webhook> <event> <url> attempt=<n> <status|-> success|error[: why]`
fn log_line(entry: &LogEntry) -> String {
    let status = entry.status.map_or_else(|| "-".to_owned(), |s| s.to_string());
    let outcome = match (&entry.error, entry.success) {
        (None, true) => "success".to_owned(),
        (Some(why), _) => format!("error: {why}"),
        (None, false) => "error".to_owned(),
    };
    format!(
        "{} {} {} {} {} attempt={} {status} {outcome}",
        rfc3339(entry.time),
        entry.delivery,
        entry.webhook,
        entry.event.as_str(),
        entry.url,
        entry.attempt
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Args {
        #[command(subcommand)]
        command: AdminCommand,
    }

    /// Delivery workers (threads, the TLS set-up of `webhooks.ca_file`) are started only
    /// for the commands that can emit events: `users add` and `users remove`.
    #[test]
    fn only_commands_that_emit_events_start_delivery_workers() {
        let dir = tempfile::tempdir().unwrap();
        let site = crate::site::tests::demo_copy(dir.path());
        let cases: [(&[&str], bool); 17] = [
            (&["users", "add", "--email", "a@example.com", "--role", "editor"], true),
            (&["users", "remove", "--email", "a@example.com"], true),
            (&["users", "list"], false),
            (&["users", "passwd", "--email", "a@example.com"], false),
            (&["keys", "create", "--user", "a@example.com"], false),
            (&["keys", "create", "--user", "a@example.com", "--mcp"], false),
            (&["keys", "list"], false),
            (&["keys", "revoke", "k", "--yes"], false),
            (&["license", "show"], false),
            (&["license", "install", "license.yaml"], false),
            (&["webhooks", "add", "--url", "https://e.com", "--events", "file.created"], false),
            (&["webhooks", "list"], false),
            (&["webhooks", "enable", "wh_x"], false),
            (&["webhooks", "disable", "wh_x"], false),
            (&["webhooks", "remove", "wh_x"], false),
            (&["webhooks", "log"], false),
            (&["webhooks", "clear-log"], false),
        ];
        for (args, delivers) in cases {
            let command = Args::try_parse_from([&["cms"], args].concat()).unwrap().command;
            let open = open(&site, &command).unwrap();
            assert_eq!(open.webhooks.is_some(), delivers, "{args:?}");
            open.finish_deliveries();
        }
    }
}
