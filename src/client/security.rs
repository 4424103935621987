//! How a `BrokerConnection` secures itself, chosen by the inter-broker listener's protocol:
//! nothing (PLAINTEXT), TLS (SSL), a SASL login (SASL_PLAINTEXT), or both (SASL_SSL). TLS wraps
//! the socket before the first byte of Kafka is sent; the SASL login (SaslHandshake v1, then
//! SaslAuthenticate with PLAIN or SCRAM tokens) runs right after the ApiVersions handshake, as
//! Kafka's clients do, and a refusal is a failed connect (`ClientError::Authentication`), never a
//! connection that carries on unauthenticated. A session with a lifetime (KIP-368) makes the
//! connection unusable before it ends ([`relogin_at`]), so its owner connects and logs in anew.
//!
//! What to use comes from the broker config (`security::inter_broker`); this module only speaks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::connection::BrokerConnection;
use super::error::ClientError;
use crate::security::sasl::client::{SaslClientConfig, ScramClient};
use crate::security::sasl::SaslMechanism;

/// The TLS and SASL layers of a connection; the default is neither (PLAINTEXT).
#[derive(Clone, Default)]
pub struct ConnectionSecurity {
    /// Present: TLS to the broker, verifying its certificate against these roots.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Present: log in with this mechanism and credential after ApiVersions.
    pub sasl: Option<SaslClientConfig>,
}

impl ConnectionSecurity {
    /// The Kafka security protocol these layers make up.
    pub fn protocol_name(&self) -> &'static str {
        match (self.tls.is_some(), self.sasl.is_some()) {
            (false, false) => "PLAINTEXT",
            (true, false) => "SSL",
            (false, true) => "SASL_PLAINTEXT",
            (true, true) => "SASL_SSL",
        }
    }
}

impl fmt::Debug for ConnectionSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionSecurity")
            .field("protocol", &self.protocol_name())
            .field("sasl", &self.sasl)
            .finish()
    }
}

/// Equal when they are the same layers: the same TLS config (by identity) and the same login.
impl PartialEq for ConnectionSecurity {
    fn eq(&self, other: &Self) -> bool {
        let same_tls = match (&self.tls, &other.tls) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_tls && self.sasl == other.sasl
    }
}

impl Eq for ConnectionSecurity {}

/// The host part of `host:port` (brackets of an IPv6 literal removed): the name the broker's
/// certificate must carry.
pub(crate) fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host)
}

/// Logs `connection` in with `login`: SaslHandshake v1 naming the mechanism, then the
/// mechanism's tokens in SaslAuthenticate requests until the broker accepts or refuses.
/// Returns the session lifetime the broker set (`connections.max.reauth.ms`, KIP-368), if any.
pub(crate) async fn authenticate(
    connection: &BrokerConnection,
    login: &SaslClientConfig,
) -> Result<Option<Duration>, ClientError> {
    let addr = connection.addr().to_string();
    let refused = |reason: String| ClientError::Authentication {
        addr: addr.clone(),
        mechanism: login.mechanism.name(),
        reason,
    };
    // v1: the tokens travel in SaslAuthenticate requests (v0's raw tokens are for old clients).
    let handshake = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(login.mechanism.name()));
    let answer = connection.send(handshake, 1).await?;
    if answer.error_code != 0 {
        let enabled: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
        return Err(refused(format!(
            "SaslHandshake answered {} (the listener enables {})",
            crate::protocol::error_codes::name(answer.error_code),
            enabled.join(", ")
        )));
    }
    let version = connection
        .version_for(ApiKey::SaslAuthenticate, (0, 2))
        .ok_or_else(|| refused("the broker does not serve SaslAuthenticate".to_string()))?;
    let exchange = |token: Vec<u8>| async {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let answer = connection.send(request, version).await?;
        if answer.error_code != 0 {
            let message = answer.error_message.as_ref().map_or("", |m| m.as_str()).to_string();
            return Err(refused(format!(
                "{}: {message}",
                crate::protocol::error_codes::name(answer.error_code)
            )));
        }
        let lifetime = u64::try_from(answer.session_lifetime_ms).ok().filter(|ms| *ms > 0);
        Ok((answer.auth_bytes, lifetime.map(Duration::from_millis)))
    };
    match login.mechanism {
        SaslMechanism::Plain => {
            let token = format!("\0{}\0{}", login.username, login.password);
            let (_, lifetime) = exchange(token.into_bytes()).await?;
            Ok(lifetime)
        }
        SaslMechanism::Scram(mechanism) => {
            let client = ScramClient::new(mechanism, &login.username, &login.password);
            let (server_first, _) = exchange(client.client_first().as_bytes().to_vec()).await?;
            let server_first = std::str::from_utf8(&server_first)
                .map_err(|_| refused("server-first is not UTF-8".to_string()))?
                .to_string();
            let (state, client_final) = client.client_final(&server_first).map_err(refused)?;
            let (server_final, lifetime) = exchange(client_final.into_bytes()).await?;
            let server_final =
                std::str::from_utf8(&server_final).map_err(|_| refused("server-final is not UTF-8".to_string()))?;
            state.verify_server_final(server_final).map_err(refused)?;
            Ok(lifetime)
        }
    }
}

/// When to stop using a connection whose session lasts `lifetime` from `authenticated_at`:
/// at 85 % of it, as Kafka's clients re-authenticate between 85 and 95 %, so no request meets
/// an expired session. kastle logs in again on a fresh connection instead of re-authenticating
/// the old one.
pub(crate) fn relogin_at(authenticated_at: Instant, lifetime: Duration) -> Instant {
    authenticated_at + lifetime.mul_f64(0.85)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_what_precedes_the_port() {
        assert_eq!(host_of("127.0.0.1:9092"), "127.0.0.1");
        assert_eq!(host_of("broker-1.example.com:9093"), "broker-1.example.com");
        assert_eq!(host_of("[::1]:9092"), "::1");
    }

    #[test]
    fn a_session_is_left_at_85_percent_of_its_lifetime() {
        let now = Instant::now();
        assert_eq!(relogin_at(now, Duration::from_secs(100)), now + Duration::from_secs(85));
    }

    #[test]
    fn the_layers_name_the_protocol() {
        assert_eq!(ConnectionSecurity::default().protocol_name(), "PLAINTEXT");
        let sasl = ConnectionSecurity {
            tls: None,
            sasl: Some(SaslClientConfig {
                mechanism: SaslMechanism::Plain,
                username: "u".into(),
                password: "p".into(),
            }),
        };
        assert_eq!(sasl.protocol_name(), "SASL_PLAINTEXT");
        assert!(!format!("{sasl:?}").contains("\"p\""), "the password is not logged");
    }
}
