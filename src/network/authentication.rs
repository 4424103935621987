//! The per-connection SASL authenticator (Kafka's `SaslServerAuthenticator`): SaslHandshake
//! v0–1 and SaslAuthenticate v0–2 on a SASL listener, before the connection serves anything
//! else, and again for re-authentication (KIP-368).
//!
//! - Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are read; any
//!   other request closes the connection (Kafka's illegal-state check).
//! - Handshake v0 (old clients): the tokens that follow are raw length-prefixed SASL bytes,
//!   not Kafka requests; v1 wraps them in SaslAuthenticate.
//! - Success makes the connection's principal `User:<name>`; with `connections.max.reauth.ms`
//!   the SaslAuthenticate v1+ response carries `session_lifetime_ms`, a re-authentication
//!   (same mechanism and principal) extends the session, and a request on an expired session
//!   closes the connection.
//! - Failure answers SASL_AUTHENTICATION_FAILED with a message after
//!   `connection.failed.authentication.delay.ms`, then closes. The wait is this connection's
//!   own task sleeping: no other connection waits for it.
//!
//! [`Authenticator`] is the pure state machine (time passed in); [`authenticate`] drives it on
//! any stream; [`intercept`] is the connection's hook once authenticated.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, RequestHeader, ResponseKind, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::{AsyncRead, AsyncWrite};

use super::connection::{
    api_versions_answer, encode_response, peek_api, read_frame, write_all_chunks, ConnectionError,
};
use crate::security::sasl::config::ListenerSasl;
use crate::security::sasl::scram::{parse_client_first, server_nonce, ScramServerFirst};
use crate::security::sasl::SaslMechanism;
use crate::security::KafkaPrincipal;

/// `sasl.server.max.receive.size`'s default: the largest frame read before authentication.
pub(crate) const MAX_RECEIVE_SIZE: usize = 524_288;

/// Each SASL listener's settings, by listener name (compared by identity: the settings share
/// the live credential cache).
#[derive(Debug, Clone, Default)]
pub struct SaslListeners(pub std::collections::BTreeMap<String, Arc<ListenerSasl>>);

impl PartialEq for SaslListeners {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((a, x), (b, y))| a == b && Arc::ptr_eq(x, y))
    }
}

impl Eq for SaslListeners {}

/// Where the exchange is.
#[derive(Debug)]
enum Exchange {
    /// Waiting for SaslHandshake.
    Handshake,
    /// Handshake done; waiting for the first token.
    FirstToken { mechanism: SaslMechanism, raw: bool },
    /// SCRAM server-first sent; waiting for client-final.
    ScramFinal { server: Box<ScramServerFirst>, raw: bool },
}

/// What one token led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenOutcome {
    /// Send these bytes and wait for the next token.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; send these bytes (empty for PLAIN).
    Authenticated { user: String, response: Vec<u8> },
    /// Refused, with the message the client sees.
    Failed(String),
}

/// One connection's SASL state.
#[derive(Debug)]
pub(crate) struct Authenticator {
    sasl: Arc<ListenerSasl>,
    exchange: Exchange,
    /// Set after the first success; a re-authentication must keep it.
    principal: Option<KafkaPrincipal>,
    mechanism: Option<SaslMechanism>,
    /// When the session ends (`connections.max.reauth.ms`), epoch ms.
    expires_at_ms: Option<i64>,
}

impl Authenticator {
    pub(crate) fn new(sasl: Arc<ListenerSasl>) -> Self {
        Self {
            sasl,
            exchange: Exchange::Handshake,
            principal: None,
            mechanism: None,
            expires_at_ms: None,
        }
    }

    pub(crate) fn principal(&self) -> Option<&KafkaPrincipal> {
        self.principal.as_ref()
    }

    /// Whether the next frame is a raw token (after a v0 handshake), not a request.
    pub(crate) fn expects_raw_token(&self) -> bool {
        matches!(
            self.exchange,
            Exchange::FirstToken { raw: true, .. } | Exchange::ScramFinal { raw: true, .. }
        )
    }

