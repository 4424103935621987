//! The client side of SASL PLAIN and SCRAM, for the broker's own connections to other brokers
//! (controller channel, replica fetchers, internal clients): the SCRAM client state machine
//! here, pure; the SaslHandshake/SaslAuthenticate exchange on a connection is in
//! `network::authentication::authenticate_client`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;

use super::scram::{constant_time_eq, encode_saslname, server_nonce};
use super::{SaslMechanism, ScramMechanism};

/// Who the broker logs in as on the inter-broker listener, and how.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslClientConfig {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslClientConfig")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// The SCRAM client before it has seen server-first.
#[derive(Debug, Clone)]
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    client_first: String,
    nonce: String,
}

/// The SCRAM client after client-final, holding what it needs to check server-final.
#[derive(Debug, Clone)]
pub struct ScramClientFinal {
    expected_server_signature: Vec<u8>,
}

impl ScramClient {
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Self {
        let nonce = server_nonce();
        Self {
            mechanism,
            password: password.to_string(),
            client_first: format!("n,,n={},r={nonce}", encode_saslname(user)),
            nonce,
        }
    }

    pub fn client_first(&self) -> &str {
        &self.client_first
    }

    /// Answers server-first (`r=…,s=…,i=…`) with client-final.
    pub fn client_final(self, server_first: &str) -> Result<(ScramClientFinal, String), String> {
        let mut attrs = server_first.split(',');
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or("server-first has no nonce")?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err("server-first nonce does not extend ours".into());
        }
        let salt = attrs
            .next()
            .and_then(|a| a.strip_prefix("s="))
            .and_then(|s| B64.decode(s).ok())
            .ok_or("server-first has no salt")?;
        let iterations: u32 = attrs
            .next()
            .and_then(|a| a.strip_prefix("i="))
            .and_then(|i| i.parse().ok())
            .ok_or("server-first has no iteration count")?;
        let m = self.mechanism;
        let salted = m.salted_password(&self.password, &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let bare = &self.client_first[3..];
        let auth_message = format!("{bare},{server_first},{without_proof}");
        let signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
        let server_key = m.hmac(&salted, b"Server Key");
        let state = ScramClientFinal {
            expected_server_signature: m.hmac(&server_key, auth_message.as_bytes()),
        };
        Ok((state, format!("{without_proof},p={}", B64.encode(proof))))
    }
}

impl ScramClientFinal {
    /// Checks server-final `v=…` (an `e=…` is the server's refusal).
    pub fn verify_server_final(&self, server_final: &str) -> Result<(), String> {
        if let Some(e) = server_final.strip_prefix("e=") {
            return Err(format!("the server refused: {e}"));
        }
        let v = server_final
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v).ok())
            .ok_or("server-final has no verifier")?;
        if constant_time_eq(&v, &self.expected_server_signature) {
            Ok(())
        } else {
            Err("the server's signature is wrong".into())
        }
    }
}
