//! `cms users|keys|license`: one-line output per record, one-line errors.

use std::fs;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use cms_core::account::Role;
use cms_core::license::{License, LicenseState};

use crate::site::{OpenSite, random_key_bytes};

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Add a user, or change an existing user's role.
    Add {
        #[arg(long)]
        email: String,
        #[arg(long, value_parser = ["owner", "admin", "editor"])]
        role: String,
    },
    /// List users: email and role, one per line.
    List,
    /// Remove a user and revoke their keys.
    Remove {
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
pub enum KeysCommand {
    /// Create a key for a user; the plaintext is printed once, as the last line.
    Create {
        #[arg(long)]
        user: String,
        #[arg(long, default_value = "default")]
        name: String,
    },
    /// List keys: id, user, name, created (never the plaintext).
    List,
    /// Revoke a key by id; it stops working on the next request.
    Revoke { id: String },
}

#[derive(Subcommand)]
pub enum LicenseCommand {
    /// Show the installed license and whether it is active.
    Show,
    /// Validate and install a license file.
    Install { file: PathBuf },
}

pub fn users(site: &OpenSite, command: UsersCommand) -> anyhow::Result<()> {
    match command {
        UsersCommand::Add { email, role } => {
            let role: Role = role.parse()?;
            let (user, created) = site.cms.add_user(&email, role)?;
            let verb = if created { "added" } else { "updated" };
            println!("{verb} {} ({})", user.email, user.role);
        }
        UsersCommand::List => {
            for user in site.cms.users()? {
                println!("{} {}", user.email, user.role);
            }
        }
        UsersCommand::Remove { email } => {
            site.cms.remove_user(&email)?;
            println!("removed {email} and their keys");
        }
    }
    Ok(())
}

pub fn keys(site: &OpenSite, command: KeysCommand) -> anyhow::Result<()> {
    match command {
        KeysCommand::Create { user, name } => {
            let key = site.cms.create_key(&user, &name, random_key_bytes()?)?;
            println!("created key {} for {} (the key is shown once):", key.record.id, key.record.email);
            println!("{}", key.plaintext);
        }
        KeysCommand::List => {
            for key in site.cms.keys()? {
                println!("{} {} {} {}", key.id, key.email, key.name, key.created);
            }
        }
        KeysCommand::Revoke { id } => {
            site.cms.revoke_key(&id)?;
            println!("revoked {id}");
        }
    }
    Ok(())
}

pub fn license(site: &OpenSite, command: LicenseCommand) -> anyhow::Result<()> {
    match command {
        LicenseCommand::Show => match site.cms.license_state()? {
            LicenseState::Missing => println!("no license installed"),
            LicenseState::Invalid(reason) => println!("invalid license: {reason}"),
            LicenseState::Expired(license) => print_license(&license, "expired"),
            LicenseState::Active(license) => print_license(&license, "active"),
        },
        LicenseCommand::Install { file } => {
            let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let license = site.cms.install_license(&text)?;
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
