//! Consumer-group members as child processes (kafka-python or confluent-kafka from the repo's
//! .venv) that subscribe (to one topic, or to several separated by commas), print what they are
//! assigned and every record they process, commit after processing, and leave the group cleanly
//! once a stop file appears.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The member script: `kind bootstrap topic group stop_file session_ms`.
pub const MEMBER: &str = r#"
import os, sys
kind, bootstrap, topic, group, stop_file, session, instance, strategy = sys.argv[1:9]
session = int(session)
instance = instance or None
def out(*a):
    print(*a, flush=True)
last = None
def report(c):
    # The full current assignment, whenever it changes (eager and cooperative alike).
    global last
    now = sorted(tp.partition for tp in c.assignment())
    if now != last:
        last = now
        out("ASSIGNED", ",".join(str(p) for p in now))
if kind == "kafka-python":
    from kafka import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=session,
                      heartbeat_interval_ms=max(session // 10, 200), max_poll_records=50,
                      client_id="kp-member", retry_backoff_ms=100, reconnect_backoff_max_ms=1000,
                      group_instance_id=instance)
    c.subscribe(topic.split(","))
    while not os.path.exists(stop_file):
        batch = c.poll(timeout_ms=200)
        report(c)
        n = 0
        for tp, records in batch.items():
            for r in records:
                out("RECORD", r.partition, r.offset, r.value.decode(), r.topic)
                n += 1
        if n:
            c.commit()
    c.close()
else:
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": session,
            "heartbeat.interval.ms": max(session // 10, 200), "client.id": "ck-member",
            "topic.metadata.refresh.interval.ms": 1000, "retry.backoff.ms": 100}
    if instance:
        conf["group.instance.id"] = instance
    if strategy:
        conf["partition.assignment.strategy"] = strategy
    c = Consumer(conf)
    # Static members report every rebalance they go through, even one that gives back the same
    # partitions.
    def revoked(consumer, partitions):
        out("REVOKED", ",".join(str(tp.partition) for tp in partitions))
    if instance:
        c.subscribe(topic.split(","), on_revoke=revoked)
    else:
        c.subscribe(topic.split(","))
    while not os.path.exists(stop_file):
        m = c.poll(0.2)
        report(c)
        if m is None or m.error():
            continue
        out("RECORD", m.partition(), m.offset(), m.value().decode(), m.topic())
        if os.environ.get("KASTLE_MEMBER_COMMIT") == "async":
            # The soak's member: a synchronous commit there was seen to block the app thread for
            # good while librdkafka kept heartbeating (the coordinator had moved several times).
            c.commit(message=m, asynchronous=True)
            continue
        while True:
            try:
                c.commit(message=m, asynchronous=False)
                break
            except Exception as e:
                out("COMMIT-RETRY", e)
                if os.path.exists(stop_file):
                    break
    c.close()
out("CLOSED")
"#;

/// Produces `values` to `topic` (round-robin over its partitions) with acks=all; exits non-zero
/// unless every record was acknowledged.
pub const PRODUCE: &str = r#"
import sys
from confluent_kafka import Producer
bootstrap, topic, first, count, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": False})
failed = []
def done(err, msg):
    if err is not None:
        failed.append(err)
for i in range(first, first + count):
    p.produce(topic, str(i).encode(), partition=i % partitions, on_delivery=done)
    p.poll(0)
left = p.flush(60)
if failed or left:
    sys.exit("not acknowledged: %d failed, %d left" % (len(failed), left))
"#;

pub fn produce(bootstrap: &str, topic: &str, first: usize, count: usize, partitions: i32) {
    let out = Command::new(super::python())
        .args(["-c", PRODUCE, bootstrap, topic])
        .args([first.to_string(), count.to_string(), partitions.to_string()])
        .output()
        .expect("producer");
    assert!(
        out.status.success(),
        "producer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One running group member.
pub struct Member {
    pub name: String,
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    stop_file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Member {
    pub fn start(kind: &str, bootstrap: &str, topic: &str, group: &str, session_ms: u32) -> Member {
        Member::start_with(kind, bootstrap, topic, group, session_ms, "", "")
    }

    /// A member with a `group.instance.id` (static, KIP-345) and/or an assignment strategy
    /// (confluent-kafka's `partition.assignment.strategy`); empty strings leave them unset.
    pub fn start_with(
        kind: &str,
        bootstrap: &str,
        topic: &str,
        group: &str,
        session_ms: u32,
        instance: &str,
        strategy: &str,
    ) -> Member {
        Member::start_with_env(kind, bootstrap, topic, group, session_ms, instance, strategy, &[])
    }

    /// [`Member::start_with`] with environment variables for the member's process
    /// (`KASTLE_MEMBER_COMMIT=async`: confluent-kafka commits asynchronously).
    #[allow(clippy::too_many_arguments)]
    pub fn start_with_env(
        kind: &str,
        bootstrap: &str,
        topic: &str,
        group: &str,
        session_ms: u32,
        instance: &str,
        strategy: &str,
        env: &[(&str, &str)],
    ) -> Member {
        let dir = tempfile::tempdir().expect("tempdir");
        let stop_file = dir.path().join("stop");
        let mut child = Command::new(super::python())
            .args(["-u", "-c", MEMBER, kind, bootstrap, topic, group])
            .arg(&stop_file)
            .arg(session_ms.to_string())
            .args([instance, strategy])
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("member");
        let lines = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let sink = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    sink.lock().expect("lines").push(line);
                }
            });
        }
        Member {
            name: kind.to_string(),
            child,
            lines,
            stop_file,
            _dir: dir,
        }
    }

    pub fn output(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }

    /// How many times its assignment changed.
    pub fn assignments(&self) -> usize {
        self.output().iter().filter(|l| l.starts_with("ASSIGNED")).count()
    }

    /// How many times it had partitions revoked (static confluent members): every rebalance it took
    /// part in while owning partitions, even one that handed the same partitions back.
    pub fn revocations(&self) -> usize {
        self.output().iter().filter(|l| l.starts_with("REVOKED")).count()
    }

    /// The partitions of the member's latest assignment, if it has one.
    pub fn assignment(&self) -> Option<Vec<i32>> {
        let lines = self.output();
        let last = lines.iter().rev().find_map(|l| l.strip_prefix("ASSIGNED"))?;
        Some(
            last.trim()
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|p| p.parse().expect("partition"))
                .collect(),
        )
    }

    /// (partition, offset, value) of every record it processed.
    pub fn records(&self) -> Vec<(i32, i64, String)> {
        self.output()
            .iter()
            .filter_map(|l| {
                let mut it = l.strip_prefix("RECORD ")?.split(' ');
                Some((
                    it.next()?.parse().ok()?,
                    it.next()?.parse().ok()?,
                    it.next()?.to_string(),
                ))
            })
            .collect()
    }

    /// (topic, partition, offset, value) of every record it processed.
    pub fn topic_records(&self) -> Vec<(String, i32, i64, String)> {
        self.output()
            .iter()
            .filter_map(|l| {
                let mut it = l.strip_prefix("RECORD ")?.split(' ');
                let (partition, offset, value) = (it.next()?.parse().ok()?, it.next()?.parse().ok()?, it.next()?);
                Some((it.next()?.to_string(), partition, offset, value.to_string()))
            })
            .collect()
    }

    /// Leaves the group (close) and waits for the process to end.
    pub async fn stop(mut self) -> Vec<(i32, i64, String)> {
        std::fs::write(&self.stop_file, b"").expect("stop file");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "{} did not stop: {:?}",
                self.name,
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.records()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