    /// Whether the session has ended at `now_ms` (never without `connections.max.reauth.ms`).
    pub(crate) fn expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_some_and(|at| now_ms >= at)
    }

    /// Answers SaslHandshake: the mechanism must be enabled here (and, on re-authentication,
    /// be the one used before).
    pub(crate) fn handshake(&mut self, request: &SaslHandshakeRequest, version: i16) -> SaslHandshakeResponse {
        let enabled: Vec<StrBytes> = self
            .sasl
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        let response = SaslHandshakeResponse::default().with_mechanisms(enabled);
        let wanted = SaslMechanism::from_name(request.mechanism.as_str())
            .filter(|m| self.sasl.mechanisms.contains(m))
            .filter(|m| self.mechanism.is_none_or(|before| before == *m));
        match wanted {
            Some(mechanism) if matches!(self.exchange, Exchange::Handshake) => {
                self.exchange = Exchange::FirstToken {
                    mechanism,
                    raw: version == 0,
                };
                response
            }
            Some(_) => response.with_error_code(ResponseError::IllegalSaslState.code()),
            None => response.with_error_code(ResponseError::UnsupportedSaslMechanism.code()),
        }
    }

    /// Processes one SASL token.
    pub(crate) fn token(&mut self, token: &[u8], now_ms: i64) -> TokenOutcome {
        let mechanism = match &self.exchange {
            Exchange::Handshake => None,
            Exchange::FirstToken { mechanism, .. } => Some(*mechanism),
            Exchange::ScramFinal { server, .. } => Some(SaslMechanism::Scram(server.mechanism())),
        };
        let outcome = match std::mem::replace(&mut self.exchange, Exchange::Handshake) {
            Exchange::Handshake => return TokenOutcome::Failed("SaslAuthenticate before SaslHandshake".into()),
            Exchange::FirstToken {
                mechanism: SaslMechanism::Plain,
                ..
            } => match self.sasl.plain_users.authenticate(token) {
                Ok(user) => TokenOutcome::Authenticated {
                    user,
                    response: Vec::new(),
                },
                Err(e) => TokenOutcome::Failed(e.to_string()),
            },
            Exchange::FirstToken {
                mechanism: SaslMechanism::Scram(m),
                raw,
            } => {
                let first = std::str::from_utf8(token)
                    .map_err(|_| "Invalid SCRAM client first message: not UTF-8".to_string())
                    .and_then(|t| parse_client_first(t).map_err(|e| e.to_string()));
                let started = first.and_then(|first| {
                    let credential = self.sasl.credentials.get(&first.user, m);
                    ScramServerFirst::start(m, &first, credential, &server_nonce()).map_err(|e| e.to_string())
                });
                match started {
                    Ok((server, server_first)) => {
                        self.exchange = Exchange::ScramFinal {
                            server: Box::new(server),
                            raw,
                        };
                        return TokenOutcome::Challenge(server_first.into_bytes());
                    }
                    Err(e) => TokenOutcome::Failed(e),
                }
            }
            Exchange::ScramFinal { server, .. } => {
                match std::str::from_utf8(token)
                    .map_err(|_| "Invalid SCRAM client final message: not UTF-8".to_string())
                    .and_then(|t| server.finish(t).map_err(|e| e.to_string()))
                {
                    Ok((user, server_final)) => TokenOutcome::Authenticated {
                        user,
                        response: server_final.into_bytes(),
                    },
                    Err(e) => TokenOutcome::Failed(e),
                }
            }
        };
        if let TokenOutcome::Authenticated { user, .. } = &outcome {
            let principal = KafkaPrincipal::user(user.clone());
            if self.principal.as_ref().is_some_and(|p| *p != principal) {
                return TokenOutcome::Failed("Cannot change principals during re-authentication".into());
            }
            self.principal = Some(principal);
            self.mechanism = mechanism;
            self.expires_at_ms = (self.sasl.max_reauth_ms > 0).then(|| now_ms.saturating_add(self.sasl.max_reauth_ms));
        }
        outcome
    }

    /// Answers SaslAuthenticate, with the outcome for the caller to act on.
    pub(crate) fn authenticate_request(
        &mut self,
        request: &SaslAuthenticateRequest,
        version: i16,
        now_ms: i64,
    ) -> (SaslAuthenticateResponse, TokenOutcome) {
        let outcome = self.token(&request.auth_bytes, now_ms);
        let response = match &outcome {
            TokenOutcome::Challenge(bytes) => {
                SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(bytes.clone()))
            }
            TokenOutcome::Authenticated { response, .. } => {
                let lifetime = if version >= 1 {
                    self.expires_at_ms.map_or(0, |at| at - now_ms)
                } else {
                    0
                };
                SaslAuthenticateResponse::default()
                    .with_auth_bytes(Bytes::from(response.clone()))
                    .with_session_lifetime_ms(lifetime)
            }
            TokenOutcome::Failed(message) => SaslAuthenticateResponse::default()
                .with_error_code(ResponseError::SaslAuthenticationFailed.code())
                .with_error_message(Some(StrBytes::from_string(message.clone()))),
        };
        (response, outcome)
    }

    pub(crate) fn failed_delay(&self) -> Duration {
        self.sasl.failed_authentication_delay
    }
}

fn now_ms() -> i64 {
    crate::clock::now_ms()
}

