//! The `git` program, run in the site folder. Every command runs with the environment
//! that could point it elsewhere removed (`GIT_DIR`, `GIT_INDEX_FILE`, ...), no terminal
//! prompt (a credential that is missing fails instead of waiting for a person), and
//! untranslated messages, which the push's report reads.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{GitError, GitResult};

/// Variables that would make a command act on another repository, index or tree.
const REDIRECTING: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
];

/// The `git` program in one folder.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    dir: PathBuf,
}

/// One command: its arguments, what it reads on standard input, extra environment.
pub(crate) struct Run<'a> {
    args: Vec<&'a str>,
    input: Option<&'a [u8]>,
    env: Vec<(&'static str, &'a str)>,
    timeout: Option<Duration>,
    /// An exit code that is an answer, not a failure (`merge-tree`'s 1: conflicts).
    allowed_exit: Option<i32>,
}

impl<'a> Run<'a> {
    pub(crate) fn new(args: &[&'a str]) -> Self {
        Self { args: args.to_vec(), input: None, env: Vec::new(), timeout: None, allowed_exit: None }
    }

    pub(crate) fn allow_exit(mut self, code: i32) -> Self {
        self.allowed_exit = Some(code);
        self
    }

    pub(crate) fn input(mut self, input: &'a [u8]) -> Self {
        self.input = Some(input);
        self
    }

    pub(crate) fn env(mut self, name: &'static str, value: &'a str) -> Self {
        self.env.push((name, value));
        self
    }

    pub(crate) fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl Git {
    pub(crate) fn new(dir: &Path) -> Self {
        Self { dir: dir.to_owned() }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `git ARGS`; its standard output, trimmed.
    pub(crate) fn run(&self, args: &[&str]) -> GitResult<String> {
        self.run_with(Run::new(args))
    }

    /// Runs `git ARGS`; `None` when it exits with an error (a question answered no).
    pub(crate) fn ask(&self, args: &[&str]) -> GitResult<Option<String>> {
        match self.run(args) {
            Ok(out) => Ok(Some(out)),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// A reader of blobs by name through one `git cat-file --batch`: a pull reads
    /// thousands, and a process each would cost more than writing them.
    pub(crate) fn blobs(&self) -> GitResult<Blobs> {
        let mut command = Command::new("git");
        command
            .current_dir(&self.dir)
            .args(["cat-file", "--batch"])
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for name in REDIRECTING {
            command.env_remove(name);
        }
        let mut child = command.spawn().map_err(GitError::Missing)?;
        let input = child.stdin.take().expect("piped");
        let output = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Blobs { child, input, output })
    }

    /// A reader of objects' names and sizes through one `git cat-file --batch-check`: an
    /// item's history asks one per commit that touched it.
    pub(crate) fn object_info(&self) -> GitResult<ObjectInfo> {
        let mut command = Command::new("git");
        command
            .current_dir(&self.dir)
            .args(["cat-file", "--batch-check"])
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for name in REDIRECTING {
            command.env_remove(name);
        }
        let mut child = command.spawn().map_err(GitError::Missing)?;
        let input = child.stdin.take().expect("piped");
        let output = BufReader::new(child.stdout.take().expect("piped"));
        Ok(ObjectInfo { child, input, output })
    }

    pub(crate) fn run_with(&self, run: Run<'_>) -> GitResult<String> {
        let out = self.output(run)?;
        Ok(String::from_utf8_lossy(&out).trim_end().to_owned())
    }

    fn output(&self, run: Run<'_>) -> GitResult<Vec<u8>> {
        let mut command = Command::new("git");
        command
            .current_dir(&self.dir)
            .args(&run.args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(if run.input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in REDIRECTING {
            command.env_remove(name);
        }
        for (name, value) in &run.env {
            command.env(name, value);
        }
        let mut child = command.spawn().map_err(GitError::Missing)?;
        if let (Some(mut stdin), Some(input)) = (child.stdin.take(), run.input) {
            // Every command given input reads it whole before it writes much (update-index,
            // commit-tree); one that exits early closes the pipe, and its status says why.
            let _ = stdin.write_all(input);
        }
        if let Some(limit) = run.timeout {
            // The push: its output is a few lines, which the pipes hold until it exits.
            let started = Instant::now();
            while child.try_wait().map_err(GitError::Missing)?.is_none() {
                if started.elapsed() > limit {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(GitError::TimedOut { command: run.args.join(" "), secs: limit.as_secs() });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let output = child.wait_with_output().map_err(GitError::Missing)?;
        let (status, out, err) = (output.status, output.stdout, output.stderr);
        let answered = status.success() || (run.allowed_exit.is_some() && status.code() == run.allowed_exit);
        if !answered {
            let message = String::from_utf8_lossy(&err).trim().to_owned();
            let message = if message.is_empty() { status.to_string() } else { message };
            return Err(GitError::Failed { command: run.args.join(" "), message });
        }
        Ok(out)
    }
}

/// `git cat-file --batch`, asked one object at a time.
pub(crate) struct Blobs {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Blobs {
    /// The bytes of blob `name`.
    pub(crate) fn read(&mut self, name: &str) -> GitResult<Vec<u8>> {
        let failed = |message: String| GitError::Failed { command: "cat-file --batch".into(), message };
        self.input
            .write_all(format!("{name}\n").as_bytes())
            .and_then(|()| self.input.flush())
            .map_err(|error| failed(error.to_string()))?;
        let mut header = String::new();
        self.output.read_line(&mut header).map_err(|error| failed(error.to_string()))?;
        // `<name> blob <size>`, or `<name> missing`.
        let mut fields = header.split_whitespace();
        let (kind, size) = (fields.nth(1), fields.next().and_then(|size| size.parse::<usize>().ok()));
        let (Some("blob"), Some(size)) = (kind, size) else {
            return Err(failed(format!("{name} is not a blob here: {}", header.trim())));
        };
        let mut bytes = vec![0; size + 1];
        self.output.read_exact(&mut bytes).map_err(|error| failed(error.to_string()))?;
        bytes.pop();
        Ok(bytes)
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `git cat-file --batch-check`, asked one object at a time.
pub(crate) struct ObjectInfo {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl ObjectInfo {
    /// The name and size of blob `name` (`<commit>:<path>` names the file in a commit);
    /// `None` when there is no such blob (the commit removed the file).
    pub(crate) fn blob(&mut self, name: &str) -> GitResult<Option<(String, u64)>> {
        let failed = |message: String| GitError::Failed { command: "cat-file --batch-check".into(), message };
        self.input
            .write_all(format!("{name}\n").as_bytes())
            .and_then(|()| self.input.flush())
            .map_err(|error| failed(error.to_string()))?;
        let mut line = String::new();
        if self.output.read_line(&mut line).map_err(|error| failed(error.to_string()))? == 0 {
            return Err(failed(format!("no answer for {name}")));
        }
        // `<oid> blob <size>`, or `<name> missing` (the name may hold spaces).
        let mut fields = line.trim_end().rsplitn(3, ' ');
        let (size, kind, oid) = (fields.next(), fields.next(), fields.next());
        match (oid, kind, size.and_then(|size| size.parse::<u64>().ok())) {
            (Some(oid), Some("blob"), Some(size)) => Ok(Some((oid.to_owned(), size))),
            _ => Ok(None),
        }
    }
}

impl Drop for ObjectInfo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
