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
//! Everything the child does between `fork` and `exec` is a system call on memory
//! prepared before the fork: no allocation, no lock (the rule of `crate::os`, which a
//! test here holds it to).

use std::ffi::{CStr, CString};
use std::io;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketFlags, SocketType};

use crate::os::{self, Namespaces};

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
        Contain::Off => return Ok((os::spawn_bound(cmd)?, Level::Intercepted)),
        _ if addr.ip() != std::net::Ipv4Addr::LOCALHOST => Some(format!(
            "the proxy listens on {addr}, and a contained program reaches only 127.0.0.1"
        )),
        _ => available().err(),
    };
    if let Some(why) = why_not {
        if contain == Contain::On {
            return Err(io::Error::other(format!("--contain on: {why}")));
        }
        return Ok((os::spawn_bound(cmd)?, Level::NotContained(why)));
    }
    let relayed = session.relayed_ports();
    let jail = Jail::new(
        [addr.port()]
            .into_iter()
            .chain(relayed.iter().copied())
            .collect(),
    )?;
    jail.apply(cmd)?;
    let mut child = os::spawn_bound(cmd)?;
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
    // All of it, as the program's start does: a system may allow `unshare` and refuse
    // the id maps (Ubuntu's restriction of unprivileged user namespaces does).
    let status = os::forked(|| match isolate(&uid_map, &gid_map) {
        Ok(_) => 0,
        Err(errno) => errno.raw_os_error().clamp(1, 255),
    })
    .map_err(|e| format!("probing for network namespaces: {e}"))?;
    match (status.exit_status(), status.terminating_signal()) {
        (Some(0), _) => Ok(()),
        (Some(errno), _) => Err(format!(
            "the system does not let this user make a network namespace ({})",
            io::Error::from_raw_os_error(errno)
        )),
        // Killed (a seccomp filter's SIGSYS, say): not available either.
        (None, signal) => Err(format!(
            "the system stopped a probe that made a network namespace (signal {})",
            signal.unwrap_or(0)
        )),
    }
}