/// Runs the exchange on a fresh connection until it authenticates (the authenticator then
/// holds the principal) or fails (`Err`: close the connection).
pub(crate) async fn authenticate<R, W>(
    auth: &mut Authenticator,
    reader: &mut R,
    writer: &mut W,
    idle: Duration,
) -> Result<(), ConnectionError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        let Some(mut frame) = read_frame(reader, MAX_RECEIVE_SIZE, idle).await? else {
            return Err(failed("peer closed the connection during authentication"));
        };
        if auth.expects_raw_token() {
            match auth.token(&frame, now_ms()) {
                TokenOutcome::Challenge(bytes) => write_raw(writer, &bytes).await?,
                TokenOutcome::Authenticated { response, .. } => {
                    if !response.is_empty() {
                        write_raw(writer, &response).await?;
                    }
                    return Ok(());
                }
                // A v0 exchange has no way to carry the error: wait, then close.
                TokenOutcome::Failed(message) => {
                    tokio::time::sleep(auth.failed_delay()).await;
                    return Err(failed(&message));
                }
            }
            continue;
        }
        let (api_key, api_version) = peek_api(&frame)?;
        let header = RequestHeader::decode(&mut frame, api_key.request_header_version(api_version)).map_err(|e| {
            ConnectionError::BadHeader {
                api_key,
                api_version,
                reason: format!("{e:#}"),
            }
        })?;
        let (response, outcome) = match api_key {
            ApiKey::ApiVersions => (api_versions_answer(&mut frame, api_version)?, None),
            ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => {
                let (response, outcome) = sasl_request(auth, api_key, api_version, &mut frame)?;
                ((response, api_version), outcome)
            }
            other => {
                return Err(failed(&format!(
                    "unexpected {other:?} request before authentication (SASL listener {}): expected SaslHandshake",
                    auth.sasl.listener
                )))
            }
        };
        if let Some(TokenOutcome::Failed(message)) = &outcome {
            // This connection's own wait: only its task sleeps.
            tokio::time::sleep(auth.failed_delay()).await;
            let chunks = encode_response(api_key, header.correlation_id, &response.0, response.1)?;
            let _ = write_all_chunks(writer, &chunks).await;
            return Err(failed(message));
        }
        let chunks = encode_response(api_key, header.correlation_id, &response.0, response.1)?;
        write_all_chunks(writer, &chunks).await?;
        if matches!(outcome, Some(TokenOutcome::Authenticated { .. })) {
            return Ok(());
        }
    }
}

/// SaslHandshake or SaslAuthenticate, decoded and answered.
fn sasl_request(
    auth: &mut Authenticator,
    api_key: ApiKey,
    api_version: i16,
    frame: &mut Bytes,
) -> Result<(ResponseKind, Option<TokenOutcome>), ConnectionError> {
    let bad = |e: anyhow::Error| ConnectionError::BadBody {
        api_key,
        api_version,
        reason: format!("{e:#}"),
    };
    let supported = match api_key {
        ApiKey::SaslHandshake => (0..=1).contains(&api_version),
        _ => (0..=2).contains(&api_version),
    };
    if !supported {
        return Err(ConnectionError::UnsupportedVersion { api_key, api_version });
    }
    if api_key == ApiKey::SaslHandshake {
        let request = SaslHandshakeRequest::decode(frame, api_version).map_err(bad)?;
        return Ok((ResponseKind::SaslHandshake(auth.handshake(&request, api_version)), None));
    }
    let request = SaslAuthenticateRequest::decode(frame, api_version).map_err(bad)?;
    let (response, outcome) = auth.authenticate_request(&request, api_version, now_ms());
    Ok((ResponseKind::SaslAuthenticate(response), Some(outcome)))
}

/// The connection's hook for every request once the peer is past [`authenticate`]: SASL
/// requests re-authenticate (KIP-368), or get ILLEGAL_SASL_STATE on a listener without SASL;
/// any other request on an expired session closes the connection. `Ok(None)`: not ours.
pub(crate) fn intercept(
    auth: Option<&mut Authenticator>,
    api_key: ApiKey,
    api_version: i16,
    frame: &mut Bytes,
) -> Result<Option<ResponseKind>, ConnectionError> {
    let is_sasl = matches!(api_key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate);
    let Some(auth) = auth else {
        if !is_sasl {
            return Ok(None);
        }
        let response = match api_key {
            ApiKey::SaslHandshake => ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default().with_error_code(ResponseError::IllegalSaslState.code()),
            ),
            _ => ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code())
                    .with_error_message(Some(StrBytes::from_static_str("SASL is not enabled on this listener"))),
            ),
        };
        return Ok(Some(response));
    };
    if !is_sasl {
        if auth.expired(now_ms()) {
            return Err(failed(
                "the SASL session expired (connections.max.reauth.ms) without re-authentication",
            ));
        }
        return Ok(None);
    }
    if api_key == ApiKey::SaslHandshake && !matches!(auth.exchange, Exchange::Handshake) {
        auth.exchange = Exchange::Handshake;
    }
    let (response, outcome) = sasl_request(auth, api_key, api_version, frame)?;
    if let Some(TokenOutcome::Failed(message)) = outcome {
        return Err(failed(&message));
    }
    Ok(Some(response))
}

fn failed(reason: &str) -> ConnectionError {
    ConnectionError::Authentication {
        reason: reason.to_string(),
    }
}

/// A raw token, length-prefixed (the v0 exchange).
async fn write_raw<W: AsyncWrite + Unpin>(writer: &mut W, bytes: &[u8]) -> Result<(), ConnectionError> {
    let len = u32::try_from(bytes.len()).map_err(|_| failed("SASL token too large"))?;
    let chunks = [
        Bytes::copy_from_slice(&len.to_be_bytes()),
        Bytes::copy_from_slice(bytes),
    ];
    write_all_chunks(writer, &chunks).await?;
    Ok(())
}

#[cfg(test)]
#[path = "authentication_tests.rs"]
mod tests;
