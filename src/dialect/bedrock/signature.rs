//! What a SigV4 `Authorization` header says of its signature: the region and service it
//! was made for, and the headers it covers. (Signing itself is the proxy's, `proxy::sigv4`.)

use http::HeaderMap;

const ALGORITHM: &str = "AWS4-HMAC-SHA256 ";

/// The scope of a SigV4 signature.
#[derive(Debug, PartialEq)]
pub struct Scope<'a> {
    pub region: &'a str,
    pub service: &'a str,
    pub signed: Vec<&'a str>,
}

/// The scope of an `Authorization` header's value, if it is a SigV4 signature
/// (`AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/SERVICE/aws4_request, SignedHeaders=…,
/// Signature=…`).
pub fn scope(authorization: &str) -> Option<Scope<'_>> {
    let fields = authorization.strip_prefix(ALGORITHM)?;
    let field = |name: &str| {
        (fields.split(',').map(str::trim)).find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let mut credential = field("Credential")?.split('/').skip(2);
    Some(Scope {
        region: credential.next()?,
        service: credential.next()?,
        signed: field("SignedHeaders")?.split(';').collect(),
    })
}

/// Bedrock Runtime in the region a request is signed for.
pub(crate) fn endpoint(_path: &str, headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let region = scope(auth)?.region;
    let valid = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    valid.then(|| format!("https://bedrock-runtime.{region}.amazonaws.com"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261206/us-west-2/bedrock/aws4_request, SignedHeaders=accept-encoding;content-type;host;x-amz-date, Signature=abc";

    #[test]
    fn the_scope_is_read_from_the_authorization_header() {
        assert_eq!(
            scope(AUTH),
            Some(Scope {
                region: "us-west-2",
                service: "bedrock",
                signed: vec!["accept-encoding", "content-type", "host", "x-amz-date"],
            })
        );
        assert_eq!(scope("Bearer x"), None);
    }

    #[test]
    fn the_endpoint_is_the_region_signed_for() {
        let mut h = HeaderMap::new();
        assert_eq!(endpoint("/model/m/converse", &h), None);
        h.insert("authorization", AUTH.parse().unwrap());
        assert_eq!(
            endpoint("/model/m/converse", &h).as_deref(),
            Some("https://bedrock-runtime.us-west-2.amazonaws.com")
        );
        let odd = AUTH.replace("us-west-2", "evil.test/x");
        h.insert("authorization", odd.parse().unwrap());
        assert_eq!(endpoint("/model/m/converse", &h), None);
    }
}
