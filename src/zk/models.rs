//! Serde models of the JSON payloads in Kafka's ZooKeeper layout, one per znode kind, written
//! exactly as Kafka 3.9 (IBP 3.9-IV0) writes them and read leniently as Kafka reads them:
//! values Kafka writes as strings (`timestamp`, `block_start`, `/cluster/id`'s `version`) are
//! accepted as strings or numbers. Every payload here is round-trip tested against
//! `zk-schema/` (see `tests/zk_schema.rs`).
//!
//! ACL and delegation-token payloads have schemas but no models yet: kastle does not write them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch};

/// A payload that could not be decoded.
#[derive(Debug, thiserror::Error)]
#[error("malformed {what} payload: {reason}")]
pub struct DecodeError {
    pub what: &'static str,
    pub reason: String,
}

/// Encoding and decoding of one znode kind's payload.
pub trait ZNodePayload: Sized {
    const WHAT: &'static str;
    fn encode(&self) -> Vec<u8>;
    fn decode(data: &[u8]) -> Result<Self, DecodeError>;
}

macro_rules! json_payload {
    ($ty:ty, $what:literal) => {
        impl ZNodePayload for $ty {
            const WHAT: &'static str = $what;
            fn encode(&self) -> Vec<u8> {
                // Serializing these plain structs cannot fail.
                serde_json::to_vec(self).unwrap_or_default()
            }
            fn decode(data: &[u8]) -> Result<Self, DecodeError> {
                serde_json::from_slice(data).map_err(|e| DecodeError {
                    what: $what,
                    reason: e.to_string(),
                })
            }
        }
    };
}

/// Accepts `123` or `"123"`; Kafka writes several numbers as strings.
fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum N {
        Num(i64),
        Str(String),
    }
    match N::deserialize(d)? {
        N::Num(n) => Ok(n),
        N::Str(s) => s.trim().parse().map_err(serde::de::Error::custom),
    }
}

/// Serializes an i64 as a JSON string, as Kafka does for timestamps and id blocks.
fn as_string<S: serde::Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

/// A supported feature version range in a broker registration (KIP-584).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureRange {
    pub min_version: i16,
    pub max_version: i16,
}

/// `/brokers/ids/<id>` (ephemeral): how to reach a broker. Version 5 (IBP ≥ 2.7-IV0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    pub version: i32,
    /// Host of the first PLAINTEXT endpoint, `null` when there is none.
    pub host: Option<String>,
    /// Port of the first PLAINTEXT endpoint, -1 when there is none.
    pub port: i32,
    pub jmx_port: i32,
    #[serde(serialize_with = "as_string", deserialize_with = "lenient_i64")]
    pub timestamp: i64,
    /// `LISTENER://host:port`, from `advertised.listeners`.
    pub endpoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Absent in version 2 registrations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener_security_protocol_map: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<BTreeMap<String, FeatureRange>>,
}
json_payload!(BrokerRegistration, "broker registration");

/// One advertised endpoint, as the registration needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvertisedEndpoint {
    pub listener: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: String,
}

impl BrokerRegistration {
    /// The v5 payload Kafka 3.9 writes for these endpoints.
    pub fn v5(endpoints: &[AdvertisedEndpoint], rack: Option<String>, timestamp_ms: i64) -> Self {
        let plaintext = endpoints.iter().find(|e| e.security_protocol == "PLAINTEXT");
        BrokerRegistration {
            version: 5,
            host: plaintext.map(|e| e.host.clone()),
            port: plaintext.map(|e| i32::from(e.port)).unwrap_or(-1),
            jmx_port: -1,
            timestamp: timestamp_ms,
            endpoints: endpoints
                .iter()
                .map(|e| format!("{}://{}:{}", e.listener, e.host, e.port))
                .collect(),
            rack,
            listener_security_protocol_map: Some(
                endpoints
                    .iter()
                    .map(|e| (e.listener.clone(), e.security_protocol.clone()))
                    .collect(),
            ),
            // A ZK-mode 3.9 broker registers no finalized-feature ranges of its own beyond
            // metadata.version; kastle advertises none until it supports feature versioning.
            features: Some(BTreeMap::new()),
        }
    }
}

