//! Stopping every process a case's program leaves: its descendants (the parent links in
//! `/proc`) and every process whose environment carries the program's mark
//! ([`MARK`]), which a worker that called `setsid` and a daemon that forked twice keep.
//! They are stopped first (SIGSTOP), round after round until no new one appears, so none
//! can fork or slip out of the tree meanwhile; then all are killed. The mark holds 128
//! random bits, and only a process of this process's own user counts as marked: another
//! user's process that carries a guessed (or copied) mark is never touched. Where there is no
//! `/proc` (not Linux), the program's process group is all that is reached.

use rustix::process::{Pid, Signal};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::procfs;

/// The variable that marks a program's processes, set when it starts.
pub const MARK: &str = "AGENTPROXY_RUN";

/// Rounds of stopping before the kill: each finds the children forked before the last
/// round's stops landed; a tree is never this deep.
const ROUNDS: usize = 64;

/// A mark no other program carries: `PID.N.RANDOM`, RANDOM 32 hex digits from the keys
/// the standard library draws from the system's randomness for each `RandomState`.
pub fn new_mark() -> String {
    use std::hash::{BuildHasher, Hasher};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let (pid, n) = (std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let random = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.write_u64(n);
        h.finish()
    };
    format!("{pid}.{n}.{:016x}{:016x}", random(1), random(2))
}

/// The user owning the process `pid` (its `/proc` directory's owner: its effective uid).
fn owner(proc: &Path, pid: &str) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(proc.join(pid)).ok().map(|m| m.uid())
}

/// One line of the process table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: u32,
    parent: Option<u32>,
}

/// Every process `proc` lists.
fn table(proc: &Path) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
            Some(Proc {
                pid,
                parent: procfs::parent(&stat),
            })
        })
        .collect()
}

/// `roots` and all their descendants in `table`.
fn with_descendants(table: &[Proc], roots: BTreeSet<u32>) -> BTreeSet<u32> {
    let mut found = roots;
    loop {
        let more: Vec<u32> = table
            .iter()
            .filter(|p| !found.contains(&p.pid))
            .filter(|p| p.parent.is_some_and(|parent| found.contains(&parent)))
            .map(|p| p.pid)
            .collect();
        if more.is_empty() {
            return found;
        }
        found.extend(more);
    }
}

/// The program's processes: `root` (while it is not reaped), the processes marked `mark`,
/// and their descendants; never this process.
fn theirs(proc: &Path, table: &[Proc], root: Option<u32>, mark: &str) -> BTreeSet<u32> {
    let me = owner(proc, "self");
    let marked = table.iter().map(|p| p.pid).filter(|pid| {
        let pid = pid.to_string();
        owner(proc, &pid) == me
            && std::fs::read(proc.join(&pid).join("environ"))
                .is_ok_and(|env| procfs::variable(&env, MARK).as_deref() == Some(mark))
    });
    let mut found = with_descendants(table, root.into_iter().chain(marked).collect());
    found.remove(&std::process::id());
    found
}

/// Stop then kill the program's processes (see the module's comment): `root` is the
/// program while it is not reaped (and leads its process group). What was signalled.
pub fn kill(proc: &Path, root: Option<u32>, mark: &str) -> BTreeSet<u32> {
    let mut stopped = BTreeSet::new();
    for _ in 0..ROUNDS {
        let new: Vec<u32> = theirs(proc, &table(proc), root, mark)
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if new.is_empty() {
            break;
        }
        for pid in new {
            signal(pid, Signal::STOP);
            stopped.insert(pid);
        }
    }
    if let Some(root) = root {
        signal_group(root, Signal::KILL);
    }
    for pid in &stopped {
        signal(*pid, Signal::KILL);
    }
    stopped
}

/// Those of `pids` that are still running (not gone, not a zombie): `PID (command)`.
pub fn alive(proc: &Path, pids: &BTreeSet<u32>) -> Vec<String> {
    pids.iter()
        .filter_map(|pid| {
            let dir = proc.join(pid.to_string());
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            (procfs::state(&stat) != Some('Z')).then(|| {
                let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
                format!("{pid} ({})", comm.trim_end())
            })
        })
        .collect()
}

fn signal(pid: u32, sig: Signal) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

fn signal_group(leader: u32, sig: Signal) {
    if let Some(pid) = i32::try_from(leader).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, parent: u32) -> Proc {
        Proc {
            pid,
            parent: Some(parent),
        }
    }

    #[test]
    fn descendants_are_found_at_any_depth_and_nothing_else() {
        let t = [
            p(10, 1),
            p(11, 10),
            p(12, 11),
            p(13, 12),
            p(20, 1),
            p(21, 20),
        ];
        let found = with_descendants(&t, [10].into());
        assert_eq!(found, [10, 11, 12, 13].into());
    }

    #[test]
    fn marks_are_unique_and_unguessable() {
        assert_ne!(new_mark(), new_mark());
        let mark = new_mark();
        assert!(mark.starts_with(&format!("{}.", std::process::id())));
        let random = mark.rsplit('.').next().unwrap();
        assert_eq!(random.len(), 32, "{mark}");
        assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{mark}");
    }

    /// Run as root (CI is): another user's process carrying the run's mark is not the
    /// run's, and is neither stopped nor killed.
    #[test]
    fn another_users_process_with_the_mark_is_left_alone() {
        use std::os::unix::process::CommandExt;
        if owner(Path::new("/proc"), "self") != Some(0) {
            eprintln!("not root: no other user to start a process as");
            return;
        }
        let mark = new_mark();
        let mut other = std::process::Command::new("sleep")
            .arg("300")
            .env(MARK, &mark)
            .uid(65534)
            .gid(65534)
            .spawn()
            .unwrap();
        // Once it carries the mark (after its exec).
        let environ = Path::new("/proc")
            .join(other.id().to_string())
            .join("environ");
        for _ in 0..250 {
            let env = std::fs::read(&environ).unwrap_or_default();
            if procfs::variable(&env, MARK).as_deref() == Some(mark.as_str()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let signalled = kill(Path::new("/proc"), None, &mark);
        assert!(!signalled.contains(&other.id()), "{signalled:?}");
        assert!(other.try_wait().unwrap().is_none(), "it lives");
        other.kill().unwrap();
        other.wait().unwrap();
    }

    /// A program that left a detached worker (its own session, parent gone) and a child of
    /// that worker: killing by the mark reaches both, and nothing else.
    #[test]
    fn a_detached_worker_and_its_children_are_killed_by_the_mark() {
        let mark = new_mark();
        let pidfile = tempfile::NamedTempFile::new().unwrap();
        let script = format!(
            "setsid sh -c 'sleep 300 & echo $$ $! > {}; wait' &",
            pidfile.path().display()
        );
        let mut program = std::process::Command::new("sh")
            .args(["-c", &script])
            .env(MARK, &mark)
            .spawn()
            .unwrap();
        program.wait().unwrap();
        let pids = wait_for_pids(pidfile.path());
        let bystander = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let proc = Path::new("/proc");
        let signalled = kill(proc, None, &mark);
        assert!(pids.iter().all(|p| signalled.contains(p)), "{signalled:?}");
        assert!(!signalled.contains(&bystander.id()));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !alive(proc, &pids).is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(alive(proc, &pids), Vec::<String>::new());
        let mut bystander = bystander;
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "the bystander lives"
        );
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    fn wait_for_pids(path: &Path) -> BTreeSet<u32> {
        for _ in 0..250 {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let pids: BTreeSet<u32> = text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.len() == 2 {
                return pids;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the worker never wrote its pids");
    }
}
