//! The `cms` command: the composition root. It wires the file adapters into the core and
//! either serves the REST API or runs one administration command.

mod admin;
mod allocator;
mod backend;
mod backup;
mod check;
mod events;
mod git;
mod init;
mod logging;
mod password;
mod progress;
mod schedule;
mod schema;
mod serve;
mod site;
mod site_files;
mod storage;
mod systemd;
mod traces;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Args, Parser, Subcommand};

/// `0.1.0 (commit 1b77278abcde)`: the commit comes from `build.rs`.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("CMS_GIT_COMMIT"), ")");

#[derive(Parser)]
#[command(
    name = "cms",
    version = VERSION,
    about = "A file-based CMS with a JSON REST API",
    long_about = "A file-based CMS with a JSON REST API: Markdown files with YAML frontmatter in \
                  folders, served and edited over HTTP, with a web editor at /admin/.\n\n\
                  With no command it serves a site: the one --site or CMS_SITE names, else the \
                  current folder if it holds a cms.yaml, else a working copy of the bundled demo.",
    after_help = "Examples:\n  cms                                         serve the demo (its owner's key is printed once)\n  \
                  cms init ~/my-site --owner me@example.com   make a new site\n  \
                  cms serve --site ~/my-site                  serve it\n  \
                  cms check --site ~/my-site                  check its configuration, license and folders"
)]
struct Cli {
    /// The site folder (the one holding cms.yaml). Commands that change a site need one:
    /// this, CMS_SITE, or a current folder holding a cms.yaml (init, config and storage
    /// name their folders themselves).
    #[arg(long, global = true, env = "CMS_SITE", value_name = "DIR")]
    site: Option<PathBuf>,
    /// Log what the command does (-v), or more (-vv). RUST_LOG, when set, decides instead.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    verbose: u8,
    #[command(flatten)]
    serve: ServeArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args)]
struct ServeArgs {
    /// The address and port the server listens on (port 0: any free port).
    #[arg(long, env = "CMS_LISTEN", default_value = DEFAULT_LISTEN, value_name = "ADDR")]
    listen: String,
    /// The log's format: text, or one JSON object per line (RUST_LOG says what is kept).
    #[arg(long, env = "CMS_LOG_FORMAT", value_enum, default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the site: the REST API, the web editor at /admin/ and the AI-agent endpoint
    /// at /mcp (what `cms` alone does). Without a site, serves a copy of the bundled demo.
    #[command(after_help = "Examples:\n  cms serve --site /srv/my-site\n  \
                            cms serve --site /srv/my-site --listen 0.0.0.0:8080\n  \
                            CMS_SITE=/srv/my-site CMS_LISTEN=0.0.0.0:8080 cms serve")]
    Serve(ServeArgs),
    /// Make a new site in an empty or new folder: folders, a commented cms.yaml, a license
    /// and, with --owner, the first owner (their key and password are printed once).
    #[command(after_help = "Examples:\n  cms init /srv/my-site --owner me@example.com\n  \
                            cms init my-site --name \"My Site\" --url https://www.example.com\n  \
                            cms init my-site --features json_api,webhooks")]
    Init(init::InitArgs),
    /// Check a site: cms.yaml, the license, folders and permissions, files that cannot be
    /// listed, and for a bucket the credentials, the bucket and its conditional writes.
    /// Exits non-zero on any error, for CI.
    #[command(after_help = "Examples:\n  cms check --site /srv/my-site\n  \
                            cms check --strict            (in a site folder; warnings fail too)")]
    Check(check::CheckArgs),
    /// The configuration file itself.
    #[command(subcommand)]
    Config(ConfigCommand),
    #[command(flatten)]
    Admin(admin::AdminCommand),
    /// The content models of the site's collections, for code generators.
    #[command(subcommand)]
    Schema(schema::SchemaCommand),
    /// Write a site (folder or bucket) into one archive with a checksum manifest, while
    /// its server runs; `cms backup verify FILE` checks an archive. The editor's sessions
    /// and each node's caches stay out.
    #[command(
        after_help = "Examples:\n  cms backup --site /srv/my-site --to /var/backups/cms/site-$(date +%F).tar.gz\n  \
                            cms backup verify /var/backups/cms/site-2026-11-29.tar.gz"
    )]
    Backup(backup::BackupArgs),
    /// Restore an archive of `cms backup` into a new or empty folder, or an empty bucket
    /// prefix; a damaged archive is refused and writes nothing (no --site needed).
    #[command(
        after_help = "Examples:\n  cms restore /var/backups/cms/site-2026-11-29.tar.gz --to /srv/restored\n  \
                            cms restore site.tar.gz --to s3://my-bucket/sites/blog --endpoint http://127.0.0.1:8333"
    )]
    Restore(backup::RestoreArgs),
    /// Move a site between a folder and an S3 bucket (no --site needed).
    #[command(subcommand)]
    Storage(storage::StorageCommand),
    /// The site kept in git (git: in cms.yaml): its branch, commits and pushes.
    #[command(subcommand)]
    Git(git::GitCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the JSON Schema of cms.yaml (editors check the file with it as it is typed).
    #[command(after_help = "Examples:\n  cms config schema > cms.schema.json\n\n\
                            With `# yaml-language-server: $schema=./cms.schema.json` as the first \
                            line of cms.yaml (cms init writes it), editors with a YAML language \
                            server check the file and complete its keys.")]
    Schema,
}

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