/// `/controller` (ephemeral): the active controller. Version 1 (ZK mode without migration).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerZNode {
    pub version: i32,
    pub brokerid: BrokerId,
    #[serde(serialize_with = "as_string", deserialize_with = "lenient_i64")]
    pub timestamp: i64,
    #[serde(rename = "kraftControllerEpoch", default, skip_serializing_if = "Option::is_none")]
    pub kraft_controller_epoch: Option<i32>,
}
json_payload!(ControllerZNode, "controller");

/// `/controller_epoch`: a plain decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerEpochZNode(pub ControllerEpoch);

impl ZNodePayload for ControllerEpochZNode {
    const WHAT: &'static str = "controller epoch";
    fn encode(&self) -> Vec<u8> {
        self.0 .0.to_string().into_bytes()
    }
    fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let text = std::str::from_utf8(data).map_err(|e| DecodeError {
            what: Self::WHAT,
            reason: e.to_string(),
        })?;
        let epoch = text.trim().parse().map_err(|e| DecodeError {
            what: Self::WHAT,
            reason: format!("{text:?}: {e}"),
        })?;
        Ok(ControllerEpochZNode(ControllerEpoch(epoch)))
    }
}

/// `/cluster/id`: `{"version":"1","id":"<22-char base64>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterIdZNode {
    #[serde(serialize_with = "as_string", deserialize_with = "lenient_i64")]
    pub version: i64,
    pub id: String,
}
json_payload!(ClusterIdZNode, "cluster id");

impl ClusterIdZNode {
    pub fn new(id: String) -> Self {
        ClusterIdZNode { version: 1, id }
    }
}

/// `/brokers/topics/<t>`: replica assignment, version 3 with the topic id (IBP ≥ 2.8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicAssignment {
    pub version: i32,
    /// Partition (as a decimal string key) → replicas.
    pub partitions: BTreeMap<String, Vec<BrokerId>>,
    /// Present from version 2 (KIP-455 reassignments); absent in version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adding_replicas: Option<BTreeMap<String, Vec<BrokerId>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removing_replicas: Option<BTreeMap<String, Vec<BrokerId>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
}
json_payload!(TopicAssignment, "topic assignment");

/// `/brokers/topics/<t>/partitions/<p>/state`: leader and ISR. Its zkVersion is the partition epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    pub controller_epoch: ControllerEpoch,
    pub leader: BrokerId,
    pub version: i32,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    /// 1 = RECOVERING after an unclean election (KIP-704); omitted when recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_recovery_state: Option<i8>,
}
json_payload!(PartitionState, "partition state");

/// A topic-partition reference inside notification payloads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicPartitionRef {
    pub topic: String,
    pub partition: i32,
}

/// `/isr_change_notification/isr_change_<seq>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsrChangeNotification {
    pub version: i32,
    pub partitions: Vec<TopicPartitionRef>,
}
json_payload!(IsrChangeNotification, "ISR change notification");

/// `/log_dir_event_notification/log_dir_event_<seq>`; event 1 = LogDirFailure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogDirEventNotification {
    pub version: i32,
    pub broker: BrokerId,
    pub event: i32,
}
json_payload!(LogDirEventNotification, "log dir event notification");

impl LogDirEventNotification {
    pub const LOG_DIR_FAILURE: i32 = 1;
}

/// One partition of a legacy `/admin/reassign_partitions` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionReassignment {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<BrokerId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_dirs: Option<Vec<String>>,
}

/// `/admin/reassign_partitions` (legacy tools).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReassignPartitions {
    pub version: i32,
    pub partitions: Vec<PartitionReassignment>,
}
json_payload!(ReassignPartitions, "reassign partitions");

