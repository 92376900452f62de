//! Reading a new password for `cms users passwd`: one line from standard input, not echoed
//! when it is a terminal.

use std::io::{self, BufRead, IsTerminal, Read, Write};

use anyhow::{Context, bail};
use cms_core::account::{MAX_PASSWORD_BYTES, PASSWORD_SALT_BYTES};
use ring::rand::{SecureRandom, SystemRandom};

/// The password on standard input: its first line (a trailing `\n` or `\r\n` is not part
/// of it). From a terminal it asks, with echo off; from a pipe it takes the whole input,
/// which must be one line.
pub fn read_new(email: &str) -> anyhow::Result<String> {
    let stdin = io::stdin();
    let text = if stdin.is_terminal() {
        eprint!("new password for {email} (not shown): ");
        io::stderr().flush().ok();
        let echo = EchoOff::new(&stdin);
        let mut line = String::new();
        stdin.lock().read_line(&mut line).context("reading the password")?;
        drop(echo);
        eprintln!();
        line
    } else {
        let mut text = String::new();
        // A little more than the longest password, to tell it was too long.
        stdin
            .lock()
            .take(MAX_PASSWORD_BYTES as u64 + 3)
            .read_to_string(&mut text)
            .context("reading the password from standard input (it must be UTF-8 text)")?;
        text
    };
    let password = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
    if password.contains(['\n', '\r']) {
        bail!("the password must be one line");
    }
    if password.is_empty() {
        bail!(
            "no password on standard input; pipe it in, e.g. `echo 'a long password' | cms users passwd --email {email}`"
        );
    }
    cms_core::account::check_password_rules(password)?;
    Ok(password.to_owned())
}

pub fn random_salt() -> anyhow::Result<[u8; PASSWORD_SALT_BYTES]> {
    let mut salt = [0; PASSWORD_SALT_BYTES];
    SystemRandom::new().fill(&mut salt).map_err(|_| anyhow::anyhow!("the system random source failed"))?;
    Ok(salt)
}

/// Turns the terminal's echo off while it lives.
struct EchoOff<'a> {
    stdin: &'a io::Stdin,
    saved: Option<rustix::termios::Termios>,
}

impl<'a> EchoOff<'a> {
    fn new(stdin: &'a io::Stdin) -> Self {
        use rustix::termios::{LocalModes, OptionalActions, tcgetattr, tcsetattr};
        let saved = tcgetattr(stdin).ok();
        if let Some(mut quiet) = saved.clone() {
            quiet.local_modes.remove(LocalModes::ECHO);
            let _ = tcsetattr(stdin, OptionalActions::Now, &quiet);
        }
        Self { stdin, saved }
    }
}

impl Drop for EchoOff<'_> {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = rustix::termios::tcsetattr(self.stdin, rustix::termios::OptionalActions::Now, saved);
        }
    }
}
