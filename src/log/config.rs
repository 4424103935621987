//! Per-log settings (Kafka's topic-level `LogConfig`): the broker's `log.*` keys give the
//! defaults ([`LogConfig::from_broker`]), a topic's overrides from `/config/topics/<t>` layer on
//! top ([`LogConfig::with_topic_overrides`], Kafka's topic-level key names).

use std::collections::BTreeMap;

use crate::config::KafkaConfig;
use crate::protocol::record_batch::recompress::parse_compression_type;
use crate::protocol::record_batch::Compression;

/// How a batch's timestamp is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Settings of one log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would grow past this.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a non-empty segment this long after its first batch.
    pub segment_ms: i64,
    pub segment_jitter_ms: i64,
    pub index_interval_bytes: usize,
    /// `segment.index.bytes`: an index holds this many bytes of entries at most.
    pub max_index_size: usize,
    /// -1 = forever.
    pub retention_ms: i64,
    /// -1 = unlimited.
    pub retention_bytes: i64,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: usize,
    pub timestamp_type: TimestampType,
    /// `compression.type`: the codec batches are stored in; None (`producer`) keeps the
    /// producer's.
    pub compression: Option<Compression>,
    /// `message.timestamp.before.max.ms` (or the older `message.timestamp.difference.max.ms`):
    /// a CreateTime record older than this, relative to the broker's clock, is refused.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms` (or `message.timestamp.difference.max.ms`): how far in
    /// the future a CreateTime record may be.
    pub timestamp_after_max_ms: i64,
    /// Flush after this many messages (i64::MAX = leave it to the OS).
    pub flush_interval_messages: i64,
    /// Flush data older than this (i64::MAX = leave it to the OS).
    pub flush_interval_ms: i64,
    /// `cleanup.policy` contains `compact`: the log cleaner keeps the latest value per key.
    pub compact: bool,
    /// `cleanup.policy` contains `delete`: time/size retention applies.
    pub delete: bool,
    /// `min.cleanable.dirty.ratio`: clean once dirty bytes / total bytes reach this.
    pub min_cleanable_ratio: f64,
    /// `delete.retention.ms`: how long a tombstone survives after its segment was cleaned.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: records younger than this are not compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a log with dirty data older than this is cleaned whatever its ratio.
    pub max_compaction_lag_ms: i64,
    /// `producer.id.expiration.ms`: a producer idle this long loses its state (broker-wide).
    pub producer_id_expiration_ms: i64,
    /// `min.insync.replicas`: an acks=all produce needs this many in-sync replicas.
    pub min_insync_replicas: i32,
    /// `unclean.leader.election.enable`: an out-of-sync replica may become leader.
    pub unclean_leader_election: bool,
}

impl Default for LogConfig {
    /// Kafka 3.9's defaults.
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 3600 * 1000,
            segment_jitter_ms: 0,
            index_interval_bytes: 4096,
            max_index_size: 10 << 20,
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            max_message_bytes: 1_048_588,
            timestamp_type: TimestampType::CreateTime,
            compression: None,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            flush_interval_messages: i64::MAX,
            flush_interval_ms: i64::MAX,
            compact: false,
            delete: true,
            min_cleanable_ratio: 0.5,
            delete_retention_ms: 24 * 3600 * 1000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            producer_id_expiration_ms: 86_400_000,
            min_insync_replicas: 1,
            unclean_leader_election: false,
        }
    }
}

/// `(compact, delete)` from a `cleanup.policy` list such as `compact,delete`.
fn parse_policy<'a>(items: impl IntoIterator<Item = &'a str>) -> (bool, bool) {
    let (mut compact, mut delete) = (false, false);
    for item in items {
        match item.trim() {
            "compact" => compact = true,
            "delete" => delete = true,
            _ => {}
        }
    }
    (compact, delete)
}

impl LogConfig {
    /// What each segment of a log with this config needs.
    pub fn segment_config(&self) -> super::segment::SegmentConfig {
        super::segment::SegmentConfig {
            index_interval_bytes: self.index_interval_bytes,
            max_index_size: self.max_index_size,
        }
    }

