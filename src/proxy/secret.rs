//! The session's secret: what every request under the control prefix presents (serve's
//! control endpoint, the MCP stand-ins' endpoint), and how it is made. Pure but for the
//! system's random source.

/// The header that carries the session's secret: every request under the control prefix
/// (`serve`'s control, the MCP stand-ins' endpoint) must present it.
pub const SECRET_HEADER: &str = "x-agentproxy-secret";

/// The variable that gives the secret to the program (and so to the stand-ins it starts).
pub const SECRET_VAR: &str = "AGENTPROXY_SECRET";

/// A fresh secret: 128 bits from the system's random source, as hex.
pub fn new_secret() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Does `headers` present `secret`? Compared in constant time: the answer's timing says
/// nothing of how much of a guess was right.
pub fn presents(headers: &http::HeaderMap, secret: &str) -> bool {
    let Some(given) = headers.get(SECRET_HEADER).map(|v| v.as_bytes()) else {
        return false;
    };
    given.len() == secret.len()
        && given
            .iter()
            .zip(secret.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}
