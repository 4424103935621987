//! The reliability matrix's shared parts: the workload (a Python producer that records every
//! acknowledgement with its offset and time, a final consume that records offsets and values),
//! the one checker every case runs (lost, duplicated, reordered, offsets inconsistent with the
//! acknowledgements, replicas not CRC-equal, the controller, the ZooKeeper tree), and the
//! `CaseReport` row with its table printer.
//!
//! The checker's value logic is pure ([`check`]); what it reads from the cluster is gathered by
//! [`finish`]. A row is printed to stderr and, when `KASTLE_RELIABILITY_TABLE` names a file,
//! appended to it (tab-separated, the header first) so that `scripts/reliability` can print the whole table.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use kastle::zk::store::ZkStore;
use kastle::zk::ZkSession;

use super::replicas::{batch_crcs, isr, log_end, python};

/// One acknowledged send: the value, the offset the broker answered, when (ms since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub value: i64,
    pub offset: i64,
    pub at_ms: i64,
}

/// One record read back: (offset, value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Read {
    pub offset: i64,
    pub value: i64,
}

/// What the value checks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Anomalies {
    pub acknowledged: usize,
    /// Acknowledged values never read.
    pub lost: Vec<i64>,
    /// Values read at more than one offset.
    pub duplicated: Vec<i64>,
    /// Acknowledged values read after a later-sent acknowledged value (one in-order producer).
    pub reordered: usize,
    /// An acknowledged (offset, value) whose offset holds another value, or an offset read
    /// twice or going backwards.
    pub inconsistent: usize,
    /// Acknowledged offsets not increasing with the send order. A failure for an idempotent
    /// producer; without idempotence librdkafka does not keep the order across a leader change
    /// (a request still in flight to the old leader times out and is retried after later ones,
    /// "retrying may cause reordering unless enable.idempotence is set"), as it may duplicate.
    pub ack_order: usize,
    /// The longest time between two consecutive acknowledgements.
    pub max_gap: Duration,
}

/// The value checks, from the producer's acknowledgements (values sent in increasing order by
/// one producer that keeps order) and a final read of the partition from offset 0.
pub fn check(acks: &[Ack], reads: &[Read]) -> Anomalies {
    let mut at_offset: HashMap<i64, i64> = HashMap::new();
    let mut offsets_of: HashMap<i64, HashSet<i64>> = HashMap::new();
    let mut inconsistent = 0;
    for w in reads.windows(2) {
        if w[1].offset <= w[0].offset {
            inconsistent += 1;
        }
    }
    for r in reads {
        at_offset.insert(r.offset, r.value);
        offsets_of.entry(r.value).or_default().insert(r.offset);
    }
    let mut lost = Vec::new();
    let mut acked_values = HashSet::new();
    for a in acks {
        acked_values.insert(a.value);
        if !offsets_of.contains_key(&a.value) {
            lost.push(a.value);
        }
        if a.offset >= 0 && at_offset.get(&a.offset).is_some_and(|v| *v != a.value) {
            inconsistent += 1;
        }
    }
    let mut by_value: Vec<&Ack> = acks.iter().collect();
    by_value.sort_by_key(|a| a.value);
    let ack_order = by_value
        .windows(2)
        .filter(|w| w[0].offset >= 0 && w[1].offset >= 0 && w[1].offset <= w[0].offset)
        .count();
    let mut duplicated: Vec<i64> = offsets_of
        .iter()
        .filter(|(_, o)| o.len() > 1)
        .map(|(v, _)| *v)
        .collect();
    duplicated.sort();
    let mut seen = HashSet::new();
    let firsts: Vec<i64> = reads
        .iter()
        .map(|r| r.value)
        .filter(|v| acked_values.contains(v) && seen.insert(*v))
        .collect();
    let reordered = firsts.windows(2).filter(|w| w[1] < w[0]).count();
    let mut times: Vec<i64> = acks.iter().map(|a| a.at_ms).collect();
    times.sort();
    let max_gap = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .map_or(Duration::ZERO, |ms| Duration::from_millis(ms.max(0) as u64));
    Anomalies {
        acknowledged: acks.len(),
        lost,
        duplicated,
        reordered,
        inconsistent,
        ack_order,
        max_gap,
    }
}

/// One row of the matrix.
#[derive(Debug, Clone)]
pub struct CaseReport {
    pub case: String,
    pub faults: String,
    pub anomalies: Anomalies,
    /// Replicas whose per-batch CRC sequence differs from the first replica's.
    pub divergent: usize,
    /// Brokers reporting themselves the active controller (0 when `/controller` names no
    /// registered broker); 1 when healthy.
    pub controllers: usize,
    /// Znodes failing their schema (`kastle zk check`'s walk).
    pub zk_violations: usize,
    /// A negative control: the case passes only if the checker reports loss.
    pub expect_loss: bool,
    /// Duplicates count as a failure (an idempotent producer).
    pub idempotent: bool,
}

