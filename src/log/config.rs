//! Per-log settings (Kafka's topic-level `LogConfig`), derived from the broker's `log.*` keys.
//! Topic overrides from `/config/topics/<t>` will layer on top when topic configs arrive.

use crate::config::KafkaConfig;

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
    /// Flush after this many messages (i64::MAX = leave it to the OS).
    pub flush_interval_messages: i64,
    /// Flush data older than this (i64::MAX = leave it to the OS).
    pub flush_interval_ms: i64,
    /// `producer.id.expiration.ms`: a producer idle this long loses its state (broker-wide).
    pub producer_id_expiration_ms: i64,
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
            flush_interval_messages: i64::MAX,
            flush_interval_ms: i64::MAX,
            producer_id_expiration_ms: 86_400_000,
        }
    }
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
            flush_interval_messages: config
                .get_i64("log.flush.interval.messages")
                .unwrap_or(d.flush_interval_messages),
            flush_interval_ms: config.get_i64("log.flush.interval.ms").unwrap_or(d.flush_interval_ms),
            producer_id_expiration_ms: config
                .get_i64("producer.id.expiration.ms")
                .unwrap_or(d.producer_id_expiration_ms),
        }
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
}