/// `/admin/preferred_replica_election` (legacy tools).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreferredReplicaElection {
    pub version: i32,
    pub partitions: Vec<TopicPartitionRef>,
}
json_payload!(PreferredReplicaElection, "preferred replica election");

/// `/config/<type>/<entity>`: config overrides, values always strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntityConfig {
    pub version: i32,
    pub config: BTreeMap<String, String>,
}
json_payload!(EntityConfig, "entity config");

/// `/config/changes/config_change_<seq>`: v2 names the entity path; v1 (still read) splits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigChangeNotification {
    pub version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_name: Option<String>,
}
json_payload!(ConfigChangeNotification, "config change notification");

impl ConfigChangeNotification {
    pub fn v2(entity_path: String) -> Self {
        ConfigChangeNotification {
            version: 2,
            entity_path: Some(entity_path),
            entity_type: None,
            entity_name: None,
        }
    }
}

/// `/latest_producer_id_block`: the last allocated block of producer ids (inclusive bounds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerIdBlock {
    pub version: i32,
    pub broker: BrokerId,
    #[serde(serialize_with = "as_string", deserialize_with = "lenient_i64")]
    pub block_start: i64,
    #[serde(serialize_with = "as_string", deserialize_with = "lenient_i64")]
    pub block_end: i64,
}
json_payload!(ProducerIdBlock, "producer id block");

/// A finalized feature's version range in `/feature`; note the `_level` suffix, unlike the
/// ranges in broker registrations. Version 2 of the znode drops the minimum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalizedFeature {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version_level: Option<i16>,
    pub max_version_level: i16,
}

/// `/feature` (KIP-584): finalized features; status 1 = enabled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureZNode {
    pub version: i32,
    pub status: i32,
    pub features: BTreeMap<String, FinalizedFeature>,
}
json_payload!(FeatureZNode, "feature");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_v5_takes_host_and_port_from_the_first_plaintext_endpoint() {
        let eps = [
            AdvertisedEndpoint {
                listener: "SSL".into(),
                host: "a".into(),
                port: 9093,
                security_protocol: "SSL".into(),
            },
            AdvertisedEndpoint {
                listener: "INTERNAL".into(),
                host: "b".into(),
                port: 9092,
                security_protocol: "PLAINTEXT".into(),
            },
        ];
        let reg = BrokerRegistration::v5(&eps, Some("r1".into()), 1700000000000);
        let json: serde_json::Value = serde_json::from_slice(&reg.encode()).expect("json");
        assert_eq!(json["host"], "b");
        assert_eq!(json["port"], 9092);
        assert_eq!(json["timestamp"], "1700000000000");
        assert_eq!(json["endpoints"][0], "SSL://a:9093");
        assert_eq!(json["listener_security_protocol_map"]["INTERNAL"], "PLAINTEXT");
        assert_eq!(json["rack"], "r1");
        assert_eq!(json["jmx_port"], -1);
    }

    #[test]
    fn numbers_written_as_strings_are_read_either_way() {
        let a = ClusterIdZNode::decode(br#"{"version":"1","id":"abc"}"#).expect("string version");
        let b = ClusterIdZNode::decode(br#"{"version":1,"id":"abc"}"#).expect("numeric version");
        assert_eq!(a, b);
        let block =
            ProducerIdBlock::decode(br#"{"version":1,"broker":1,"block_start":"0","block_end":999}"#).expect("mixed");
        assert_eq!((block.block_start, block.block_end), (0, 999));
    }

    #[test]
    fn controller_epoch_is_a_plain_decimal() {
        assert_eq!(ControllerEpochZNode(ControllerEpoch(7)).encode(), b"7");
        assert_eq!(
            ControllerEpochZNode::decode(b" 12\n").expect("decimal").0,
            ControllerEpoch(12)
        );
        assert!(ControllerEpochZNode::decode(b"x").is_err());
    }
}