impl CaseReport {
    pub fn passed(&self) -> bool {
        let a = &self.anomalies;
        if self.expect_loss {
            return !a.lost.is_empty();
        }
        a.lost.is_empty()
            && (!self.idempotent || a.duplicated.is_empty())
            && a.reordered == 0
            && a.inconsistent == 0
            && (!self.idempotent || a.ack_order == 0)
            && self.divergent == 0
            && self.controllers == 1
            && self.zk_violations == 0
    }

    pub fn verdict(&self) -> &'static str {
        match (self.passed(), self.expect_loss) {
            (true, true) => "pass (loss detected)",
            (true, false) => "pass",
            (false, true) => "FAIL (no loss detected)",
            (false, false) => "FAIL",
        }
    }

    /// The tab-separated row (the order of [`HEADER`]).
    pub fn row(&self) -> String {
        let a = &self.anomalies;
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.1}s\t{}",
            self.case,
            self.faults,
            a.acknowledged,
            a.lost.len(),
            a.duplicated.len(),
            a.reordered,
            a.inconsistent + if self.idempotent { a.ack_order } else { 0 },
            self.divergent,
            self.controllers,
            a.max_gap.as_secs_f64(),
            self.verdict()
        )
    }

    /// A row for a case that could not run here, saying why (printed and appended like
    /// [`CaseReport::print`]).
    pub fn print_skipped(case: &str, reason: &str) {
        let row = format!("{case}\t-\t-\t-\t-\t-\t-\t-\t-\t-\tskipped: {reason}");
        Self::emit(&row);
    }

    /// Prints the row (with the header) and appends it to `$KASTLE_RELIABILITY_TABLE` (the header
    /// too, when the file is empty).
    pub fn print(&self) {
        Self::emit(&self.row());
    }

    fn emit(row: &str) {
        eprintln!("{}", table(&[HEADER.to_string(), row.to_string()]));
        if let Some(path) = std::env::var_os("KASTLE_RELIABILITY_TABLE") {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
                if f.metadata().is_ok_and(|m| m.len() == 0) {
                    let _ = writeln!(f, "{HEADER}");
                }
                let _ = writeln!(f, "{row}");
            }
        }
    }

    /// The row with the verdict `FAIL (...)` naming `failures` (a case's own pass figures that
    /// were missed) when there are any; the checker's verdict otherwise.
    pub fn row_with(&self, failures: &[String]) -> String {
        let row = self.row();
        if failures.is_empty() {
            return row;
        }
        let kept = row.rsplit_once('\t').map_or(row.as_str(), |(kept, _)| kept);
        format!("{kept}\tFAIL ({})", failures.join("; "))
    }

    /// Prints [`CaseReport::row_with`] as [`CaseReport::print`] prints the row.
    pub fn print_with(&self, failures: &[String]) {
        Self::emit(&self.row_with(failures));
    }

    /// [`CaseReport::assert_passed`], and panics naming `failures` when there are any.
    pub fn assert_passed_with(&self, failures: &[String]) {
        self.assert_passed();
        assert!(failures.is_empty(), "{}\n{}", HEADER, self.row_with(failures));
    }

    /// Panics with the row and the first anomalies unless the case passed.
    pub fn assert_passed(&self) {
        let a = &self.anomalies;
        assert!(
            self.passed(),
            "{}\n{}\nlost e.g. {:?}; duplicated e.g. {:?}",
            HEADER,
            self.row(),
            &a.lost[..a.lost.len().min(10)],
            &a.duplicated[..a.duplicated.len().min(10)]
        );
    }
}

pub const HEADER: &str =
    "case\tfaults\tacknowledged\tlost\tduplicated\treordered\tinconsistent\tdivergent\tcontrollers\tmax unavailable\tverdict";

/// Tab-separated lines as an aligned table.
pub fn table(lines: &[String]) -> String {
    let rows: Vec<Vec<&str>> = lines.iter().map(|l| l.split('\t').collect()).collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.len()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, s)| format!("{s:<w$}", w = widths[c]))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// confluent-kafka producer: sends 0, 1, 2, ... to partition 0 at `rate` per second until the
/// file `stop` exists, then flushes; each acknowledgement is written to `out` as
/// `value offset ms` as it arrives. `acks` and idempotence as given; without idempotence one
/// request in flight, so that retries keep the order.
pub const PRODUCER: &str = r#"
import os, sys, time
from confluent_kafka import Producer
bootstrap, topic, acks, idem, out_path, stop_path, rate = sys.argv[1:8]
idem, rate = idem == "1", float(rate)
p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": idem,
              "max.in.flight.requests.per.connection": 5 if idem else 1, "retries": 1000000,
              "retry.backoff.ms": 100, "message.timeout.ms": 120000, "linger.ms": 5,
              "request.timeout.ms": 5000, "topic.metadata.refresh.interval.ms": 1000,
              "error_cb": lambda e: print("error_cb:", e, "fatal" if e.fatal() else "", file=sys.stderr, flush=True)})
