//! Compaction with real brokers and real clients: topics created by confluent-kafka's
//! AdminClient with `cleanup.policy=compact` (RF 3) keep only the latest value per key on every
//! replica's disk (offsets preserved), keep tombstones while `delete.retention.ms` has not
//! passed and drop them after, and consumers read the same final key → value state before and
//! after cleaning, through the first leader and through the next one. A keyless record is
//! refused with INVALID_RECORD. Topics written with gzip, snappy, lz4 and zstd are compacted
//! too, their cleaned batches keep the codec, consumers read the latest value per key, and a
//! keyless record in a compressed batch is refused as well.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::cluster::cluster_ready;
use common::replicas::leader;
use common::{bootstrap_of, unique_chroot, wait_until, wait_until_else, zookeeper, BrokerProcess, BrokerSpec};
use kastle::protocol::record_batch::codec::decompress;
use kastle::protocol::record_batch::{BatchScanner, Compression, RecordIter, RECORDS_OFFSET};
use kastle::zk::ZkSession;

/// Creates the topics, produces updates, tombstones and filler; prints nothing but "ok".
const SETUP: &str = r#"
import sys
from confluent_kafka import Producer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap = sys.argv[1]
admin = AdminClient({"bootstrap.servers": bootstrap})
common = {"cleanup.policy": "compact", "segment.bytes": "8192", "min.cleanable.dirty.ratio": "0.01"}
topics = [
    NewTopic("keep", 1, 3, config=dict(common, **{"delete.retention.ms": "3600000"})),
    NewTopic("expire", 1, 3, config=dict(common, **{"delete.retention.ms": "500"})),
]
for f in admin.create_topics(topics).values():
    f.result(60)
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.size": 2048})
for topic in ("keep", "expire"):
    for i in range(1500):
        p.produce(topic, key=f"k{i % 10}", value=f"{topic}-{i:05d}-" + "x" * 60)
    p.flush(60)
    p.produce(topic, key="k0", value=None)
    p.produce(topic, key="k1", value=None)
    for i in range(400):
        p.produce(topic, key=f"k{2 + i % 8}", value=f"{topic}-late-{i:05d}-" + "y" * 60)
    p.flush(60)
# A record without a key is refused by a compacted topic.
errors = []
p.produce("keep", value="no key", on_delivery=lambda err, msg: errors.append(err))
p.flush(60)
assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors
print("ok")
"#;

/// Prints the final key → value state of `topic` read from the beginning, one `key=value` line
/// per live key, sorted.
const STATE: &str = r#"
import sys
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bootstrap, topic = sys.argv[1], sys.argv[2]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
state, last = {}, -1
while last < high - 1:
    m = c.poll(10)
    if m is None:
        raise SystemExit(f"stuck at {last} of {high}")
    if m.error():
        continue
    last = m.offset()
    k = m.key().decode()
    if m.value() is None:
        state.pop(k, None)
    else:
        state[k] = m.value().decode()
for k in sorted(state):
    print(f"{k}={state[k]}")
"#;

fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new(common::python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Segments of a partition on disk: (base offset, [(offset, key, is tombstone)]).
type Segments = Vec<(i64, Vec<(i64, String, bool)>)>;

fn segments_on_disk(log_dir: &Path, topic: &str) -> Segments {
    let dir = log_dir.join(format!("{topic}-0"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "log"));
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let base: i64 = file
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok())
            .expect("segment name");
        let data = std::fs::read(&file).unwrap_or_default();
        let mut records = Vec::new();
        for (pos, h) in BatchScanner::new(&data).map_while(Result::ok) {
            let batch = &data[pos..pos + h.size_in_bytes()];
            let section = decompress(h.compression(), &batch[RECORDS_OFFSET..]).expect("records inflate");
            for r in RecordIter::new(&section, h.record_count).map_while(Result::ok) {
                let key = String::from_utf8_lossy(r.key.unwrap_or_default()).into_owned();
                records.push((h.base_offset + i64::from(r.offset_delta), key, r.value.is_none()));
            }
        }
        out.push((base, records));
    }
    out
}

/// Below the active segment, no key appears twice.
fn compacted(segments: &Segments) -> bool {
    let Some((_, cleaned)) = segments.split_last() else {
        return false;
    };
    let keys: Vec<&String> = cleaned.iter().flat_map(|(_, r)| r.iter().map(|(_, k, _)| k)).collect();
    let distinct: std::collections::BTreeSet<&&String> = keys.iter().collect();
    !cleaned.is_empty() && !keys.is_empty() && distinct.len() == keys.len()
}

/// Below the active segment, every key appears exactly once (cleaning may merge what is left
/// into one segment).
fn keys_once_below_active(segments: &Segments) -> bool {
    let Some((_, cleaned)) = segments.split_last() else {
        return false;
    };
    let keys: Vec<&String> = cleaned.iter().flat_map(|(_, r)| r.iter().map(|(_, k, _)| k)).collect();
    let distinct: std::collections::BTreeSet<&&String> = keys.iter().collect();
    !keys.is_empty() && distinct.len() == keys.len()
}

