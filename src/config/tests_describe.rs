//! Source and synonym resolution of DescribeConfigs over the four broker layers.

use std::collections::BTreeMap;

use crate::config::describe::{
    describe_broker, describe_broker_default, describe_topic, BrokerLayers, ConfigSource, DescribedConfig, Synonym,
};
use crate::config::KafkaConfig;

fn config(pairs: &[(&str, &str)]) -> KafkaConfig {
    let mut all = vec![("zookeeper.connect", "zk:2181")];
    all.extend_from_slice(pairs);
    KafkaConfig::from_pairs(&all).expect("valid config")
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn entry<'a>(entries: &'a [DescribedConfig], name: &str) -> &'a DescribedConfig {
    entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

fn syn(name: &str, value: &str, source: ConfigSource) -> Synonym {
    Synonym {
        name: name.to_string(),
        value: Some(value.to_string()),
        source,
    }
}

#[test]
fn a_topic_override_is_a_dynamic_topic_config_followed_by_its_broker_synonyms() {
    let config = config(&[("log.retention.ms", "7200000"), ("log.retention.hours", "2")]);
    let layers = BrokerLayers::new(&config, &map(&[]), &map(&[]));
    let topic = describe_topic(&layers, &map(&[("retention.ms", "1000")]));
    let retention = entry(&topic, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("1000"));
    assert_eq!(retention.source, ConfigSource::DynamicTopic);
    assert_eq!(
        retention.synonyms,
        vec![
            syn("retention.ms", "1000", ConfigSource::DynamicTopic),
            syn("log.retention.ms", "7200000", ConfigSource::StaticBroker),
            syn("log.retention.hours", "2", ConfigSource::StaticBroker),
            syn("log.retention.hours", "168", ConfigSource::Default),
        ]
    );
    assert_eq!(retention.config_type, 5, "LONG");
    assert!(!retention.read_only && !retention.sensitive);
    assert!(retention.documentation.is_some_and(|d| d.contains("retain a log")));
}

#[test]
fn a_topic_without_override_takes_the_broker_value_and_its_source() {
    let config = config(&[("log.segment.bytes", "2048"), ("log.retention.hours", "2")]);
    let layers = BrokerLayers::new(&config, &map(&[]), &map(&[]));
    let topic = describe_topic(&layers, &map(&[]));
    let segment = entry(&topic, "segment.bytes");
    assert_eq!(segment.value.as_deref(), Some("2048"));
    assert_eq!(segment.source, ConfigSource::StaticBroker);
    assert_eq!(
        segment.synonyms,
        vec![
            syn("log.segment.bytes", "2048", ConfigSource::StaticBroker),
            syn("log.segment.bytes", "1073741824", ConfigSource::Default),
        ]
    );
    // Kafka lists synonyms from the topic config's first broker key on: log.retention.ms is
    // unset, so log.retention.hours shows in none of them and the source is DEFAULT_CONFIG,
    // while the value follows log.retention.hours.
    let retention = entry(&topic, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("7200000"));
    assert_eq!(retention.source, ConfigSource::Default);
    assert!(retention.synonyms.is_empty());
    let cleanup = entry(&topic, "cleanup.policy");
    assert_eq!(cleanup.source, ConfigSource::Default);
    assert_eq!(cleanup.value.as_deref(), Some("delete"));
    let remote = entry(&topic, "remote.storage.enable");
    assert_eq!(
        (remote.value.as_deref(), remote.source),
        (Some("false"), ConfigSource::Default)
    );
}

#[test]
fn per_broker_beats_cluster_default_beats_static_beats_default() {
    let config = config(&[("log.retention.ms", "3000")]);
    let per_broker = map(&[("log.retention.ms", "1000")]);
    let cluster = map(&[("log.retention.ms", "2000")]);
    let layers = BrokerLayers::new(&config, &per_broker, &cluster);
    let broker = describe_broker(&config, &layers);
    let retention = entry(&broker, "log.retention.ms");
    assert_eq!(retention.value.as_deref(), Some("1000"));
    assert_eq!(retention.source, ConfigSource::DynamicBroker);
    assert_eq!(
        retention.synonyms,
        vec![
            syn("log.retention.ms", "1000", ConfigSource::DynamicBroker),
            syn("log.retention.ms", "2000", ConfigSource::DynamicDefaultBroker),
            syn("log.retention.ms", "3000", ConfigSource::StaticBroker),
            syn("log.retention.hours", "168", ConfigSource::Default),
        ]
    );
    assert!(!retention.read_only, "log.retention.ms is cluster-wide dynamic");
    let topic = describe_topic(&BrokerLayers::new(&config, &map(&[]), &cluster), &map(&[]));
    let retention = entry(&topic, "retention.ms");
    assert_eq!(retention.value.as_deref(), Some("2000"));
    assert_eq!(retention.source, ConfigSource::DynamicDefaultBroker);
}

#[test]
fn broker_keys_show_static_and_default_sources_read_only_and_hidden_secrets() {
    let config = config(&[("min.insync.replicas", "2"), ("ssl.keystore.password", "s3cret")]);
    let layers = BrokerLayers::new(&config, &map(&[]), &map(&[]));
    let broker = describe_broker(&config, &layers);
    let min_isr = entry(&broker, "min.insync.replicas");
    assert_eq!(min_isr.source, ConfigSource::StaticBroker);
    assert_eq!(
        min_isr.synonyms,
        vec![
            syn("min.insync.replicas", "2", ConfigSource::StaticBroker),
            syn("min.insync.replicas", "1", ConfigSource::Default),
        ]
    );
    assert!(
        min_isr
            .documentation
            .is_some_and(|d| d.starts_with("When a producer sets acks to \"all\"")),
        "Kafka's documentation: {:?}",
        min_isr.documentation
    );
    let session = entry(&broker, "zookeeper.session.timeout.ms");
    assert_eq!((session.source, session.read_only), (ConfigSource::Default, true));
    let password = entry(&broker, "ssl.keystore.password");
    assert!(password.sensitive && password.value.is_none() && password.config_type == 9);
    assert_eq!(password.source, ConfigSource::StaticBroker);
    assert!(password.synonyms.iter().all(|s| s.value.is_none()));
    let unset = entry(&broker, "log.retention.ms");
    assert_eq!((unset.value.as_deref(), unset.source), (None, ConfigSource::Default));
    assert_eq!(
        entry(&broker, "listeners").config_type,
        2,
        "Kafka declares listeners a STRING"
    );
}

#[test]
fn dynamic_znodes_only_count_with_keys_kafka_applies_there() {
    let config = config(&[]);
    // broker.id is read-only; ssl.keystore.type is per-broker only; a bad number is dropped.
    let cluster = map(&[
        ("broker.id", "7"),
        ("ssl.keystore.type", "PKCS12"),
        ("message.max.bytes", "lots"),
        ("log.cleaner.threads", "2"),
    ]);
    let layers = BrokerLayers::new(&config, &map(&[("ssl.keystore.type", "PKCS12")]), &cluster);
    assert_eq!(layers.cluster_default, map(&[("log.cleaner.threads", "2")]));
    assert_eq!(layers.per_broker, map(&[("ssl.keystore.type", "PKCS12")]));
    let default_resource = describe_broker_default(&layers);
    assert_eq!(default_resource.len(), 1);
    assert_eq!(default_resource[0].name, "log.cleaner.threads");
    assert_eq!(default_resource[0].source, ConfigSource::DynamicDefaultBroker);
    assert_eq!(
        default_resource[0].synonyms,
        vec![syn("log.cleaner.threads", "2", ConfigSource::DynamicDefaultBroker)]
    );
}
