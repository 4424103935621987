//! End-to-end tests of the cross-key checks `load` applies like Kafka's
//! `KafkaConfig.validateValues`: broker id range, listeners and the protocol map, advertised
//! listeners, the inter-broker and control-plane listeners, replica fetch timing.

use crate::config::tests_sources::{err_text, pairs};

#[test]
fn broker_id_must_not_exceed_reserved_max_while_generation_is_enabled() {
    let e = err_text(pairs(&[("broker.id", "1001")]));
    assert!(e.contains("[-1, 1000]"), "{e}");
    assert_eq!(
        pairs(&[("broker.id", "1001"), ("reserved.broker.max.id", "2000")])
            .map(|c| c.broker_id())
            .ok(),
        Some(1001)
    );
    let e = err_text(pairs(&[("broker.id.generation.enable", "false")]));
    assert!(e.contains("\"broker.id\"") && e.contains(">= 0"), "{e}");
}

#[test]
fn listeners_must_be_in_the_protocol_map_and_the_error_names_both() {
    let e = err_text(pairs(&[("listeners", "INTERNAL://:9092")]));
    assert!(
        e.contains("listener \"INTERNAL\"") && e.contains("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT"),
        "{e}"
    );
    assert!(
        e.contains("\"listener.security.protocol.map\" (built-in default)"),
        "{e}"
    );
}

#[test]
fn listener_names_must_be_unique_and_ports_distinct() {
    assert!(err_text(pairs(&[("listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093")])).contains("different name"));
    assert!(err_text(pairs(&[("listeners", "PLAINTEXT://:9092,SSL://:9092")])).contains("port 9092"));
    assert!(err_text(pairs(&[("listeners", "PLAINTEXT//:9092")])).contains("NAME://host:port"));
}

#[test]
fn port_zero_is_allowed_in_listeners() {
    let c = pairs(&[("listeners", "PLAINTEXT://127.0.0.1:0")]).expect("valid");
    assert_eq!(c.listeners()[0].port, 0);
    assert_eq!(c.advertised_listeners()[0].port, 0);
}

#[test]
fn advertised_listener_names_must_be_a_subset_of_listener_names() {
    let e = err_text(pairs(&[("advertised.listeners", "PLAINTEXT://h:9092,SSL://h:9093")]));
    assert!(e.contains("\"SSL\" is not one of the listeners (PLAINTEXT)"), "{e}");
}

#[test]
fn advertised_hosts_must_not_be_0_0_0_0_even_when_inherited_from_listeners() {
    let e = err_text(pairs(&[
        ("listeners", "PLAINTEXT://0.0.0.0:9092"),
        ("advertised.listeners", "PLAINTEXT://0.0.0.0:9092"),
    ]));
    assert!(
        e.contains("for \"advertised.listeners\"") && e.contains("0.0.0.0"),
        "{e}"
    );
    let e = err_text(pairs(&[("listeners", "PLAINTEXT://0.0.0.0:9092")]));
    assert!(
        e.contains("for \"listeners\"") && e.contains("set advertised.listeners"),
        "{e}"
    );
    assert!(pairs(&[
        ("listeners", "PLAINTEXT://0.0.0.0:9092"),
        ("advertised.listeners", "PLAINTEXT://kafka1:9092")
    ])
    .is_ok());
}

