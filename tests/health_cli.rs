//! `kastle health`, the container healthcheck: exit 0 only when the broker answers Metadata,
//! knows a controller and lists itself among the live brokers; the address and id can come
//! from the broker's own config file and `KASTLE_CFG_*` variables, as in the Docker image.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess, BrokerSpec};

fn health(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kastle"));
    cmd.arg("health").args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run kastle health");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_asks_the_broker_for_metadata() {
    let zk = zookeeper();
    let chroot = unique_chroot("health");
    let connect = zk.connect(&chroot);
    let mut broker = BrokerProcess::start(&BrokerSpec::new(1, &connect));
    let session = zk.session(&chroot).await;
    common::cluster::all_registered(&session, 1).await;
    let addr = bootstrap_of(&session, 1).await;

    // Healthy once the controller (itself) has sent it metadata listing broker 1.
    let mut last = String::new();
    wait_until(Duration::from_secs(20), "kastle health exits 0", || {
        let (code, out, err) = health(&["--bootstrap", &addr], &[]);
        last = format!("{out}{err}");
        async move { code == 0 }
    })
    .await;
    assert!(
        last.contains(&format!("healthy: {addr}: controller 1, live brokers [1]")),
        "{last}"
    );

    // An id that is not live is unhealthy, with the reason.
    let (code, _, err) = health(&["--bootstrap", &addr, "--broker-id", "7"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("broker 7 is not among the live brokers [1]"), "{err}");

    // From the broker's config: the first listener (0.0.0.0 probed on loopback) and broker.id.
    let port = addr.rsplit_once(':').expect("host:port").1;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("broker.yaml");
    std::fs::write(
        &file,
        format!("broker.id: 1\nzookeeper.connect: \"{connect}\"\nlisteners: \"INTERNAL://0.0.0.0:{port}\"\nadvertised.listeners: \"INTERNAL://localhost:{port}\"\nlistener.security.protocol.map: \"INTERNAL:PLAINTEXT\"\ninter.broker.listener.name: \"INTERNAL\"\n"),
    )
    .expect("write config");
    let config = file.display().to_string();
    let (code, out, err) = health(&["--config", &config], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("healthy: 127.0.0.1:{port}:")), "{out}");
    // KASTLE_CFG_* overrides the file, as for the broker itself.
    let (code, _, err) = health(&["--config", &config], &[("KASTLE_CFG_BROKER_ID", "9")]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("broker 9 is not among"), "{err}");

    // A dead broker is unreachable: exit 1, not a hang.
    broker.signal("KILL");
    broker.wait_exit(Duration::from_secs(10)).await;
    let (code, _, err) = health(&["--bootstrap", &addr, "--timeout-ms", "3000"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with(&format!("unhealthy: {addr}:")), "{err}");
}
