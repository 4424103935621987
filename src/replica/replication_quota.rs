//! Replication throttles (KIP-73), Kafka's `ReplicationQuotaManager`: one for the leader side
//! (bytes this broker serves to followers) and one for the follower side (bytes it fetches).
//! Each measures a byte rate over a sliding window of `replication.quota.window.num` samples
//! of `replication.quota.window.size.seconds` ([`SampledRate`], Kafka's `Rate` over
//! `SampledStat`) against the broker's `leader.replication.throttled.rate` /
//! `follower.replication.throttled.rate` (unset: unlimited), and knows which partitions are
//! throttled here from the topics' `leader.replication.throttled.replicas` /
//! `follower.replication.throttled.replicas` ([`parse_throttled_replicas`], Kafka's
//! `TopicConfigHandler.parseThrottledPartitions`).
//!
//! Everything here is pure and takes `now_ms`; the fetch paths decide with it
//! ([`ReplicationQuotas`] is the shared, locked pair): a throttled partition whose follower is
//! not in sync gets no records (leader) or is left out of the fetch (follower) while the quota
//! is exceeded. In-sync replicas are never throttled, but their bytes for throttled partitions
//! count, as in Kafka (`KafkaApis.sizeOfThrottledPartitions`: "traffic from both in-sync and
//! out of sync replicas are accounted for ... to ensure total replication traffic doesn't
//! exceed quota").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use crate::types::{BrokerId, TopicPartition};

/// The two topic configs naming throttled replicas.
pub const LEADER_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
pub const FOLLOWER_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";

/// The sliding window: `samples` of `sample_ms` each (Kafka's `MetricConfig.samples` and
/// `timeWindowMs`, from `replication.quota.window.num` / `.size.seconds`: 11 × 1 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    pub samples: usize,
    pub sample_ms: i64,
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            samples: 11,
            sample_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    last_window_ms: i64,
}

/// Kafka's `Rate` (seconds) over a `SampledStat` summing the values: samples start when a
/// value arrives after the current one is `sample_ms` old; a sample `samples × sample_ms` old
/// is reset when measured; the rate is the retained sum over the time since the oldest sample
/// began, but never over less than `samples − 1` whole samples, so a burst right after a quiet
/// period is not taken for a huge rate.
#[derive(Debug, Clone)]
pub struct SampledRate {
    window: QuotaWindow,
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    pub fn new(window: QuotaWindow) -> Self {
        SampledRate {
            window: QuotaWindow {
                samples: window.samples.max(1),
                sample_ms: window.sample_ms.max(1),
            },
            samples: Vec::new(),
            current: 0,
        }
    }

    /// `SampledStat.record`: into the current sample, or a fresh one once it is complete.
    pub fn record(&mut self, value: f64, now_ms: i64) {
        if self.samples.is_empty() {
            self.samples.push(Sample {
                value: 0.0,
                last_window_ms: now_ms,
            });
            self.current = 0;
        }
        if now_ms - self.samples[self.current].last_window_ms >= self.window.sample_ms {
            self.current = (self.current + 1) % self.window.samples;
            let fresh = Sample {
                value: 0.0,
                last_window_ms: now_ms,
            };
            if self.current >= self.samples.len() {
                self.samples.push(fresh);
            } else {
                self.samples[self.current] = fresh;
            }
        }
        self.samples[self.current].value += value;
    }

    /// `Rate.measure`: per second, after purging the samples that left the window.
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        let expire = self.window.samples as i64 * self.window.sample_ms;
        for s in &mut self.samples {
            if now_ms - s.last_window_ms >= expire {
                *s = Sample {
                    value: 0.0,
                    last_window_ms: now_ms,
                };
            }
        }
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        let oldest = self.samples.iter().map(|s| s.last_window_ms).min().unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full = elapsed / self.window.sample_ms;
        let min_full = self.window.samples as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * self.window.sample_ms;
        }
        if elapsed <= 0 {
            return 0.0;
        }
        total / (elapsed as f64 / 1000.0)
    }
}

/// Which of a topic's partitions are throttled on this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Throttled {
    /// `*`: every replica of the topic.
    All,
    /// The partitions listed with this broker's id.
    Partitions(BTreeSet<i32>),
}

/// Why a throttled-replicas value was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{config} must be the literal '*' or a list of replicas in the following format: \
     [partitionId]:[brokerId],[partitionId]:[brokerId],... (not {entry:?})"
)]
pub struct ThrottledReplicasError {
    pub config: &'static str,
    pub entry: String,
}

/// Kafka's `parseThrottledPartitions` (with `ThrottledReplicaListValidator`'s rule): `*`, or
/// `partition:broker` entries separated by commas, of which those naming `broker` count.
/// `None`: nothing of the topic is throttled here (empty, or no entry for this broker).
pub fn parse_throttled_replicas(
    config: &'static str,
    value: &str,
    broker: BrokerId,
) -> Result<Option<Throttled>, ThrottledReplicasError> {
    let value = value.trim();
    if value == "*" {
        return Ok(Some(Throttled::All));
    }
    let mut partitions = BTreeSet::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = || ThrottledReplicasError {
            config,
            entry: entry.to_string(),
        };
        let (p, b) = entry.split_once(':').ok_or_else(bad)?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        if !digits(p) || !digits(b) {
            return Err(bad());
        }
        let (p, b): (i32, i32) = (p.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if b == broker.0 {
            partitions.insert(p);
        }
    }
    Ok((!partitions.is_empty()).then_some(Throttled::Partitions(partitions)))
}

/// Kafka's `ReplicationQuotaManager`: a bound (bytes/s; `None`: unlimited), the measured rate
/// and the throttled partitions.
#[derive(Debug, Clone)]
pub struct ReplicationQuotaManager {
    bound: Option<u64>,
    rate: SampledRate,
    throttled: HashMap<String, Throttled>,
}

