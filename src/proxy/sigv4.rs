//! AWS SigV4 on the way upstream. A signature covers the `Host` and every header the
//! client listed in `SignedHeaders` (AnthropicBedrock signs `Accept-Encoding`), so the
//! upstream must get them as signed, or a signature of its own:
//!
//! - signed for a provider's host (an intercepted request to
//!   `bedrock-runtime.{region}.amazonaws.com`), or for the host the request goes to
//!   (another host's, recorded with `--record-other-hosts`): every signed header goes
//!   upstream as the client sent it, `Host` and `Accept-Encoding` included, and the body
//!   unchanged;
//! - signed for the proxy (the client was given `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`): the
//!   signature cannot hold for another host, so the request is signed again for the
//!   upstream, in the client's region and service, with the credentials of agentproxy's
//!   own environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`),
//!   which a recording shares with the program it runs.
//!
//! Nothing of a signature is stored (a recording keeps no request header) or keyed.

use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use bytes::Bytes;
use http::{header, HeaderMap, Request};
use http_body_util::Full;

use crate::dialect::bedrock::signature::{scope, Scope};
use crate::dialect::provider_of_host;

/// Keep `req` (built from the program's `sent` headers, bound for its upstream URL) valid
/// under the program's SigV4 signature, as the module says; a request that is not signed
/// is left alone. Fails when a signature must be made and no credentials are at hand.
pub(super) fn keep_valid(
    req: &mut Request<Full<Bytes>>,
    sent: &HeaderMap,
    body: &Bytes,
) -> Result<(), String> {
    let Some(scope) = (sent.get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(scope)
    else {
        return Ok(());
    };
    let host = (sent.get(header::HOST).and_then(|v| v.to_str().ok())).unwrap_or_default();
    let bare = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let bound_for = req.uri().authority().map(|a| a.as_str());
    // Signed for a provider's host, or for the host it goes to (another host's request,
    // recorded with --record-other-hosts): the signature holds as it is.
    if provider_of_host(bare).is_some() || bound_for.is_some_and(|a| a.eq_ignore_ascii_case(host)) {
        for name in &scope.signed {
            req.headers_mut().remove(*name);
            for value in sent.get_all(*name) {
                req.headers_mut().append(
                    header::HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?,
                    value.clone(),
                );
            }
        }
        return Ok(());
    }
    resign(req, &scope, body)
}

/// Sign `req` anew for its own URL, in the scope the client signed for.
fn resign(req: &mut Request<Full<Bytes>>, scope: &Scope, body: &Bytes) -> Result<(), String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(key), Some(secret)) = (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) else {
        return Err("the request is signed for agentproxy's address (AWS SigV4), and agentproxy has no AWS credentials to sign it for the upstream: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the recording's environment, or let the program reach the real endpoint through the session's forward proxy (unset AWS_ENDPOINT_URL_BEDROCK_RUNTIME), where its own signature holds".to_owned());
    };
    for stale in [
        "authorization",
        "x-amz-date",
        "x-amz-security-token",
        "x-amz-content-sha256",
    ] {
        req.headers_mut().remove(stale);
    }
    let identity =
        Credentials::new(key, secret, var("AWS_SESSION_TOKEN"), None, "environment").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(scope.region)
        .name(scope.service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let uri = req.uri().to_string();
    let headers: Vec<(&str, &str)> = (req.headers().iter())
        .filter_map(|(n, v)| Some((n.as_str(), v.to_str().ok()?)))
        .collect();
    let signable = SignableRequest::new(
        req.method().as_str(),
        &uri,
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    instructions.apply_to_request_http1x(req);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUTH: &str = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261206/us-west-2/bedrock/aws4_request, SignedHeaders=accept-encoding;content-type;host;x-amz-date, Signature=abc";

    fn sent(host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", AUTH.parse().unwrap());
        h.insert("host", host.parse().unwrap());
        h.insert("accept-encoding", "gzip, deflate".parse().unwrap());
        h.insert("x-amz-date", "20261206T120000Z".parse().unwrap());
        h.insert("content-type", "application/json".parse().unwrap());
        h
    }

    fn forwarded(url: &str) -> Request<Full<Bytes>> {
        let mut req = Request::post(url).body(Full::new(Bytes::new())).unwrap();
        let h = req.headers_mut();
        h.insert("accept-encoding", "identity".parse().unwrap());
        h.insert("content-type", "application/json".parse().unwrap());
        h.insert("authorization", AUTH.parse().unwrap());
        h.insert("x-amz-date", "20261206T120000Z".parse().unwrap());
        req
    }

    #[test]
    fn a_request_signed_for_the_real_host_goes_up_with_every_signed_header_as_sent() {
        let mut req = forwarded("http://127.0.0.1:9/model/m/converse");
        let host = "bedrock-runtime.us-west-2.amazonaws.com";
        keep_valid(&mut req, &sent(host), &Bytes::new()).unwrap();
        assert_eq!(req.headers()["host"], host);
        assert_eq!(req.headers()["accept-encoding"], "gzip, deflate");
        assert_eq!(req.headers()["authorization"], AUTH);
    }

    #[test]
    fn a_request_signed_for_the_host_it_goes_to_keeps_its_signature() {
        let mut req = forwarded("https://bucket.s3.us-west-2.amazonaws.com/key");
        keep_valid(
            &mut req,
            &sent("bucket.s3.us-west-2.amazonaws.com"),
            &Bytes::new(),
        )
        .unwrap();
        assert_eq!(req.headers()["authorization"], AUTH);
        assert_eq!(req.headers()["accept-encoding"], "gzip, deflate");
    }

    #[test]
    fn unsigned_requests_are_left_alone() {
        let mut req = forwarded("http://127.0.0.1:9/v1/chat/completions");
        req.headers_mut().remove("authorization");
        let mut plain = sent("127.0.0.1:5");
        plain.insert("authorization", "Bearer sk-x".parse().unwrap());
        keep_valid(&mut req, &plain, &Bytes::new()).unwrap();
        assert_eq!(req.headers()["accept-encoding"], "identity");
        assert!(req.headers().get("host").is_none());
    }
}
