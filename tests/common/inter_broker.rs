//! Brokers whose inter-broker listener is secured: every broker gets a PLAINTEXT listener (first,
//! so `bootstrap_of` and the Python clients keep using it) and an `INTERNAL` listener with the
//! protocol under test, named by `inter.broker.listener.name`. The controller channel, the
//! replica fetchers and controlled shutdown use `INTERNAL`.
//!
//! SSL: a test CA and one broker certificate for 127.0.0.1/localhost, valid for server and client
//! auth, with `ssl.client.auth=required` (mutual TLS between brokers). SASL: SCRAM-SHA-512 as
//! user `broker`, whose credential is written to `/config/users/broker` before the brokers start,
//! as an operator does with `kafka-configs --zookeeper`.

use kastle::security::sasl::credentials::ScramCredential;
use kastle::security::sasl::ScramMechanism;
use kastle::zk::ZkSession;

use super::pki::Pki;
use super::BrokerSpec;

/// The inter-broker listener's protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterBroker {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

/// The SCRAM user brokers log in to each other as.
pub const BROKER_USER: &str = "broker";
pub const BROKER_PASSWORD: &str = "broker-secret";

impl InterBroker {
    pub fn protocol(self) -> &'static str {
        match self {
            InterBroker::Plaintext => "PLAINTEXT",
            InterBroker::Ssl => "SSL",
            InterBroker::SaslPlaintext => "SASL_PLAINTEXT",
            InterBroker::SaslSsl => "SASL_SSL",
        }
    }

    fn tls(self) -> bool {
        matches!(self, InterBroker::Ssl | InterBroker::SaslSsl)
    }

    fn sasl(self) -> bool {
        matches!(self, InterBroker::SaslPlaintext | InterBroker::SaslSsl)
    }
}

/// What the brokers of one cluster share: the PKI (when TLS is on) and the protocol.
pub struct Security {
    pub inter_broker: InterBroker,
    pki: Option<Pki>,
}

impl Security {
    pub fn new(inter_broker: InterBroker) -> Security {
        Security {
            inter_broker,
            pki: inter_broker.tls().then(Pki::new),
        }
    }

    /// Writes the broker user's SCRAM credential to `/config/users` (the chroot of `zk`), before
    /// any broker runs, as `kafka-configs --zookeeper --alter --add-config` does.
    pub async fn prepare(&self, zk: &ZkSession) {
        if self.inter_broker.sasl() {
            add_scram_user(zk, BROKER_USER, BROKER_PASSWORD, ScramMechanism::Sha512).await;
        }
    }

    /// `spec` with the two listeners and the inter-broker settings, logging in with `password`.
    pub fn apply_with_password(&self, spec: BrokerSpec, password: &str) -> BrokerSpec {
        if self.inter_broker == InterBroker::Plaintext {
            return spec;
        }
        let mut spec = spec
            .with(
                "listener.security.protocol.map",
                &format!("PLAINTEXT:PLAINTEXT,INTERNAL:{}", self.inter_broker.protocol()),
            )
            .with("inter.broker.listener.name", "INTERNAL");
        spec.listeners = "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0".to_string();
        if let Some(pki) = &self.pki {
            spec = spec
                .with("listener.name.internal.ssl.keystore.type", "PEM")
                .with("listener.name.internal.ssl.keystore.location", &pki.p("peer.pem"))
                .with("listener.name.internal.ssl.truststore.type", "PEM")
                .with("listener.name.internal.ssl.truststore.location", &pki.p("ca.pem"))
                .with("listener.name.internal.ssl.client.auth", "required");
        }
        if self.inter_broker.sasl() {
            let jaas = format!(
                r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="{BROKER_USER}" password="{password}";"#
            );
            spec = spec
                .with("listener.name.internal.sasl.enabled.mechanisms", "SCRAM-SHA-512")
                .with("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")
                .with(
                    "listener.name.internal.scram-sha-512.sasl.jaas.config",
                    &yaml_escaped(&jaas),
                );
        }
        spec
    }

    /// `spec` with the two listeners and the inter-broker settings.
    pub fn apply(&self, spec: BrokerSpec) -> BrokerSpec {
        self.apply_with_password(spec, BROKER_PASSWORD)
    }
}

/// YAML double-quoted values (how `BrokerSpec` writes them) need their quotes escaped.
fn yaml_escaped(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Writes `user`'s SCRAM credential for `mechanism` to `/config/users/<user>` with a change
/// notification, creating Kafka's persistent paths first if no broker has yet.
pub async fn add_scram_user(zk: &ZkSession, user: &str, password: &str, mechanism: ScramMechanism) {
    let client = kastle::zk::KafkaZkClient::new(zk.clone());
    client.ensure_persistent_paths().await.expect("persistent paths");
    let (mut config, version) = client.entity_config_versioned("users", user).await.expect("read");
    let credential = ScramCredential::generate(mechanism, password, ScramCredential::random_salt(), 4096);
    config.insert(mechanism.name().to_string(), credential.to_kafka_string());
    client
        .change_entity_config("users", user, &config, version)
        .await
        .expect("write /config/users");
}
