//! Finding the agentproxy session an `agentproxy mcp` stand-in runs under. MCP hosts often
//! start a server with a bare environment (the official Python SDK passes only HOME,
//! PATH, SHELL, TERM, USER and LOGNAME), so `AGENTPROXY_URL` may not reach the stand-in;
//! the program agentproxy started, among its ancestors, has it. Fail closed: an ancestor
//! of ours whose environment cannot be read might be that program, and an agentproxy
//! session among our ancestors (its command line is readable by anyone) means a session
//! whose URL did not reach us, whoever owns the processes in between.

use std::path::Path;

use super::procfs::{parent, variable};
use crate::proxy::SECRET_VAR;

/// The variable that names the session.
pub const VAR: &str = "AGENTPROXY_URL";

/// A session: its base URL, and the secret its control prefix asks for (from the same
/// environment).
#[derive(Debug, PartialEq, Eq)]
pub struct SessionAt {
    pub url: String,
    pub secret: Option<String>,
}

/// What the search found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    Session(SessionAt),
    /// No ancestor is in a session: run the server as it is.
    Nothing,
    /// A session cannot be ruled out, for this reason.
    Unsure(String),
}

/// Look in our own environment (`own` reads it), then up the process tree under `proc`
/// (`/proc`).
pub fn find(own: &dyn Fn(&str) -> Option<String>, proc: &Path) -> Found {
    if let Some(url) = own(VAR).filter(|u| !u.trim().is_empty()) {
        return Found::Session(SessionAt {
            url,
            secret: own(SECRET_VAR).filter(|s| !s.is_empty()),
        });
    }
    if !proc.join("self/stat").exists() {
        return Found::Unsure(format!(
            "{} has no process information to look for an agentproxy session in",
            proc.display()
        ));
    }
    let me = owner(&proc.join("self"));
    let mut pid = match std::fs::read_to_string(proc.join("self/stat")) {
        Ok(stat) => parent(&stat),
        Err(e) => return Found::Unsure(format!("cannot read {}/self/stat: {e}", proc.display())),
    };
    // Bounded: a process tree is never this deep, and a loop in it must not hang us.
    for _ in 0..256 {
        let Some(p) = pid.filter(|p| *p > 1) else {
            return Found::Nothing;
        };
        let dir = proc.join(p.to_string());
        match std::fs::read(dir.join("environ")) {
            Ok(environ) => {
                if let Some(url) = variable(&environ, VAR) {
                    return Found::Session(SessionAt {
                        url,
                        secret: variable(&environ, SECRET_VAR),
                    });
                }
            }
            // Another user's process: agentproxy's own process above it says whether it
            // might be a program agentproxy started.
            Err(_) if owner(&dir) != me => {}
            Err(e) => {
                return Found::Unsure(format!(
                    "cannot read the environment of ancestor process {p}: {e}"
                ))
            }
        }
        if let Some(command) = session_command(&dir) {
            return Found::Unsure(format!(
                "ancestor process {p} is an agentproxy session (`{command}`), and no process \
                 between it and us has an {VAR} we can read"
            ));
        }
        pid = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|s| parent(&s));
    }
    Found::Unsure("the process tree is deeper than 256 ancestors".into())
}

/// The command line of an agentproxy process that runs a program (`record`, `replay`,
/// `test`), read from `cmdline`, which any user may read.
fn session_command(dir: &Path) -> Option<String> {
    let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
    if comm.trim_end() != "agentproxy" {
        return None;
    }
    let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let runs = args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .is_some_and(|sub| matches!(sub.as_str(), "record" | "replay" | "test"));
    runs.then(|| args.join(" "))
}

fn owner(dir: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| m.uid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_variable_comes_first_and_a_missing_proc_is_unsure() {
        let none = Path::new("/nonexistent-proc");
        let own = |name: &str| match name {
            VAR => Some("http://x".to_owned()),
            SECRET_VAR => Some("s3cr3t".to_owned()),
            _ => None,
        };
        assert_eq!(
            find(&own, none),
            Found::Session(SessionAt {
                url: "http://x".into(),
                secret: Some("s3cr3t".into())
            })
        );
        assert!(matches!(find(&|_| None, none), Found::Unsure(_)));
    }

    /// A fake `/proc`: us (parent 100), the program (parent 200) whose environment has no
    /// session, and `agentproxy COMMAND` above it.
    fn fake_proc(command: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, body: &[u8]| {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        };
        write("self/stat", b"300 (agentproxy) S 100 300 300 0");
        write("100/stat", b"100 (python3) S 200 100 100 0");
        write("100/environ", b"HOME=/home/x\0PATH=/bin\0");
        write("100/comm", b"python3\n");
        write("200/stat", b"200 (agentproxy) S 1 200 200 0");
        write("200/environ", b"HOME=/home/x\0");
        write("200/comm", b"agentproxy\n");
        write("200/cmdline", (command.join("\0") + "\0").as_bytes());
        root
    }

    #[test]
    fn an_agentproxy_session_above_us_whose_url_we_cannot_see_is_unsure() {
        let proc = fake_proc(&["/usr/bin/agentproxy", "replay", "--", "python3", "app.py"]);
        match find(&|_| None, proc.path()) {
            Found::Unsure(why) => assert!(
                why.contains("ancestor process 200 is an agentproxy session (`/usr/bin/agentproxy replay -- python3 app.py`)"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        // Any other agentproxy command runs no program: nothing to find.
        let proc = fake_proc(&["agentproxy", "mcp", "--", "server", "replay"]);
        assert_eq!(find(&|_| None, proc.path()), Found::Nothing);
    }

    /// This test process's ancestors (cargo, a shell) are not in a session, unless the
    /// suite itself runs under one.
    #[test]
    fn the_real_process_tree_is_searched() {
        let found = find(&|_| None, Path::new("/proc"));
        match std::env::var(VAR) {
            Ok(_) => assert!(matches!(found, Found::Session(_) | Found::Unsure(_))),
            Err(_) => assert!(
                matches!(found, Found::Nothing | Found::Session(_)),
                "{found:?}"
            ),
        }
    }
}
