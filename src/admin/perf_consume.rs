//! `kastle perf consume`: a consumer load generator in the spirit of kafka-consumer-perf-test.
//!
//! It finds the partition's leader (Metadata to `--bootstrap`), then fetches from `from_offset`
//! one request at a time (Fetch v12 or the highest the broker speaks down to v4; sessionless,
//! max_wait 500 ms, min_bytes 1) until `records` records have come back. Records are counted
//! from batch headers without decoding or decompressing anything (control batches are skipped,
//! as a consumer never sees them), so "data consumed" is the size of the record batches as
//! fetched, a little more than kafka-consumer-perf-test's sum of keys and values. Counting is by
//! whole batches, so the count can pass `records` by the rest of the last batch.
//!
//! Like Kafka's tool, it gives up when no record arrives for `timeout` (10 s) and still reports
//! what it read, with `timed_out` set.
//!
//! Also what both perf tools share: [`PerfError`] and finding and connecting to the leader.

use std::fmt;
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::{BrokerConnection, ClientError};
use crate::protocol::error_codes as ec;
use crate::protocol::record_batch::BatchScanner;

/// What to read, with kafka-consumer-perf-test's defaults.
#[derive(Debug, Clone)]
pub struct PerfConsumeOptions {
    pub bootstrap: String,
    pub topic: String,
    pub partition: i32,
    /// Stop once this many records were read.
    pub records: u64,
    /// Fetch `max_bytes` and `partition_max_bytes` (1 MiB).
    pub fetch_max_bytes: i32,
    pub from_offset: i64,
    /// Give up after this long without a record (kafka-consumer-perf-test's `--timeout`, 10 s).
    pub timeout: Duration,
    /// TCP connect + handshake, and how long to wait for a leader (10 s).
    pub connect_timeout: Duration,
}

impl PerfConsumeOptions {
    pub fn new(bootstrap: impl Into<String>, topic: impl Into<String>, records: u64) -> Self {
        PerfConsumeOptions {
            bootstrap: bootstrap.into(),
            topic: topic.into(),
            partition: 0,
            records,
            fetch_max_bytes: 1_048_576,
            from_offset: 0,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// What was read, as kafka-consumer-perf-test reports it (MB are MiB).
#[derive(Debug, Clone, PartialEq)]
pub struct PerfConsumeReport {
    pub records: u64,
    /// Bytes of the record batches read.
    pub bytes: u64,
    /// From the first fetch to the response that brought the last record read.
    pub elapsed: Duration,
    pub mb: f64,
    pub mb_per_sec: f64,
    pub records_per_sec: f64,
    pub fetch_requests: u64,
    /// The offset after the last record read.
    pub next_offset: i64,
    /// Stopped before `records` because nothing arrived for `timeout`.
    pub timed_out: bool,
}

impl PerfConsumeReport {
    /// The header line kafka-consumer-perf-test prints (the columns this tool measures).
    pub const HEADER: &'static str = "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, fetch.requests";

    /// The values line under [`Self::HEADER`].
    pub fn values_line(&self) -> String {
        format!(
            "{:.4}, {:.4}, {}, {:.4}, {}",
            self.mb, self.mb_per_sec, self.records, self.records_per_sec, self.fetch_requests
        )
    }
}

impl fmt::Display for PerfConsumeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\n{}", Self::HEADER, self.values_line())
    }
}

/// Runs the benchmark and returns its figures; prints nothing.
pub async fn run(options: &PerfConsumeOptions) -> Result<PerfConsumeReport, PerfError> {
    if options.records == 0 || options.fetch_max_bytes <= 0 || options.from_offset < 0 || options.partition < 0 {
        return Err(PerfError::InvalidOption(
            "--records and --fetch-max-bytes must be positive, --from-offset and --partition not negative".into(),
        ));
    }
    let conn = connect_to_leader(
        &options.bootstrap,
        &options.topic,
        options.partition,
        options.connect_timeout,
        false,
    )
    .await?;
    let version = api_version(&conn, ApiKey::Fetch, (4, 12))?;
    let topic = TopicName(StrBytes::from_string(options.topic.clone()));
    let started = Instant::now();
    let mut last_progress = started;
    let (mut offset, mut records, mut bytes, mut fetches) = (options.from_offset, 0u64, 0u64, 0u64);
    let mut timed_out = false;
    while records < options.records {
        if last_progress.elapsed() >= options.timeout {
            timed_out = true;
            break;
        }
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(options.fetch_max_bytes)
            .with_isolation_level(0)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default().with_topic(topic.clone()).with_partitions(
                vec![FetchPartition::default()
                    .with_partition(options.partition)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(options.fetch_max_bytes)],
            )]);
        let response = conn.send(request, version).await?;
        fetches += 1;
        let fetched = read_partition(&response, options, offset).map_err(|e| match e {
            ReadError::Code(code) => PerfError::Fetch {
                topic: options.topic.clone(),
                partition: options.partition,
                offset,
                code,
            },
            ReadError::Unusable(reason) => PerfError::Protocol {
                addr: conn.addr().to_owned(),
                reason,
            },
        })?;
        if fetched.records > 0 || fetched.next_offset > offset {
            last_progress = Instant::now();
        }
        records += fetched.records;
        bytes += fetched.bytes;
        offset = fetched.next_offset;
    }
    let elapsed = last_progress.saturating_duration_since(started);
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mb = bytes as f64 / (1024.0 * 1024.0);
    Ok(PerfConsumeReport {
        records,
        bytes,
        elapsed,
        mb,
        mb_per_sec: mb / secs,
        records_per_sec: records as f64 / secs,
        fetch_requests: fetches,
        next_offset: offset,
        timed_out,
    })
}

