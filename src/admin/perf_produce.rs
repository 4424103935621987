//! `kastle perf produce`: a producer load generator in the spirit of kafka-producer-perf-test.
//!
//! It finds the partition's leader through a Metadata request to `--bootstrap` (creating the
//! topic if the broker auto-creates topics, as Kafka's producer does), then sends
//! Produce requests (the highest version both sides speak, at most v9) over one connection,
//! pipelined up to `max_in_flight`. Each request carries one v2 batch of as many `record_size`
//! values as fit in `batch_size` bytes uncompressed (Kafka's `batch.size`), encoded (and
//! compressed) by the `kafka-protocol` crate as a Rust client would. Values are cut at random
//! offsets from text of random words (2 to 10 random letters, from a 2,000-word vocabulary), so
//! every codec finds something to compress, but nothing like a repeated constant value.
//!
//! A record's latency is from its batch's creation (just before the send) to the response; with
//! acks=0 it is until the request is on the socket. As Kafka's producer does, a batch refused
//! with a retriable error (a new topic's leader not ready yet, too few in-sync replicas) is sent
//! again after 100 ms until `delivery_timeout`; its latency includes the retries. Like Kafka's
//! tool, only records acknowledged without error count as sent; records refused for good are
//! counted per error code and reported. Losing the connection ends the run with an error.
//!
//! With `idempotent`, the run first asks for a producer id (InitProducerId) and numbers its
//! batches' records from sequence 0 in send order, as an idempotent producer does. A retried
//! batch keeps its sequence (the broker answers a duplicate with the original offsets); there
//! is no re-ordering of later in-flight batches after a retriable error, which a real client
//! does, so such a run may count OUT_OF_ORDER_SEQUENCE_NUMBER failures when the broker refuses
//! batches mid-run.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ParseResponseErrorCode;
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KpCompression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use tokio::task::JoinSet;

use super::perf_consume::{api_version, connect_to_leader, error_name, PerfError};
use crate::client::{BrokerConnection, ClientError};

/// The wait before a batch is sent again after a retriable error (`retry.backoff.ms`).
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// Record-batch header bytes (`RECORD_BATCH_OVERHEAD`).
const BATCH_HEADER_BYTES: usize = 61;
/// Bytes of text that values are cut from, at least (more for large records).
const PAYLOAD_POOL_BYTES: usize = 1 << 20;
/// Distinct words in that text.
const VOCABULARY: u64 = 2_000;

/// Record-batch compression, as `--compression` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PerfCompression {
    #[default]
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl PerfCompression {
    fn codec(self) -> KpCompression {
        match self {
            PerfCompression::None => KpCompression::None,
            PerfCompression::Gzip => KpCompression::Gzip,
            PerfCompression::Snappy => KpCompression::Snappy,
            PerfCompression::Lz4 => KpCompression::Lz4,
            PerfCompression::Zstd => KpCompression::Zstd,
        }
    }
}

impl FromStr for PerfCompression {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(PerfCompression::None),
            "gzip" => Ok(PerfCompression::Gzip),
            "snappy" => Ok(PerfCompression::Snappy),
            "lz4" => Ok(PerfCompression::Lz4),
            "zstd" => Ok(PerfCompression::Zstd),
            other => Err(format!("unknown compression {other:?} (none, gzip, snappy, lz4, zstd)")),
        }
    }
}

/// What to send, with kafka-producer-perf-test's and the producer's defaults.
#[derive(Debug, Clone)]
pub struct PerfProduceOptions {
    pub bootstrap: String,
    pub topic: String,
    pub partition: i32,
    pub records: u64,
    pub record_size: usize,
    /// Records per second to pace to; `None` sends as fast as acks come back.
    pub throughput: Option<f64>,
    /// -1 (all in-sync replicas), 0 (no response) or 1 (the leader).
    pub acks: i16,
    /// Uncompressed bytes per batch (`batch.size`, 16384).
    pub batch_size: usize,
    pub compression: PerfCompression,
    /// Requests awaiting a response (`max.in.flight.requests.per.connection`, 5).
    pub max_in_flight: usize,
    /// TCP connect + handshake, and how long to wait for a leader (10 s).
    pub connect_timeout: Duration,
    /// How long a batch is retried after retriable errors (`delivery.timeout.ms`, 120 s).
    pub delivery_timeout: Duration,
    /// Send as an idempotent producer (`enable.idempotence`): producer id, epoch, sequences.
    pub idempotent: bool,
}

