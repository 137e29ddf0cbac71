//! The session's certificate authority: made in memory when the session starts, its key
//! never written anywhere, and a certificate for each intercepted host signed by it on
//! first use. The program trusts it through the bundle `runner::env` writes.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CidrSubnet, DnType,
    ExtendedKeyUsagePurpose, GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;

/// The variables that name a trust store, and the clients that read them: OpenSSL and
/// httpx, requests, curl, Node (added to its own roots), boto3 and the AWS CLI (which read
/// no other). The program's are the session's
/// bundle; the files agentproxy's own name are in it.
pub const TRUST_VARS: [&str; 5] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "AWS_CA_BUNDLE",
];

#[derive(Debug, thiserror::Error)]
pub enum CaError {
    #[error("cannot make a certificate: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] rustls::Error),
}

pub struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// The TLS configurations of the hosts served last.
    hosts: Mutex<Leaves>,
}

/// How many hosts' certificates are kept: a program that names thousands of hosts under
/// a provider's wildcard must not grow the session by kilobytes each (a host dropped
/// gets a new certificate when it comes again).
const KEPT: usize = 512;

/// The hosts' TLS configurations, the oldest dropped first past [`KEPT`].
#[derive(Default)]
struct Leaves {
    by_host: HashMap<String, Arc<ServerConfig>>,
    order: VecDeque<String>,
}

impl Leaves {
    /// Keep `config` for `host`, unless one was kept meanwhile: the one kept.
    fn keep(&mut self, host: &str, config: Arc<ServerConfig>) -> Arc<ServerConfig> {
        if let Some(kept) = self.by_host.get(host) {
            return kept.clone();
        }
        if self.order.len() >= KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.by_host.remove(&oldest);
            }
        }
        self.order.push_back(host.to_owned());
        self.by_host.insert(host.to_owned(), config.clone());
        config
    }
}

/// Name Constraints that permit `names`: each DNS name with its subdomains (a name with
/// a wildcard label, `bedrock-runtime.*.amazonaws.com`, as the domain after that label),
/// each IP address alone, and (when none is an address) no IP address at all.
fn constraints(names: &[String]) -> NameConstraints {
    let (ips, dns): (Vec<_>, Vec<_>) = (names.iter())
        .map(|n| {
            let n = (n.rsplit_once('*')).map_or(n.as_str(), |(_, after)| {
                after.split_once('.').map_or("", |(_, domain)| domain)
            });
            n.trim_start_matches('.')
                .trim_end_matches('.')
                .to_ascii_lowercase()
        })
        .partition(|n| n.trim_matches(['[', ']']).parse::<IpAddr>().is_ok());
    let address = |n: &String| n.trim_matches(['[', ']']).parse::<IpAddr>().ok();
    let mut permitted: Vec<GeneralSubtree> = dns.into_iter().map(GeneralSubtree::DnsName).collect();
    permitted.extend((ips.iter().filter_map(address)).map(|ip| {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        GeneralSubtree::IpAddress(CidrSubnet::from_addr_prefix(ip, bits))
    }));
    let excluded = match ips.is_empty() {
        true => vec![
            GeneralSubtree::IpAddress(CidrSubnet::from_v4_prefix([0; 4], 0)),
            GeneralSubtree::IpAddress(CidrSubnet::from_v6_prefix([0; 16], 0)),
        ],
        false => vec![],
    };
    NameConstraints {
        permitted_subtrees: permitted,
        excluded_subtrees: excluded,
    }
}

