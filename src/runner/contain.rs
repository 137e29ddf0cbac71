//! Containment on Linux: the program runs in a network namespace of its own (in a user
//! namespace, so no privilege is needed) that has only loopback. The proxy's listening
//! socket for it is made inside that namespace, on the proxy's own port, and handed back
//! over a socket pair (`SCM_RIGHTS`): the program reaches the proxy at the same URL, and
//! nothing else. Its children, MCP servers among them, inherit the namespace.
//!
//! Everything the child does between `fork` and `exec` is a raw system call on memory
//! prepared before the fork: no allocation, no lock.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::proxy::Session;

/// What containment a run asks for (`--contain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Contain {
    /// Contain where the system allows it, else say why and intercept only.
    #[default]
    Auto,
    /// Contain, or fail.
    On,
    /// Intercept only.
    Off,
}

/// The containment a run achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    /// In a network namespace with only loopback: the proxy is the only way out.
    Contained,
    /// The proxy variables only: traffic that ignores them is not seen.
    Intercepted,
    /// Containment was asked for (`auto`) and could not be set up: why.
    NotContained(String),
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Level::Contained => f.write_str("contained (network namespace)"),
            Level::Intercepted => {
                f.write_str("intercepted (proxy variables; traffic that ignores them is not seen)")
            }
            Level::NotContained(why) => write!(f, "not contained: {why}"),
        }
    }
}

/// Start `cmd` as `contain` asks, a contained program's listener served by `session`: the
/// child and the level reached. Containment needs the session on `127.0.0.1` (the
/// namespace's loopback is where the program finds it).
pub(crate) fn spawn(
    cmd: &mut tokio::process::Command,
    session: &Session,
    contain: Contain,
) -> io::Result<(tokio::process::Child, Level)> {
    let addr = session.addr();
    let why_not = match contain {
        Contain::Off => return Ok((cmd.spawn()?, Level::Intercepted)),
        _ if addr.ip() != std::net::Ipv4Addr::LOCALHOST => Some(format!(
            "the proxy listens on {addr}, and a contained program reaches only 127.0.0.1"
        )),
        _ => available().err(),
    };
    if let Some(why) = why_not {
        if contain == Contain::On {
            return Err(io::Error::other(format!("--contain on: {why}")));
        }
        return Ok((cmd.spawn()?, Level::NotContained(why)));
    }
    let relayed = session.relayed_ports();
    let jail = Jail::new(
        [addr.port()]
            .into_iter()
            .chain(relayed.iter().copied())
            .collect(),
    )?;
    jail.apply(cmd);
    let mut child = cmd.spawn()?;
    let served = jail.listeners().and_then(|listeners| {
        let mut listeners = listeners.into_iter();
        session.serve_also(
            listeners
                .next()
                .ok_or_else(|| io::Error::other("no listener"))?,
        )?;
        listeners
            .zip(relayed)
            .try_for_each(|(listener, port)| session.relay(listener, port))
    });
    if let Err(e) = served {
        // Nothing serves its namespace: the program may not run on in it.
        let _ = child.start_kill();
        return Err(e);
    }
    Ok((child, Level::Contained))
}

/// Can this process make a network namespace for a child? Tried once, in a forked child
/// that does what a contained start does before its listeners (`unshare`, the id maps,
/// loopback up) and exits; `Err` says why not.
pub fn available() -> Result<(), String> {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    if !cfg!(target_os = "linux") {
        return Err("network namespaces are Linux's".to_owned());
    }
    let (uid_map, gid_map) = id_maps();
    // SAFETY: the child makes only raw system calls on memory prepared before the fork,
    // then leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // All of it, as the program's start does: a system may allow `unshare` and refuse
        // the id maps (Ubuntu's restriction of unprivileged user namespaces does).
        let code = match isolate(&uid_map, &gid_map) {
            Ok(()) => 0,
            Err(errno) => errno.clamp(1, 255),
        };
        // SAFETY: leaves the forked child at once.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    let waited = loop {
        // SAFETY: waits for the child forked above.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r != -1 || errno() != libc::EINTR {
            break r;
        }
    };
    if waited != pid {
        return Err(format!(
            "waiting for the probe: {}",
            io::Error::last_os_error()
        ));
    }
    if !libc::WIFEXITED(status) {
        // Killed (a seccomp filter's SIGSYS, say): not available either.
        return Err(format!(
            "the system stopped a probe that made a network namespace (signal {})",
            libc::WTERMSIG(status)
        ));
    }
    match libc::WEXITSTATUS(status) {
        0 => Ok(()),
        errno => Err(format!(
            "the system does not let this user make a network namespace ({})",
            io::Error::from_raw_os_error(errno)
        )),
    }
}

/// This process's user and group, each mapped to itself (what `/proc/self/uid_map` and
/// `gid_map` take), made before a fork.
fn id_maps() -> (Vec<u8>, Vec<u8>) {
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// In a forked child: a new network namespace with loopback up (and, in a new user
/// namespace, the ids mapped).
fn isolate(uid_map: &[u8], gid_map: &[u8]) -> Result<(), i32> {
    if unshare_net()? {
        // Mapping one's own ids needs no privilege once setgroups is denied.
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
    }
    loopback_up()
}

/// Enter a new network namespace: as root, directly (the program keeps every user it
/// may switch to); else in a new user namespace (no privilege needed), where it is its
/// own user and group only. The user namespace's ids are mapped once `unshare` says one
/// was made (`Ok(true)`).
#[cfg(target_os = "linux")]
fn unshare_net() -> Result<bool, i32> {
    // SAFETY: geteuid only reads; unshare(2) changes only this process's namespaces.
    unsafe {
        if libc::geteuid() == 0 && libc::unshare(libc::CLONE_NEWNET) == 0 {
            return Ok(false);
        }
        if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) == 0 {
            return Ok(true);
        }
    }
    Err(errno())
}

