//! Keystore (and truststore) reload through the dynamic broker config, as Kafka's
//! `DynamicBrokerConfig` reconfigures a listener's `SslFactory`: a `listener.name.<l>.ssl.*`
//! change in `/config/brokers/<id>` gives that TLS listener (SSL, SASL_SSL) a new rustls config
//! for new connections; connections already open keep theirs. AlterConfigs and
//! IncrementalAlterConfigs first [`validate`] the stores (an unloadable keystore is refused
//! naming the key, and nothing is written); the notification every broker processes then
//! [`apply`]s it. Both read files: run them off the async workers.
//!
//! Which listeners change is decided by [`changed`], comparing the settings the effective
//! config gives with those in force.

use std::sync::Arc;

use crate::config::KafkaConfig;
use crate::security::tls::{TlsConfigError, TlsServer, TlsSettings};
use crate::server::listeners::TlsServers;

/// The TLS listeners whose settings in `effective` differ from those in force, with the new
/// settings (or why `effective` gives none).
pub fn changed(
    servers: &TlsServers,
    effective: &KafkaConfig,
) -> Vec<(Arc<TlsServer>, Result<TlsSettings, TlsConfigError>)> {
    servers
        .iter()
        .filter_map(|(listener, server)| {
            let next = TlsSettings::from_config(effective, listener);
            let same = next.as_ref().is_ok_and(|n| *n == server.settings());
            (!same).then(|| (Arc::clone(server), next))
        })
        .collect()
}

/// Loads the stores of every listener `effective` changes, without installing them: the first
/// that does not load is the error (naming the listener's key).
pub fn validate(servers: &TlsServers, effective: &KafkaConfig) -> Result<(), TlsConfigError> {
    for (_, next) in changed(servers, effective) {
        TlsServer::new(next?)?;
    }
    Ok(())
}

/// Reloads every listener `effective` changes; one that does not load keeps its old config
/// (logged). Returns the listeners reloaded.
pub fn apply(servers: &TlsServers, effective: &KafkaConfig) -> Vec<String> {
    let mut reloaded = Vec::new();
    for (server, next) in changed(servers, effective) {
        let listener = server.listener().to_string();
        match next.and_then(|settings| server.reload(settings)) {
            Ok(()) => {
                tracing::info!(%listener, "reloaded the listener's TLS keystore and truststore from the dynamic broker config");
                reloaded.push(listener);
            }
            Err(error) => {
                tracing::error!(%listener, %error, "cannot reload the listener's TLS config; the old one keeps serving")
            }
        }
    }
    reloaded
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn pem_keystore(dir: &std::path::Path, name: &str) -> String {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        let path = dir.join(format!("{name}.pem"));
        std::fs::write(&path, format!("{}{}", cert.key_pair.serialize_pem(), cert.cert.pem())).expect("write");
        path.display().to_string()
    }

    fn config(pairs: &[(&str, &str)]) -> KafkaConfig {
        let mut all = vec![
            ("zookeeper.connect", "127.0.0.1:2181"),
            ("listeners", "PLAINTEXT://:0,SASL_SSL://:0"),
            ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
            ("listener.name.sasl_ssl.ssl.keystore.type", "PEM"),
        ];
        all.extend_from_slice(pairs);
        KafkaConfig::from_pairs(&all).expect("valid config")
    }

    #[test]
    fn only_listeners_whose_stores_change_are_reloaded_and_a_bad_keystore_keeps_the_old_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (pem_keystore(dir.path(), "a"), pem_keystore(dir.path(), "b"));
        let key = "listener.name.sasl_ssl.ssl.keystore.location";
        let start = config(&[(key, &a)]);
        let servers = crate::server::listeners::tls_servers(&start).expect("loads");
        assert!(changed(&servers, &start).is_empty());
        assert!(apply(&servers, &start).is_empty());

        let dynamic: BTreeMap<String, String> = [(key.to_string(), b.clone())].into();
        let to_b = start.with_dynamic(&dynamic, "/config/brokers/1").expect("combines");
        assert!(validate(&servers, &to_b).is_ok());
        assert_eq!(apply(&servers, &to_b), ["SASL_SSL"]);
        assert_eq!(
            servers["SASL_SSL"].settings().keystore.location.as_deref(),
            Some(b.as_str())
        );

        let missing = dir.path().join("absent.pem").display().to_string();
        let dynamic: BTreeMap<String, String> = [(key.to_string(), missing)].into();
        let broken = start.with_dynamic(&dynamic, "/config/brokers/1").expect("combines");
        let error = validate(&servers, &broken).expect_err("refused");
        assert_eq!(error.key, key, "{error}");
        assert!(apply(&servers, &broken).is_empty());
        assert_eq!(
            servers["SASL_SSL"].settings().keystore.location.as_deref(),
            Some(b.as_str()),
            "the old keystore stays"
        );
    }
}
