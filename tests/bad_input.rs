//! Bad input end to end (reliability.md, "bad input gets a clear error and loses nothing"): the
//! fuzzers' request corpus, mutated, thrown at a live broker over TCP while an acks=all producer
//! runs. The broker stays up, a connection that sent garbage is closed or answers (never hangs),
//! the connections that behaved are untouched, and every acknowledged record is there afterwards.

mod common;

use std::time::{Duration, Instant};

use common::cluster::cluster_ready;
use common::replicas::{bootstrap, create_topic, lines, python, spec, CONSUMER, PRODUCER};
use common::wire::Wire;
use common::{unique_chroot, wait_until, zookeeper, BrokerProcess, Rng};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, MetadataRequest, RequestHeader};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Mutated inputs in all, spread over connections of up to [`PER_CONNECTION`] frames each.
const INPUTS: usize = 30_000;
const PER_CONNECTION: usize = 3;
const CONNECTIONS_AT_ONCE: usize = 16;
/// How long a connection may take to answer its marker or close after its garbage.
const ANSWER_DEADLINE: Duration = Duration::from_secs(15);
/// The marker request's correlation id (mutated seeds use 7).
const MARKER: i32 = 0x5eed_0001;
const RECORDS: usize = 20_000;

/// One mutation of a request body (header and body, without the size prefix): bit flips,
/// interesting bytes, truncation, duplication and insertion, as AFL's havoc stage does.
fn mutate(rng: &mut Rng, body: &mut Vec<u8>) {
    const INTERESTING: [u8; 6] = [0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff];
    for _ in 0..=rng.index(4) {
        if body.is_empty() {
            body.push(rng.next() as u8);
        }
        let at = rng.index(body.len());
        match rng.index(7) {
            0 => body[at] ^= 1 << rng.index(8),
            1 => body[at] = INTERESTING[rng.index(INTERESTING.len())],
            2 => body[at] = rng.next() as u8,
            3 => body.truncate(at),
            4 => {
                let end = (at + 1 + rng.index(16)).min(body.len());
                let slice = body[at..end].to_vec();
                body.splice(at..at, slice);
            }
            5 => {
                let bytes: Vec<u8> = (0..=rng.index(8)).map(|_| rng.next() as u8).collect();
                body.splice(at..at, bytes);
            }
            // A length or count field (i32) made huge or negative.
            _ => {
                let value = [i32::MAX, i32::MIN, -1, 0x7fff_fff0][rng.index(4)].to_be_bytes();
                for (i, b) in value.iter().enumerate() {
                    if let Some(slot) = body.get_mut(at + i) {
                        *slot = *b;
                    }
                }
            }
        }
    }
}

/// A size-prefixed frame of `body`.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&i32::try_from(body.len()).unwrap_or(i32::MAX).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// A valid ApiVersions v0 request under [`MARKER`]: answered only if the connection survived.
fn marker() -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(0)
        .with_correlation_id(MARKER)
        .with_client_id(Some(StrBytes::from_static_str("bad-input-marker")));
    let mut body = bytes::BytesMut::new();
    header.encode(&mut body, 1).expect("encode header");
    ApiVersionsRequest::default().encode(&mut body, 0).expect("encode");
    frame(&body)
}

/// Whether `body` is a request only the controller sends (LeaderAndIsr, StopReplica,
/// UpdateMetadata, ControlledShutdown). On a broker without an authorizer these are trusted as
/// Kafka trusts them: one that decodes and carries a newer controller epoch is obeyed, and a
/// mutated one would legitimately empty the metadata cache. The authorizer's CLUSTER_ACTION check
/// is the defence against them (tests/acls.rs), and the `request` fuzz target covers their
/// decoders; here they are left out.
fn controller_request(body: &[u8]) -> bool {
    let key = body.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
    [
        ApiKey::LeaderAndIsr,
        ApiKey::StopReplica,
        ApiKey::UpdateMetadata,
        ApiKey::ControlledShutdown,
    ]
    .iter()
    .any(|a| key == Some(*a as i16))
}

/// A child process killed if the test fails before waiting for it.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The broker answered the marker after the garbage: it answered or skipped each frame.
    Answered,
    /// The broker closed the connection.
    Closed,
    /// Neither within [`ANSWER_DEADLINE`]: a hang.
    Hung,
}

/// Sends `frames` then the marker, and reads responses until the marker's answer or the close.
async fn throw(addr: &str, frames: Vec<Vec<u8>>) -> Outcome {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return Outcome::Closed;
    };
    let exchange = async {
        for f in frames.iter().chain(std::iter::once(&marker())) {
            if stream.write_all(f).await.is_err() {
                return Outcome::Closed;
            }
        }
        loop {
            let Ok(size) = stream.read_i32().await else {
                return Outcome::Closed;
            };
            let mut response = vec![0u8; usize::try_from(size).unwrap_or(0)];
            if stream.read_exact(&mut response).await.is_err() {
                return Outcome::Closed;
            }
            if response.get(..4) == Some(&MARKER.to_be_bytes()[..]) {
                return Outcome::Answered;
            }
        }
    };
    tokio::time::timeout(ANSWER_DEADLINE, exchange)
        .await
        .unwrap_or(Outcome::Hung)
}