impl PerfProduceOptions {
    pub fn new(bootstrap: impl Into<String>, topic: impl Into<String>, records: u64, record_size: usize) -> Self {
        PerfProduceOptions {
            bootstrap: bootstrap.into(),
            topic: topic.into(),
            partition: 0,
            records,
            record_size,
            throughput: None,
            acks: -1,
            batch_size: 16_384,
            compression: PerfCompression::None,
            max_in_flight: 5,
            connect_timeout: Duration::from_secs(10),
            delivery_timeout: Duration::from_secs(120),
            idempotent: false,
        }
    }

    fn validate(&self) -> Result<(), PerfError> {
        let bad = |what: String| Err(PerfError::InvalidOption(what));
        if self.records == 0 {
            return bad("--records must be at least 1".into());
        }
        if !matches!(self.acks, -1..=1) {
            return bad(format!("--acks must be -1, 0 or 1, not {}", self.acks));
        }
        if self.max_in_flight == 0 || self.batch_size == 0 || self.partition < 0 {
            return bad("--max-in-flight and --batch-size must be positive, --partition not negative".into());
        }
        if self.throughput.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return bad("--throughput must be positive (or -1 for unlimited)".into());
        }
        Ok(())
    }

    /// Records per batch: as many as fit in `batch_size` uncompressed, at least one. When paced,
    /// at most about a millisecond's worth, as Kafka's producer (linger.ms 0) sends records
    /// nearly one by one at low rates instead of holding them to fill a batch.
    pub fn records_per_batch(&self) -> u64 {
        let value_len = varint_len(self.record_size as u64);
        // Record length and value length varints, then attributes, timestamp delta, offset delta
        // (at most 3 bytes), key length -1 and header count.
        let per_record = (self.record_size + 2 * value_len + 7) as u64;
        let by_size = (self.batch_size.saturating_sub(BATCH_HEADER_BYTES) as u64 / per_record).max(1);
        match self.throughput {
            Some(rate) => by_size.min((rate / 1000.0).ceil().max(1.0) as u64),
            None => by_size,
        }
    }
}

/// Zig-zag varint bytes for a non-negative length.
fn varint_len(n: u64) -> usize {
    let bits = 64 - (n << 1).leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// The outcome, as kafka-producer-perf-test's final line reports it (MB are MiB, of values).
#[derive(Debug, Clone, PartialEq)]
pub struct PerfProduceReport {
    /// Records acknowledged without error (with acks=0: written to the socket).
    pub records: u64,
    /// Value bytes of those records.
    pub bytes: u64,
    /// From the first batch's creation to the last response.
    pub elapsed: Duration,
    pub records_per_sec: f64,
    pub mb_per_sec: f64,
    pub latency_avg_ms: f64,
    pub latency_max_ms: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    /// Records in batches the broker answered with a non-zero error code.
    pub failed_records: u64,
    /// Failed records by error code.
    pub errors: BTreeMap<i16, u64>,
    /// Produce requests sent, retries included.
    pub requests: u64,
    /// Batches sent again after a retriable error.
    pub retries: u64,
}

impl fmt::Display for PerfProduceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} records sent, {:.1} records/sec ({:.2} MB/sec), {:.2} ms avg latency, {:.2} ms max latency, \
             {:.2} ms 50th, {:.2} ms 99th, {:.2} ms 99.9th.",
            self.records,
            self.records_per_sec,
            self.mb_per_sec,
            self.latency_avg_ms,
            self.latency_max_ms,
            self.p50,
            self.p99,
            self.p999
        )?;
        if self.failed_records > 0 {
            let codes: Vec<String> = self
                .errors
                .iter()
                .map(|(code, n)| format!("{n} with {}", error_name(*code)))
                .collect();
            write!(f, "\n{} records failed: {}.", self.failed_records, codes.join(", "))?;
        }
        Ok(())
    }
}

