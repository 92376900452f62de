//! `cms git status`: the site's repository as it is (branch, newest commit, commits the
//! remote lacks, changes a server acknowledged and has not committed), and what the server
//! last knew of its pushes. Reads only; the server does the commits and pushes
//! (docs/git.md).

use anyhow::bail;
use clap::Subcommand;

use crate::site::Site;

#[derive(Subcommand)]
pub enum GitCommand {
    /// Show the site's branch, newest commit, commits waiting to be pushed, and why the
    /// server's last push failed, if it did.
    #[command(after_help = "Examples:\n  cms git status --site /srv/my-site")]
    Status,
    /// Forget the conflict a pull met on FILE, once its two versions were looked at (the
    /// editor and `cms check` stop showing it; the branch that keeps this site's version
    /// stays).
    #[command(
        after_help = "Examples:\n  cms git resolve content/posts/2026-01-12-hello-world.md --site /srv/my-site"
    )]
    Resolve {
        /// The file, as a path in the site folder.
        #[arg(value_name = "FILE")]
        file: String,
    },
}

pub fn run(site: &Site, command: GitCommand) -> anyhow::Result<()> {
    let (config, _) = crate::backend::load_config(&site.root)?;
    let Some(git) = &config.git else {
        bail!(
            "{} is not kept in git: add `git:` to cms.yaml (docs/git.md), or make a new site with `cms init DIR --git`",
            site.root.display()
        );
    };
    let state = site.root.join(cms_fs::STATE_DIR);
    if let GitCommand::Resolve { file } = command {
        if !cms_git::resolve(&site.root, &state, git, &file)? {
            bail!("no conflict is recorded for {file} (`cms git status` lists them)");
        }
        println!("forgot the conflict on {file}");
        return Ok(());
    }
    let report = cms_git::report(&site.root, &state, git)?;
    println!("repository: {}", report.top.display());
    println!("branch:     {}", report.branch);
    println!("commit:     {}", report.head.as_deref().unwrap_or("none yet"));
    match (&report.remote, report.unpushed) {
        (Some(remote), Some(unpushed)) => {
            println!("remote:     {remote}");
            println!("unpushed:   {unpushed} commit{}", if unpushed == 1 { "" } else { "s" });
        }
        _ => println!("remote:     none (commits stay local; git.remote in cms.yaml names one)"),
    }
    if report.uncommitted > 0 {
        println!(
            "pending:    {} change{} acknowledged and not committed yet (the server commits them, or commits them when it starts)",
            report.uncommitted,
            if report.uncommitted == 1 { "" } else { "s" }
        );
    }
    for conflict in &report.conflicts {
        println!(
            "conflict:   {} pulling {}: the remote's version is current, this site's is on the branch {} ({})",
            conflict.at,
            short(&conflict.remote),
            conflict.branch,
            conflict.paths.join(", ")
        );
    }
    if let Some(server) = &report.server {
        println!("server:     {}", server.summary());
        if let Some(at) = &server.pushed_at {
            println!("pushed at:  {at}");
        }
    }
    Ok(())
}

/// A commit's name as `git log --oneline` shows it.
fn short(commit: &str) -> &str {
    commit.get(..8).unwrap_or(commit)
}
