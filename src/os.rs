//! The system calls no safe API offers, each behind a safe function: a fork, code run
//! between a child's fork and its exec, new namespaces, and bringing up loopback. All of
//! agentproxy's `unsafe` but the tests' is here; everything else goes through `rustix` or
//! the standard library.
//!
//! agentproxy runs many threads, so a forked child inherits every lock another thread
//! held at that moment: until it leaves or execs, it may make system calls only, on memory
//! prepared before the fork (no allocation, no lock, no print). The functions given to
//! [`forked`] and [`before_exec`] keep to that; the tests run them in a forked child under
//! an allocator that counts, and fail on any allocation.

use std::io;

use rustix::io::Errno;
use rustix::process::{Pid, WaitOptions, WaitStatus};

/// Run `child` in a forked copy of this process, which leaves with its return value as
/// its exit status, and wait for it. `child` must keep to the module's rule.
pub fn forked(child: impl FnOnce() -> i32) -> io::Result<WaitStatus> {
    // SAFETY: the child runs `child`, which makes system calls only on memory prepared
    // before the fork (the module's rule), and leaves with `_exit`, running nothing else.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let code = child();
        // SAFETY: leaves the forked child at once.
        unsafe { libc::_exit(code) };
    }
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::other("fork gave no pid"))?;
    loop {
        match rustix::process::waitpid(Some(pid), WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status),
            Ok(None) => return Err(io::Error::other("the forked child was not waited for")),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Make `cmd` run `f` in its child between fork and exec; an error fails the spawn.
/// `f` must keep to the module's rule.
pub fn before_exec(
    cmd: &mut tokio::process::Command,
    f: impl FnMut() -> io::Result<()> + Send + Sync + 'static,
) {
    // SAFETY: `f` keeps to the module's rule (system calls only, on memory prepared
    // before the fork).
    unsafe {
        cmd.pre_exec(f);
    }
}

/// Spawn `cmd` bound to this process: when it dies (killed with `SIGKILL` too, when no
/// code of its runs), the child gets `SIGKILL`. Set last before the exec, after anything
/// that changes the child's credentials (a new user namespace), which would clear it.
/// The kernel follows the thread that forks: spawn from the main thread or a runtime
/// worker, which live as long as the process, never from a thread that may end before
/// the child (a blocking pool's).
pub fn spawn_bound(cmd: &mut tokio::process::Command) -> io::Result<tokio::process::Child> {
    let parent = rustix::process::getpid();
    before_exec(cmd, move || bind_to(parent));
    cmd.spawn()
}

/// In the child: `SIGKILL` when `parent` dies; if it already has, the child goes now.
fn bind_to(parent: Pid) -> io::Result<()> {
    use rustix::process::Signal;
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
    match rustix::process::getppid() == Some(parent) {
        true => Ok(()),
        false => Err(Errno::SRCH.into()),
    }
}

/// The namespaces [`unshare`] makes.
#[derive(Debug, Clone, Copy)]
pub struct Namespaces {
    /// A user namespace (its ids are then to be mapped).
    pub user: bool,
    pub network: bool,
    pub mounts: bool,
}

/// Move this process (a forked child: its only thread) into new namespaces.
#[cfg(target_os = "linux")]
pub fn unshare(ns: Namespaces) -> Result<(), Errno> {
    use rustix::thread::UnshareFlags;
    let mut flags = UnshareFlags::empty();
    flags.set(UnshareFlags::NEWUSER, ns.user);
    flags.set(UnshareFlags::NEWNET, ns.network);
    flags.set(UnshareFlags::NEWNS, ns.mounts);
    // SAFETY: `unshare` is unsafe for `FILES` only (threads that would no longer share
    // their descriptors); these flags do not include it.
    unsafe { rustix::thread::unshare_unsafe(flags) }
}

#[cfg(not(target_os = "linux"))]
pub fn unshare(_: Namespaces) -> Result<(), Errno> {
    Err(Errno::NOSYS)
}

/// Bring up the loopback interface of this process's network namespace.
#[cfg(target_os = "linux")]
pub fn loopback_up() -> Result<(), Errno> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    use std::os::fd::AsRawFd;
    let s = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    // SAFETY: the interface-flag ioctls on a live socket, with an `ifreq` that is plain
    // data (zeroed, then named "lo"): neither rustix nor std sets an interface's flags.
    let r = unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let mut r = libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr);
        if r == 0 {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr);
        }
        r
    };
    match r {
        0 => Ok(()),
        _ => Err(Errno::from_io_error(&io::Error::last_os_error()).unwrap_or(Errno::PERM)),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn loopback_up() -> Result<(), Errno> {
    Err(Errno::NOSYS)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The unit tests' allocator: the system's, counting, so a test can check that code
    /// run in a forked child allocates nothing.
    pub struct Counting;

    pub static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

    // SAFETY: every call is passed on to the system allocator unchanged.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: as the caller promised.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as the caller promised.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            // SAFETY: as the caller promised.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Run `f` in a forked child and say how many allocations it made (`Err` when the
    /// child could not report).
    pub fn allocations_in_child(f: impl FnOnce()) -> Result<usize, String> {
        let status = super::forked(|| {
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            f();
            let made = ALLOCATIONS.load(Ordering::Relaxed) - before;
            made.min(100) as i32
        })
        .map_err(|e| e.to_string())?;
        status
            .exit_status()
            .map(|n| n as usize)
            .ok_or_else(|| format!("the child did not exit: {status:?}"))
    }

    #[test]
    fn binding_a_child_to_its_parent_allocates_nothing() {
        let parent = rustix::process::getpid();
        let made = allocations_in_child(|| {
            let _ = super::bind_to(parent);
        });
        assert_eq!(made, Ok(0));
    }

    #[test]
    fn a_forked_child_leaves_with_its_code_and_its_allocations_are_counted() {
        assert_eq!(super::forked(|| 7).unwrap().exit_status(), Some(7));
        assert_eq!(allocations_in_child(|| {}), Ok(0));
        let made = allocations_in_child(|| drop(std::hint::black_box(vec![1u8; 64])));
        assert!(made.unwrap() >= 1);
    }
}