impl Authority {
    /// A new authority, valid from a day ago (clocks differ) for a week. With `scope`, it
    /// can vouch for those names only (Name Constraints: a name covers its subdomains; an
    /// IP address itself), so the bundle the program trusts accepts it for no other host;
    /// `None` when any host may be intercepted (other hosts recorded).
    pub fn new(scope: Option<&[String]>) -> Result<Authority, CaError> {
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.name_constraints = scope.map(constraints);
        params
            .distinguished_name
            .push(DnType::CommonName, "agentproxy session CA");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "agentproxy");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        validity(&mut params);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Authority {
            issuer,
            hosts: Mutex::default(),
        })
    }

    /// The authority's certificate, PEM: what the program is told to trust.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// What the program is told to trust (`SSL_CERT_FILE` and the like): this authority's
    /// certificate, then the system's roots (which that variable replaces), then the
    /// certificates in `own` (the files the environment named for that, such as a
    /// corporate CA), so the hosts it does not intercept still verify. `None` for the roots
    /// when no system file was found.
    pub fn bundle(&self, own: &[std::path::PathBuf]) -> (String, Option<&'static str>) {
        let mut out = self.pem();
        let roots = SYSTEM_ROOTS
            .iter()
            .find_map(|p| Some((*p, std::fs::read_to_string(p).ok()?)));
        let found = roots.as_ref().map(|(p, _)| *p);
        let texts = roots.map(|(_, t)| t).into_iter();
        for text in texts.chain(own.iter().filter_map(|p| std::fs::read_to_string(p).ok())) {
            out.push('\n');
            out.push_str(&text);
        }
        (out, found)
    }

    /// The TLS configuration that presents `host` a certificate of this authority (made on
    /// first use), offering HTTP/2 and HTTP/1.1.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, CaError> {
        let leaves = || self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = leaves().by_host.get(host) {
            return Ok(c.clone());
        }
        // Made outside the lock: a key takes a while, and other hosts' tunnels must not
        // wait for it.
        let (chain, key) = self.leaf(host)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(leaves().keep(host, Arc::new(config)))
    }

    /// A certificate for `host` signed by this authority, with the authority's own after
    /// it, and its key.
    fn leaf(
        &self,
        host: &str,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), CaError> {
        let mut params = CertificateParams::new(vec![host.to_owned()])?;
        // An address has no common name: OpenSSL would check one against the DNS name
        // constraints, and refuse it.
        if host.trim_matches(['[', ']']).parse::<IpAddr>().is_err() {
            params.distinguished_name.push(DnType::CommonName, host);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        validity(&mut params);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        let chain = vec![cert.der().clone(), self.issuer.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((chain, key))
    }
}

/// Where systems keep their root certificates as one PEM file (Debian and Ubuntu, Fedora
/// and RHEL, openSUSE, Alpine, macOS).
const SYSTEM_ROOTS: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
    "/usr/local/etc/openssl/cert.pem",
];

/// From a day ago to a week on.
fn validity(params: &mut CertificateParams) {
    let now = std::time::SystemTime::now();
    params.not_before = (now - std::time::Duration::from_secs(86_400)).into();
    params.not_after = (now + std::time::Duration::from_secs(7 * 86_400)).into();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificates_kept_are_bounded_and_one_per_host() {
        let ca = Authority::new(None).unwrap();
        let first = ca.server_config("h0.openai.test").unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &ca.server_config("h0.openai.test").unwrap()
        ));
        for n in 1..KEPT + 10 {
            ca.server_config(&format!("h{n}.openai.test")).unwrap();
        }
        let leaves = ca.hosts.lock().unwrap();
        assert_eq!((leaves.by_host.len(), leaves.order.len()), (KEPT, KEPT));
        // The oldest went first.
        assert!(!leaves.by_host.contains_key("h0.openai.test"));
        assert!(leaves
            .by_host
            .contains_key(&format!("h{}.openai.test", KEPT + 9)));
    }

    /// Whether a client that trusts `ca` alone accepts its certificate for `host`.
    fn trusted(ca: &Authority, host: &str) -> bool {
        use rustls::client::danger::ServerCertVerifier;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.issuer.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots.into(), provider)
                .build()
                .unwrap();
        let (chain, _) = ca.leaf(host).unwrap();
        let name = rustls::pki_types::ServerName::try_from(host.to_owned()).unwrap();
        let now = rustls::pki_types::UnixTime::now();
        verifier
            .verify_server_cert(&chain[0], &[], &name, &[], now)
            .is_ok()
    }

    #[test]
    fn a_scoped_authority_vouches_for_its_hosts_only() {
        let scope = ["api.openai.com".to_owned(), ".openai.azure.com".to_owned()];
        let ca = Authority::new(Some(&scope)).unwrap();
        assert!(trusted(&ca, "api.openai.com"));
        assert!(trusted(&ca, "my-resource.openai.azure.com"));
        for other in ["bank.example.invalid", "openai.com.evil.test", "127.0.0.1"] {
            assert!(!trusted(&ca, other), "{other}");
        }
        // A wildcard label: the domain after it.
        let scope = ["bedrock-runtime.*.amazonaws.com".to_owned()];
        let ca = Authority::new(Some(&scope)).unwrap();
        assert!(trusted(&ca, "bedrock-runtime.us-east-1.amazonaws.com"));
        assert!(!trusted(
            &ca,
            "bedrock-runtime.us-east-1.amazonaws.com.evil.test"
        ));
        // An address in its scope, and nothing else.
        let scope = ["api.openai.com".to_owned(), "127.0.0.1".to_owned()];
        let ca = Authority::new(Some(&scope)).unwrap();
        assert!(trusted(&ca, "127.0.0.1"));
        assert!(!trusted(&ca, "127.0.0.2"));
        // Unscoped (other hosts recorded): any name.
        let ca = Authority::new(None).unwrap();
        assert!(trusted(&ca, "bank.example.invalid"));
    }
}
