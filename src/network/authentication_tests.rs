//! The authenticator state machine without sockets: PLAIN, SCRAM, re-authentication and expiry.

use std::collections::BTreeMap;

use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::security::sasl::client::ScramClient;
use crate::security::sasl::credentials::{CredentialCache, ScramCredential};
use crate::security::sasl::plain::{client_message, PlainUsers};
use crate::security::sasl::ScramMechanism;

fn listener(max_reauth_ms: i64) -> Arc<ListenerSasl> {
    let credentials = CredentialCache::new();
    let cred = ScramCredential::generate(ScramMechanism::Sha256, "alice-secret", b"salt".to_vec(), 4096);
    credentials.set_user("alice", BTreeMap::from([(ScramMechanism::Sha256, cred)]));
    Arc::new(ListenerSasl {
        listener: "SASL_PLAINTEXT".into(),
        mechanisms: vec![SaslMechanism::Plain, SaslMechanism::Scram(ScramMechanism::Sha256)],
        plain_users: PlainUsers(BTreeMap::from([("bob".to_string(), "bob-secret".to_string())])),
        credentials,
        max_reauth_ms,
        failed_authentication_delay: Duration::from_millis(100),
    })
}

fn handshake(auth: &mut Authenticator, mechanism: &'static str) -> i16 {
    let request = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    auth.handshake(&request, 1).error_code
}

fn send(auth: &mut Authenticator, bytes: Vec<u8>, now: i64) -> (SaslAuthenticateResponse, TokenOutcome) {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes));
    auth.authenticate_request(&request, 2, now)
}

#[test]
fn plain_success_sets_the_principal_and_a_wrong_password_fails_with_a_message() {
    let mut auth = Authenticator::new(listener(0));
    assert_eq!(handshake(&mut auth, "PLAIN"), 0);
    let (response, _) = send(&mut auth, client_message("bob", "bob-secret"), 0);
    assert_eq!(response.error_code, 0);
    assert_eq!(auth.principal(), Some(&KafkaPrincipal::user("bob")));
    assert!(!auth.expired(i64::MAX));

    let mut auth = Authenticator::new(listener(0));
    handshake(&mut auth, "PLAIN");
    let (response, outcome) = send(&mut auth, client_message("bob", "nope"), 0);
    assert_eq!(response.error_code, ResponseError::SaslAuthenticationFailed.code());
    assert!(matches!(outcome, TokenOutcome::Failed(_)));
    assert!(response
        .error_message
        .is_some_and(|m| m.contains("Invalid username or password")));
    assert_eq!(auth.principal(), None);
}

#[test]
fn unknown_mechanisms_are_refused_listing_the_enabled_ones() {
    let mut auth = Authenticator::new(listener(0));
    let request = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("GSSAPI"));
    let response = auth.handshake(&request, 1);
    assert_eq!(response.error_code, ResponseError::UnsupportedSaslMechanism.code());
    assert_eq!(response.mechanisms.len(), 2);
}

#[test]
fn scram_authenticates_then_reauthenticates_within_the_session_lifetime() {
    let mut auth = Authenticator::new(listener(60_000));
    assert_eq!(handshake(&mut auth, "SCRAM-SHA-256"), 0);
    let client = ScramClient::new(ScramMechanism::Sha256, "alice", "alice-secret");
    let (response, _) = send(&mut auth, client.client_first().as_bytes().to_vec(), 1_000);
    let server_first = String::from_utf8(response.auth_bytes.to_vec()).expect("utf8");
    let (client, client_final) = client.client_final(&server_first).expect("final");
    let (response, _) = send(&mut auth, client_final.into_bytes(), 1_000);
    assert_eq!(response.error_code, 0);
    assert_eq!(response.session_lifetime_ms, 60_000);
    client
        .verify_server_final(std::str::from_utf8(&response.auth_bytes).expect("utf8"))
        .expect("server signature");
    assert!(!auth.expired(60_999));
    assert!(auth.expired(61_000));

    // Re-authentication: a new handshake and exchange push the expiry out.
    auth.exchange = Exchange::Handshake;
    assert_eq!(handshake(&mut auth, "SCRAM-SHA-256"), 0);
    let client = ScramClient::new(ScramMechanism::Sha256, "alice", "alice-secret");
    let (response, _) = send(&mut auth, client.client_first().as_bytes().to_vec(), 50_000);
    let server_first = String::from_utf8(response.auth_bytes.to_vec()).expect("utf8");
    let (_, client_final) = client.client_final(&server_first).expect("final");
    let (response, _) = send(&mut auth, client_final.into_bytes(), 50_000);
    assert_eq!(response.error_code, 0);
    assert!(!auth.expired(61_000));

    // Re-authenticating as someone else, or with another mechanism, is refused.
    auth.exchange = Exchange::Handshake;
    assert_ne!(handshake(&mut auth, "PLAIN"), 0);
}

#[test]
fn an_unknown_scram_user_fails_at_client_first() {
    let mut auth = Authenticator::new(listener(0));
    handshake(&mut auth, "SCRAM-SHA-256");
    let client = ScramClient::new(ScramMechanism::Sha256, "mallory", "x");
    let (response, _) = send(&mut auth, client.client_first().as_bytes().to_vec(), 0);
    assert_eq!(response.error_code, ResponseError::SaslAuthenticationFailed.code());
}