#[cfg(not(target_os = "linux"))]
fn unshare_net() -> Result<bool, i32> {
    Err(libc::ENOSYS)
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EPERM)
}

/// A program about to be started contained: the socket pair its listener comes back on,
/// and what the child writes, made before the fork.
pub struct Jail {
    parent: OwnedFd,
    child: OwnedFd,
    /// The proxy's port, then each port relayed to the host's loopback.
    ports: Vec<u16>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Jail {
    /// A jail whose listeners are on `ports` inside the namespace: the proxy's own
    /// first, then those relayed to the host's loopback.
    pub fn new(ports: Vec<u16>) -> io::Result<Jail> {
        let mut fds = [0; 2];
        // SAFETY: socketpair(2) fills two descriptors we then own.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just made and are owned by nothing else.
        let (parent, child) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The program keeps its own ids inside.
        let (uid_map, gid_map) = id_maps();
        Ok(Jail {
            parent,
            child,
            ports,
            uid_map,
            gid_map,
        })
    }

    /// Make `cmd` start its program in the jail.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        let child = self.child.as_raw_fd();
        let (ports, uid_map, gid_map) = (
            self.ports.clone(),
            self.uid_map.clone(),
            self.gid_map.clone(),
        );
        // SAFETY: the closure runs between fork and exec and makes only raw system calls
        // on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                enter(child, &ports, &uid_map, &gid_map).map_err(io::Error::from_raw_os_error)
            });
        }
    }

    /// Once the program started: the listeners the child made inside the namespace, in
    /// the order of the ports.
    pub fn listeners(self) -> io::Result<Vec<std::net::TcpListener>> {
        (self.ports.iter())
            .map(|_| {
                let fd = receive_fd(self.parent.as_raw_fd())?;
                // SAFETY: the descriptor came over SCM_RIGHTS and is owned by nothing else.
                let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
                listener.set_nonblocking(true)?;
                Ok(listener)
            })
            .collect()
    }
}

/// In the forked child: a new network namespace with loopback up, a listener on
/// `127.0.0.1:PORT` in it for each of `ports`, each sent over `sock`.
fn enter(sock: RawFd, ports: &[u16], uid_map: &[u8], gid_map: &[u8]) -> Result<(), i32> {
    isolate(uid_map, gid_map)?;
    for &port in ports {
        let listener = listen(port)?;
        let sent = send_fd(sock, listener);
        // SAFETY: the parent has its own copy now (or the start fails).
        unsafe { libc::close(listener) };
        sent?;
    }
    Ok(())
}

fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: open/write/close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = errno();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

fn loopback_up() -> Result<(), i32> {
    // SAFETY: a datagram socket for the interface ioctls, on a zeroed `ifreq` naming "lo".
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr);
        if r == 0 {
            ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            r = libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr);
        }
        let err = errno();
        libc::close(s);
        if r != 0 {
            return Err(err);
        }
    }
    Ok(())
}

fn listen(port: u16) -> Result<RawFd, i32> {
    // SAFETY: a TCP socket bound to 127.0.0.1:port from a zeroed `sockaddr_in`.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(errno());
        }
        let one: libc::c_int = 1;
        libc::setsockopt(
            s,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_port = port.to_be();
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let bound = libc::bind(
            s,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        if bound != 0 || libc::listen(s, 1024) != 0 {
            let err = errno();
            libc::close(s);
            return Err(err);
        }
        Ok(s)
    }
}

/// Room for one descriptor's control message.
#[repr(C)]
union Cmsg {
    buf: [u8; 64],
    _align: libc::cmsghdr,
}

/// A message of the one byte in `byte` with `control` bytes of `cmsg` as its control
/// data. Both must outlive the message's use.
///
/// # Safety
/// The message points into `byte`, `iov` and `cmsg`; use it only while they live.
unsafe fn message(
    byte: &mut [u8; 1],
    iov: &mut libc::iovec,
    cmsg: &mut Cmsg,
    control: usize,
) -> libc::msghdr {
    *iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: a zeroed msghdr is valid; its pointers are set to the live buffers given.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov;
    msg.msg_iovlen = 1;
    // SAFETY: every field of the union is plain bytes.
    msg.msg_control = unsafe { cmsg.buf.as_mut_ptr().cast() };
    msg.msg_controllen = control as _;
    msg
}

fn send_fd(sock: RawFd, fd: RawFd) -> Result<(), i32> {
    // SAFETY: sendmsg(2) of one byte with one SCM_RIGHTS descriptor, all on the stack.
    unsafe {
        let (mut byte, mut iov, mut cmsg) = ([0u8; 1], std::mem::zeroed(), std::mem::zeroed());
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let msg = message(&mut byte, &mut iov, &mut cmsg, space);
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        if libc::sendmsg(sock, &msg, 0) != 1 {
            return Err(errno());
        }
    }
    Ok(())
}

fn receive_fd(sock: RawFd) -> io::Result<RawFd> {
    // SAFETY: recvmsg(2) into stack buffers; the descriptor is read only from a
    // SCM_RIGHTS message of the right length.
    unsafe {
        let (mut byte, mut iov, mut cmsg) = ([0u8; 1], std::mem::zeroed(), std::mem::zeroed());
        let mut msg = message(&mut byte, &mut iov, &mut cmsg, std::mem::size_of::<Cmsg>());
        if libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) != 1 {
            return Err(io::Error::last_os_error());
        }
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other(
                "the contained program's listener did not come back",
            ));
        }
        Ok(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>()))
    }
}
