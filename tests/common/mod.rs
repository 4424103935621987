//! Test harness shared by the integration tests: a real ZooKeeper (Debian's `zookeeper`
//! package) per test binary on a free port, one chroot per test, brokers in-process or as
//! child processes of the built `kastle` binary, and `wait_until` instead of sleeps.
//!
//! Clean-up: brokers and temp dirs are removed on drop (also while a test panics). ZooKeeper
//! lives as long as the test binary: it runs under a small shell that holds a pipe from this
//! process and kills ZooKeeper and removes its data dir when the pipe closes, which happens
//! however the test binary ends (even kill -9).

#![allow(dead_code, unused_imports)]

pub mod cluster;
pub mod disk;
pub mod docker;
pub mod ensemble;
pub mod faults;
pub mod groups;
pub mod inter_broker;
pub mod metadata_probe;
pub mod netns;
pub mod pki;
pub mod process;
pub mod reassign;
pub mod reliability;
pub mod replicas;
pub mod sasl;
pub mod soak;
pub mod stress;
pub mod wire;
pub mod zookeeper;

use std::future::Future;
use std::time::{Duration, Instant};

pub use process::{BrokerProcess, BrokerSpec};
pub use zookeeper::{zookeeper, ZooKeeperServer};

/// Polls `condition` until it holds or `deadline` passes; panics naming `what` on timeout.
pub async fn wait_until<F, Fut>(deadline: Duration, what: &str, condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    wait_until_else(deadline, what, condition, String::new).await
}

/// [`wait_until`], adding what `diagnose` says (e.g. broker logs) to the timeout panic.
pub async fn wait_until_else<F, Fut>(
    deadline: Duration,
    what: &str,
    mut condition: F,
    diagnose: impl FnOnce() -> String,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if condition().await {
            return;
        }
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for: {what}\n{}", diagnose());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Logs from in-process brokers go to the test output when `KASTLE_TEST_LOG` is set (a tracing
/// filter such as `debug` or `kastle=info`).
pub fn init_logging() {
    if let Ok(filter) = std::env::var("KASTLE_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    }
}

/// A fresh chroot name for one test.
pub fn unique_chroot(test: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("/{test}-{}-{n}", std::process::id())
}

/// The Python with the client libraries (`scripts/test` creates `.venv`; `KASTLE_PYTHON` overrides).
pub fn python() -> std::path::PathBuf {
    let path = std::env::var_os("KASTLE_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python")));
    assert!(
        path.exists(),
        "{} missing: scripts/test creates the venv with the Python clients",
        path.display()
    );
    path
}

/// `host:port` of broker `id`'s first endpoint, from its registration.
pub async fn bootstrap_of(zk: &kastle::zk::ZkSession, id: i32) -> String {
    let (registration, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .broker(kastle::types::BrokerId(id))
        .await
        .expect("read registration")
        .expect("broker registered");
    registration.endpoints[0]
        .split_once("://")
        .map(|(_, a)| a.to_string())
        .expect("endpoint")
}

/// Produces `input` (`key:value` lines) to `topic` with kcat, then consumes the topic from the
/// beginning and returns what came back as `key:value` lines. Blocking: call it from
/// `spawn_blocking`.
pub fn kcat_roundtrip(bootstrap: &str, topic: &str, input: &str) -> String {
    let kcat = || {
        let mut c = std::process::Command::new("kcat");
        c.args(["-b", bootstrap]);
        c
    };
    kcat_roundtrip_with(kcat, topic, input, &["-K", ":"], "%k:%s\n")
}

/// The kcat round trip for any connection: `kcat()` gives a kcat command already pointed at the
/// cluster (`-b`, security `-X` settings). Produces `input` lines to `topic` (with
/// `produce_args`, e.g. a key delimiter), then consumes the topic from the beginning and returns
/// each record printed with `format`. Blocking.
pub fn kcat_roundtrip_with(
    kcat: impl Fn() -> std::process::Command,
    topic: &str,
    input: &str,
    produce_args: &[&str],
    format: &str,
) -> String {
    use std::io::Write;
    use std::process::Stdio;
    let mut producer = kcat()
        .args(["-P", "-t", topic])
        .args(produce_args)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat -P");
    producer
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let produced = producer.wait_with_output().expect("wait");
    assert!(
        produced.status.success(),
        "kcat produce: {}",
        String::from_utf8_lossy(&produced.stderr)
    );
    let consumed = kcat()
        .args(["-C", "-t", topic, "-o", "beginning", "-e", "-f", format])
        .stdin(Stdio::null())
        .output()
        .expect("kcat -C");
    assert!(
        consumed.status.success(),
        "kcat consume: {}",
        String::from_utf8_lossy(&consumed.stderr)
    );
    String::from_utf8_lossy(&consumed.stdout).into_owned()
}

/// xorshift64*: deterministic, seeded randomness for tests without a dependency (a failing
/// seed replays).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index into something of `len` items (0 when empty).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

/// Runs the real `zkCli.sh` one-shot command and returns its stdout.
pub fn zkcli(server: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("/usr/share/zookeeper/bin/zkCli.sh")
        .arg("-server")
        .arg(server)
        .args(args)
        .output()
        .expect("run zkCli.sh (is Debian's zookeeper package installed?)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until the metrics at `addr` contain every one of `lines`.
pub async fn wait_for_metrics(addr: &str, lines: &[&str]) {
    wait_until(Duration::from_secs(20), &format!("metrics {lines:?}"), || {
        let body = cluster::scrape(addr).unwrap_or_default();
        async move { lines.iter().all(|l| body.contains(l)) }
    })
    .await;
}
