//! The few facts agentproxy reads from Linux's `/proc`: a process's parent and state from
//! its `stat` line, and one variable of its environment block.

/// The parent pid in a `/proc/PID/stat` line: the second field after the command name,
/// which is in parentheses and may itself hold spaces and parentheses.
pub fn parent(stat: &str) -> Option<u32> {
    after_command(stat)?.nth(1)?.parse().ok()
}

/// The state letter in a `/proc/PID/stat` line (`R`, `S`, `T`, `Z`, …).
pub fn state(stat: &str) -> Option<char> {
    after_command(stat)?.next()?.chars().next()
}

fn after_command(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

/// `name`'s value in a NUL-separated environment block, when it is not blank.
pub fn variable(environ: &[u8], name: &str) -> Option<String> {
    environ.split(|b| *b == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        Some(String::from_utf8_lossy(value).into_owned()).filter(|v| !v.trim().is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_and_state_are_read_past_a_command_with_parentheses() {
        assert_eq!(parent("4242 (python3) S 4100 4242 4100 0"), Some(4100));
        assert_eq!(parent("7 (a) b) (c) R 12 7 7"), Some(12));
        assert_eq!(state("7 (a) b) (c) Z 12 7 7"), Some('Z'));
        assert_eq!(parent("garbage"), None);
        assert_eq!(state("garbage"), None);
    }

    #[test]
    fn a_variable_is_found_in_an_environment_block() {
        let env = b"HOME=/root\0AGENTPROXY_URLX=no\0AGENTPROXY_URL=http://127.0.0.1:5\0";
        assert_eq!(
            variable(env, "AGENTPROXY_URL").as_deref(),
            Some("http://127.0.0.1:5")
        );
        assert_eq!(variable(b"AGENTPROXY_URL=\0", "AGENTPROXY_URL"), None);
        assert_eq!(variable(b"", "AGENTPROXY_URL"), None);
    }
}