    /// The broker-wide defaults, with Kafka's precedence among the ms/minutes/hours keys.
    pub fn from_broker(config: &KafkaConfig) -> LogConfig {
        let d = LogConfig::default();
        let policy = config
            .get_list("log.cleanup.policy")
            .map(|l| parse_policy(l.iter().map(String::as_str)))
            .unwrap_or((d.compact, d.delete));
        let hours = |k: &str| config.get_i64(k).map(|h| h * 3600 * 1000);
        let retention_ms = config
            .get_i64("log.retention.ms")
            .or_else(|| config.get_i64("log.retention.minutes").map(|m| m * 60 * 1000))
            .or_else(|| hours("log.retention.hours"))
            .unwrap_or(d.retention_ms);
        LogConfig {
            segment_bytes: config
                .get_i64("log.segment.bytes")
                .map(|v| v as u64)
                .unwrap_or(d.segment_bytes),
            segment_ms: config
                .get_i64("log.roll.ms")
                .or_else(|| hours("log.roll.hours"))
                .unwrap_or(d.segment_ms),
            segment_jitter_ms: config
                .get_i64("log.roll.jitter.ms")
                .or_else(|| hours("log.roll.jitter.hours"))
                .unwrap_or(d.segment_jitter_ms),
            index_interval_bytes: config
                .get_i64("log.index.interval.bytes")
                .map(|v| v as usize)
                .unwrap_or(d.index_interval_bytes),
            max_index_size: config
                .get_i64("log.index.size.max.bytes")
                .map(|v| v as usize)
                .unwrap_or(d.max_index_size),
            retention_ms: if retention_ms < 0 { -1 } else { retention_ms },
            retention_bytes: config.get_i64("log.retention.bytes").unwrap_or(d.retention_bytes),
            max_message_bytes: config
                .get_i64("message.max.bytes")
                .map(|v| v as usize)
                .unwrap_or(d.max_message_bytes),
            timestamp_type: match config.get_str("log.message.timestamp.type") {
                Some("LogAppendTime") => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            },
            compression: config
                .get_str("compression.type")
                .and_then(|v| parse_compression_type(v).ok())
                .unwrap_or(d.compression),
            timestamp_before_max_ms: timestamp_limit(
                config.get_i64("log.message.timestamp.before.max.ms"),
                config.get_i64("log.message.timestamp.difference.max.ms"),
            ),
            timestamp_after_max_ms: timestamp_limit(
                config.get_i64("log.message.timestamp.after.max.ms"),
                config.get_i64("log.message.timestamp.difference.max.ms"),
            ),
            flush_interval_messages: config
                .get_i64("log.flush.interval.messages")
                .unwrap_or(d.flush_interval_messages),
            flush_interval_ms: config.get_i64("log.flush.interval.ms").unwrap_or(d.flush_interval_ms),
            compact: policy.0,
            delete: policy.1,
            min_cleanable_ratio: config
                .get_f64("log.cleaner.min.cleanable.ratio")
                .unwrap_or(d.min_cleanable_ratio),
            delete_retention_ms: config
                .get_i64("log.cleaner.delete.retention.ms")
                .unwrap_or(d.delete_retention_ms),
            min_compaction_lag_ms: config
                .get_i64("log.cleaner.min.compaction.lag.ms")
                .unwrap_or(d.min_compaction_lag_ms),
            max_compaction_lag_ms: config
                .get_i64("log.cleaner.max.compaction.lag.ms")
                .unwrap_or(d.max_compaction_lag_ms),
            producer_id_expiration_ms: config
                .get_i64("producer.id.expiration.ms")
                .unwrap_or(d.producer_id_expiration_ms),
            min_insync_replicas: config.min_insync_replicas().max(1),
            unclean_leader_election: config
                .get_bool("unclean.leader.election.enable")
                .unwrap_or(d.unclean_leader_election),
        }
    }

