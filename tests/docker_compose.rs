//! The user-facing docker-compose cluster (docker/docker-compose.yml: ZooKeeper and three
//! brokers), run for real with the offline images: start an engine if none runs, build the
//! images (scripts/docker-images, with this build's binary), `docker-compose up`, wait until
//! every container is healthy, then
//! - kcat round trips from the host (published EXTERNAL listeners) and from a container on the
//!   compose network (INTERNAL listeners, brokers by service name), each reading the other's;
//! - zkCli.sh inside the ZooKeeper container: broker ids, controller, a topic's state znode;
//! - `docker kill` of a partition leader while an idempotent acks=all producer runs:
//!   leadership moves to a survivor, every acknowledged record is read back exactly once and in
//!   order (the new leader deduplicates retried batches); `docker start`: it rejoins the ISR;
//! - a consumer group (`kcat -G` in a container on the compose network) reads that topic, and
//!   its committed offsets (lag 0) and description are seen from the host with kafka-python's
//!   admin CLI through the published listeners;
//! - `docker-compose down -v` on drop, even when a step fails, and our dockerd stopped.
//!
//! `compose_files_are_valid` needs no engine: `docker-compose config` on the user's file and
//! with the offline and SASL_SSL overrides, and the invariants users rely on (unique ids,
//! advertised EXTERNAL ports equal to the published ones, healthy dependencies, a chroot, named
//! volumes; the SASL_SSL variant changes only EXTERNAL's protocol and mounts its config and
//! certificates). That variant is not run here with docker (a second cluster would cost another
//! minute or more); tests/sasl_ssl.rs runs a broker on its config and generated certificates.
//!
//! The cluster test is ignored by plain `cargo test` (it needs root and builds images for a minute or more):
//! scripts/test runs it with `--ignored --nocapture`, so the log shows every step. Where the
//! machine cannot run containers it prints why and returns.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::docker::{cache_dir, checked, Compose, Engine};
use common::{kcat_roundtrip, python, wait_until, wait_until_else};

const ZK_CHROOT: &str = "/kastle";

/// Leader and ISR of partition 0 of `topic`, as broker `bootstrap` reports them (kcat -L -J).
fn leader_and_isr(bootstrap: &str, topic: &str) -> Option<(i32, Vec<i32>)> {
    let out = Command::new("kcat")
        .args(["-b", bootstrap, "-L", "-J", "-t", topic, "-m", "5"])
        .output()
        .ok()?;
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let partition = json["topics"][0]["partitions"]
        .as_array()?
        .iter()
        .find(|p| p["partition"] == 0)?
        .clone();
    let leader = partition["leader"].as_i64()? as i32;
    let mut isr: Vec<i32> = partition["isrs"]
        .as_array()?
        .iter()
        .filter_map(|r| r["id"].as_i64().map(|id| id as i32))
        .collect();
    isr.sort_unstable();
    Some((leader, isr))
}

/// A child process killed (and reaped) if the test panics before it exits.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sorted lines, for comparing what came back from several partitions.
fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    lines.sort();
    lines
}