fn has_tombstones(segments: &Segments) -> bool {
    segments.iter().flat_map(|(_, r)| r).filter(|(_, _, t)| *t).count() == 2
}

async fn bootstrap(zk: &ZkSession, ids: &[i32]) -> String {
    let mut addrs = Vec::new();
    for id in ids {
        addrs.push(bootstrap_of(zk, *id).await);
    }
    addrs.join(",")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_topics_keep_the_latest_value_per_key_on_every_replica_and_consumers_see_the_same_state() {
    common::init_logging();
    let chroot = unique_chroot("log_cleaner");
    let metrics = format!("127.0.0.1:{}", common::zookeeper::free_port());
    let spec = |id: i32| {
        let s = BrokerSpec::new(id, &zookeeper().connect(&chroot))
            .session_timeout_ms(3_000)
            .with("log.cleaner.backoff.ms", "100");
        if id == 1 {
            s.with("metrics.listener", &metrics)
        } else {
            s
        }
    };
    let mut brokers: Vec<BrokerProcess> = (1..=3).map(|id| BrokerProcess::start(&spec(id))).collect();
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 3).await;
    let all = bootstrap(&zk, &[1, 2, 3]).await;
    let setup = {
        let all = all.clone();
        tokio::task::spawn_blocking(move || python(SETUP, &[&all]))
            .await
            .expect("setup")
    };
    assert_eq!(setup.trim(), "ok");

    // Every replica cleans its own log: below the active segment each key is left once, and the
    // long-retention topic still holds both tombstones.
    let dirs: Vec<_> = brokers.iter().map(|b| b.log_dir.clone()).collect();
    wait_until(Duration::from_secs(60), "every replica compacted", || {
        let dirs = dirs.clone();
        async move {
            dirs.iter().all(|d| {
                let keep = segments_on_disk(d, "keep");
                compacted(&keep) && has_tombstones(&keep) && compacted(&segments_on_disk(d, "expire"))
            })
        }
    })
    .await;
    for d in &dirs {
        let keep = segments_on_disk(d, "keep");
        let total: usize = keep.iter().map(|(_, r)| r.len()).sum();
        assert!(total < 1000, "{total} records left of 1,902 in {}", d.display());
        // Offsets are preserved: every record's offset is at or past its segment's base, in order.
        let offsets: Vec<i64> = keep.iter().flat_map(|(_, r)| r.iter().map(|(o, _, _)| *o)).collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "offsets increase");
        assert!(offsets.iter().all(|o| *o < 1902));
    }
    // The short-retention topic loses its tombstones once their delete horizon passed.
    wait_until(Duration::from_secs(60), "expired tombstones removed", || {
        let dirs = dirs.clone();
        async move {
            dirs.iter().all(|d| {
                let s = segments_on_disk(d, "expire");
                !s.iter().flat_map(|(_, r)| r).any(|(_, k, _)| k == "k0" || k == "k1")
            })
        }
    })
    .await;

    // The cleaner reports itself with Kafka's JMX-exporter names.
    common::wait_for_metrics(
        &metrics,
        &[
            "kafka_log_logcleaner_max_clean_time_secs ",
            "kafka_log_logcleanermanager_max_dirty_percent ",
            "kafka_log_logcleaner_cleaner_recopy_percent ",
            "kastle_log_cleaner_cleanings_total ",
        ],
    )
    .await;
    let body = common::cluster::scrape(&metrics).unwrap_or_default();
    let removed = common::cluster::sample(&body, "kastle_log_cleaner_records_removed_total").unwrap_or(0.0);
    assert!(removed > 1000.0, "records removed on broker 1: {removed}");

    // The final state, as a consumer sees it, is what the producer wrote last per key.
    let mut expected = BTreeMap::new();
    for i in 0..1500 {
        expected.insert(format!("k{}", i % 10), format!("-{i:05}-{}", "x".repeat(60)));
    }
    for i in 0..400 {
        expected.insert(format!("k{}", 2 + i % 8), format!("-late-{i:05}-{}", "y".repeat(60)));
    }
    expected.remove("k0");
    expected.remove("k1");
    for topic in ["keep", "expire"] {
        let want: String = expected.iter().map(|(k, v)| format!("{k}={topic}{v}\n")).collect();
        let (all, t) = (all.clone(), topic.to_string());
        let got = tokio::task::spawn_blocking(move || python(STATE, &[&all, &t]))
            .await
            .expect("state");
        assert_eq!(got, want, "{topic} through the first leader");
    }

    // Through another leader: stop the current one and read again.
    let first = leader(&zk, "keep").await;
    drop(brokers.remove((first - 1) as usize));
    wait_until(Duration::from_secs(30), "a new leader", || async {
        let l = leader(&zk, "keep").await;
        l >= 0 && l != first
    })
    .await;
    let rest: Vec<i32> = (1..=3).filter(|i| *i != first).collect();
    let others = bootstrap(&zk, &rest).await;
    let want: String = expected.iter().map(|(k, v)| format!("{k}=keep{v}\n")).collect();
    let got = tokio::task::spawn_blocking(move || python(STATE, &[&others, "keep"]))
        .await
        .expect("state");
    assert_eq!(got, want, "keep through the new leader");
}