    /// This config with a topic's overrides (`/config/topics/<t>`, Kafka's topic-level names)
    /// applied. A value that does not parse keeps the broker default, with a warning: CreateTopics
    /// is where bad values should be refused, and a log must still open.
    pub fn with_topic_overrides(&self, overrides: &BTreeMap<String, String>) -> LogConfig {
        let mut c = self.clone();
        let topic_i64 = |key: &str| overrides.get(key).and_then(|v| v.trim().parse::<i64>().ok());
        // Kafka 3.9's `LogConfig`: before/after win unless left at their default, then the
        // deprecated difference applies to both; the topic's values layer on the broker's.
        let difference = topic_i64("message.timestamp.difference.max.ms");
        if difference.is_some() || overrides.contains_key("message.timestamp.before.max.ms") {
            c.timestamp_before_max_ms = timestamp_limit(
                topic_i64("message.timestamp.before.max.ms"),
                difference.or(Some(c.timestamp_before_max_ms)),
            );
        }
        if difference.is_some() || overrides.contains_key("message.timestamp.after.max.ms") {
            c.timestamp_after_max_ms = timestamp_limit(
                topic_i64("message.timestamp.after.max.ms"),
                difference.or(Some(c.timestamp_after_max_ms)),
            );
        }
        for (key, value) in overrides {
            let int = || value.trim().parse::<i64>().ok();
            let ok = match key.as_str() {
                "segment.bytes" => int().filter(|v| *v > 0).map(|v| c.segment_bytes = v as u64),
                "segment.ms" => int().map(|v| c.segment_ms = v),
                "segment.jitter.ms" => int().map(|v| c.segment_jitter_ms = v),
                "segment.index.bytes" => int().filter(|v| *v > 0).map(|v| c.max_index_size = v as usize),
                "index.interval.bytes" => int().filter(|v| *v >= 0).map(|v| c.index_interval_bytes = v as usize),
                "retention.ms" => int().map(|v| c.retention_ms = if v < 0 { -1 } else { v }),
                "retention.bytes" => int().map(|v| c.retention_bytes = v),
                "max.message.bytes" => int().filter(|v| *v >= 0).map(|v| c.max_message_bytes = v as usize),
                "flush.messages" => int().map(|v| c.flush_interval_messages = v),
                "flush.ms" => int().map(|v| c.flush_interval_ms = v),
                "message.timestamp.type" => match value.as_str() {
                    "LogAppendTime" => Some(TimestampType::LogAppendTime),
                    "CreateTime" => Some(TimestampType::CreateTime),
                    _ => None,
                }
                .map(|t| c.timestamp_type = t),
                "compression.type" => parse_compression_type(value).ok().map(|t| c.compression = t),
                "message.timestamp.difference.max.ms"
                | "message.timestamp.before.max.ms"
                | "message.timestamp.after.max.ms" => int().filter(|v| *v >= 0).map(|_| ()),
                "cleanup.policy" => {
                    let (compact, delete) = parse_policy(value.split(','));
                    (compact || delete).then(|| {
                        c.compact = compact;
                        c.delete = delete;
                    })
                }
                "min.cleanable.dirty.ratio" => value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .map(|r| c.min_cleanable_ratio = r),
                "delete.retention.ms" => int().filter(|v| *v >= 0).map(|v| c.delete_retention_ms = v),
                "min.compaction.lag.ms" => int().filter(|v| *v >= 0).map(|v| c.min_compaction_lag_ms = v),
                "max.compaction.lag.ms" => int().filter(|v| *v > 0).map(|v| c.max_compaction_lag_ms = v),
                "min.insync.replicas" => int()
                    .filter(|v| (1..=i64::from(i32::MAX)).contains(v))
                    .map(|v| c.min_insync_replicas = v as i32),
                "unclean.leader.election.enable" => match value.trim().to_ascii_lowercase().as_str() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                }
                .map(|b| c.unclean_leader_election = b),
                // Keys kastle does not act on (e.g. throttles) are kept in ZK only.
                _ => Some(()),
            };
            if ok.is_none() {
                tracing::warn!(key = %key, value = %value, "ignoring an invalid topic config value");
            }
        }
        c
    }
}