#[global_allocator]
static ALLOCATOR: allocator::Allocator = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = parse();
    let serving = matches!(cli.command, None | Some(Command::Serve(_)));
    if serving {
        allocator::tune_or_continue();
    }
    let log_format = match &cli.command {
        Some(Command::Serve(args)) => args.log_format.max(cli.serve.log_format),
        None => cli.serve.log_format,
        Some(_) => logging::LogFormat::Text,
    };
    // Traces only for the server, and only when the environment asks (OTEL_...).
    let traces = match serving.then(traces::wanted) {
        Some(true) => match traces::Export::start() {
            Ok(export) => Some(export),
            Err(error) => {
                eprintln!("error: {error:#}");
                return ExitCode::FAILURE;
            }
        },
        _ => None,
    };
    let log = logging::start(log_format, log_filter(&cli.command, cli.verbose), serving, traces.as_ref());
    let server_setup =
        serve::Serving { traced: traces.is_some(), access: log.as_ref().and_then(|log| log.access_lines()) };
    let result = match cli.command {
        None => site::Site::for_serving(cli.site)
            .and_then(|site| serve::run(site, &cli.serve.listen, server_setup)),
        Some(Command::Serve(args)) => {
            site::Site::for_serving(cli.site).and_then(|site| serve::run(site, &args.listen, server_setup))
        }
        // Names its folder itself.
        Some(Command::Init(args)) => init::run(args),
        Some(Command::Check(args)) => {
            site::Site::for_command(cli.site).and_then(|site| check::run(&site, &args))
        }
        Some(Command::Config(ConfigCommand::Schema)) => print_schema(),
        Some(Command::Schema(command)) => {
            site::Site::for_command(cli.site).and_then(|site| schema::run(&site, command))
        }
        Some(Command::Admin(command)) => {
            site::Site::for_command(cli.site).and_then(|site| admin::run(&site, command))
        }
        Some(Command::Backup(args)) if args.needs_site() => {
            site::Site::for_command(cli.site).and_then(|site| backup::run(Some(&site), args))
        }
        Some(Command::Backup(args)) => backup::run(None, args),
        // Names its folder and bucket itself.
        Some(Command::Restore(args)) => backup::restore(args),
        Some(Command::Storage(command)) => storage::run(command),
        Some(Command::Git(command)) => {
            site::Site::for_command(cli.site).and_then(|site| git::run(&site, command))
        }
    };
    if let Some(traces) = traces {
        traces.finish();
    }
    if let Some(log) = log {
        log.finish();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line: the chain of causes joined by ": ".
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The command line. `--listen` before a command is for `cms` alone or `cms serve`;
/// given to any other command it is refused rather than ignored.
fn parse() -> Cli {
    use clap::parser::ValueSource;
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let given_before = matches.value_source("listen") == Some(ValueSource::CommandLine);
    match &mut cli.command {
        Some(Command::Serve(serve)) if given_before => {
            let given_after = matches
                .subcommand_matches("serve")
                .is_some_and(|m| m.value_source("listen") == Some(ValueSource::CommandLine));
            if !given_after {
                serve.listen = cli.serve.listen.clone();
            }
        }
        Some(_) if given_before => {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    "--listen is for `cms serve` (or `cms` alone); this command starts no server",
                )
                .exit();
        }
        _ => {}
    }
    cli
}

/// What is logged when RUST_LOG does not say: the server logs its work (`info`); a
/// command only its warnings, unless `-v`; `check` reports everything itself.
fn log_filter(command: &Option<Command>, verbose: u8) -> &'static str {
    match (command, verbose) {
        (_, 2..) => "debug,object_store=info",
        (None | Some(Command::Serve(_)), _) | (_, 1) => "info,object_store=warn",
        (Some(Command::Check(_)), 0) => "off",
        (_, 0) => "warn",
    }
}

fn print_schema() -> anyhow::Result<()> {
    println!("{}", init::schema_text());
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every argument of every command says what it is for, every command that does
    /// something shows examples, and `--listen` is offered only where a server starts.
    #[test]
    fn every_argument_has_help_and_every_command_examples() {
        fn walk(command: &clap::Command, path: &str, problems: &mut Vec<String>) {
            let path = format!("{path} {}", command.get_name());
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    problems.push(format!("{path}: <{id}> has no help"));
                }
                if id == "listen" && !matches!(path.as_str(), " cms" | " cms serve") {
                    problems.push(format!("{path} offers --listen"));
                }
            }
            let leaf = !command.has_subcommands();
            let examples = command.get_after_help().is_some_and(|h| h.to_string().contains("Examples:"));
            if leaf && !examples {
                problems.push(format!("{path}: no examples"));
            }
            for sub in command.get_subcommands() {
                walk(sub, &path, problems);
            }
        }
        let mut problems = Vec::new();
        walk(&Cli::command(), "", &mut problems);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        Cli::command().debug_assert();
    }
}