/// One single-replica compacted topic per codec, written by confluent-kafka with that
/// `compression.type` (several records per batch), which refuses a keyless record; prints
/// `topic key=value` for the last value written per key.
const SETUP_COMPRESSED: &str = r#"
import os, sys
from confluent_kafka import Producer, KafkaError
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap = sys.argv[1]
codecs = ["gzip", "snappy", "lz4", "zstd"]
config = {"cleanup.policy": "compact", "segment.bytes": "8192", "min.cleanable.dirty.ratio": "0.01"}
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(f"z-{c}", 1, 1, config=config) for c in codecs]).values():
    f.result(60)
for codec in codecs:
    topic, last = f"z-{codec}", {}
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": codec,
                  "linger.ms": 20, "batch.size": 4096})
    for i in range(2000):
        key, value = f"k{i % 10}", f"{codec}-{i:05d}-" + os.urandom(24).hex()
        p.produce(topic, key=key, value=value)
        last[key] = value
        if i % 200 == 199:
            p.flush(60)
    p.flush(60)
    # A keyless record inside a compressed batch is refused too (librdkafka sends a batch
    # uncompressed when compressing does not shrink it: this one shrinks).
    errors = []
    p.produce(topic, value="no key " + "x" * 500, on_delivery=lambda err, msg: errors.append(err))
    p.flush(60)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, (codec, errors)
    for k in sorted(last):
        print(f"{topic} {k}={last[k]}")
"#;

/// Codecs of the batches of a partition's segments on disk, oldest first.
fn codecs_on_disk(log_dir: &Path, topic: &str) -> Vec<Compression> {
    common::replicas::stored_batches(log_dir, topic, 0)
        .iter()
        .map(|h| h.compression())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_topics_are_compacted_with_their_codec_and_consumers_see_the_latest_values() {
    common::init_logging();
    let chroot = unique_chroot("log_cleaner_compressed");
    let spec = BrokerSpec::new(1, &zookeeper().connect(&chroot))
        .session_timeout_ms(3_000)
        .with("log.cleaner.backoff.ms", "100");
    let broker = BrokerProcess::start(&spec);
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    let addr = bootstrap(&zk, &[1]).await;
    let setup = {
        let addr = addr.clone();
        tokio::task::spawn_blocking(move || python(SETUP_COMPRESSED, &[&addr]))
            .await
            .expect("setup")
    };
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for line in setup.lines() {
        let (topic, kv) = line.split_once(' ').expect("topic key=value");
        expected
            .entry(topic.to_string())
            .or_default()
            .push_str(&format!("{kv}\n"));
    }
    let codecs = [
        ("z-gzip", Compression::Gzip),
        ("z-snappy", Compression::Snappy),
        ("z-lz4", Compression::Lz4),
        ("z-zstd", Compression::Zstd),
    ];
    assert_eq!(expected.len(), codecs.len(), "{setup}");

    // Below the active segment each key is left once, in batches that keep their codec.
    let dir = broker.log_dir.clone();
    let diagnose = || {
        let mut text = String::new();
        for (topic, _) in codecs {
            let segments = segments_on_disk(&dir, topic);
            let sizes: Vec<usize> = segments.iter().map(|(_, r)| r.len()).collect();
            text.push_str(&format!("{topic}: records per segment {sizes:?}\n"));
        }
        let stderr = broker.stderr();
        text.extend(stderr.lines().filter(|l| l.contains("clean")).map(|l| format!("{l}\n")));
        text
    };
    wait_until_else(
        Duration::from_secs(60),
        "every compressed topic compacted",
        || {
            let dir = dir.clone();
            async move {
                codecs
                    .iter()
                    .all(|(topic, _)| keys_once_below_active(&segments_on_disk(&dir, topic)))
            }
        },
        diagnose,
    )
    .await;
    for (topic, codec) in codecs {
        let segments = segments_on_disk(&dir, topic);
        let total: usize = segments.iter().map(|(_, r)| r.len()).sum();
        assert!(total < 1000, "{topic}: {total} records left of 2,000");
        let offsets: Vec<i64> = segments
            .iter()
            .flat_map(|(_, r)| r.iter().map(|(o, _, _)| *o))
            .collect();
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{topic}: offsets increase");
        let found = codecs_on_disk(&dir, topic);
        assert!(
            !found.is_empty() && found.iter().all(|c| *c == codec),
            "{topic}: {found:?}"
        );
        // Consumed from the start: the last value written per key.
        let (a, t) = (addr.clone(), topic.to_string());
        let got = tokio::task::spawn_blocking(move || python(STATE, &[&a, &t]))
            .await
            .expect("state");
        assert_eq!(got, expected[topic], "{topic}");
    }
}