/// Runs the benchmark and returns its figures; prints nothing.
pub async fn run(options: &PerfProduceOptions) -> Result<PerfProduceReport, PerfError> {
    options.validate()?;
    let conn = Arc::new(
        connect_to_leader(
            &options.bootstrap,
            &options.topic,
            options.partition,
            options.connect_timeout,
            true,
        )
        .await?,
    );
    let version = api_version(&conn, ApiKey::Produce, (3, 9))?;
    let producer = if options.idempotent {
        Some(init_producer_id(&conn).await?)
    } else {
        None
    };
    let mut payload = Payload::new(options.record_size);
    let per_batch = options.records_per_batch();
    let topic = TopicName(StrBytes::from_string(options.topic.clone()));
    let mut in_flight = JoinSet::new();
    let mut stats = Stats::default();
    let started = Instant::now();
    let mut queued = 0u64;
    while queued < options.records {
        while in_flight.len() >= options.max_in_flight {
            if let Some(done) = in_flight.join_next().await {
                stats.add(done??);
            }
        }
        if let Some(rate) = options.throughput {
            let due = started + Duration::from_secs_f64(queued as f64 / rate);
            tokio::time::sleep_until(due.into()).await;
        }
        let count = per_batch.min(options.records - queued);
        let created = Instant::now();
        let batch = payload.batch(queued, count, options.compression, producer)?;
        let request = ProduceRequest::default()
            .with_acks(options.acks)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(topic.clone())
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(options.partition)
                    .with_records(Some(batch))])]);
        let (acks, partition, delivery_timeout) = (options.acks, options.partition, options.delivery_timeout);
        let first_send = start_send(&conn, request.clone(), version, acks);
        let conn = Arc::clone(&conn);
        in_flight.spawn(async move {
            let mut retries = 0;
            let mut response = first_send.await?;
            let error_code = match response.take() {
                None => 0, // acks=0
                Some(first) => {
                    let mut code = partition_error(&first, partition);
                    while code.err().is_some_and(|e| e.is_retriable()) && created.elapsed() < delivery_timeout {
                        retries += 1;
                        tokio::time::sleep(RETRY_BACKOFF).await;
                        code = partition_error(&conn.send(request.clone(), version).await?, partition);
                    }
                    code
                }
            };
            Ok::<_, PerfError>(Outcome {
                records: count,
                error_code,
                retries,
                latency: created.elapsed(),
                done: Instant::now(),
            })
        });
        queued += count;
    }
    while let Some(done) = in_flight.join_next().await {
        stats.add(done??);
    }
    Ok(stats.report(started, options.record_size))
}

type SendFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Option<ProduceResponse>, ClientError>> + Send>>;

/// Starts sending `request` now, in the caller's order. A send queues its frame on the
/// connection when first polled, and tasks spawned one after another are first polled in any
/// order: an idempotent producer's batches could overtake each other and the broker would see a
/// sequence gap. Polling once here (with a no-op waker; the task polls on with its own) queues
/// the frame before the next batch is built. `None` for acks=0, which gets no response.
fn start_send(conn: &Arc<BrokerConnection>, request: ProduceRequest, version: i16, acks: i16) -> SendFuture {
    let conn = Arc::clone(conn);
    let mut send: SendFuture = Box::pin(async move {
        if acks == 0 {
            conn.send_no_response(request, version).await.map(|()| None)
        } else {
            conn.send(request, version).await.map(Some)
        }
    });
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match send.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(done) => Box::pin(std::future::ready(done)),
        std::task::Poll::Pending => send,
    }
}

/// A producer id and epoch for an idempotent run.
async fn init_producer_id(conn: &BrokerConnection) -> Result<(i64, i16), PerfError> {
    let version = api_version(conn, ApiKey::InitProducerId, (0, 4))?;
    let request = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(60_000);
    let response = conn.send(request, version).await?;
    if response.error_code != 0 {
        return Err(PerfError::Protocol {
            addr: conn.addr().to_string(),
            reason: format!("InitProducerId failed: {}", error_name(response.error_code)),
        });
    }
    Ok((response.producer_id.0, response.producer_epoch))
}

/// The partition's error code in a Produce response (-1, unknown, if it is missing).
fn partition_error(response: &ProduceResponse, partition: i32) -> i16 {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partition_responses)
        .find(|p| p.index == partition)
        .map_or(-1, |p| p.error_code)
}

/// One request's result.
#[derive(Debug)]
struct Outcome {
    records: u64,
    error_code: i16,
    retries: u64,
    latency: Duration,
    done: Instant,
}

#[derive(Debug, Default)]
struct Stats {
    records: u64,
    requests: u64,
    retries: u64,
    /// (latency in ms, records with it): one entry per successful batch.
    latencies: Vec<(f64, u64)>,
    errors: BTreeMap<i16, u64>,
    last_done: Option<Instant>,
}