out = open(out_path, "w", buffering=1)
errors = 0
raised = 0
def poll(timeout):
    # confluent-kafka can raise a SystemError out of poll (its C callbacks' error handling);
    # logged and counted, the producer goes on: an acknowledgement lost this way is only
    # missing from the record, which the checker cannot mistake for a loss.
    global raised
    try:
        p.poll(timeout)
    except Exception as e:
        raised += 1
        print("poll raised:", repr(e), file=sys.stderr, flush=True)
def done(err, msg):
    global errors
    if err is None:
        out.write("%s %d %d\n" % (msg.value().decode(), msg.offset(), int(time.time() * 1000)))
    else:
        errors += 1
start, i = time.time(), 0
while not os.path.exists(stop_path):
    wait = start + i / rate - time.time()
    if wait > 0:
        poll(wait)
        continue
    try:
        p.produce(topic, str(i).encode(), partition=0, on_delivery=done)
        i += 1
    except BufferError:
        poll(0.05)
    poll(0)
left = p.flush(120)
print("sent", i, "errors", errors, "unflushed", left, "poll raised", raised)
sys.exit(1 if left else 0)
"#;

/// confluent-kafka consumer: partition 0 from offset 0 to its end, `offset value` per line.
pub const CONSUMER: &str = r#"
import sys, time, uuid
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "check-" + uuid.uuid4().hex,
              "enable.auto.commit": False, "enable.partition.eof": True,
              "auto.offset.reset": "earliest"})
c.assign([TopicPartition(sys.argv[2], 0, 0)])
deadline = time.time() + 90
while True:
    if time.time() > deadline:
        sys.exit("no end of partition within 90 s")
    m = c.poll(1)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:  # _PARTITION_EOF
            break
        continue
    print(m.offset(), m.value().decode())
c.close()
"#;

/// A running producer (killed on drop).
#[derive(Debug)]
pub struct Workload {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Workload {
    /// Starts the producer on `topic` partition 0 with `acks` ("all", "1").
    pub fn start(bootstrap: &str, topic: &str, acks: &str, idempotent: bool, rate: u32) -> Workload {
        let dir = tempfile::Builder::new()
            .prefix("kastle-workload-")
            .tempdir()
            .expect("tempdir");
        let out = dir.path().join("acked");
        let stop = dir.path().join("stop");
        let child = python(&[
            "-c",
            PRODUCER,
            bootstrap,
            topic,
            acks,
            if idempotent { "1" } else { "0" },
            out.to_str().expect("utf-8 temp path"),
            stop.to_str().expect("utf-8 temp path"),
            &rate.to_string(),
        ])
        .stdout(Stdio::piped())
        // A file, not a pipe: librdkafka logs every failed connection, and over a long run a
        // pipe nobody reads fills up and blocks the producer.
        .stderr(std::fs::File::create(dir.path().join("stderr")).expect("producer stderr file"))
        .spawn()
        .expect("producer");
        Workload {
            child: Some(child),
            dir,
        }
    }

    fn out(&self) -> PathBuf {
        self.dir.path().join("acked")
    }

    /// Where the producer's stderr (librdkafka's log) goes.
    pub fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr")
    }

    /// What the producer (librdkafka) logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }

    /// Where the acknowledgements are recorded (`value offset ms` lines).
    pub fn acked_path(&self) -> PathBuf {
        self.out()
    }

    /// The acknowledgements so far.
    pub fn acks(&self) -> Vec<Ack> {
        parse_acks(&self.out())
    }

    /// Waits until `more` acknowledgements beyond the current count arrive.
    pub async fn wait_more(&self, more: usize, deadline: Duration, what: &str) {
        let target = self.acks().len() + more;
        let out = self.out();
        super::wait_until(deadline, what, || {
            let out = out.clone();
            async move { parse_acks(&out).len() >= target }
        })
        .await;
    }

    /// Stops sending, waits for the flush, and returns every acknowledgement.
    pub async fn stop(mut self) -> Vec<Ack> {
        std::fs::write(self.dir.path().join("stop"), b"").expect("stop file");
        let child = self.child.take().expect("running");
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("producer exit");
        assert!(
            out.status.success(),
            "producer: {}{}",
            String::from_utf8_lossy(&out.stdout),
            self.stderr()
        );
        self.acks()
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn parse_acks(path: &Path) -> Vec<Ack> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace().map(|x| x.parse::<i64>().ok());
            Some(Ack {
                value: f.next()??,
                offset: f.next()??,
                at_ms: f.next()??,
            })
        })
        .collect()
}