impl ReplicationQuotaManager {
    pub fn new(window: QuotaWindow, bound: Option<u64>) -> Self {
        ReplicationQuotaManager {
            bound,
            rate: SampledRate::new(window),
            throttled: HashMap::new(),
        }
    }

    pub fn bound(&self) -> Option<u64> {
        self.bound
    }

    /// `updateQuota`: a new bound; what was measured stays.
    pub fn update_quota(&mut self, bound: Option<u64>) {
        self.bound = bound;
    }

    /// `record`: bytes replicated for throttled partitions.
    pub fn record(&mut self, bytes: u64, now_ms: i64) {
        self.rate.record(bytes as f64, now_ms);
    }

    /// `isQuotaExceeded`: the measured rate is above the bound (never when unlimited).
    pub fn is_quota_exceeded(&mut self, now_ms: i64) -> bool {
        match self.bound {
            Some(bound) => self.rate.measure(now_ms) > bound as f64,
            None => false,
        }
    }

    /// The `byte-rate` metric.
    pub fn byte_rate(&mut self, now_ms: i64) -> f64 {
        self.rate.measure(now_ms)
    }

    /// `isThrottled`.
    pub fn is_throttled(&self, tp: &TopicPartition) -> bool {
        match self.throttled.get(&tp.topic) {
            Some(Throttled::All) => true,
            Some(Throttled::Partitions(ps)) => ps.contains(&tp.partition),
            None => false,
        }
    }

    /// `markThrottled` / `removeThrottle`.
    pub fn set_throttled(&mut self, topic: &str, throttled: Option<Throttled>) {
        match throttled {
            Some(t) => {
                self.throttled.insert(topic.to_string(), t);
            }
            None => {
                self.throttled.remove(topic);
            }
        }
    }

    /// Kafka's `shouldLeaderThrottle` / `shouldFollowerThrottle`: throttled here, the replica
    /// not in sync, and the quota exceeded.
    pub fn should_throttle(&mut self, tp: &TopicPartition, in_sync: bool, now_ms: i64) -> bool {
        !in_sync && self.is_throttled(tp) && self.is_quota_exceeded(now_ms)
    }
}

/// The leader and follower quotas of one broker, shared by the fetch paths, the fetchers and
/// the dynamic config listener.
#[derive(Debug)]
pub struct ReplicationQuotas {
    local: BrokerId,
    leader: Mutex<ReplicationQuotaManager>,
    follower: Mutex<ReplicationQuotaManager>,
}

/// The configured side of [`ReplicationQuotas`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaConfig {
    pub window: QuotaWindow,
    /// `leader.replication.throttled.rate` (None: unlimited).
    pub leader_rate: Option<u64>,
    /// `follower.replication.throttled.rate` (None: unlimited).
    pub follower_rate: Option<u64>,
}

impl ReplicationQuotas {
    pub fn new(local: BrokerId, config: QuotaConfig) -> Self {
        ReplicationQuotas {
            local,
            leader: Mutex::new(ReplicationQuotaManager::new(config.window, config.leader_rate)),
            follower: Mutex::new(ReplicationQuotaManager::new(config.window, config.follower_rate)),
        }
    }

    pub fn leader(&self) -> MutexGuard<'_, ReplicationQuotaManager> {
        self.leader.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn follower(&self) -> MutexGuard<'_, ReplicationQuotaManager> {
        self.follower.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kafka's `BrokerConfigHandler`: the rates from the effective broker config.
    pub fn update_rates(&self, leader: Option<u64>, follower: Option<u64>) {
        let (mut l, mut f) = (self.leader(), self.follower());
        if l.bound() != leader || f.bound() != follower {
            tracing::info!(
                ?leader,
                ?follower,
                "replication throttle rates (bytes/s; None: unlimited)"
            );
        }
        l.update_quota(leader);
        f.update_quota(follower);
    }

    /// Kafka's `TopicConfigHandler.updateThrottledList` for both lists of `topic`'s overrides
    /// (absent or empty: not throttled). A value that does not parse throttles nothing.
    pub fn update_topic(&self, topic: &str, overrides: &BTreeMap<String, String>) {
        for (config, mut quota) in [
            (LEADER_THROTTLED_REPLICAS, self.leader()),
            (FOLLOWER_THROTTLED_REPLICAS, self.follower()),
        ] {
            let parsed = overrides
                .get(config)
                .map(|v| parse_throttled_replicas(config, v, self.local))
                .transpose()
                .unwrap_or_else(|e| {
                    tracing::warn!(%topic, error = %e, "ignoring a throttled replicas list");
                    None
                })
                .flatten();
            quota.set_throttled(topic, parsed);
        }
    }

    /// Kafka's `ReplicaFetcherThread.shouldFollowerThrottle` for a partition whose lag behind
    /// the leader's HW after the last response was `lag` (`None`: not fetched since it was
    /// added): in sync means caught up (`PartitionFetchState.isReplicaInSync`).
    pub fn follower_should_throttle(&self, tp: &TopicPartition, lag: Option<i64>, now_ms: i64) -> bool {
        let in_sync = lag.is_some_and(|l| l <= 0);
        self.follower().should_throttle(tp, in_sync, now_ms)
    }

    /// Publishes the `byte-rate` gauges of both quotas.
    pub fn publish_metrics(&self, now_ms: i64) {
        metrics::gauge!("kafka_server_leaderreplication_byte_rate").set(self.leader().byte_rate(now_ms));
        metrics::gauge!("kafka_server_followerreplication_byte_rate").set(self.follower().byte_rate(now_ms));
    }
}

#[cfg(test)]
#[path = "replication_quota_tests.rs"]
mod tests;
