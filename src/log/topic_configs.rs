//! Which topic-level configs a topic may be created with, and what values they take: Kafka
//! 3.9's `LogConfig` definitions (`LogConfig.validate`, the check ZK-mode `CreateTopics` runs
//! before it writes anything). Pure; the CreateTopics handler turns a refusal into
//! INVALID_CONFIG with [`ConfigRefusal`]'s message, which follows Kafka's wording.
//!
//! Every name Kafka knows is accepted, including those kastle stores without acting on
//! (compression levels, remote storage): a client setting them must not be refused.

/// How a config's value is parsed and bounded (Kafka's `ConfigDef` type and validator).
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int {
        min: i64,
    },
    Long {
        min: i64,
    },
    Ratio,
    Bool,
    /// A comma-separated list of these words.
    ListOf(&'static [&'static str]),
    OneOf(&'static [&'static str]),
    /// `ThrottledReplicaListValidator` (KIP-73): `*` or `partition:broker` entries; the name
    /// is in the message.
    ThrottledReplicas(&'static str),
    Any,
}

const NO_MIN: i64 = i64::MIN;

/// `LogConfig`'s topic-level definitions in Kafka 3.9.
const TOPIC_CONFIGS: &[(&str, Kind)] = &[
    ("cleanup.policy", Kind::ListOf(&["compact", "delete"])),
    (
        "compression.type",
        Kind::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
    ),
    ("compression.gzip.level", Kind::Int { min: NO_MIN }),
    ("compression.lz4.level", Kind::Int { min: NO_MIN }),
    ("compression.zstd.level", Kind::Int { min: NO_MIN }),
    ("delete.retention.ms", Kind::Long { min: 0 }),
    ("file.delete.delay.ms", Kind::Long { min: 0 }),
    ("flush.messages", Kind::Long { min: 1 }),
    ("flush.ms", Kind::Long { min: 0 }),
    (
        "follower.replication.throttled.replicas",
        Kind::ThrottledReplicas("follower.replication.throttled.replicas"),
    ),
    ("index.interval.bytes", Kind::Int { min: 0 }),
    (
        "leader.replication.throttled.replicas",
        Kind::ThrottledReplicas("leader.replication.throttled.replicas"),
    ),
    ("local.retention.bytes", Kind::Long { min: -2 }),
    ("local.retention.ms", Kind::Long { min: -2 }),
    ("max.compaction.lag.ms", Kind::Long { min: 1 }),
    ("max.message.bytes", Kind::Int { min: 0 }),
    ("message.downconversion.enable", Kind::Bool),
    ("message.format.version", Kind::Any),
    ("message.timestamp.after.max.ms", Kind::Long { min: 0 }),
    ("message.timestamp.before.max.ms", Kind::Long { min: 0 }),
    ("message.timestamp.difference.max.ms", Kind::Long { min: 0 }),
    ("message.timestamp.type", Kind::OneOf(&["CreateTime", "LogAppendTime"])),
    ("min.cleanable.dirty.ratio", Kind::Ratio),
    ("min.compaction.lag.ms", Kind::Long { min: 0 }),
    ("min.insync.replicas", Kind::Int { min: 1 }),
    ("preallocate", Kind::Bool),
    ("remote.log.copy.disable", Kind::Bool),
    ("remote.log.delete.on.disable", Kind::Bool),
    ("remote.storage.enable", Kind::Bool),
    ("retention.bytes", Kind::Long { min: NO_MIN }),
    ("retention.ms", Kind::Long { min: -1 }),
    // LegacyRecord.RECORD_OVERHEAD_V0
    ("segment.bytes", Kind::Int { min: 14 }),
    ("segment.index.bytes", Kind::Int { min: 4 }),
    ("segment.jitter.ms", Kind::Long { min: 0 }),
    ("segment.ms", Kind::Long { min: 1 }),
    ("unclean.leader.election.enable", Kind::Bool),
];

/// For IncrementalAlterConfigs' APPEND/SUBTRACT: `None` if `name` is not a topic config,
/// `Some(None)` if it is not a LIST, else `Some(Some(default))` with the LIST's default.
pub fn list_default(name: &str) -> Option<Option<&'static str>> {
    let (_, kind) = TOPIC_CONFIGS.iter().find(|(n, _)| *n == name)?;
    Some(match (name, kind) {
        ("cleanup.policy", _) => Some("delete"),
        ("leader.replication.throttled.replicas" | "follower.replication.throttled.replicas", _) => Some(""),
        (_, Kind::ListOf(_)) => Some(""),
        _ => None,
    })
}

/// Why a topic's configs were refused; the message is what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigRefusal {
    #[error("Null value not supported for topic configs: {}", .0.join(","))]
    NullValues(Vec<String>),
    #[error("Unknown topic config name: {0}")]
    UnknownName(String),
    #[error("Invalid value {value} for configuration {name}: {reason}")]
    InvalidValue {
        name: String,
        value: String,
        reason: String,
    },
}