/// This process's user and group, each mapped to itself (what `/proc/self/uid_map` and
/// `gid_map` take), made before a fork.
fn id_maps() -> (Vec<u8>, Vec<u8>) {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// In a forked child: a new network namespace with loopback up (and, in a new user
/// namespace, the ids mapped), in a mount namespace of its own where the system allows
/// one (`Ok(true)`).
fn isolate(uid_map: &[u8], gid_map: &[u8]) -> Result<bool, Errno> {
    let (user, mounts) = unshare_net()?;
    if user {
        // Mapping one's own ids needs no privilege once setgroups is denied.
        let _ = write_file(c"/proc/self/setgroups", b"deny");
        write_file(c"/proc/self/uid_map", uid_map)?;
        write_file(c"/proc/self/gid_map", gid_map)?;
    }
    os::loopback_up()?;
    Ok(mounts)
}

/// Enter a new network namespace: as root, directly (the program keeps every user it
/// may switch to); else in a new user namespace (no privilege needed), where it is its
/// own user and group only. A mount namespace comes with it where the system allows
/// (for the resolver's file). Says whether a user namespace was made (its ids are then
/// to be mapped) and whether a mount namespace was.
fn unshare_net() -> Result<(bool, bool), Errno> {
    let user = !rustix::process::geteuid().is_root();
    let ns = |user, mounts| Namespaces {
        user,
        network: true,
        mounts,
    };
    let first = os::unshare(ns(user, true));
    if first.is_ok() {
        return Ok((user, true));
    }
    if os::unshare(ns(user, false)).is_ok() {
        return Ok((user, false));
    }
    if !user && os::unshare(ns(true, false)).is_ok() {
        return Ok((true, false));
    }
    first.map(|()| (user, true))
}

/// In the child's own mount namespace: its `/etc/resolv.conf` becomes `resolv` (which
/// names `127.0.0.1`), the host's untouched (the namespace's mounts no longer propagate
/// back first).
#[cfg(target_os = "linux")]
fn divert_names(resolv: &CStr) -> Result<(), Errno> {
    use rustix::mount::MountPropagationFlags;
    rustix::mount::mount_change(
        c"/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )?;
    rustix::mount::mount_bind(resolv, c"/etc/resolv.conf")
}

#[cfg(not(target_os = "linux"))]
fn divert_names(_: &CStr) -> Result<(), Errno> {
    Err(Errno::NOSYS)
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
    resolv_path: CString,
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
        let (parent, child) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
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
        let resolv_path =
            CString::new(resolv.as_os_str().as_encoded_bytes()).map_err(io::Error::other)?;
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
    pub fn apply(&self, cmd: &mut tokio::process::Command) -> io::Result<()> {
        let sock = self.child.try_clone()?;
        let plan = Plan {
            ports: self.ports.clone(),
            direct: self.direct.clone(),
            resolv: self.resolv_path.clone(),
            uid_map: self.uid_map.clone(),
            gid_map: self.gid_map.clone(),
        };
        os::before_exec(cmd, move || {
            enter(sock.as_fd(), &plan).map_err(io::Error::from)
        });
        Ok(())
    }

    /// Once the program started: what the child made inside the namespace.
    pub fn receive(self) -> io::Result<Inside> {
        let parent = self.parent.as_fd();
        let tcp = |fd: OwnedFd| {
            let listener = std::net::TcpListener::from(fd);
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
        let names = receive_fd(parent)?.map(std::net::UdpSocket::from);
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
    resolv: CString,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

/// In the forked child: a new network namespace with loopback up, a listener on
/// `127.0.0.1:PORT` in it for each of the plan's ports, each sent over `sock`; then, each
/// where it can be made (an empty message where not), the socket its name lookups come to
/// and the listeners of the direct connections watched.
fn enter(sock: BorrowedFd, plan: &Plan) -> Result<(), Errno> {
    let mounts = isolate(&plan.uid_map, &plan.gid_map)?;
    for &port in &plan.ports {
        give(sock, Some(listen(port)?))?;
    }
    // The name server's socket first: the resolver is diverted only to a server that is
    // there.
    let names = match mounts {
        true => bound(SocketType::DGRAM, 53).ok(),
        false => None,
    };
    give(sock, names.filter(|_| divert_names(&plan.resolv).is_ok()))?;
    for &port in &plan.direct {
        give(sock, listen(port).ok())?;
    }
    Ok(())
}

/// Send `fd` (or, for `None`, an empty message) over `sock`, and close it here (the parent
/// has its own copy then, or the start fails).
fn give(sock: BorrowedFd, fd: Option<OwnedFd>) -> Result<(), Errno> {
    let byte = [u8::from(fd.is_some())];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    let fds = fd.as_ref().map(|fd| [fd.as_fd()]);
    if let Some(fds) = &fds {
        control.push(rustix::net::SendAncillaryMessage::ScmRights(fds));
    }
    let flags = rustix::net::SendFlags::empty();
    match rustix::net::sendmsg(sock, &[IoSlice::new(&byte)], &mut control, flags)? {
        1 => Ok(()),
        _ => Err(Errno::IO),
    }
}

fn write_file(path: &CStr, data: &[u8]) -> Result<(), Errno> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    match rustix::io::write(&fd, data)? {
        n if n == data.len() => Ok(()),
        _ => Err(Errno::IO),
    }
}

fn listen(port: u16) -> Result<OwnedFd, Errno> {
    let s = bound(SocketType::STREAM, port)?;
    rustix::net::listen(&s, 1024)?;
    Ok(s)
}

/// A socket of `kind` bound to `127.0.0.1:port`.
fn bound(kind: SocketType, port: u16) -> Result<OwnedFd, Errno> {
    let s = rustix::net::socket_with(AddressFamily::INET, kind, SocketFlags::CLOEXEC, None)?;
    rustix::net::sockopt::set_socket_reuseaddr(&s, true)?;
    rustix::net::bind(&s, &SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))?;
    Ok(s)
}

/// One message of [`give`]: its descriptor, if it carries one.
fn receive_fd(sock: BorrowedFd) -> io::Result<Option<OwnedFd>> {
    use rustix::net::{RecvAncillaryMessage, RecvFlags, ReturnFlags};
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let flags = RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC;
    let got = rustix::net::recvmsg(sock, &mut [IoSliceMut::new(&mut byte)], &mut control, flags)?;
    let mut fds = (control.drain())
        .filter_map(|m| match m {
            RecvAncillaryMessage::ScmRights(fds) => Some(fds),
            _ => None,
        })
        .flatten();
    let (fd, more) = (fds.next(), fds.next().is_some());
    let whole = got.bytes == 1 && !more && !got.flags.contains(ReturnFlags::CTRUNC);
    match (whole, byte[0], fd) {
        (true, 0, None) => Ok(None),
        (true, 1, Some(fd)) => Ok(Some(fd)),
        _ => Err(io::Error::other(
            "the contained program's namespace sent an unexpected message",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the program's child does before its exec, done in a forked child under the
    /// counting allocator: it allocates nothing, and (where the system lets this user make
    /// a network namespace) hands back the listener it made inside.
    #[test]
    fn entering_the_jail_allocates_nothing() {
        let jail = Jail::new(vec![8080]).unwrap();
        let plan = Plan {
            ports: jail.ports.clone(),
            direct: jail.direct.clone(),
            resolv: jail.resolv_path.clone(),
            uid_map: jail.uid_map.clone(),
            gid_map: jail.gid_map.clone(),
        };
        let sock = jail.child.as_fd();
        let made = crate::os::tests::allocations_in_child(|| {
            let _ = enter(sock, &plan);
        });
        assert_eq!(made, Ok(0), "allocations between fork and exec");
        if available().is_ok() {
            let inside = jail.receive().unwrap();
            assert_eq!(inside.listeners.len(), 1);
            assert_eq!(inside.listeners[0].local_addr().unwrap().port(), 8080);
        }
    }
}