/// What one fetch response brought for the partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fetched {
    records: u64,
    bytes: u64,
    next_offset: i64,
}

/// Why a fetch response gave no records to count.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ReadError {
    /// A Kafka error code, for the request or the partition.
    Code(i16),
    /// A response that makes no sense for the request.
    Unusable(String),
}

/// Counts the partition's records at or after `offset`.
fn read_partition(response: &FetchResponse, options: &PerfConsumeOptions, offset: i64) -> Result<Fetched, ReadError> {
    if response.error_code != 0 {
        return Err(ReadError::Code(response.error_code));
    }
    let data = response
        .responses
        .iter()
        .filter(|t| t.topic.0.as_str() == options.topic)
        .flat_map(|t| &t.partitions)
        .find(|p| p.partition_index == options.partition)
        .ok_or_else(|| ReadError::Unusable("the fetch response does not contain the partition".to_owned()))?;
    if data.error_code != 0 {
        return Err(ReadError::Code(data.error_code));
    }
    let raw = data.records.as_deref().unwrap_or(&[]);
    let mut fetched = Fetched {
        records: 0,
        bytes: 0,
        next_offset: offset,
    };
    // A response may end in a partial batch (cut at max_bytes); the scanner stops there.
    for (_, header) in BatchScanner::without_crc(raw).map_while(Result::ok) {
        if header.last_offset() < offset {
            continue;
        }
        if !header.is_control() {
            // A batch that starts before the fetch offset (a compressed batch, a fetch that
            // resumed mid-batch) counts only its records from the offset on.
            let skipped = (offset - header.base_offset).max(0);
            fetched.records += (i64::from(header.record_count) - skipped).max(0) as u64;
            fetched.bytes += header.size_in_bytes() as u64;
        }
        fetched.next_offset = header.next_offset();
    }
    if fetched.next_offset == offset && !raw.is_empty() {
        return Err(ReadError::Unusable(format!(
            "{} bytes of records at offset {offset} hold no whole batch",
            raw.len()
        )));
    }
    Ok(fetched)
}

/// The client id the perf tools send (brokers show it in logs and metrics).
pub const CLIENT_ID: &str = "kastle-perf";

/// Why a perf run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    #[error("invalid option: {0}")]
    InvalidOption(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("broker {addr} supports no {api:?} version in v{min}..=v{max}")]
    UnsupportedApi {
        addr: String,
        api: ApiKey,
        min: i16,
        max: i16,
    },
    #[error("no leader for {topic}-{partition} within {waited:?}: {reason}")]
    NoLeader {
        topic: String,
        partition: i32,
        waited: Duration,
        reason: String,
    },
    #[error("cannot encode a record batch: {0}")]
    Encode(String),
    #[error("fetch of {topic}-{partition} at offset {offset} failed: {}", error_name(*code))]
    Fetch {
        topic: String,
        partition: i32,
        offset: i64,
        code: i16,
    },
    #[error("broker {addr}: {reason}")]
    Protocol { addr: String, reason: String },
    #[error("a produce task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// `"error code 6 (NOT_LEADER_OR_FOLLOWER)"`.
pub fn error_name(code: i16) -> String {
    format!("error code {code} ({})", ec::name(code))
}

/// The highest version of `api` in `ours` that the broker speaks, or a typed error.
pub(crate) fn api_version(conn: &BrokerConnection, api: ApiKey, ours: (i16, i16)) -> Result<i16, PerfError> {
    conn.version_for(api, ours).ok_or_else(|| PerfError::UnsupportedApi {
        addr: conn.addr().to_owned(),
        api,
        min: ours.0,
        max: ours.1,
    })
}