/// Kafka 3.9's `getMessageTimestampBeforeMaxMs` / `AfterMaxMs`: the new key unless it is unset
/// or at its default (`Long.MAX_VALUE`), else the deprecated difference, else no limit.
fn timestamp_limit(new_key: Option<i64>, difference: Option<i64>) -> i64 {
    match new_key {
        Some(v) if v != i64::MAX => v,
        _ => difference.unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_defaults_are_kafkas() {
        let config = KafkaConfig::from_pairs(&[("zookeeper.connect", "zk:2181")]).expect("config");
        assert_eq!(LogConfig::from_broker(&config), LogConfig::default());
    }

    #[test]
    fn retention_ms_beats_minutes_beats_hours() {
        let config = KafkaConfig::from_pairs(&[
            ("zookeeper.connect", "zk:2181"),
            ("log.retention.hours", "1"),
            ("log.retention.minutes", "2"),
        ])
        .expect("config");
        assert_eq!(LogConfig::from_broker(&config).retention_ms, 120_000);
        let config = KafkaConfig::from_pairs(&[
            ("zookeeper.connect", "zk:2181"),
            ("log.retention.minutes", "2"),
            ("log.retention.ms", "-1"),
            ("log.message.timestamp.type", "LogAppendTime"),
        ])
        .expect("config");
        let log = LogConfig::from_broker(&config);
        assert_eq!(log.retention_ms, -1);
        assert_eq!(log.timestamp_type, TimestampType::LogAppendTime);
    }

    #[test]
    fn topic_overrides_layer_on_the_broker_defaults() {
        let base = LogConfig::default();
        let overrides: BTreeMap<String, String> = [
            ("cleanup.policy", "compact"),
            ("segment.bytes", "4096"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "100"),
            ("retention.ms", "bogus"),
            ("compression.type", "lz4"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = base.with_topic_overrides(&overrides);
        assert!(c.compact && !c.delete);
        assert_eq!(c.segment_bytes, 4096);
        assert_eq!(c.min_cleanable_ratio, 0.01);
        assert_eq!(c.delete_retention_ms, 100);
        assert_eq!(c.retention_ms, base.retention_ms, "an invalid value keeps the default");
        let replication: BTreeMap<String, String> = [
            ("min.insync.replicas".to_string(), "3".to_string()),
            ("unclean.leader.election.enable".to_string(), "TRUE".to_string()),
        ]
        .into();
        let c = base.with_topic_overrides(&replication);
        assert_eq!((c.min_insync_replicas, c.unclean_leader_election), (3, true));
        let both: BTreeMap<String, String> = [("cleanup.policy".to_string(), "compact, delete".to_string())].into();
        let c = base.with_topic_overrides(&both);
        assert!(c.compact && c.delete);
    }

    #[test]
    fn compression_and_timestamp_limits_follow_kafkas_precedence() {
        let config = KafkaConfig::from_pairs(&[
            ("zookeeper.connect", "zk:2181"),
            ("compression.type", "zstd"),
            ("log.message.timestamp.difference.max.ms", "5000"),
            ("log.message.timestamp.after.max.ms", "100"),
        ])
        .expect("config");
        let broker = LogConfig::from_broker(&config);
        assert_eq!(broker.compression, Some(Compression::Zstd));
        assert_eq!(
            (broker.timestamp_before_max_ms, broker.timestamp_after_max_ms),
            (5000, 100)
        );
        let o = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let c = broker.with_topic_overrides(&o(&[("compression.type", "producer")]));
        assert_eq!(c.compression, None);
        assert_eq!((c.timestamp_before_max_ms, c.timestamp_after_max_ms), (5000, 100));
        let c = broker.with_topic_overrides(&o(&[("message.timestamp.difference.max.ms", "7")]));
        assert_eq!((c.timestamp_before_max_ms, c.timestamp_after_max_ms), (7, 7));
        let c = broker.with_topic_overrides(&o(&[
            ("message.timestamp.difference.max.ms", "7"),
            ("message.timestamp.before.max.ms", "3"),
        ]));
        assert_eq!((c.timestamp_before_max_ms, c.timestamp_after_max_ms), (3, 7));
        let c = LogConfig::default().with_topic_overrides(&o(&[("compression.type", "uncompressed")]));
        assert_eq!(c.compression, Some(Compression::None));
        assert_eq!(LogConfig::default().timestamp_before_max_ms, i64::MAX);
    }
}
