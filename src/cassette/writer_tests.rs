use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::cassette::store;

fn empty() -> Cassette {
    crate::cassette::store::tests::empty()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The umask is process-wide: tests that read or set it take turns.
static UMASK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn with_umask<T>(mask: libc::mode_t, f: impl FnOnce() -> T) -> T {
    let _g = UMASK.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: umask only swaps the process's file-creation mask.
    let old = unsafe { libc::umask(mask) };
    let out = f();
    unsafe { libc::umask(old) };
    out
}

#[test]
fn a_fifo_a_device_or_a_directory_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: creating a FIFO at a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for (path, kind) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/null"), "a character device"),
        (dir.path(), "a directory"),
    ] {
        let err = Writer::open(path).unwrap_err();
        assert!(matches!(err, CassetteError::Refused { .. }), "{err}");
        assert!(err.to_string().contains(kind), "{err}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
}

#[test]
fn a_symlink_is_written_through_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("shared/real.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, to_bytes(&empty())).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    store::save(&link, &empty()).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(store::load(&real).is_ok());
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink(dir.path().join("nowhere/x.json"), &dangling).unwrap();
    let err = Writer::open(&dangling).unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
}

#[test]
fn a_second_writer_of_the_same_path_fails_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let first = Writer::open(&path).unwrap();
    let err = Writer::open(&path).unwrap_err();
    assert!(matches!(err, CassetteError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another agentproxy"), "{err}");
    first.save(&empty()).unwrap();
    drop(first);
    assert!(
        !dir.path().join(".c.json.lock").exists(),
        "lock file removed"
    );
    Writer::open(&path).unwrap().save(&empty()).unwrap();
}

#[test]
fn a_lock_left_by_a_killed_writer_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".c.json.lock"), "").unwrap();
    Writer::open(&dir.path().join("c.json")).unwrap();
}

#[test]
fn a_read_only_directory_is_found_at_open() {
    // Root may write anywhere; the check only means something for other users.
    // SAFETY: geteuid has no preconditions.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let err = Writer::open(&file.join("c.json")).unwrap_err();
    assert!(matches!(err, CassetteError::Unwritable { .. }), "{err}");
    if unsafe { libc::geteuid() } == 0 {
        return;
    }
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let err = Writer::open(&ro.join("c.json")).unwrap_err();
    assert!(matches!(err, CassetteError::Unwritable { .. }), "{err}");
}

#[test]
fn new_files_follow_the_umask_and_replaced_files_keep_their_mode() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("private.json");
    with_umask(0o077, || store::save(&private, &empty())).unwrap();
    assert_eq!(mode(&private), 0o600);
    let shared = dir.path().join("shared.json");
    with_umask(0o022, || store::save(&shared, &empty())).unwrap();
    assert_eq!(mode(&shared), 0o644);
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    with_umask(0o022, || store::save(&shared, &empty())).unwrap();
    assert_eq!(mode(&shared), 0o640);
}

#[test]
fn stale_temp_files_of_our_naming_are_removed_and_others_kept() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join(".c.json.abc123.tmp");
    let other = dir.path().join(".d.json.abc123.tmp");
    // The temp file of `c.json.bak`'s writer, not ours.
    let bak = dir.path().join(".c.json.bak.abc123.tmp");
    for f in [&stale, &other, &bak] {
        std::fs::write(f, "").unwrap();
    }
    store::save(&dir.path().join("c.json"), &empty()).unwrap();
    assert!(!stale.exists());
    assert!(other.exists() && bak.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn a_secret_blocks_the_write_and_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    store::save(&path, &empty()).unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut bad = empty();
    bad.recorder = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789".into();
    let err = store::save(&path, &bad).unwrap_err();
    assert!(err.to_string().contains("/recorder"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_key_shaped_value_anywhere_refuses_the_write_and_names_where() {
    use crate::cassette::format::{Body, Interaction, RecordedRequest, RecordedResponse};
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
    let interaction = |answer: &str| {
        let mut it = Interaction {
            route: "openai.chat".into(),
            key: "0".repeat(32),
            turn: None,
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                body: Some(Body::Json(serde_json::json!({"model": "m"}).into())),
                body_xxh3: None,
            },
            response: RecordedResponse {
                status: 200,
                headers: Default::default(),
                body: Some(Body::Json(serde_json::json!({"said": [answer]}).into())),
                events: None,
                aborted: None,
                encoded: Default::default(),
                encoded_events: Default::default(),
                event_ms: Vec::new(),
            },
            latency_ms: 1,
            mocked: Vec::new(),
            spoiled: None,
        };
        // As a recording holds it until it is written.
        it.compact();
        it
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let mut c = empty();
    c.interactions = vec![interaction("fine"), interaction(key)];
    let e = Writer::open(&path).unwrap().save(&c).unwrap_err();
    assert!(
        matches!(&e, CassetteError::Secret { pointer, kind: "OpenAI API key", .. }
            if pointer == "/interactions/1/response/body/json/said/0"),
        "{e}"
    );
    assert!(!path.exists(), "nothing written");
    // Without one, the compacted bodies are written laid out like any value.
    let mut c = empty();
    c.interactions = vec![interaction("fine")];
    Writer::open(&path).unwrap().save(&c).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"said\": [\n"), "{text}");
    assert_eq!(
        store::parse(&path, text.as_bytes())
            .unwrap()
            .interactions
            .len(),
        1
    );
}