/// `zkCli.sh … <args>` inside the ZooKeeper container; the lines that carry data.
fn zkcli(engine: &Engine, container: &str, args: &[&str]) -> String {
    let mut all = vec!["exec", container, "zkCli.sh", "-server", "127.0.0.1:2181"];
    all.extend_from_slice(args);
    let out = engine.run(&all);
    out.lines()
        .filter(|l| l.starts_with('[') || l.starts_with('{') || l.trim().parse::<i64>().is_ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// An idempotent acks=all kafka-python producer sending 0, 1, 2, … one at a time until `stop`
/// exists; prints `ack <n>` for each acknowledged record.
const PRODUCER: &str = r#"
import os, sys
from kafka import KafkaProducer
bootstrap, topic, stop = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=0,
                  max_in_flight_requests_per_connection=1, request_timeout_ms=10000,
                  delivery_timeout_ms=60000, retry_backoff_ms=100)
n = 0
while not os.path.exists(stop):
    try:
        p.send(topic, value=str(n).encode()).get(timeout=70)
        print(f"ack {n}", flush=True)
    except Exception as e:
        print(f"fail {n} {type(e).__name__}: {e}", flush=True)
    n += 1
p.close()
print("done", flush=True)
"#;

/// `kcat args` in a `kastle/kcat:local` container on `network` (brokers by service name), with
/// `stdin` as its input; panics unless it succeeds; returns stdout.
fn kcat_in_network(engine: &Engine, network: &str, args: &[&str], stdin: Option<&str>) -> String {
    let mut cmd = engine.docker();
    cmd.args(["run", "--rm", "-i", "--network", network, "kastle/kcat:local"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("docker run kcat");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        pipe.write_all(text.as_bytes()).expect("write to kcat");
    }
    drop(pipe);
    checked(child.wait_with_output(), &format!("kcat {}", args.join(" ")))
}

/// `docker-compose … config` of the given files (under docker/), with default ports; asserts
/// that `config -q` passes first.
fn compose_config(files: &[&str]) -> serde_yaml::Value {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let compose = |args: &[&str]| {
        let mut cmd = Command::new("docker-compose");
        for file in files {
            cmd.arg("-f").arg(repo.join("docker").join(file));
        }
        for var in [
            "KASTLE_PORT_1",
            "KASTLE_PORT_2",
            "KASTLE_PORT_3",
            "KASTLE_EXTERNAL_HOST",
            "KASTLE_IMAGE",
        ] {
            cmd.env_remove(var);
        }
        cmd.args(args).output()
    };
    let what = format!("docker-compose -f {} config -q", files.join(" -f "));
    checked(compose(&["config", "-q"]), &what);
    let rendered = checked(compose(&["config"]), "docker-compose config");
    serde_yaml::from_str(&rendered).expect("config renders YAML")
}

#[test]
fn compose_files_are_valid() {
    let user = compose_config(&["docker-compose.yml"]);
    let offline = compose_config(&["docker-compose.yml", "docker-compose.offline.yml"]);
    let sasl_ssl = compose_config(&["docker-compose.yml", "docker-compose.sasl-ssl.yml"]);
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let services = &user["services"];
    assert_eq!(services["zookeeper"]["image"].as_str(), Some("zookeeper:3.8"));
    assert_eq!(
        offline["services"]["zookeeper"]["image"].as_str(),
        Some("kastle/zookeeper:local")
    );
    for (n, port) in [(1, 19092), (2, 29092), (3, 39092)] {
        let name = format!("kafka{n}");
        let broker = &services[name.as_str()];
        let env = &broker["environment"];
        assert_eq!(env["KASTLE_CFG_BROKER_ID"].as_str(), Some(n.to_string().as_str()));
        assert_eq!(
            env["KASTLE_CFG_ADVERTISED_LISTENERS"].as_str(),
            Some(format!("INTERNAL://kafka{n}:9092,EXTERNAL://localhost:{port}").as_str())
        );
        assert_eq!(
            env["KASTLE_CFG_ZOOKEEPER_CONNECT"].as_str(),
            Some("zookeeper:2181/kastle")
        );
        assert_eq!(env["KASTLE_CFG_INTER_BROKER_LISTENER_NAME"].as_str(), Some("INTERNAL"));
        let published = broker["ports"][0].as_str().unwrap_or_default();
        assert_eq!(published, format!("127.0.0.1:{port}:19092/tcp"));
        assert_eq!(
            broker["depends_on"]["zookeeper"]["condition"].as_str(),
            Some("service_healthy")
        );
        assert_eq!(broker["healthcheck"]["test"][1].as_str(), Some("kastle"));
        assert_eq!(
            broker["volumes"][0].as_str(),
            Some(format!("kafka{n}-data:/var/lib/kastle/data:rw").as_str())
        );
        assert_eq!(broker["image"].as_str(), Some("kastle/kastle:latest"));
        assert_eq!(
            offline["services"][name.as_str()]["image"].as_str(),
            Some("kastle/kastle:local")
        );
        // Apart from the image names the override changes nothing.
        let mut same = offline["services"][name.as_str()].clone();
        same["image"] = broker["image"].clone();
        assert_eq!(&same, broker, "{name}");
        // The SASL_SSL variant: EXTERNAL is SASL_SSL, its config file and the certificates
        // (docker/tls/gen-certs.sh) are mounted read-only; nothing else changes.
        let secured = &sasl_ssl["services"][name.as_str()];
        assert_eq!(
            secured["environment"]["KASTLE_CFG_LISTENER_SECURITY_PROTOCOL_MAP"].as_str(),
            Some("INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL")
        );
        let mounts: Vec<&str> = secured["volumes"]
            .as_sequence()
            .map(|v| v.iter().filter_map(|m| m.as_str()).collect())
            .unwrap_or_default();
        let docker = repo.join("docker");
        for mount in [
            format!(
                "{}:/etc/kastle/kastle.yaml:ro",
                docker.join("kastle-sasl-ssl.yaml").display()
            ),
            format!("{}:/etc/kastle/tls:ro", docker.join("tls").display()),
        ] {
            assert!(mounts.contains(&mount.as_str()), "{name}: {mount} not in {mounts:?}");
        }
        let mut same = secured.clone();
        same["volumes"] = broker["volumes"].clone();
        same["environment"]["KASTLE_CFG_LISTENER_SECURITY_PROTOCOL_MAP"] =
            broker["environment"]["KASTLE_CFG_LISTENER_SECURITY_PROTOCOL_MAP"].clone();
        assert_eq!(&same, broker, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Docker engine (started as root) and builds images: scripts/test runs it with --ignored"]
async fn compose_cluster_serves_clients_and_survives_a_killed_leader() {
    if let Some(reason) = Engine::cannot_run() {
        println!("SKIPPED docker-compose test: {reason}");
        return;
    }
    let started = Instant::now();
    let engine = Engine::ensure().await;

    // Images: the debootstrap base (cached), ZooKeeper and kcat from Debian, this build's broker.
    let build = Instant::now();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(repo.join("scripts/docker-images"))
        .args(["--binary", env!("CARGO_BIN_EXE_kastle")])
        .env("DOCKER_HOST", &engine.host)
        .env("KASTLE_DOCKER_CACHE", cache_dir())
        .status()
        .expect("run scripts/docker-images");
    assert!(status.success(), "scripts/docker-images failed");
    println!("docker: images ready in {:.1?}", build.elapsed());

    // The cluster, on free host ports.
    let ports: Vec<u16> = (0..3).map(|_| common::zookeeper::free_port()).collect();
    let external: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let compose = Compose::new(
        &engine,
        &format!("kastle-test-{}", std::process::id()),
        &[
            repo.join("docker/docker-compose.yml"),
            repo.join("docker/docker-compose.offline.yml"),
        ],
        &[
            ("KASTLE_PORT_1", ports[0].to_string()),
            ("KASTLE_PORT_2", ports[1].to_string()),
            ("KASTLE_PORT_3", ports[2].to_string()),
            ("KASTLE_EXTERNAL_HOST", "127.0.0.1".to_string()),
        ],
    );
    let up = Instant::now();
    compose.run(&["up", "-d", "--no-build"]);
    let services = ["zookeeper", "kafka1", "kafka2", "kafka3"];
    let containers: Vec<String> = services.iter().map(|s| compose.container(s)).collect();
    let all_healthy = |engine: &Engine| {
        let mut args = vec!["inspect", "--format", "{{.State.Health.Status}}"];
        args.extend(containers.iter().map(String::as_str));
        engine
            .docker()
            .args(&args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().all(|l| l == "healthy"))
            .unwrap_or(false)
    };
    wait_until_else(
        Duration::from_secs(120),
        "every container healthy",
        || std::future::ready(all_healthy(&engine)),
        || compose.run(&["logs", "--tail", "30"]),
    )
    .await;
    println!("docker-compose: cluster healthy {:.1?} after up", up.elapsed());
    println!("{}", compose.run(&["ps"]));

    // kcat from the host, through the published EXTERNAL listeners.
    let input = "k1:from-the-host-1\nk2:from-the-host-2\nk3:from-the-host-3\n";
    let bootstrap = external.join(",");
    let host_topic = "docker-from-host";
    let back = kcat_roundtrip(&bootstrap, host_topic, input);
    println!("kcat on the host ({bootstrap}) produced and read back:\n{back}");
    assert_eq!(sorted_lines(&back), sorted_lines(input));

    // kcat in a container on the compose network, through the INTERNAL listeners by name.
    let network = compose.network_of(&engine, "kafka1");
    let kcat_in_network = |args: &[&str], stdin: Option<&str>| kcat_in_network(&engine, &network, args, stdin);
    let inner_topic = "docker-from-network";
    let inner_input = "n1:from-the-network-1\nn2:from-the-network-2\n";
    kcat_in_network(
        &["-P", "-b", "kafka1:9092,kafka2:9092", "-t", inner_topic, "-K", ":"],
        Some(inner_input),
    );
    let consume = [
        "-C",
        "-o",
        "beginning",
        "-e",
        "-f",
        "%k:%s\\n",
        "-b",
        "kafka3:9092",
        "-t",
    ];
    let inner_back = kcat_in_network(&[&consume[..], &[inner_topic][..]].concat(), None);
    println!("kcat in a container on network {network} (kafka1..3:9092) produced and read back:\n{inner_back}");
    assert_eq!(sorted_lines(&inner_back), sorted_lines(inner_input));
    let host_seen_inside = kcat_in_network(&[&consume[..], &[host_topic][..]].concat(), None);
    assert_eq!(
        sorted_lines(&host_seen_inside),
        sorted_lines(input),
        "the network sees the host's records"
    );
    let inside_seen_from_host = kcat_roundtrip(&bootstrap, inner_topic, "");
    assert_eq!(
        sorted_lines(&inside_seen_from_host),
        sorted_lines(inner_input),
        "the host sees the network's records"
    );
    println!("each side read the other's records");

    // zkCli inside the ZooKeeper container.
    let zk = &containers[0];
    let ids = zkcli(&engine, zk, &["ls", &format!("{ZK_CHROOT}/brokers/ids")]);
    println!("zkCli.sh ls {ZK_CHROOT}/brokers/ids:\n{ids}");
    assert!(ids.contains("[1, 2, 3]"), "{ids}");
    let controller = zkcli(&engine, zk, &["get", &format!("{ZK_CHROOT}/controller")]);
    println!("zkCli.sh get {ZK_CHROOT}/controller:\n{controller}");
    assert!(controller.contains("\"brokerid\""), "{controller}");
    let state_path = format!("{ZK_CHROOT}/brokers/topics/{host_topic}/partitions/0/state");
    let state = zkcli(&engine, zk, &["get", &state_path]);
    println!("zkCli.sh get {state_path}:\n{state}");
    let state_json: serde_json::Value = serde_json::from_str(state.trim()).expect("state znode JSON");
    assert_eq!(state_json["isr"].as_array().map(Vec::len), Some(3), "{state}");

    let (topic, records) = failover(&engine, &compose, &containers, &external).await;
    consumer_group(&engine, &network, &external, topic, &records);
    println!("docker-compose test: all steps passed in {:.1?}", started.elapsed());
}

/// Kills the leader of a new single-partition topic while an idempotent acks=all producer runs;
/// checks the new leader, that every acknowledged record is in the log exactly once and in
/// order, and that the restarted broker rejoins the ISR. Returns the topic and its records.
async fn failover(
    engine: &Engine,
    compose: &Compose,
    containers: &[String],
    external: &[String],
) -> (&'static str, Vec<u64>) {
    let topic = "docker-failover";
    let bootstrap = external.join(",");
    let create = format!(
        "from kafka.admin import KafkaAdminClient, NewTopic\n\
         a = KafkaAdminClient(bootstrap_servers={:?})\n\
         a.create_topics([NewTopic({topic:?}, 1, 3)])\n\
         a.close()",
        bootstrap.split(',').collect::<Vec<_>>()
    );
    checked(
        Command::new(python()).args(["-c", &create]).output(),
        "create the topic",
    );
    let mut before = None;
    wait_until(Duration::from_secs(30), "the topic's leader and a full ISR", || {
        before = leader_and_isr(&external[0], topic);
        std::future::ready(matches!(&before, Some((l, isr)) if *l > 0 && isr.len() == 3))
    })
    .await;
    let (leader, _) = before.expect("leader");
    println!("failover: topic {topic} partition 0 leader {leader}, ISR [1, 2, 3]");

    let dir = tempfile::tempdir().expect("tempdir");
    let stop = dir.path().join("stop");
    // Its stderr (kafka-python's warnings during the failover) goes to a file, not a pipe that
    // could fill up and block it.
    let stderr_path = dir.path().join("producer.stderr");
    let mut producer = KillOnDrop(
        Command::new(python())
            .args(["-c", PRODUCER, &bootstrap, topic])
            .arg(&stop)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
            .spawn()
            .expect("start the producer"),
    );
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = Arc::clone(&lines);
        let stdout = producer.0.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                lines.lock().expect("lines").push(line);
            }
        })
    };
    let acks = |lines: &Mutex<Vec<String>>| {
        lines
            .lock()
            .expect("lines")
            .iter()
            .filter(|l| l.starts_with("ack "))
            .count()
    };

    wait_until(
        Duration::from_secs(60),
        "200 acknowledged records before the kill",
        || std::future::ready(acks(&lines) >= 200),
    )
    .await;
    let leader_container = &containers[leader as usize];
    engine.run(&["kill", leader_container]);
    let killed_at = Instant::now();
    let acked_at_kill = acks(&lines);
    println!("failover: docker kill kafka{leader} (the leader) after {acked_at_kill} acknowledged records");

    let survivor = &external[(leader as usize) % 3];
    let mut after = None;
    wait_until(Duration::from_secs(60), "a new leader among the survivors", || {
        after = leader_and_isr(survivor, topic);
        std::future::ready(matches!(&after, Some((l, _)) if *l > 0 && *l != leader))
    })
    .await;
    let (new_leader, isr) = after.expect("new leader");
    println!(
        "failover: new leader {new_leader} after {:.1?}, ISR {isr:?}",
        killed_at.elapsed()
    );
    assert!(!isr.contains(&leader), "the killed broker left the ISR: {isr:?}");
    wait_until(
        Duration::from_secs(60),
        "200 more acknowledged records after the kill",
        || std::future::ready(acks(&lines) >= acked_at_kill + 200),
    )
    .await;

    std::fs::write(&stop, b"").expect("stop file");
    let status = producer.0.wait().expect("producer exit");
    reader.join().expect("reader");
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(status.success(), "producer failed: {stderr}");
    let lines = lines.lock().expect("lines").clone();
    let acked: BTreeSet<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("ack ")?.parse().ok())
        .collect();
    let failed = lines.iter().filter(|l| l.starts_with("fail ")).count();

    let consumed = checked(
        Command::new("kcat")
            .args([
                "-C",
                "-b",
                survivor,
                "-t",
                topic,
                "-o",
                "beginning",
                "-e",
                "-q",
                "-f",
                "%s\\n",
            ])
            .output(),
        "kcat -C the failover topic",
    );
    let read: Vec<u64> = consumed.lines().filter_map(|l| l.parse().ok()).collect();
    let read_set: BTreeSet<u64> = read.iter().copied().collect();
    let lost: Vec<&u64> = acked.difference(&read_set).collect();
    // The producer sends one record at a time, so the log holds them in the order sent: any
    // value not above its predecessor is a duplicate (a retry appended twice) or out of order.
    let disorder: Vec<(u64, u64)> = read.windows(2).filter(|w| w[1] <= w[0]).map(|w| (w[0], w[1])).collect();
    println!(
        "failover: {} records acknowledged ({failed} sends failed and were not counted), {} read back \
         ({} duplicates, {} out of order), {} acknowledged records lost",
        acked.len(),
        read.len(),
        read.len() - read_set.len(),
        disorder.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged records lost: {lost:?}");
    assert_eq!(read.len(), read_set.len(), "duplicates with an idempotent producer");
    assert!(
        disorder.is_empty(),
        "records out of order (previous, next): {disorder:?}"
    );

    let state_path = format!("{ZK_CHROOT}/brokers/topics/{topic}/partitions/0/state");
    let state = zkcli(engine, &containers[0], &["get", &state_path]);
    println!("zkCli.sh get {state_path} after the kill:\n{state}");

    engine.run(&["start", leader_container]);
    let started = Instant::now();
    let mut rejoined = None;
    wait_until_else(
        Duration::from_secs(90),
        "the restarted broker back in the ISR",
        || {
            rejoined = leader_and_isr(survivor, topic);
            std::future::ready(matches!(&rejoined, Some((_, isr)) if isr.contains(&leader)))
        },
        || compose.run(&["logs", "--tail", "40", &format!("kafka{leader}")]),
    )
    .await;
    println!(
        "failover: docker start kafka{leader}: back in the ISR after {:.1?}, leader/ISR now {:?}",
        started.elapsed(),
        rejoined.expect("state")
    );
    (topic, read)
}

/// `python -m kafka.admin -b bootstrap --format json args` on the host; the parsed answer.
fn admin_json(bootstrap: &str, args: &[&str]) -> serde_json::Value {
    let out = checked(
        Command::new(python())
            .args(["-m", "kafka.admin", "-b", bootstrap, "--format", "json"])
            .args(args)
            .output(),
        &format!("python -m kafka.admin {}", args.join(" ")),
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kafka.admin {args:?}: {e}: {out}"))
}

/// A consumer group reads `topic` (whose log holds `records`, one partition) with `kcat -G` in
/// a container on the compose network and commits; from the host, through the published
/// listeners, the group's committed offset is the end of the log (lag 0) and it is described.
fn consumer_group(engine: &Engine, network: &str, external: &[String], topic: &str, records: &[u64]) {
    let group = "compose-group";
    let started = Instant::now();
    let args = [
        "-b",
        "kafka1:9092,kafka2:9092,kafka3:9092",
        "-G",
        group,
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%s\\n",
        topic,
    ];
    let out = kcat_in_network(engine, network, &args, None);
    let read: Vec<u64> = out.lines().filter_map(|l| l.parse().ok()).collect();
    println!(
        "group: kcat -G {group} {topic} in a container on {network} read {} records in {:.1?}",
        read.len(),
        started.elapsed()
    );
    assert_eq!(read, records, "the group reads the log, in order");

    // A new member of the group, on the host, starts at the committed offsets: nothing left.
    // (No `-o`: with -G, kcat applies an -o offset to every assigned partition.)
    let bootstrap = &external[0];
    let again = checked(
        Command::new("kcat")
            .args(["-b", bootstrap, "-G", group, "-e", "-q", topic])
            .output(),
        "kcat -G on the host",
    );
    println!(
        "group: kcat -G {group} {topic} on the host ({bootstrap}) read {} records",
        again.lines().count()
    );
    assert_eq!(again, "", "the group resumes at its committed offset");
    let offsets = admin_json(bootstrap, &["groups", "list-offsets", "-g", group]);
    println!("group: kafka.admin -b {bootstrap} groups list-offsets -g {group}: {offsets}");
    let committed = &offsets[topic]["0"];
    assert_eq!(committed["offset"].as_u64(), Some(records.len() as u64), "{offsets}");
    assert_eq!(committed["lag"].as_i64(), Some(0), "{offsets}");
    let described = admin_json(bootstrap, &["groups", "describe", "-g", group]);
    println!(
        "group: kafka.admin -b {bootstrap} groups describe -g {group}:\n{}",
        serde_json::to_string_pretty(&described).unwrap_or_default()
    );
    assert_eq!(
        described[group]["group_state"].as_str(),
        Some("Empty"),
        "kcat left the group: {described}"
    );
    println!("group: step done in {:.1?}", started.elapsed());
}
