//! The broker's own client security toward the other brokers (controller channel, replica
//! fetchers, controlled shutdown), from the inter-broker listener's protocol as Kafka derives it:
//! SSL and SASL_SSL use that listener's TLS settings (`listener.name.<l>.ssl.truststore.*`, else
//! `ssl.truststore.*`; its keystore, if any, is presented for mutual TLS), SASL_PLAINTEXT and
//! SASL_SSL log in with `sasl.mechanism.inter.broker.protocol` and the `username`/`password` of
//! that listener's JAAS config for the mechanism (`sasl::config::inter_broker_client`).
//! A missing truststore or login is an error naming the key, never a downgrade to plaintext.

use crate::client::ConnectionSecurity;
use crate::config::{KafkaConfig, SecurityProtocol};
use crate::security::sasl::config::inter_broker_client;
use crate::security::tls::client::build_client_config;
use crate::security::tls::TlsSettings;

/// The inter-broker listener's client side cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot connect to other brokers on the inter-broker listener \"{listener}\" ({protocol}): {key}: {problem}")]
pub struct InterBrokerSecurityError {
    pub listener: String,
    pub protocol: SecurityProtocol,
    /// The config key to fix.
    pub key: String,
    pub problem: String,
}

/// The layers of every broker-to-broker connection. Reads the truststore (and keystore): run
/// it at start-up, off the async workers.
pub fn connection_security(config: &KafkaConfig) -> Result<ConnectionSecurity, InterBrokerSecurityError> {
    let listener = config.inter_broker_listener_name().to_string();
    let protocol = config
        .listener_security_protocol_map()
        .get(&listener)
        .copied()
        .unwrap_or(SecurityProtocol::Plaintext);
    let failed = |key: String, problem: String| InterBrokerSecurityError {
        listener: listener.clone(),
        protocol,
        key,
        problem,
    };
    let tls = match protocol {
        SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => {
            let settings = TlsSettings::from_config(config, &listener).map_err(|e| failed(e.key, e.problem))?;
            Some(build_client_config(&settings).map_err(|e| failed(e.key, e.problem))?)
        }
        _ => None,
    };
    let sasl = inter_broker_client(config).map_err(|e| failed(e.key, e.reason))?;
    Ok(ConnectionSecurity { tls, sasl })
}
