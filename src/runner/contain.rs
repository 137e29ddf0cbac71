//! Containment on Linux: the program runs in a network namespace of its own (in a user
//! namespace, so no privilege is needed) that has only loopback. The proxy's listening
//! socket for it is made inside that namespace, on the proxy's own port, and handed back
//! over a socket pair (`SCM_RIGHTS`): the program reaches the proxy at the same URL, and
//! nothing else. Its children, MCP servers among them, inherit the namespace.
//!
//! A program that ignores the proxy variables is named where it can be: the namespace's
//! name lookups go to agentproxy (its `/etc/resolv.conf`, in a mount namespace of its
//! own, names `127.0.0.1`, where agentproxy answers every name with loopback), and
//! agentproxy listens on ports 443 and 80 there, so a direct connection to a provider's
//! host is intercepted by its server name and any other is refused and named (see
//! `proxy::direct`).
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
    let served = jail.receive().and_then(|inside| {
        let mut listeners = inside.listeners.into_iter();
        session.serve_also(
            listeners
                .next()
                .ok_or_else(|| io::Error::other("no listener"))?,
        )?;
        listeners
            .zip(relayed)
            .try_for_each(|(listener, port)| session.relay(listener, port))?;
        session.watch_direct(inside.names, inside.direct)
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
            Ok(_) => 0,
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
/// namespace, the ids mapped), in a mount namespace of its own where the system allows
/// one (`Ok(true)`).
fn isolate(uid_map: &[u8], gid_map: &[u8]) -> Result<bool, i32> {
    let (user, mounts) = unshare_net()?;
    if user {
        // Mapping one's own ids needs no privilege once setgroups is denied.
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
    }
    loopback_up()?;
    Ok(mounts)
}

/// Enter a new network namespace: as root, directly (the program keeps every user it
/// may switch to); else in a new user namespace (no privilege needed), where it is its
/// own user and group only. A mount namespace comes with it where the system allows
/// (for the resolver's file). Says whether a user namespace was made (its ids are then
/// to be mapped) and whether a mount namespace was.
#[cfg(target_os = "linux")]
fn unshare_net() -> Result<(bool, bool), i32> {
    // SAFETY: geteuid only reads; unshare(2) changes only this process's namespaces.
    unsafe {
        let user = libc::geteuid() != 0;
        let net = match user {
            true => libc::CLONE_NEWUSER | libc::CLONE_NEWNET,
            false => libc::CLONE_NEWNET,
        };
        if libc::unshare(net | libc::CLONE_NEWNS) == 0 {
            return Ok((user, true));
        }
        if libc::unshare(net) == 0 {
            return Ok((user, false));
        }
        if !user && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) == 0 {
            return Ok((true, false));
        }
    }
    Err(errno())
}

#[cfg(not(target_os = "linux"))]
fn unshare_net() -> Result<(bool, bool), i32> {
    Err(libc::ENOSYS)
}

/// In the child's own mount namespace: its `/etc/resolv.conf` becomes `resolv` (which
/// names `127.0.0.1`), the host's untouched (the namespace's mounts no longer propagate
/// back first).
#[cfg(target_os = "linux")]
fn divert_names(resolv: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: mount(2) on NUL-terminated paths, in this process's own mount namespace.
    unsafe {
        let none = std::ptr::null();
        let slave = libc::MS_REC | libc::MS_SLAVE;
        if libc::mount(none, c"/".as_ptr(), none, slave, std::ptr::null()) != 0 {
            return Err(errno());
        }
        let target = c"/etc/resolv.conf".as_ptr();
        if libc::mount(
            resolv.as_ptr(),
            target,
            none,
            libc::MS_BIND,
            std::ptr::null(),
        ) != 0
        {
            return Err(errno());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn divert_names(_: &std::ffi::CStr) -> Result<(), i32> {
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
    /// The ports of the direct connections agentproxy watches inside (443, 80), but
    /// those in `ports`.
    direct: Vec<u16>,
    /// The namespace's resolver file (`nameserver 127.0.0.1`), removed once the program
    /// has started (its mount keeps it).
    resolv: tempfile::TempPath,
    resolv_path: std::ffi::CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// What a contained program's namespace handed back: the listeners of [`Jail::new`]'s
/// ports, in their order; the socket its name lookups come to, if its resolver could be
/// diverted; and the listeners of the direct connections watched, by port.
pub struct Inside {
    pub listeners: Vec<std::net::TcpListener>,
    pub names: Option<std::net::UdpSocket>,
    pub direct: Vec<(u16, std::net::TcpListener)>,
}

/// The ports a program that ignores the proxy variables connects to directly, watched
/// inside its namespace.
const DIRECT_PORTS: [u16; 2] = [443, 80];

/// The resolver configuration of a contained program: agentproxy, at once.
const RESOLV_CONF: &str = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n";

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
        let mut resolv = tempfile::Builder::new()
            .prefix("agentproxy-resolv-")
            .tempfile()?;
        io::Write::write_all(&mut resolv, RESOLV_CONF.as_bytes())?;
        // Readable by the program whatever user it becomes.
        let readable =
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644);
        resolv.as_file().set_permissions(readable)?;
        let resolv = resolv.into_temp_path();
        let resolv_path = std::ffi::CString::new(resolv.as_os_str().as_encoded_bytes())
            .map_err(io::Error::other)?;
        let direct = (DIRECT_PORTS.iter())
            .filter(|p| !ports.contains(p))
            .copied()
            .collect();
        Ok(Jail {
            parent,
            child,
            ports,
            direct,
            resolv,
            resolv_path,
            uid_map,
            gid_map,
        })
    }

    /// Make `cmd` start its program in the jail.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        let sock = self.child.as_raw_fd();
        let plan = Plan {
            ports: self.ports.clone(),
            direct: self.direct.clone(),
            resolv: self.resolv_path.clone(),
            uid_map: self.uid_map.clone(),
            gid_map: self.gid_map.clone(),
        };
        // SAFETY: the closure runs between fork and exec and makes only raw system calls
        // on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(move || enter(sock, &plan).map_err(io::Error::from_raw_os_error));
        }
    }

    /// Once the program started: what the child made inside the namespace.
    pub fn receive(self) -> io::Result<Inside> {
        let parent = self.parent.as_raw_fd();
        let tcp = |fd: RawFd| {
            // SAFETY: the descriptor came over SCM_RIGHTS and is owned by nothing else.
            let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
            listener.set_nonblocking(true).map(|()| listener)
        };
        let listeners = (self.ports.iter())
            .map(|_| {
                let fd = receive_fd(parent)?.ok_or_else(|| {
                    io::Error::other("the contained program's listener did not come back")
                })?;
                tcp(fd)
            })
            .collect::<io::Result<Vec<_>>>()?;
        // SAFETY: as above.
        let names = receive_fd(parent)?.map(|fd| unsafe { std::net::UdpSocket::from_raw_fd(fd) });
        if let Some(names) = &names {
            names.set_nonblocking(true)?;
        }
        let mut direct = Vec::new();
        for &port in &self.direct {
            if let Some(fd) = receive_fd(parent)? {
                direct.push((port, tcp(fd)?));
            }
        }
        drop(self.resolv);
        Ok(Inside {
            listeners,
            names,
            direct,
        })
    }
}