impl Stats {
    fn add(&mut self, outcome: Outcome) {
        self.requests += 1 + outcome.retries;
        self.retries += outcome.retries;
        self.last_done = self.last_done.max(Some(outcome.done));
        if outcome.error_code == 0 {
            self.records += outcome.records;
            self.latencies
                .push((outcome.latency.as_secs_f64() * 1e3, outcome.records));
        } else {
            *self.errors.entry(outcome.error_code).or_default() += outcome.records;
        }
    }

    fn report(mut self, started: Instant, record_size: usize) -> PerfProduceReport {
        let elapsed = self.last_done.unwrap_or(started).saturating_duration_since(started);
        let secs = elapsed.as_secs_f64().max(1e-9);
        let bytes = self.records * record_size as u64;
        self.latencies.sort_by(|a, b| a.0.total_cmp(&b.0));
        let weighted: f64 = self.latencies.iter().map(|(ms, n)| ms * *n as f64).sum();
        PerfProduceReport {
            records: self.records,
            bytes,
            elapsed,
            records_per_sec: self.records as f64 / secs,
            mb_per_sec: bytes as f64 / secs / (1024.0 * 1024.0),
            latency_avg_ms: weighted / (self.records.max(1) as f64),
            latency_max_ms: self.latencies.last().map_or(0.0, |l| l.0),
            p50: percentile(&self.latencies, self.records, 0.5),
            p99: percentile(&self.latencies, self.records, 0.99),
            p999: percentile(&self.latencies, self.records, 0.999),
            failed_records: self.errors.values().sum(),
            errors: self.errors,
            requests: self.requests,
            retries: self.retries,
        }
    }
}

/// The latency of the record at rank `floor(q * total)` (Kafka's choice) in `sorted`
/// (latency, count) pairs holding `total` records; 0 when empty.
fn percentile(sorted: &[(f64, u64)], total: u64, q: f64) -> f64 {
    let rank = ((q * total as f64) as u64).min(total.saturating_sub(1));
    let mut seen = 0;
    for &(ms, n) in sorted {
        seen += n;
        if rank < seen {
            return ms;
        }
    }
    0.0
}

/// Text of random words that record values are sliced from (zero-copy).
#[derive(Debug)]
struct Payload {
    pool: Bytes,
    record_size: usize,
    rng: u64,
}

impl Payload {
    fn new(record_size: usize) -> Self {
        let len = PAYLOAD_POOL_BYTES.max(record_size.saturating_mul(4));
        let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ u64::from(std::process::id());
        let mut letters = |n: u64| -> Vec<u8> { (0..n).map(|_| b'a' + (xorshift(&mut state) % 26) as u8).collect() };
        let words: Vec<Vec<u8>> = (0..VOCABULARY).map(|i| letters(2 + i % 9)).collect();
        let mut pool = Vec::with_capacity(len + 16);
        while pool.len() < len {
            pool.extend_from_slice(&words[(xorshift(&mut state) % VOCABULARY) as usize]);
            pool.push(b' ');
        }
        Payload {
            pool: Bytes::from(pool),
            record_size,
            rng: state,
        }
    }

    fn value(&mut self) -> Bytes {
        let start = (xorshift(&mut self.rng) % (self.pool.len() - self.record_size + 1) as u64) as usize;
        self.pool.slice(start..start + self.record_size)
    }

