//! Transparent huge pages, turned off in a process that records.
//!
//! The allocator asks for transparent huge pages, and a recording holds every exchange
//! until it writes the cassette, so its heap grows 2 MB at a time and the request that
//! touches a new huge page waits for the kernel to zero it: half a millisecond to several,
//! the whole of record's p99 (`docs/benchmarks.md`). A process that never records keeps
//! them (replay's start-up and CPU per request are better with them); one that records
//! goes without them from its first recording session on (`serve` and `test` may replay
//! after that). The programs it starts get them back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static ONCE: Once = Once::new();
/// This process turned them off (they were on): its children turn them on again.
static TURNED_OFF: AtomicBool = AtomicBool::new(false);

/// No transparent huge pages for this process from now on (a recording session starts).
pub(super) fn off_while_recording() {
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        if rustix::thread::transparent_huge_pages_are_disabled() == Ok(false)
            && rustix::thread::disable_transparent_huge_pages(true).is_ok()
        {
            TURNED_OFF.store(true, Ordering::SeqCst);
        }
    });
}

/// A program `cmd` starts takes transparent huge pages as it would have without
/// agentproxy (the setting is inherited). Whether this process turned them off is read
/// in the child, so a recording session that starts while `cmd` is being spawned counts.
pub fn as_before(cmd: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    // Between fork and exec: an atomic read and one system call.
    crate::os::before_exec(cmd, || {
        if TURNED_OFF.load(Ordering::SeqCst) {
            let _ = rustix::thread::disable_transparent_huge_pages(false);
        }
        Ok(())
    });
}