/// Mutated frames, `PER_CONNECTION` at most per connection: mostly bodies with a consistent size
/// prefix (the broker must decode and refuse them), some with a prefix the broker must refuse
/// before reading (negative, or above `socket.request.max.bytes`).
fn batches(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    let mut made = 0;
    while made < INPUTS {
        let n = 1 + rng.index(PER_CONNECTION);
        let mut frames = Vec::with_capacity(n);
        for _ in 0..n {
            let mut body = seeds[rng.index(seeds.len())].clone();
            mutate(rng, &mut body);
            let mut f = frame(&body);
            if rng.index(40) == 0 {
                let prefix = [-1i32, i32::MIN, 200 << 20][rng.index(3)];
                f[..4].copy_from_slice(&prefix.to_be_bytes());
                frames.push(f);
                break; // nothing after a refused size prefix is read
            }
            frames.push(f);
        }
        made += frames.len();
        out.push(frames);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_requests_of_every_api_close_only_their_connections_and_lose_nothing_acknowledged() {
    let chroot = unique_chroot("bad-input");
    let mut broker = BrokerProcess::start(&spec(&chroot, 1, &[]));
    let zk = zookeeper().session(&chroot).await;
    cluster_ready(&zk, 1).await;
    create_topic(&zk, "kept", "[1]").await;
    let addr = bootstrap(&zk).await;

    // A connection that behaves, opened before the garbage and used after it.
    let mut bystander = Wire::connect(&addr).await;
    let before = bystander.send(&MetadataRequest::default().with_topics(None), 9).await;
    assert!(before
        .topics
        .iter()
        .any(|t| t.name.as_ref().is_some_and(|n| n.0.to_string() == "kept")));

    let acked_file = tempfile::NamedTempFile::new().expect("temp");
    let acked_path = acked_file.path().to_path_buf();
    let producer = python(&[
        "-c",
        PRODUCER,
        &addr,
        "kept",
        &RECORDS.to_string(),
        acked_path.to_str().expect("utf-8 temp path"),
    ])
    .stdout(std::process::Stdio::piped())
    .spawn()
    .expect("producer");
    let mut producer = KillOnDrop(Some(producer));
    wait_until(Duration::from_secs(60), "the producer to get acknowledgements", || {
        let p = acked_path.clone();
        async move { !lines(&p).is_empty() }
    })
    .await;

    let seeds: Vec<Vec<u8>> = kastle::fuzz_entry::seeds::all()
        .into_iter()
        .filter(|(target, _, body)| *target == "request" && !controller_request(body))
        .map(|(_, _, body)| body)
        .collect();
    assert!(
        seeds.len() > 100,
        "a seed per served API and version, got {}",
        seeds.len()
    );
    let seed = std::env::var("KASTLE_BAD_INPUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6b61_7374_6c65_u64);
    eprintln!("bad input seed {seed} (KASTLE_BAD_INPUT_SEED replays it)");
    let mut rng = Rng(seed | 1);
    let work = batches(&mut rng, &seeds);

    let started = Instant::now();
    let mut outcomes = Vec::with_capacity(work.len());
    let mut tasks = tokio::task::JoinSet::new();
    let mut work = work.into_iter().enumerate();
    loop {
        while tasks.len() < CONNECTIONS_AT_ONCE {
            let Some((i, frames)) = work.next() else { break };
            let addr = addr.clone();
            tasks.spawn(async move { (i, throw(&addr, frames).await) });
        }
        let Some(done) = tasks.join_next().await else { break };
        outcomes.push(done.expect("connection task"));
    }
    let count = |o: Outcome| outcomes.iter().filter(|(_, x)| *x == o).count();
    let hung: Vec<usize> = outcomes
        .iter()
        .filter(|(_, o)| *o == Outcome::Hung)
        .map(|(i, _)| *i)
        .collect();
    eprintln!(
        "{INPUTS} mutated frames over {} connections in {:.1} s: {} answered, {} closed, {} hung",
        outcomes.len(),
        started.elapsed().as_secs_f64(),
        count(Outcome::Answered),
        count(Outcome::Closed),
        hung.len()
    );
    assert!(
        hung.is_empty(),
        "connections {hung:?} neither answered nor closed within {ANSWER_DEADLINE:?}"
    );
    assert!(
        count(Outcome::Closed) > 0,
        "some garbage must have closed its connection"
    );
    assert!(
        count(Outcome::Answered) > 0,
        "some refused requests must have been answered"
    );

    assert!(!broker.has_exited(), "the broker died:\n{}", broker.stderr());
    let after = bystander.send(&MetadataRequest::default().with_topics(None), 9).await;
    assert_eq!(after.brokers.len(), 1, "the bystander connection still answers");

    let producer = producer.0.take().expect("the producer runs");
    let status = tokio::task::spawn_blocking(move || producer.wait_with_output())
        .await
        .expect("join")
        .expect("producer exit");
    let stdout = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.status.success(), "producer failed: {stdout}");
    assert!(
        stdout.contains("errors 0"),
        "the producer saw delivery errors: {stdout}"
    );
    let acked = lines(&acked_path);
    assert_eq!(acked.len(), RECORDS, "every record acknowledged");
    let boot = addr.clone();
    let out = tokio::task::spawn_blocking(move || python(&["-c", CONSUMER, &boot, "kept"]).output())
        .await
        .expect("join")
        .expect("consumer");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let consumed: std::collections::HashSet<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let lost: Vec<i64> = acked.iter().copied().filter(|v| !consumed.contains(v)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged records lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    let stderr = broker.stderr();
    assert!(!stderr.contains("panicked"), "the broker panicked:\n{stderr}");
    zk.close().await;
}
