//! Helpers for SASL tests: brokers with a PLAINTEXT inter-broker listener and a SASL_PLAINTEXT
//! client listener, their SASL endpoints, and a raw SCRAM login over [`Wire`] (precise timing,
//! no client library in between).

use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use kastle::security::sasl::client::ScramClient;
use kastle::security::sasl::ScramMechanism;
use kastle::zk::ZkSession;

use super::wire::Wire;
use super::BrokerSpec;

/// The PLAIN users of every broker here (and the inter-broker login).
pub const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#;

/// Kafka's SASL_AUTHENTICATION_FAILED.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// YAML double-quoted values need their quotes escaped.
pub fn yaml_escaped(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A broker with a PLAINTEXT inter-broker listener and a SASL_PLAINTEXT client listener.
pub fn client_sasl_spec(chroot: &str, id: i32) -> BrokerSpec {
    let mut s = super::replicas::spec(chroot, id, &[]);
    s.listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".into();
    s.with("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
        .with(
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            &yaml_escaped(PLAIN_JAAS),
        )
        .with("inter.broker.listener.name", "PLAINTEXT")
}

/// `host:port` of broker `id`'s SASL_PLAINTEXT endpoint.
pub async fn sasl_bootstrap(zk: &ZkSession, id: i32) -> String {
    let (registration, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .broker(kastle::types::BrokerId(id))
        .await
        .expect("read registration")
        .expect("broker registered");
    registration
        .endpoints
        .iter()
        .find_map(|e| e.strip_prefix("SASL_PLAINTEXT://"))
        .expect("a SASL_PLAINTEXT endpoint")
        .to_string()
}

/// Why a login did not succeed: the broker's error code (-1: no answer) and message.
pub type LoginFailure = (i16, String);

const STEP: Duration = Duration::from_secs(10);

async fn authenticate(wire: &mut Wire, bytes: Vec<u8>) -> Result<Vec<u8>, LoginFailure> {
    let response = wire
        .try_send(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes)),
            2,
            STEP,
        )
        .await
        .ok_or((-1, "no SaslAuthenticate answer".to_string()))?;
    if response.error_code != 0 {
        return Err((
            response.error_code,
            response.error_message.map(|m| m.to_string()).unwrap_or_default(),
        ));
    }
    Ok(response.auth_bytes.to_vec())
}

async fn handshake(addr: &str, mechanism: ScramMechanism) -> Result<Wire, LoginFailure> {
    let mut wire = Wire::try_connect(addr, STEP)
        .await
        .ok_or((-1, format!("cannot connect to {addr}")))?;
    let hs = wire
        .try_send(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism.name())),
            1,
            STEP,
        )
        .await
        .ok_or((-1, "no SaslHandshake answer".to_string()))?;
    if hs.error_code != 0 {
        return Err((hs.error_code, "SaslHandshake refused".to_string()));
    }
    Ok(wire)
}

/// A full SCRAM login as `user`; the authenticated connection, or why it failed.
pub async fn scram_login(
    addr: &str,
    mechanism: ScramMechanism,
    user: &str,
    password: &str,
) -> Result<Wire, LoginFailure> {
    scram_login_timed(addr, mechanism, user, password)
        .await
        .map(|(wire, _)| wire)
}

/// [`scram_login`], also returning when the broker's server-first came (the moment it showed
/// it has the credential, before the client's own PBKDF2, which is slow in a debug build).
pub async fn scram_login_timed(
    addr: &str,
    mechanism: ScramMechanism,
    user: &str,
    password: &str,
) -> Result<(Wire, std::time::Instant), LoginFailure> {
    let mut wire = handshake(addr, mechanism).await?;
    let client = ScramClient::new(mechanism, user, password);
    let server_first = authenticate(&mut wire, client.client_first().as_bytes().to_vec()).await?;
    let known_at = std::time::Instant::now();
    let server_first = String::from_utf8(server_first).map_err(|_| (-1, "server-first is not UTF-8".to_string()))?;
    let (client, client_final) = client.client_final(&server_first).map_err(|e| (-1, e))?;
    let server_final = authenticate(&mut wire, client_final.into_bytes()).await?;
    client
        .verify_server_final(&String::from_utf8_lossy(&server_final))
        .map_err(|e| (-1, e))?;
    Ok((wire, known_at))
}

/// A SCRAM login as `user` whose client-final carries a made-up proof (what a wrong password
/// sends, without the client's PBKDF2): the broker's answer to it.
pub async fn scram_login_with_a_wrong_proof(addr: &str, mechanism: ScramMechanism, user: &str) -> LoginFailure {
    let attempt = async {
        let mut wire = handshake(addr, mechanism).await?;
        let client_first = format!("n,,n={user},r=stormnonce");
        let server_first = authenticate(&mut wire, client_first.into_bytes()).await?;
        let server_first = String::from_utf8_lossy(&server_first).into_owned();
        let nonce = server_first
            .split(',')
            .find_map(|a| a.strip_prefix("r="))
            .ok_or((-1, format!("no nonce in {server_first}")))?;
        let proof = B64.encode(vec![7u8; mechanism_len(mechanism)]);
        authenticate(&mut wire, format!("c=biws,r={nonce},p={proof}").into_bytes()).await?;
        Err((0, "a made-up proof was accepted".to_string()))
    };
    match attempt.await {
        Ok(()) => (0, String::new()),
        Err(failure) => failure,
    }
}

fn mechanism_len(mechanism: ScramMechanism) -> usize {
    match mechanism {
        ScramMechanism::Sha256 => 32,
        ScramMechanism::Sha512 => 64,
    }
}