/// Connects to `bootstrap`, asks it (Metadata) for the leader of `topic`-`partition`, and returns
/// a connection to the leader (the bootstrap connection itself when it is the leader). While the
/// leader is unknown (a new topic, an election) it asks again, for up to `timeout`. With
/// `auto_create` the broker may create a missing topic (producers ask for that, consumers not).
pub(crate) async fn connect_to_leader(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    timeout: Duration,
    auto_create: bool,
) -> Result<BrokerConnection, PerfError> {
    let started = Instant::now();
    let conn = BrokerConnection::connect(bootstrap, CLIENT_ID, timeout).await?;
    let version = api_version(&conn, ApiKey::Metadata, (1, 12))?;
    loop {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(topic.to_owned()))))
            ]))
            .with_allow_auto_topic_creation(auto_create);
        let response = conn.send(request, version).await?;
        let reason = match leader_address(&response, topic, partition) {
            Ok(leader) if leader == bootstrap => return Ok(conn),
            Ok(leader) => return Ok(BrokerConnection::connect(leader.as_str(), CLIENT_ID, timeout).await?),
            Err(reason) => reason,
        };
        if started.elapsed() >= timeout {
            return Err(PerfError::NoLeader {
                topic: topic.to_owned(),
                partition,
                waited: started.elapsed(),
                reason,
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `host:port` of the partition's leader, or why there is none.
fn leader_address(response: &MetadataResponse, topic: &str, partition: i32) -> Result<String, String> {
    let t = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
        .ok_or_else(|| "the topic is not in the metadata response".to_owned())?;
    if t.error_code != 0 {
        return Err(format!("topic {}", error_name(t.error_code)));
    }
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .ok_or_else(|| format!("the topic has {} partition(s) and not this one", t.partitions.len()))?;
    if p.error_code != 0 && p.leader_id.0 < 0 {
        return Err(format!("partition {}", error_name(p.error_code)));
    }
    let leader = p.leader_id;
    if leader.0 < 0 {
        return Err("no leader elected".to_owned());
    }
    response
        .brokers
        .iter()
        .find(|b| b.node_id == leader)
        .map(|b| format!("{}:{}", b.host.as_str(), b.port))
        .ok_or_else(|| format!("leader {} is not among the live brokers", leader.0))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};

    use super::*;
    use crate::protocol::test_support::{build_batch, BatchBuilder};

    fn response(records: Vec<u8>, error_code: i16) -> FetchResponse {
        FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
            .with_topic(TopicName(StrBytes::from_static_str("perf")))
            .with_partitions(vec![PartitionData::default()
                .with_partition_index(0)
                .with_error_code(error_code)
                .with_records(Some(Bytes::from(records)))])])
    }

    #[test]
    fn records_are_counted_from_headers_skipping_control_batches_and_earlier_offsets() {
        let v = &b"value"[..];
        let mut raw = build_batch(0, 0, &[(None, Some(v)), (None, Some(v)), (None, Some(v))], 1);
        let first = raw.len();
        raw.extend(BatchBuilder::new(3).control().record(None, Some(v)).build());
        let second = raw.len() - first;
        raw.extend(build_batch(4, 0, &[(None, Some(v)), (None, Some(v))], 1));
        let third = raw.len() - first - second;
        let partial = build_batch(6, 0, &[(None, Some(v))], 1);
        raw.extend(&partial[..partial.len() - 1]);
        let options = PerfConsumeOptions::new("b:1", "perf", 10);

        let got = read_partition(&response(raw.clone(), 0), &options, 0).expect("reads");
        assert_eq!(
            got,
            Fetched {
                records: 5,
                bytes: (first + third) as u64,
                next_offset: 6
            }
        );
        let got = read_partition(&response(raw, 0), &options, 1).expect("reads");
        assert_eq!((got.records, got.next_offset), (4, 6));
    }

    #[test]
    fn error_codes_and_unusable_responses_are_errors() {
        let options = PerfConsumeOptions::new("b:1", "perf", 10);
        assert_eq!(
            read_partition(&response(Vec::new(), ec::OFFSET_OUT_OF_RANGE), &options, 0),
            Err(ReadError::Code(ec::OFFSET_OUT_OF_RANGE))
        );
        let empty = read_partition(&response(Vec::new(), 0), &options, 7).expect("empty is fine");
        assert_eq!(
            empty,
            Fetched {
                records: 0,
                bytes: 0,
                next_offset: 7
            }
        );
        let batch = build_batch(0, 0, &[(None, Some(&b"v"[..]))], 1);
        let cut = read_partition(&response(batch[..20].to_vec(), 0), &options, 0);
        assert!(matches!(cut, Err(ReadError::Unusable(_))));
        let other = PerfConsumeOptions::new("b:1", "other", 10);
        assert!(matches!(
            read_partition(&response(Vec::new(), 0), &other, 0),
            Err(ReadError::Unusable(_))
        ));
    }

    #[test]
    fn the_report_prints_kafka_consumer_perf_test_columns() {
        let report = PerfConsumeReport {
            records: 1000,
            bytes: 2 << 20,
            elapsed: Duration::from_millis(500),
            mb: 2.0,
            mb_per_sec: 4.0,
            records_per_sec: 2000.0,
            fetch_requests: 3,
            next_offset: 1000,
            timed_out: false,
        };
        assert_eq!(
            report.to_string(),
            "data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, fetch.requests\n\
             2.0000, 4.0000, 1000, 2000.0000, 3"
        );
    }
}
