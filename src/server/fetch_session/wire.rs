//! The Fetch handler's view of sessions (Kafka's `FetchManager`): the request's partitions and
//! forgotten topics as the cache sees them, the cache behind a mutex held only for the
//! bookkeeping (never across a read), and the answer grouped back into topics.

use std::sync::Mutex;

use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::{FetchContext, FetchMetadata, FetchSessionCache, PartitionRequest, SessionPartition};

/// Settings of the session cache (`max.incremental.fetch.session.cache.slots`,
/// `min.incremental.fetch.session.eviction.ms`).
#[derive(Debug, Clone, Copy)]
pub struct FetchSessionConfig {
    pub cache_slots: usize,
    pub eviction_ms: i64,
}

impl Default for FetchSessionConfig {
    fn default() -> Self {
        FetchSessionConfig {
            cache_slots: 1000,
            eviction_ms: 120_000,
        }
    }
}

impl FetchSessionConfig {
    pub fn from_config(c: &crate::config::KafkaConfig) -> Self {
        let d = FetchSessionConfig::default();
        FetchSessionConfig {
            cache_slots: c
                .get_i32("max.incremental.fetch.session.cache.slots")
                .map_or(d.cache_slots, |v| v.max(0) as usize),
            eviction_ms: c
                .get_i64("min.incremental.fetch.session.eviction.ms")
                .map_or(d.eviction_ms, |v| v.max(0)),
        }
    }
}

/// The broker's fetch sessions.
#[derive(Debug)]
pub struct FetchManager {
    cache: Mutex<FetchSessionCache>,
}

impl FetchManager {
    pub fn new(config: FetchSessionConfig) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9E37_79B9, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id()) << 32;
        FetchManager {
            cache: Mutex::new(FetchSessionCache::new(config.cache_slots, config.eviction_ms, seed)),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, FetchSessionCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves `request` to a context; `resolve` names a topic id (and a partition of it).
    pub fn new_context(
        &self,
        version: i16,
        request: &FetchRequest,
        is_follower: bool,
        resolve: impl Fn(&Uuid, i32) -> Option<String>,
        now: i64,
    ) -> FetchContext {
        let (fetch_data, to_forget) = request_partitions(version, request, &resolve);
        let metadata = FetchMetadata {
            session_id: request.session_id,
            epoch: request.session_epoch,
        };
        let mut cache = self.cache();
        let context = cache.new_context(version, metadata, is_follower, fetch_data, &to_forget, resolve, now);
        publish_metrics(&cache);
        context
    }

    /// The answer to a request resolved to `context`, `results` holding what was read for each
    /// of `context.partitions()` in order.
    pub fn respond(&self, context: FetchContext, results: Vec<PartitionData>, now: i64) -> FetchResponse {
        let answer = {
            let mut cache = self.cache();
            let evictions = cache.evictions();
            let answer = cache.respond(context, results, now);
            if cache.evictions() > evictions {
                metrics::counter!("kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total")
                    .increment(cache.evictions() - evictions);
            }
            publish_metrics(&cache);
            answer
        };
        let mut topics: Vec<FetchableTopicResponse> = Vec::new();
        let mut last: Option<(Uuid, Option<String>)> = None;
        for (ident, data) in answer.partitions {
            let this = (ident.topic_id, ident.topic.clone());
            if last.as_ref() != Some(&this) {
                let mut topic = FetchableTopicResponse::default().with_topic_id(ident.topic_id);
                if let Some(name) = &ident.topic {
                    topic.topic = TopicName(StrBytes::from_string(name.clone()));
                }
                topics.push(topic);
                last = Some(this);
            }
            if let Some(topic) = topics.last_mut() {
                topic.partitions.push(data);
            }
        }
        FetchResponse::default()
            .with_error_code(answer.error_code)
            .with_session_id(answer.session_id)
            .with_responses(topics)
    }

    /// Sessions in the cache.
    pub fn sessions(&self) -> usize {
        self.cache().len()
    }
}

/// Kafka's FetchSessionCache gauges, with the JMX exporter's names.
fn publish_metrics(cache: &FetchSessionCache) {
    metrics::gauge!("kafka_server_fetchsessioncache_numincrementalfetchsessions").set(cache.len() as f64);
    metrics::gauge!("kafka_server_fetchsessioncache_numincrementalfetchpartitionscached")
        .set(cache.total_partitions() as f64);
}

/// Kafka's `FetchRequest.fetchData` and `forgottenTopics`: names below v13, topic ids (resolved
/// where possible) from v13 on.
fn request_partitions(
    version: i16,
    request: &FetchRequest,
    resolve: &impl Fn(&Uuid, i32) -> Option<String>,
) -> (Vec<(SessionPartition, PartitionRequest)>, Vec<SessionPartition>) {
    let name_of = |name: &TopicName, id: &Uuid, partition: i32| {
        if version >= 13 {
            resolve(id, partition)
        } else {
            Some(name.0.to_string())
        }
    };
    let id_of = |id: &Uuid| if version >= 13 { *id } else { Uuid::nil() };
    let mut fetch_data = Vec::new();
    for topic in &request.topics {
        let first = topic.partitions.first().map_or(0, |p| p.partition);
        let name = name_of(&topic.topic, &topic.topic_id, first);
        for p in &topic.partitions {
            fetch_data.push((
                SessionPartition {
                    topic_id: id_of(&topic.topic_id),
                    topic: name.clone(),
                    partition: p.partition,
                },
                PartitionRequest {
                    fetch_offset: p.fetch_offset,
                    log_start_offset: p.log_start_offset,
                    max_bytes: p.partition_max_bytes,
                    current_leader_epoch: p.current_leader_epoch,
                    last_fetched_epoch: if version >= 12 { p.last_fetched_epoch } else { -1 },
                },
            ));
        }
    }
    let mut to_forget = Vec::new();
    for topic in &request.forgotten_topics_data {
        let first = topic.partitions.first().copied().unwrap_or(0);
        let name = name_of(&topic.topic, &topic.topic_id, first);
        for &partition in &topic.partitions {
            to_forget.push(SessionPartition {
                topic_id: id_of(&topic.topic_id),
                topic: name.clone(),
                partition,
            });
        }
    }
    (fetch_data, to_forget)
}