/// What the child does in [`enter`], prepared before the fork.
struct Plan {
    ports: Vec<u16>,
    direct: Vec<u16>,
    resolv: std::ffi::CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// In the forked child: a new network namespace with loopback up, a listener on
/// `127.0.0.1:PORT` in it for each of the plan's ports, each sent over `sock`; then, each
/// where it can be made (an empty message where not), the socket its name lookups come to
/// and the listeners of the direct connections watched.
fn enter(sock: RawFd, plan: &Plan) -> Result<(), i32> {
    let mounts = isolate(&plan.uid_map, &plan.gid_map)?;
    for &port in &plan.ports {
        give(sock, Some(listen(port)?))?;
    }
    // The name server's socket first: the resolver is diverted only to a server that is
    // there.
    let names = match mounts {
        true => datagram(53).ok(),
        false => None,
    };
    let names = names.filter(|fd| match divert_names(&plan.resolv) {
        Ok(()) => true,
        Err(_) => {
            // SAFETY: the socket was made above and is not used again.
            unsafe { libc::close(*fd) };
            false
        }
    });
    give(sock, names)?;
    for &port in &plan.direct {
        give(sock, listen(port).ok())?;
    }
    Ok(())
}

/// Send `fd` (or, for `None`, an empty message) over `sock`, and close it here.
fn give(sock: RawFd, fd: Option<RawFd>) -> Result<(), i32> {
    let sent = send_fd(sock, fd);
    if let Some(fd) = fd {
        // SAFETY: the parent has its own copy now (or the start fails).
        unsafe { libc::close(fd) };
    }
    sent
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
    let s = bound(libc::SOCK_STREAM, port)?;
    // SAFETY: listen(2) on the socket just bound, closed on failure.
    unsafe {
        if libc::listen(s, 1024) != 0 {
            let err = errno();
            libc::close(s);
            return Err(err);
        }
    }
    Ok(s)
}

/// A datagram socket bound to `127.0.0.1:port`.
fn datagram(port: u16) -> Result<RawFd, i32> {
    bound(libc::SOCK_DGRAM, port)
}

/// A socket of `kind` bound to `127.0.0.1:port`.
fn bound(kind: libc::c_int, port: u16) -> Result<RawFd, i32> {
    // SAFETY: a socket bound to 127.0.0.1:port from a zeroed `sockaddr_in`.
    unsafe {
        let s = libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, 0);
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
        if bound != 0 {
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

/// Send one message over `sock`: its byte says whether it carries `fd` (SCM_RIGHTS).
fn send_fd(sock: RawFd, fd: Option<RawFd>) -> Result<(), i32> {
    // SAFETY: sendmsg(2) of one byte with at most one SCM_RIGHTS descriptor, all on the
    // stack.
    unsafe {
        let (mut byte, mut iov, mut cmsg) = ([0u8; 1], std::mem::zeroed(), std::mem::zeroed());
        let space = match fd {
            Some(_) => libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize,
            None => 0,
        };
        byte[0] = u8::from(fd.is_some());
        let mut msg = message(&mut byte, &mut iov, &mut cmsg, space);
        if let Some(fd) = fd {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        } else {
            msg.msg_control = std::ptr::null_mut();
        }
        if libc::sendmsg(sock, &msg, 0) != 1 {
            return Err(errno());
        }
    }
    Ok(())
}

/// One message of [`send_fd`]: its descriptor, if it carries one.
fn receive_fd(sock: RawFd) -> io::Result<Option<RawFd>> {
    // SAFETY: recvmsg(2) into stack buffers; the descriptor is read only from a
    // SCM_RIGHTS message of the right length.
    unsafe {
        let (mut byte, mut iov, mut cmsg) = ([0u8; 1], std::mem::zeroed(), std::mem::zeroed());
        let mut msg = message(&mut byte, &mut iov, &mut cmsg, std::mem::size_of::<Cmsg>());
        if libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) != 1 {
            return Err(io::Error::last_os_error());
        }
        let c = libc::CMSG_FIRSTHDR(&msg);
        let carries = !c.is_null() && (*c).cmsg_type == libc::SCM_RIGHTS;
        let fd = carries.then(|| std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>()));
        let truncated = msg.msg_flags & libc::MSG_CTRUNC != 0;
        match (byte[0], fd) {
            (0, None) if !truncated => Ok(None),
            (1, Some(fd)) if !truncated => Ok(Some(fd)),
            (_, fd) => {
                if let Some(fd) = fd {
                    libc::close(fd);
                }
                Err(io::Error::other(
                    "the contained program's namespace sent an unexpected message",
                ))
            }
        }
    }
}