#[test]
fn the_inter_broker_listener_must_be_advertised() {
    let map = (
        "listener.security.protocol.map",
        "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
    );
    let listeners = ("listeners", "INTERNAL://:9092,EXTERNAL://:9093");
    // Default: the listener named after security.inter.broker.protocol (PLAINTEXT) — absent.
    let e = err_text(pairs(&[map, listeners]));
    assert!(
        e.contains("inter-broker listener \"PLAINTEXT\"") && e.contains("set inter.broker.listener.name"),
        "{e}"
    );
    let c = pairs(&[map, listeners, ("inter.broker.listener.name", "internal")]).expect("valid");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
    let e = err_text(pairs(&[
        map,
        listeners,
        ("advertised.listeners", "EXTERNAL://h:9093"),
        ("inter.broker.listener.name", "INTERNAL"),
    ]));
    assert!(
        e.contains("\"inter.broker.listener.name\" (from --override) conflicts with \"advertised.listeners\""),
        "{e}"
    );
    let e = err_text(pairs(&[map, listeners, ("inter.broker.listener.name", "OTHER")]));
    assert!(e.contains("\"OTHER\" is not in listener.security.protocol.map"), "{e}");
    // security.inter.broker.protocol picks the listener *named* after it.
    let c = pairs(&[
        ("listeners", "PLAINTEXT://:9092,OTHER://:9093"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"),
        ("security.inter.broker.protocol", "PLAINTEXT"),
    ])
    .expect("valid");
    assert_eq!(c.inter_broker_listener_name(), "PLAINTEXT");
}

#[test]
fn a_sasl_ssl_listener_needs_a_keystore_and_the_error_names_the_listener_and_the_key() {
    let e = err_text(pairs(&[
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
        ),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
    ]));
    assert!(
        e.contains("cannot serve SASL_SSL listener \"INTERNAL\"")
            && e.contains("listener.name.internal.ssl.keystore.location"),
        "{e}"
    );
    let ok = pairs(&[
        ("listeners", "PLAINTEXT://:9092,SASL_SSL://:9095"),
        ("listener.name.sasl_ssl.ssl.keystore.location", "/etc/kastle/broker.p12"),
        ("listener.name.sasl_ssl.ssl.keystore.type", "PKCS12"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"),
    ]);
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn a_sasl_ssl_inter_broker_listener_needs_a_truststore_and_a_login() {
    let base = [
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
        ),
        ("listener.name.internal.ssl.keystore.location", "/etc/kastle/broker.p12"),
        ("listener.name.internal.ssl.keystore.type", "PKCS12"),
        ("inter.broker.listener.name", "INTERNAL"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
    ];
    let e = err_text(pairs(&base));
    assert!(
        e.contains("inter-broker listener \"INTERNAL\" (SASL_SSL)")
            && e.contains("listener.name.internal.ssl.truststore.location"),
        "{e}"
    );
    let mut with_truststore = base.to_vec();
    with_truststore.push(("ssl.truststore.location", "/etc/kastle/ca.pem"));
    with_truststore.push(("ssl.truststore.type", "PEM"));
    let e = err_text(pairs(&with_truststore));
    assert!(
        e.contains("listener.name.internal.scram-sha-512.sasl.jaas.config"),
        "{e}"
    );
    let mut complete = with_truststore.clone();
    complete.push((
        "listener.name.internal.scram-sha-512.sasl.jaas.config",
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b";"#,
    ));
    let c = pairs(&complete).expect("a SASL_SSL inter-broker listener with truststore and login is served");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
}

#[test]
fn an_unserved_security_inter_broker_protocol_is_refused() {
    // The listener named SSL is mapped to PLAINTEXT, but the operator asked for SSL between
    // brokers: refuse rather than talk plaintext.
    let e = err_text(pairs(&[
        ("listeners", "PLAINTEXT://:9092,SSL://:9093"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:PLAINTEXT"),
        ("security.inter.broker.protocol", "SSL"),
    ]));
    assert!(
        e.contains("security.inter.broker.protocol")
            && e.contains("\"SSL\", which listener.security.protocol.map maps to PLAINTEXT"),
        "{e}"
    );
}

#[test]
fn an_ssl_listener_without_a_keystore_is_refused_naming_the_listener_and_the_key() {
    let e = err_text(pairs(&[
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:SSL"),
    ]));
    assert!(
        e.contains("SSL listener \"INTERNAL\"") && e.contains("listener.name.internal.ssl.keystore.location"),
        "{e}"
    );
    let ok = pairs(&[
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:SSL"),
        ("listener.name.internal.ssl.keystore.location", "/etc/kastle/broker.p12"),
        ("listener.name.internal.ssl.keystore.type", "PKCS12"),
    ]);
    assert!(ok.is_ok(), "{ok:?}");
    let e = err_text(pairs(&[
        ("listeners", "SSL://:9093"),
        ("ssl.keystore.location", "/k.pem"),
        ("listener.name.ssl.ssl.client.auth", "sometimes"),
    ]));
    assert!(
        e.contains("SSL listener \"SSL\"") && e.contains("listener.name.ssl.ssl.client.auth"),
        "{e}"
    );
}

#[test]
fn every_security_protocol_is_served() {
    use crate::config::SecurityProtocol;
    let all = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];
    assert!(all.into_iter().all(|p| p.is_served()));
    let tls: Vec<_> = all.into_iter().filter(|p| p.uses_tls()).collect();
    assert_eq!(tls, [SecurityProtocol::Ssl, SecurityProtocol::SaslSsl]);
}

#[test]
fn setting_both_inter_broker_listener_name_and_protocol_is_an_error() {
    let e = err_text(pairs(&[
        ("inter.broker.listener.name", "PLAINTEXT"),
        ("security.inter.broker.protocol", "PLAINTEXT"),
    ]));
    assert!(e.contains("only one of them may be set"), "{e}");
}

#[test]
fn the_control_plane_listener_must_be_a_distinct_advertised_listener() {
    let listeners = ("listeners", "PLAINTEXT://:9092,CONTROLLER://:9093");
    let map = (
        "listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    );
    assert!(pairs(&[listeners, map, ("control.plane.listener.name", "CONTROLLER")]).is_ok());
    assert!(
        err_text(pairs(&[listeners, map, ("control.plane.listener.name", "NOPE")]))
            .contains("not one of the listeners")
    );
    assert!(err_text(pairs(&[listeners, map, ("control.plane.listener.name", "PLAINTEXT")])).contains("must differ"));
}

#[test]
fn replica_fetch_wait_must_fit_the_socket_timeout_and_lag_time() {
    assert!(err_text(pairs(&[("replica.fetch.wait.max.ms", "40000")])).contains("replica.socket.timeout.ms"));
    let e = err_text(pairs(&[
        ("replica.fetch.wait.max.ms", "20000"),
        ("replica.lag.time.max.ms", "10000"),
    ]));
    assert!(e.contains("ISR"), "{e}");
}

#[test]
fn an_ssl_inter_broker_listener_needs_a_truststore_and_the_error_names_the_key() {
    // The brokers connect to each other's SSL port as TLS clients: without a truststore they
    // could verify nothing, so the start-up stops naming the key to set.
    let ssl = [
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:SSL"),
        ("listener.name.internal.ssl.keystore.location", "/etc/kastle/broker.p12"),
        ("listener.name.internal.ssl.keystore.type", "PKCS12"),
        ("inter.broker.listener.name", "INTERNAL"),
    ];
    let e = err_text(pairs(&ssl));
    assert!(
        e.contains("inter-broker listener \"INTERNAL\" (SSL)")
            && e.contains("listener.name.internal.ssl.truststore.location"),
        "{e}"
    );
    let mut with_truststore = ssl.to_vec();
    with_truststore.push(("ssl.truststore.location", "/etc/kastle/ca.pem"));
    with_truststore.push(("ssl.truststore.type", "PEM"));
    let c = pairs(&with_truststore).expect("an SSL inter-broker listener with a truststore is served");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
}

#[test]
fn a_sasl_plaintext_inter_broker_listener_needs_a_login_for_its_mechanism() {
    let sasl = [
        ("listeners", "PLAINTEXT://:9092,INTERNAL://:9093"),
        (
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
        ),
        ("inter.broker.listener.name", "INTERNAL"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
    ];
    let e = err_text(pairs(&sasl));
    assert!(
        e.contains("listener.name.internal.scram-sha-512.sasl.jaas.config") && e.contains("username"),
        "{e}"
    );
    let mut with_login = sasl.to_vec();
    with_login.push((
        "listener.name.internal.scram-sha-512.sasl.jaas.config",
        r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="b-secret";"#,
    ));
    let c = pairs(&with_login).expect("a SASL_PLAINTEXT inter-broker listener with a login is served");
    assert_eq!(c.inter_broker_listener_name(), "INTERNAL");
}
