//! `scripts/quickstart` brings up ZooKeeper and three registered brokers, prints the zkCli
//! commands, and stops everything cleanly on Ctrl-C (SIGINT). Run on free ports with the
//! test-built binary so it needs no release build.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::unique_chroot;
use kastle::types::BrokerId;
use kastle::zk::{ConnectString, KafkaZkClient, ZkSession};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Kills the script (and so, through its trap, its children) if the test fails midway.
struct Script(std::process::Child);

impl Drop for Script {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quickstart_runs_three_registered_brokers_and_stops_on_ctrl_c() {
    let data = tempfile::Builder::new()
        .prefix(&unique_chroot("qs")[1..])
        .tempdir()
        .expect("tempdir");
    let zk_port = free_port();
    // Three consecutive free ports: probe a base until all three bind.
    let base = loop {
        let b = free_port();
        if b < 65000 && (1..3).all(|i| std::net::TcpListener::bind(("127.0.0.1", b + i)).is_ok()) {
            break b;
        }
    };
    // Through `env --default-signal=INT`: a test run launched in the background by a
    // non-interactive shell inherits SIGINT as ignored, and bash cannot trap a signal that was
    // ignored when it started, so Ctrl-C would never reach the script's handler.
    let mut child = Command::new("env")
        .arg("--default-signal=INT")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/quickstart"))
        .env("KASTLE_BIN", env!("CARGO_BIN_EXE_kastle"))
        .env("KASTLE_ZK_PORT", zk_port.to_string())
        .env("KASTLE_PORT_BASE", base.to_string())
        .env("KASTLE_DATA_DIR", data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run scripts/quickstart");
    let stdout = child.stdout.take().expect("stdout");
    let mut script = Script(child);

    let banner = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
            if line.starts_with("Press Ctrl-C") {
                break;
            }
        }
        text
    });
    let banner = tokio::time::timeout(Duration::from_secs(120), banner)
        .await
        .expect("quickstart ready")
        .expect("read");
    assert!(banner.contains("kastle is up"), "{banner}");
    assert!(
        banner.contains(&format!(
            "zkCli.sh -server 127.0.0.1:{zk_port} get /kastle/brokers/ids/1"
        )),
        "{banner}"
    );

    let connect = ConnectString::parse(&format!("127.0.0.1:{zk_port}/kastle")).expect("connect");
    let session = ZkSession::connect(&connect, Duration::from_secs(10), Duration::from_secs(10))
        .await
        .expect("zk");
    let zk = KafkaZkClient::new(session.clone());
    assert_eq!(
        zk.broker_ids().await.expect("ids"),
        vec![BrokerId(1), BrokerId(2), BrokerId(3)]
    );
    let (reg, _) = zk.broker(BrokerId(2)).await.expect("read").expect("broker 2");
    assert_eq!(reg.endpoints, vec![format!("PLAINTEXT://127.0.0.1:{}", base + 1)]);
    // Ready for clients: kcat round-trips through the cluster (the controller elects the leader
    // of the auto-created topic).
    let bootstrap = format!("127.0.0.1:{base}");
    let roundtrip =
        tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bootstrap, "quickstart", "a:1\nb:2\nc:3\n"))
            .await
            .expect("kcat");
    let mut lines: Vec<&str> = roundtrip.lines().collect();
    lines.sort();
    assert_eq!(lines, vec!["a:1", "b:2", "c:3"]);
    session.close().await;

    let status = Command::new("kill")
        .arg("-INT")
        .arg(script.0.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    let data_dir = data.path().to_path_buf();
    let logs = move || {
        (1..=3)
            .map(|id| {
                let log = std::fs::read_to_string(data_dir.join(format!("broker-{id}.log"))).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(15).collect();
                format!(
                    "=== broker {id}\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    common::wait_until_else(
        Duration::from_secs(60),
        "quickstart to exit after Ctrl-C",
        || {
            let exited = matches!(script.0.try_wait(), Ok(Some(_)));
            async move { exited }
        },
        logs,
    )
    .await;
    for id in 1..=3 {
        let marker = data.path().join(format!("broker-{id}/.kafka_cleanshutdown"));
        assert!(marker.exists(), "broker {id} did not shut down cleanly");
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", zk_port)).is_err(),
        "ZooKeeper still running"
    );
}