/// Checks a CreateTopics request's configs (`None` = a null value), in Kafka's order: null
/// values, then names, then values.
pub fn validate(configs: &[(String, Option<String>)]) -> Result<(), ConfigRefusal> {
    let nulls: Vec<String> = configs
        .iter()
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| n.clone())
        .collect();
    if !nulls.is_empty() {
        return Err(ConfigRefusal::NullValues(nulls));
    }
    let kinds: Vec<(&String, Kind, &str)> = configs
        .iter()
        .map(|(name, value)| {
            TOPIC_CONFIGS
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, kind)| (name, *kind, value.as_deref().unwrap_or_default()))
                .ok_or_else(|| ConfigRefusal::UnknownName(name.clone()))
        })
        .collect::<Result<_, _>>()?;
    for (name, kind, value) in kinds {
        check_value(kind, value.trim()).map_err(|reason| ConfigRefusal::InvalidValue {
            name: name.clone(),
            value: value.to_string(),
            reason,
        })?;
    }
    Ok(())
}

fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    let at_least = |v: i64, min: i64| {
        if v < min {
            Err(format!("Value must be at least {min}"))
        } else {
            Ok(())
        }
    };
    match kind {
        Kind::Int { min } => match value.parse::<i32>() {
            Ok(v) => at_least(i64::from(v), min),
            Err(_) => Err("Not a number of type INT".into()),
        },
        Kind::Long { min } => match value.parse::<i64>() {
            Ok(v) => at_least(v, min),
            Err(_) => Err("Not a number of type LONG".into()),
        },
        Kind::Ratio => match value.parse::<f64>() {
            Ok(v) if v < 0.0 => Err("Value must be at least 0".into()),
            Ok(v) if v > 1.0 => Err("Value must be no more than 1".into()),
            Ok(_) => Ok(()),
            Err(_) => Err("Not a number of type DOUBLE".into()),
        },
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "true" | "false" => Ok(()),
            _ => Err("Expected value to be either true or false".into()),
        },
        Kind::OneOf(words) => match words.contains(&value) {
            true => Ok(()),
            false => Err(format!("String must be one of: {}", words.join(", "))),
        },
        Kind::ListOf(words) => match value.split(',').map(str::trim).all(|w| words.contains(&w)) {
            true => Ok(()),
            false => Err(format!("String must be one of: {}", words.join(", "))),
        },
        Kind::ThrottledReplicas(name) => {
            let entries: Vec<&str> = value.split(',').map(str::trim).collect();
            let replica = |e: &str| {
                e.is_empty()
                    || e.split_once(':').is_some_and(|(p, b)| {
                        [p, b]
                            .iter()
                            .all(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
                    })
            };
            if entries.iter().all(|e| replica(e)) || entries.concat() == "*" {
                Ok(())
            } else {
                Err(format!(
                    "{name} must be the literal '*' or a list of replicas in the following format: \
                     [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                ))
            }
        }
        Kind::Any => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn known_names_with_valid_values_pass() {
        let ok = configs(&[
            ("cleanup.policy", Some("compact,delete")),
            ("segment.bytes", Some("1048576")),
            ("retention.ms", Some("-1")),
            ("min.cleanable.dirty.ratio", Some("0.5")),
            ("compression.type", Some("lz4")),
            ("unclean.leader.election.enable", Some("TRUE")),
            ("leader.replication.throttled.replicas", Some("0:1,1:2")),
        ]);
        assert_eq!(validate(&ok), Ok(()));
    }

    /// `ThrottledReplicaListValidator`: `*` or `partition:broker` entries (empty ones allowed).
    #[test]
    fn throttled_replica_lists_are_checked_as_kafka_checks_them() {
        for ok in ["*", " * ", "", "0:1", "0:1, 1:2", "0:1,"] {
            let c = configs(&[("follower.replication.throttled.replicas", Some(ok))]);
            assert_eq!(validate(&c), Ok(()), "{ok:?}");
        }
        for bad in ["0-1", "a:1", "0:1:2", "*,0:1", "0:"] {
            let c = configs(&[("leader.replication.throttled.replicas", Some(bad))]);
            let err = validate(&c).expect_err(bad);
            assert_eq!(
                err.to_string(),
                format!(
                    "Invalid value {bad} for configuration leader.replication.throttled.replicas: \
                     leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the \
                     following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                )
            );
        }
    }

    /// `LogConfig.validateNames`: "Unknown topic config name: x".
    #[test]
    fn an_unknown_name_is_refused_with_kafkas_message() {
        let err = validate(&configs(&[("segment.bytes", Some("100")), ("x", Some("1"))])).expect_err("refused");
        assert_eq!(err.to_string(), "Unknown topic config name: x");
        // A broker-level name is not a topic-level one.
        assert!(validate(&configs(&[("log.retention.ms", Some("1"))])).is_err());
    }

    /// `ZkAdminManager.createTopics` checks null values before anything else.
    #[test]
    fn null_values_are_refused_first() {
        let err = validate(&configs(&[
            ("x", Some("1")),
            ("retention.ms", None),
            ("flush.ms", None),
        ]))
        .expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Null value not supported for topic configs: retention.ms,flush.ms"
        );
    }

    #[test]
    fn values_outside_kafkas_types_and_bounds_are_refused() {
        for (name, value) in [
            ("segment.bytes", "10"),
            ("segment.bytes", "lots"),
            ("segment.bytes", "3000000000"),
            ("retention.ms", "-2"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("cleanup.policy", "compact,archive"),
            ("message.timestamp.type", "WallClock"),
            ("preallocate", "yes"),
            ("min.insync.replicas", "0"),
        ] {
            let err = validate(&configs(&[(name, Some(value))])).expect_err(name);
            assert!(
                matches!(&err, ConfigRefusal::InvalidValue { name: n, .. } if n == name),
                "{name}={value}: {err}"
            );
        }
    }
}
