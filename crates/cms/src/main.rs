//! The `cms` command: the composition root. It wires the file adapters into the core and
//! either serves the REST API or runs one administration command.

mod admin;
mod allocator;
mod events;
mod password;
mod schedule;
mod serve;
mod site;
mod storage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cms", version, about = "A file-based CMS with a JSON REST API")]
struct Cli {
    /// The site folder (holds cms.yaml). Default: a working copy of the bundled demo site.
    #[arg(long, global = true, env = "CMS_SITE")]
    site: Option<PathBuf>,
    /// Address the server listens on (`serve`, or no command).
    #[arg(long, global = true, env = "CMS_LISTEN", default_value = DEFAULT_LISTEN)]
    listen: String,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the REST API (the default when no command is given).
    Serve,
    #[command(flatten)]
    Admin(admin::AdminCommand),
    /// Move a site between a folder and an S3 bucket (no --site needed).
    #[command(subcommand)]
    Storage(storage::StorageCommand),
}

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, None | Some(Command::Serve)) {
        allocator::tune_or_continue();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,object_store=warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let result = match cli.command {
        None | Some(Command::Serve) => {
            site::Site::locate(cli.site).and_then(|site| serve::run(site, &cli.listen))
        }
        Some(Command::Admin(command)) => {
            site::Site::locate(cli.site).and_then(|site| admin::run(&site, command))
        }
        // Names its folder and bucket itself.
        Some(Command::Storage(command)) => storage::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // One line: the chain of causes joined by ": ".
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