/// Reads `topic` partition 0 from offset 0 to its end.
pub async fn consume(bootstrap: &str, topic: &str) -> Vec<Read> {
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    let out = tokio::task::spawn_blocking(move || python(&["-c", CONSUMER, &bootstrap, &topic]).output())
        .await
        .expect("join")
        .expect("consumer");
    assert!(
        out.status.success(),
        "consumer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (o, v) = l.split_once(' ')?;
            Some(Read {
                offset: o.parse().ok()?,
                value: v.trim().parse().ok()?,
            })
        })
        .collect()
}

/// Waits (at most 90 s) until every replica is in the ISR with the same log end, then counts
/// the replicas whose per-batch CRCs differ from the first one's.
pub async fn divergent_replicas(zk: &ZkSession, dirs: &[PathBuf], topic: &str) -> usize {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(90) {
        let ends: Vec<i64> = dirs.iter().map(|d| log_end(d, topic, 0)).collect();
        if isr(zk, topic).await.len() == dirs.len() && ends.iter().all(|e| *e == ends[0]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first = batch_crcs(&dirs[0], topic, 0);
    dirs[1..].iter().filter(|d| batch_crcs(d, topic, 0) != first).count()
}

/// How many brokers report themselves the active controller
/// (`kafka_controller_kafkacontroller_activecontrollercount` on each `metrics` address), once
/// that is 1 and `/controller` names a registered broker, or as last seen after 30 s.
pub async fn live_controllers(zk: &ZkSession, metrics: &[String]) -> usize {
    let start = Instant::now();
    loop {
        let active: f64 = metrics
            .iter()
            .filter_map(|m| super::cluster::scrape(m))
            .filter_map(|body| super::cluster::sample(&body, "kafka_controller_kafkacontroller_activecontrollercount"))
            .sum();
        let registered = match super::cluster::controller_of(zk).await {
            Some(id) => zk
                .children("/brokers/ids")
                .await
                .unwrap_or_default()
                .iter()
                .any(|i| i.parse() == Ok(id)),
            None => false,
        };
        let active = active.round() as usize;
        if (active == 1 && registered) || start.elapsed() > Duration::from_secs(30) {
            return if registered { active } else { 0 };
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Znodes of Kafka's layout that fail their schema.
pub async fn zk_violations(zk: &ZkSession) -> usize {
    let report = kastle::zk::check::check_tree(zk).await.expect("walk the tree");
    for v in &report.violations {
        eprintln!("zk violation {} ({}): {:?}", v.path, v.schema, v.problems);
    }
    report.violations.len()
}

/// What a case ran, for [`finish`].
#[derive(Debug, Clone)]
pub struct Case<'a> {
    pub name: &'a str,
    pub faults: &'a str,
    pub topic: &'a str,
    pub idempotent: bool,
    pub expect_loss: bool,
}

/// The checker: stops the workload, waits for the replicas to converge, reads the partition
/// back, checks the controller (through the brokers' `metrics` listeners) and the tree, prints
/// the row and returns it.
pub async fn finish(
    case: &Case<'_>,
    zk: &ZkSession,
    dirs: &[PathBuf],
    metrics: &[String],
    bootstrap: &str,
    workload: Workload,
) -> CaseReport {
    let report = judge(case, zk, dirs, metrics, bootstrap, workload).await;
    report.print();
    report
}

/// [`finish`] without printing: for a case with pass figures of its own, which prints the row
/// with [`CaseReport::print_with`].
pub async fn judge(
    case: &Case<'_>,
    zk: &ZkSession,
    dirs: &[PathBuf],
    metrics: &[String],
    bootstrap: &str,
    workload: Workload,
) -> CaseReport {
    let acks = workload.stop().await;
    judge_acks(case, zk, dirs, metrics, bootstrap, acks).await
}

/// [`judge`] for a scripted case without the workload: `acks` are the records the script had
/// acknowledged (values sent in increasing order, each with its offset).
pub async fn judge_acks(
    case: &Case<'_>,
    zk: &ZkSession,
    dirs: &[PathBuf],
    metrics: &[String],
    bootstrap: &str,
    acks: Vec<Ack>,
) -> CaseReport {
    let divergent = divergent_replicas(zk, dirs, case.topic).await;
    let reads = consume(bootstrap, case.topic).await;
    let report = CaseReport {
        case: case.name.to_string(),
        faults: case.faults.to_string(),
        anomalies: check(&acks, &reads),
        divergent,
        controllers: live_controllers(zk, metrics).await,
        zk_violations: zk_violations(zk).await,
        expect_loss: case.expect_loss,
        idempotent: case.idempotent,
    };
    report
}
