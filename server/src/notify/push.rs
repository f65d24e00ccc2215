//! A2A push delivery: the outbox rows `a2a::push` queues for a task's push
//! configs, POSTed to the client's URL with its credentials.
//!
//! - The client's `authentication` goes out as `Authorization: <scheme>
//!   <credentials>` and its `token` as `X-A2A-Notification-Token`, as the
//!   spec and the SDKs read them. Both are kept sealed in the store
//!   (AES-256-GCM, the key derived from the link key), opened only here.
//! - A task is a way to make the agent call a URL, so unless
//!   `a2a_push_allow_private` is set the URL may not reach loopback,
//!   private, link-local or otherwise internal addresses: literal hosts
//!   are refused when the config is created and again before each send,
//!   and names are resolved by [`Guarded`], which drops internal
//!   addresses, so a name that resolves (or rebinds) inward is not called.

use super::webhook::Failure;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use std::net::{IpAddr, SocketAddr};

/// Seals and opens the push secrets.
pub(crate) struct Sealer {
    key: LessSafeKey,
}

impl Sealer {
    /// A sealer keyed by HMAC-SHA-256(`link_key`, purpose).
    pub(crate) fn new(link_key: &[u8]) -> Sealer {
        use hmac::Mac;
        let mut mac = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(link_key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
        mac.update(b"stop-and-go a2a push secrets");
        let bytes = mac.finalize().into_bytes();
        let key = UnboundKey::new(&AES_256_GCM, &bytes)
            .unwrap_or_else(|_| unreachable!("32 bytes is an AES-256 key"));
        Sealer {
            key: LessSafeKey::new(key),
        }
    }

    /// `b64(nonce || ciphertext || tag)`.
    pub(crate) fn seal(&self, plain: &str) -> Result<String, String> {
        let nonce_bytes: [u8; NONCE_LEN] = rand::random();
        let mut buf = plain.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce_bytes),
                Aad::empty(),
                &mut buf,
            )
            .map_err(|_| "cannot seal a push secret".to_string())?;
        let mut out = nonce_bytes.to_vec();
        out.extend_from_slice(&buf);
        Ok(B64.encode(out))
    }

    pub(crate) fn open(&self, sealed: &str) -> Result<String, String> {
        let bad = || {
            "a stored push secret cannot be opened with this agent's key (set the same notifications.link_key or audit.key on every replica)".to_string()
        };
        let raw = B64.decode(sealed).map_err(|_| bad())?;
        if raw.len() < NONCE_LEN {
            return Err(bad());
        }
        let (n, rest) = raw.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(n).map_err(|_| bad())?;
        let mut buf = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::empty(), &mut buf)
            .map_err(|_| bad())?;
        String::from_utf8(plain.to_vec()).map_err(|_| bad())
    }
}

/// Whether `ip` is somewhere a push may not go by default: loopback,
/// private (RFC 1918, unique local), link-local, unspecified, shared
/// (CGNAT), documentation, benchmarking, multicast or broadcast.
pub(crate) fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 198 && (o[1] == 18 || o[1] == 19))
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0x0db8)
        }
    }
}

/// Checks a push URL: http or https, a host, and (unless `allow_private`)
/// no literal internal address or `localhost` name. The error names what
/// is wrong.
pub(crate) fn check_url(raw: &str, allow_private: bool) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("url {raw:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("url {raw:?}: use http or https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "url {raw:?}: put credentials in `authentication`, not in the URL"
        ));
    }
    let Some(host) = url.host() else {
        return Err(format!("url {raw:?} has no host"));
    };
    if allow_private {
        return Ok(url);
    }
    let refused = match host {
        url::Host::Ipv4(ip) => internal(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => internal(IpAddr::V6(ip)),
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost") || d.ends_with(".internal")
        }
    };
    if refused {
        return Err(format!(
            "url {raw:?} points at a loopback, private or link-local address: push notifications go to public addresses (an operator can set a2a_push_allow_private)"
        ));
    }
    Ok(url)
}

/// A resolver that drops internal addresses (see the module docs).
struct Guarded;

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| !internal(a.ip()))
                .collect();
            if found.is_empty() {
                return Err(format!("{host} resolves to no public address").into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client pushes go out on.
pub(crate) fn client(allow_private: bool) -> Result<reqwest::Client, String> {
    let mut b = reqwest::Client::builder()
        .timeout(super::webhook::ATTEMPT_TIMEOUT)
        .connect_timeout(super::webhook::ATTEMPT_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("stop-and-go/", env!("CARGO_PKG_VERSION")));
    if !allow_private {
        b = b.dns_resolver(Guarded);
    }
    b.build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// What one push carries besides the body.
pub(crate) struct Credentials {
    /// `Authorization: <scheme> <credentials>`.
    pub(crate) authorization: Option<String>,
    pub(crate) token: Option<String>,
}

/// One attempt: POSTs the task update.
pub(crate) async fn post(
    http: &reqwest::Client,
    url: &str,
    allow_private: bool,
    creds: &Credentials,
    id: &str,
    body: Vec<u8>,
) -> Result<(), Failure> {
    if let Err(error) = check_url(url, allow_private) {
        return Err(Failure {
            error,
            retry_after: None,
        });
    }
    let mut req = http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-StopGo-Delivery", id);
    if let Some(a) = &creds.authorization {
        req = req.header(reqwest::header::AUTHORIZATION, a);
    }
    if let Some(t) = &creds.token {
        req = req.header("X-A2A-Notification-Token", t);
    }
    super::webhook::send(req.body(body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_the_same_key() {
        let a = Sealer::new(b"key one");
        let sealed = a.seal("tok-123").unwrap();
        assert!(!sealed.contains("tok-123"));
        assert_ne!(
            sealed,
            a.seal("tok-123").unwrap(),
            "a fresh nonce each time"
        );
        assert_eq!(a.open(&sealed).unwrap(), "tok-123");
        assert!(Sealer::new(b"key two").open(&sealed).is_err());
        assert!(a.open("not base64!").is_err());
    }

    #[test]
    fn internal_addresses_and_names_are_refused_by_default() {
        for bad in [
            "http://127.0.0.1:9/x",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
            "http://localhost:8080/",
            "http://api.localhost/",
        ] {
            assert!(
                check_url(bad, false)
                    .unwrap_err()
                    .contains("a2a_push_allow_private"),
                "{bad}"
            );
            assert!(check_url(bad, true).is_ok(), "{bad} allowed by the switch");
        }
        for bad in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "not a url",
            "http://u:p@example.com/",
        ] {
            assert!(check_url(bad, true).is_err(), "{bad}");
        }
        assert!(check_url("https://example.com/hook", false).is_ok());
        assert!(check_url("http://93.184.216.34/hook", false).is_ok());
    }
}