    /// One v2 batch of `count` records (offsets 0.., CreateTime now, no key), of `producer`
    /// (id, epoch) with base sequence `first` if given, else without producer id.
    fn batch(
        &mut self,
        first: u64,
        count: u64,
        compression: PerfCompression,
        producer: Option<(i64, i16)>,
    ) -> Result<Bytes, PerfError> {
        let (producer_id, producer_epoch) = producer.unwrap_or((-1, -1));
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let records: Vec<Record> = (0..count as i64)
            .map(|offset| Record {
                transactional: false,
                control: false,
                partition_leader_epoch: -1,
                producer_id,
                producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset,
                // The encoder starts a new batch when offset − sequence changes; either keeps
                // one batch: base sequence `first` (idempotent, wrapping as sequences do) or -1
                // (no sequence), as a non-idempotent client.
                sequence: match producer {
                    Some(_) => (first as i32).wrapping_add(offset as i32),
                    None => offset as i32 - 1,
                },
                timestamp: now_ms,
                key: None,
                value: Some(self.value()),
                headers: IndexMap::new(),
            })
            .collect();
        let mut buf = BytesMut::with_capacity(BATCH_HEADER_BYTES + records.len() * (self.record_size + 12));
        let options = RecordEncodeOptions {
            version: 2,
            compression: compression.codec(),
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options)
            .map_err(|e| PerfError::Encode(format!("records {first}..{}: {e:#}", first + count)))?;
        Ok(buf.freeze())
    }
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_weight_each_batch_by_its_records() {
        let sorted = [(1.0, 50), (2.0, 49), (9.0, 1)];
        assert_eq!(percentile(&sorted, 100, 0.5), 2.0);
        assert_eq!(percentile(&sorted, 100, 0.49), 1.0);
        assert_eq!(percentile(&sorted, 100, 0.99), 9.0);
        assert_eq!(percentile(&sorted, 100, 0.999), 9.0);
        assert_eq!(percentile(&[], 0, 0.5), 0.0);
    }

    #[test]
    fn batches_hold_what_fits_in_batch_size_and_pacing_keeps_them_small() {
        let mut o = PerfProduceOptions::new("b:1", "t", 1000, 100);
        // 100-byte values cost at most 111 bytes each: (16384 - 61) / 111 = 147.
        assert_eq!(o.records_per_batch(), 147);
        o.record_size = 100_000;
        assert_eq!(o.records_per_batch(), 1);
        o.record_size = 100;
        o.throughput = Some(10_000.0);
        assert_eq!(o.records_per_batch(), 10);
        o.throughput = Some(5.0);
        assert_eq!(o.records_per_batch(), 1);
    }

    #[test]
    fn batches_are_one_valid_v2_batch_with_no_sequence_and_compress_like_text() {
        let mut payload = Payload::new(100);
        let count = PerfProduceOptions::new("b:1", "t", 1000, 100).records_per_batch();
        let plain = payload.batch(0, count, PerfCompression::None, None).expect("encodes");
        let headers = crate::protocol::record_batch::validate_batches(&plain, 1 << 20).expect("valid");
        assert_eq!(headers.len(), 1);
        assert_eq!(
            (
                headers[0].record_count,
                headers[0].base_sequence,
                headers[0].producer_id
            ),
            (count as i32, -1, -1)
        );
        assert!(plain.len() <= 16_384, "{} bytes", plain.len());
        for codec in [
            PerfCompression::Gzip,
            PerfCompression::Snappy,
            PerfCompression::Lz4,
            PerfCompression::Zstd,
        ] {
            let packed = payload.batch(0, count, codec, None).expect("encodes");
            let headers = crate::protocol::record_batch::validate_batches(&packed, 1 << 20).expect("valid");
            assert_eq!(headers[0].record_count, count as i32, "{codec:?}");
            // Random words: every codec gains something on average but never everything, and
            // snappy's gain on one small batch varies run to run, so only the bounds are fixed.
            assert!(
                packed.len() < plain.len() + 1024 && packed.len() > plain.len() / 3,
                "{codec:?}: {}",
                packed.len()
            );
        }
    }

    #[test]
    fn idempotent_batches_carry_the_producer_and_continue_the_sequence() {
        let mut payload = Payload::new(100);
        let batch = payload
            .batch(300, 20, PerfCompression::None, Some((7, 2)))
            .expect("encodes");
        let headers = crate::protocol::record_batch::validate_batches(&batch, 1 << 20).expect("valid");
        assert_eq!(headers.len(), 1, "one batch");
        let h = &headers[0];
        assert_eq!((h.producer_id, h.producer_epoch, h.base_sequence), (7, 2, 300));
        assert_eq!((h.record_count, h.last_sequence()), (20, 319));
    }

    #[test]
    fn options_are_checked_and_compression_names_parse() {
        let mut o = PerfProduceOptions::new("b:1", "t", 10, 10);
        o.acks = 2;
        assert!(matches!(o.validate(), Err(PerfError::InvalidOption(_))));
        o.acks = 0;
        o.throughput = Some(-1.0);
        assert!(o.validate().is_err());
        assert_eq!("LZ4".parse::<PerfCompression>(), Ok(PerfCompression::Lz4));
        assert!("brotli".parse::<PerfCompression>().is_err());
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
    }
}
