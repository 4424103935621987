//! Partition reassignment (KIP-455) against real ZooKeeper and broker processes, under the
//! faults an operator meets while one runs: an idempotent acks=all producer with two brokers
//! bounced mid-move (R15), a reassignment written to `/admin/reassign_partitions` by hand, the
//! controller killed -9 mid-reassignment, a cancellation, replication-factor changes. A move
//! that must not finish yet is held back by SIGSTOPping its target broker (for less than the
//! ZooKeeper session, so that it stays registered). No sleeps: every wait has a deadline.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{self, controller_of, metadata, partition_in};
use common::faults::{loopback, registered, SAFE};
use common::reassign::{kastle, ok, reassign};
use common::reliability::{
    check, live_controllers, zk_violations, Ack, Anomalies, CaseReport, Read, CONSUMER, PRODUCER,
};
use common::replicas::spec;
use common::replicas::{batch_crcs, log_end, python};
use common::zookeeper::free_port;
use common::{unique_chroot, wait_until_else, BrokerProcess, BrokerSpec};
use kastle::zk::store::{CreateMode, ZkStore};
use kastle::zk::ZkSession;

/// One case at a time: each runs four brokers (and a producer) on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn logs(brokers: &[BrokerProcess]) -> String {
    brokers
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let text = b.stderr();
            let tail: Vec<&str> = text.lines().rev().take(60).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!(
                "--- broker {} ({}) stderr tail ---\n{}\n",
                i + 1,
                b.dir.path().display(),
                tail.join("\n")
            )
        })
        .collect()
}

/// The addresses of the registered brokers among `ids`, comma-separated.
async fn bootstrap_among(zk: &ZkSession, ids: &[i32]) -> String {
    let mut addrs = Vec::new();
    for id in ids {
        if registered(zk, *id).await {
            addrs.push(common::bootstrap_of(zk, *id).await);
        }
    }
    addrs.join(",")
}

async fn topic_znode(zk: &ZkSession, topic: &str) -> serde_json::Value {
    let (data, _) = zk
        .get_data(&format!("/brokers/topics/{topic}"))
        .await
        .expect("topic znode");
    serde_json::from_slice(&data).expect("json")
}

/// Whether the topic znode's `field` (adding_replicas / removing_replicas) lists anything.
fn has_field(znode: &serde_json::Value, field: &str) -> bool {
    znode
        .get(field)
        .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()))
}

fn replicas_in(znode: &serde_json::Value, partition: i32) -> Vec<i64> {
    znode["partitions"][partition.to_string()]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r.as_i64()).collect())
        .unwrap_or_default()
}

fn json_file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write json");
    path.display().to_string()
}

/// A reassignment plan in Kafka's JSON.
fn plan(topic: &str, targets: &[(i32, Vec<i32>)]) -> String {
    let parts: Vec<String> = targets
        .iter()
        .map(|(p, r)| format!(r#"{{"topic":"{topic}","partition":{p},"replicas":{r:?}}}"#))
        .collect();
    format!(r#"{{"version":1,"partitions":[{}]}}"#, parts.join(","))
}

fn create_topic(bootstrap: &str, topic: &str, assignment: &str) {
    let (code, out, err) = kastle(&[
        "topics",
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        topic,
        "--replica-assignment",
        assignment,
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Waits until every partition in `expect` has a leader and exactly those replicas, all in sync,
/// as broker `via` answers Metadata.
async fn wait_in_sync(zk: &ZkSession, via: i32, topic: &str, expect: &[(i32, Vec<i32>)], brokers: &[BrokerProcess]) {
    wait_until_else(
        Duration::from_secs(60),
        &format!("{topic}: {expect:?} led and in sync"),
        || async {
            let m = metadata(zk, via).await;
            expect.iter().all(|(p, r)| {
                partition_in(&m, topic, *p).is_some_and(|(l, replicas, isr)| {
                    l >= 0
                        && &replicas == r
                        && isr.iter().copied().collect::<BTreeSet<_>>() == r.iter().copied().collect()
                })
            })
        },
        || logs(brokers),
    )
    .await;
}

/// Polls `--verify` until every partition of the plan is reported completed.
async fn verify_until_complete(
    zk: &ZkSession,
    ids: &[i32],
    plan_file: &str,
    partitions: usize,
    deadline: Duration,
    brokers: &[BrokerProcess],
) {
    let start = Instant::now();
    loop {
        let b = bootstrap_among(zk, ids).await;
        let (code, out, err) = reassign(&b, &["--verify", "--reassignment-json-file", plan_file]);
        if code == 0 {
            assert!(out.starts_with("Status of partition reassignment:\n"), "{out}{err}");
            let done = out.lines().filter(|l| l.ends_with(" is completed.")).count();
            if done == partitions {
                return;
            }
        }
        if start.elapsed() > deadline {
            let (_, list, _) = reassign(&b, &["--list"]);
            panic!(
                "the reassignment did not complete in {deadline:?}; last --verify ({code}):\n{out}{err}\n--list:\n{list}\n{}",
                logs(brokers)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Names under `log_dir` that belong to `topic` partition `partition` (any partition: `None`),
/// `-delete` dirs included.
fn dirs_of(log_dir: &Path, topic: &str, partition: Option<i32>) -> Vec<String> {
    let prefix = match partition {
        Some(p) => format!("{topic}-{p}"),
        None => format!("{topic}-"),
    };
    std::fs::read_dir(log_dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| match partition {
                    // `t-1` must not match `t-10`.
                    Some(_) => n == &prefix || n.starts_with(&format!("{prefix}.")),
                    None => n.starts_with(&prefix),
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn wait_no_dirs(log_dir: &Path, topic: &str, partition: Option<i32>, what: &str, brokers: &[BrokerProcess]) {
    let dir = log_dir.to_path_buf();
    wait_until_else(
        Duration::from_secs(60),
        what,
        || {
            let dir = dir.clone();
            async move { dirs_of(&dir, topic, partition).is_empty() }
        },
        || format!("left: {:?}\n{}", dirs_of(&dir, topic, partition), logs(brokers)),
    )
    .await;
}

/// SIGTERM, wait for the exit and the registration to go, restart, wait until registered.
async fn bounce(zk: &ZkSession, brokers: &mut Vec<BrokerProcess>, specs: &[BrokerSpec], id: i32) {
    let i = (id - 1) as usize;
    brokers[i].signal("TERM");
    brokers[i].wait_exit(Duration::from_secs(60)).await;
    wait_until_else(
        Duration::from_secs(20),
        &format!("broker {id}'s registration gone"),
        || async { !registered(zk, id).await },
        || logs(brokers),
    )
    .await;
    let dead = brokers.remove(i);
    brokers.insert(i, dead.restart(&specs[i]));
    wait_until_else(
        Duration::from_secs(60),
        &format!("broker {id} registered again"),
        || async { registered(zk, id).await },
        || logs(brokers),
    )
    .await;
}

/// The reliability matrix's producer ([`PRODUCER`]), sending value `i` to partition
/// `i % partitions` instead of partition 0; acknowledgements as `value offset ms`.
struct MultiProducer {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl MultiProducer {
    fn start(bootstrap: &str, topic: &str, partitions: i32, rate: u32) -> MultiProducer {
        let script = PRODUCER.replace("partition=0", &format!("partition=i % {partitions}"));
        assert_ne!(script, PRODUCER, "the producer script names its partition");
        let dir = tempfile::Builder::new()
            .prefix("kastle-reassign-producer-")
            .tempdir()
            .expect("tempdir");
        let child = python(&[
            "-c",
            &script,
            bootstrap,
            topic,
            "all",
            "1",
            dir.path().join("acked").to_str().expect("utf-8"),
            dir.path().join("stop").to_str().expect("utf-8"),
            &rate.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("stderr")).expect("stderr file"))
        .spawn()
        .expect("producer");
        MultiProducer {
            child: Some(child),
            dir,
        }
    }

    fn acks(&self) -> Vec<Ack> {
        std::fs::read_to_string(self.dir.path().join("acked"))
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

    async fn wait_more(&self, more: usize, what: &str) {
        let target = self.acks().len() + more;
        wait_until_else(
            Duration::from_secs(60),
            what,
            || async { self.acks().len() >= target },
            || std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default(),
        )
        .await;
    }

    async fn stop(mut self) -> Vec<Ack> {
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
            std::fs::read_to_string(self.dir.path().join("stderr")).unwrap_or_default()
        );
        self.acks()
    }
}

impl Drop for MultiProducer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The reliability matrix's consumer ([`CONSUMER`]) for `partition`: offset 0 to the end.
async fn consume_partition(bootstrap: &str, topic: &str, partition: i32) -> Vec<Read> {
    let script = CONSUMER.replace(
        "TopicPartition(sys.argv[2], 0, 0)",
        "TopicPartition(sys.argv[2], int(sys.argv[3]), 0)",
    );
    assert_ne!(script, CONSUMER, "the consumer script names its partition");
    let (bootstrap, topic) = (bootstrap.to_string(), topic.to_string());
    let out = tokio::task::spawn_blocking(move || {
        python(&["-c", &script, &bootstrap, &topic, &partition.to_string()]).output()
    })
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

fn dirs(brokers: &[BrokerProcess]) -> Vec<PathBuf> {
    brokers.iter().map(|b| b.log_dir.clone()).collect()
}

/// R15: six partitions move from brokers 1,2,3 onto 2,3,4 under an idempotent acks=all
/// producer while broker 1 and then broker 3 are bounced (SIGTERM, restart). The move
/// completes, the assignment is exactly the targets with nothing adding or removing, broker 1
/// deletes its copies, and every acknowledged record is read back once, in order, per partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r15_reassignment_under_load_with_two_bounces_loses_nothing() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("reassign-r15");
    // Broker 4 (every partition's new replica) is held by SIGSTOP while both bounces happen,
    // so that they happen mid-move; its session is long enough for it to stay registered.
    let specs: Vec<BrokerSpec> = (1..=4)
        .map(|id| {
            let s = spec(&chroot, id, &SAFE)
                .port(free_port())
                .with("metrics.listener", &format!("127.0.0.1:{}", free_port()));
            if id == 4 {
                s.session_timeout_ms(30_000)
            } else {
                s
            }
        })
        .collect();
    // Broker 4 starts once a controller is elected among 1-3: the held broker must not be the
    // controller (which --execute talks to), and a stopped broker cannot win an election.
    let mut brokers: Vec<BrokerProcess> = specs[..3].iter().map(BrokerProcess::start).collect();
    let zk = common::zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 3).await;
    brokers.push(BrokerProcess::start(&specs[3]));
    cluster::all_registered(&zk, 4).await;
    let all = [1, 2, 3, 4];
    let topic = format!("r15-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();
    const PARTITIONS: i32 = 6;
    let rotations = [[1, 2, 3], [2, 3, 1], [3, 1, 2]];
    let before: Vec<(i32, Vec<i32>)> = (0..PARTITIONS)
        .map(|p| (p, rotations[p as usize % 3].to_vec()))
        .collect();
    let assignment: Vec<String> = before
        .iter()
        .map(|(_, r)| r.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(":"))
        .collect();
    create_topic(&bootstrap_among(&zk, &all).await, t, &assignment.join(","));
    wait_in_sync(&zk, 2, t, &before, &brokers).await;

    let boot = bootstrap_among(&zk, &all).await;
    let producer = MultiProducer::start(&boot, t, PARTITIONS, 300);
    producer.wait_more(600, "600 acknowledged before the move").await;

    let targets_rot = [[2, 3, 4], [3, 4, 2], [4, 2, 3]];
    let targets: Vec<(i32, Vec<i32>)> = (0..PARTITIONS)
        .map(|p| (p, targets_rot[p as usize % 3].to_vec()))
        .collect();
    let files = tempfile::tempdir().expect("tempdir");
    let plan_file = json_file(files.path(), "plan.json", &plan(t, &targets));
    assert_ne!(controller_of(&zk).await, Some(4), "the controller is one of 1-3");
    let held = Instant::now();
    brokers[3].pause().await;
    let started = Instant::now();
    let out = ok(&boot, &["--execute", "--reassignment-json-file", &plan_file]);
    assert!(
        out.contains("Successfully started partition reassignments for"),
        "{out}"
    );
    let moving = |znode: &serde_json::Value| {
        (0..PARTITIONS).all(|p| znode["adding_replicas"][p.to_string()] == serde_json::json!([4]))
    };
    wait_until_else(
        Duration::from_secs(20),
        "every partition adding broker 4",
        || async { moving(&topic_znode(&zk, t).await) },
        || logs(&brokers),
    )
    .await;
    for id in [1, 3] {
        bounce(&zk, &mut brokers, &specs, id).await;
        eprintln!("r15: broker {id} bounced {:?} after --execute", started.elapsed());
        // Back in every ISR it belongs to before the next fault.
        wait_until_else(
            Duration::from_secs(20),
            &format!("broker {id} back in sync"),
            || async {
                let m = metadata(&zk, 2).await;
                (0..PARTITIONS).all(|p| {
                    partition_in(&m, t, p).is_some_and(|(l, r, isr)| l >= 0 && (!r.contains(&id) || isr.contains(&id)))
                })
            },
            || logs(&brokers),
        )
        .await;
        let znode = topic_znode(&zk, t).await;
        assert!(moving(&znode), "still moving after broker {id}'s bounce: {znode}");
    }
    assert!(registered(&zk, 4).await, "the held broker still registered");
    brokers[3].signal("CONT");
    eprintln!("r15: broker 4 held {:?}", held.elapsed());
    producer.wait_more(300, "300 acknowledged after the bounces").await;

    verify_until_complete(
        &zk,
        &all,
        &plan_file,
        PARTITIONS as usize,
        Duration::from_secs(90),
        &brokers,
    )
    .await;
    eprintln!("r15: --verify complete {:?} after --execute", started.elapsed());
    producer.wait_more(300, "300 acknowledged after the move").await;
    let acks = producer.stop().await;

    let znode = topic_znode(&zk, t).await;
    for (p, r) in &targets {
        let r: Vec<i64> = r.iter().map(|b| i64::from(*b)).collect();
        assert_eq!(replicas_in(&znode, *p), r, "partition {p}: {znode}");
    }
    assert!(
        !has_field(&znode, "adding_replicas") && !has_field(&znode, "removing_replicas"),
        "{znode}"
    );
    wait_in_sync(&zk, 4, t, &targets, &brokers).await;
    wait_no_dirs(&brokers[0].log_dir, t, None, "broker 1's copies deleted", &brokers).await;
    assert_eq!(ok(&boot, &["--list"]), "No partition reassignments found.\n");

    let boot = bootstrap_among(&zk, &all).await;
    let mut total = 0;
    let mut merged = Anomalies::default();
    for p in 0..PARTITIONS {
        let acked: Vec<Ack> = acks
            .iter()
            .filter(|a| a.value % i64::from(PARTITIONS) == i64::from(p))
            .copied()
            .collect();
        let reads = consume_partition(&boot, t, p).await;
        let a = check(&acked, &reads);
        eprintln!(
            "r15: partition {p}: {} acknowledged, {} read, max gap {:?}",
            acked.len(),
            reads.len(),
            a.max_gap
        );
        assert!(
            a.lost.is_empty() && a.duplicated.is_empty() && a.reordered == 0 && a.inconsistent == 0 && a.ack_order == 0,
            "partition {p}: {a:?}"
        );
        total += acked.len();
        merged.acknowledged += a.acknowledged;
        merged.lost.extend(a.lost);
        merged.duplicated.extend(a.duplicated);
        merged.reordered += a.reordered;
        merged.inconsistent += a.inconsistent;
        merged.ack_order += a.ack_order;
        merged.max_gap = merged.max_gap.max(a.max_gap);
    }
    assert!(total >= 1_500, "{total} acknowledged");
    // The matrix row: the targets' copies batch for batch (once their log ends agree), one
    // active controller, every znode within its schema.
    let targets = [1usize, 2, 3];
    wait_until_else(
        Duration::from_secs(60),
        "the targets' logs to end at the same offset",
        || async {
            (0..PARTITIONS).all(|p| {
                let ends: Vec<i64> = targets.iter().map(|i| log_end(&brokers[*i].log_dir, t, p)).collect();
                ends.iter().all(|e| *e == ends[0])
            })
        },
        || logs(&brokers),
    )
    .await;
    let divergent: usize = (0..PARTITIONS)
        .map(|p| {
            let first = batch_crcs(&brokers[targets[0]].log_dir, t, p);
            targets[1..]
                .iter()
                .filter(|i| batch_crcs(&brokers[**i].log_dir, t, p) != first)
                .count()
        })
        .sum();
    let report = CaseReport {
        case: "R15 reassignment under load".into(),
        faults: "6 partitions 1-3 -> 2-4; SIGTERM 1, 3 mid-move".into(),
        anomalies: merged,
        divergent,
        controllers: live_controllers(&zk, &common::faults::metrics_of(&specs)).await,
        zk_violations: zk_violations(&zk).await,
        expect_loss: false,
        idempotent: true,
    };
    report.print();
    assert!(report.passed(), "{}", report.row());
    let _ = dirs(&brokers);
    zk.close().await;
}

/// A reassignment written to `/admin/reassign_partitions` as Kafka 2.x's `--zookeeper` tool
/// writes it: while it runs the topic znode lists adding/removing replicas; at the end the
/// topic znode holds the targets and the admin znode is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reassignment_written_to_the_admin_znode_runs_and_removes_it() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("reassign-znode");
    // Broker 4, held below, joins after the controller is elected among 1-3.
    let mut brokers = cluster::start(&chroot, &[1, 2, 3]);
    let zk = common::zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 3).await;
    brokers.extend(cluster::start(&chroot, &[4]));
    cluster::all_registered(&zk, 4).await;
    let all = [1, 2, 3, 4];
    let topic = format!("znode-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();
    create_topic(&bootstrap_among(&zk, &all).await, t, "1:2,2:1");
    wait_in_sync(&zk, 1, t, &[(0, vec![1, 2]), (1, vec![2, 1])], &brokers).await;

    // Broker 4 is held (SIGSTOP, less than the session) so that the move stays observable.
    brokers[3].pause().await;
    let text = plan(t, &[(0, vec![3, 4]), (1, vec![2, 4])]);
    zk.create("/admin/reassign_partitions", text.as_bytes(), CreateMode::Persistent)
        .await
        .expect("write /admin/reassign_partitions");
    let seen = std::cell::Cell::new(serde_json::Value::Null);
    wait_until_else(
        Duration::from_secs(20),
        "the topic znode lists adding and removing replicas",
        || async {
            let z = topic_znode(&zk, t).await;
            let yes = has_field(&z, "adding_replicas") && has_field(&z, "removing_replicas");
            seen.set(z);
            yes
        },
        || logs(&brokers),
    )
    .await;
    let during = seen.take();
    assert_eq!(during["adding_replicas"]["0"], serde_json::json!([3, 4]), "{during}");
    assert_eq!(during["removing_replicas"]["0"], serde_json::json!([1, 2]), "{during}");
    assert_eq!(during["adding_replicas"]["1"], serde_json::json!([4]), "{during}");
    assert_eq!(during["removing_replicas"]["1"], serde_json::json!([1]), "{during}");
    brokers[3].signal("CONT");

    wait_until_else(
        Duration::from_secs(60),
        "the targets in the topic znode and /admin/reassign_partitions gone",
        || async {
            let z = topic_znode(&zk, t).await;
            replicas_in(&z, 0) == vec![3, 4]
                && replicas_in(&z, 1) == vec![2, 4]
                && !has_field(&z, "adding_replicas")
                && !has_field(&z, "removing_replicas")
                && zk.exists("/admin/reassign_partitions").await.ok().flatten().is_none()
        },
        || logs(&brokers),
    )
    .await;
    wait_in_sync(&zk, 2, t, &[(0, vec![3, 4]), (1, vec![2, 4])], &brokers).await;
    wait_no_dirs(&brokers[0].log_dir, t, None, "broker 1's copies deleted", &brokers).await;
    zk.close().await;
}

/// A reassignment that cannot finish (its target held by SIGSTOP), the active controller
/// killed -9, the target resumed: the next controller completes it from the topic znode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_controller_completes_a_reassignment_after_kill_9() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("reassign-failover");
    let (zk, _specs, brokers) = loopback(&chroot, 4, &[]).await;
    let all = [1, 2, 3, 4];
    let controller = controller_of(&zk).await.expect("a controller");
    // The partition on two brokers other than the controller; the target a third one.
    let others: Vec<i32> = all.iter().copied().filter(|b| *b != controller).collect();
    let (a, b, target) = (others[0], others[1], others[2]);
    let topic = format!("failover-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();
    create_topic(&bootstrap_among(&zk, &all).await, t, &format!("{a}:{b}"));
    wait_in_sync(&zk, a, t, &[(0, vec![a, b])], &brokers).await;
    let input: String = (0..20).map(|i| format!("k{i}:v{i}\n")).collect();
    let (bs, ts, inp) = (bootstrap_among(&zk, &[a]).await, topic.clone(), input.clone());
    tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, &inp))
        .await
        .expect("kcat");

    let files = tempfile::tempdir().expect("tempdir");
    let moved = vec![a, target];
    let plan_file = json_file(files.path(), "plan.json", &plan(t, &[(0, moved.clone())]));
    let i_target = (target - 1) as usize;
    brokers[i_target].pause().await;
    ok(
        &bootstrap_among(&zk, &[a, b]).await,
        &["--execute", "--reassignment-json-file", &plan_file],
    );
    wait_until_else(
        Duration::from_secs(10),
        "the reassignment in progress in the topic znode",
        || async { has_field(&topic_znode(&zk, t).await, "adding_replicas") },
        || logs(&brokers),
    )
    .await;

    brokers[(controller - 1) as usize].signal("KILL");
    brokers[i_target].signal("CONT");
    wait_until_else(
        Duration::from_secs(30),
        "another controller",
        || async { controller_of(&zk).await.is_some_and(|c| c != controller) },
        || logs(&brokers),
    )
    .await;
    let survivors: Vec<i32> = all.iter().copied().filter(|x| *x != controller).collect();
    verify_until_complete(&zk, &survivors, &plan_file, 1, Duration::from_secs(60), &brokers).await;
    let znode = topic_znode(&zk, t).await;
    assert_eq!(replicas_in(&znode, 0), vec![i64::from(a), i64::from(target)], "{znode}");
    assert!(
        !has_field(&znode, "adding_replicas") && !has_field(&znode, "removing_replicas"),
        "{znode}"
    );
    wait_in_sync(&zk, a, t, &[(0, moved)], &brokers).await;
    wait_no_dirs(
        &brokers[(b - 1) as usize].log_dir,
        t,
        Some(0),
        "the removed replica's copy deleted",
        &brokers,
    )
    .await;
    zk.close().await;
}

/// A reassignment that cannot finish (its target held), cancelled: the original replicas come
/// back (as a set) and the partial copy on the target is deleted once it runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_reassignment_restores_the_replicas_and_deletes_the_partial_copy() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("reassign-cancel");
    let brokers = cluster::start(&chroot, &[1, 2, 3, 4]);
    let zk = common::zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 4).await;
    let all = [1, 2, 3, 4];
    let controller = controller_of(&zk).await.expect("a controller");
    let target = if controller == 4 { 3 } else { 4 };
    let rest: Vec<i32> = all
        .iter()
        .copied()
        .filter(|x| *x != target && *x != controller)
        .collect();
    let (a, b) = (rest[0], rest[1]);
    let topic = format!("cancel-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();
    create_topic(&bootstrap_among(&zk, &all).await, t, &format!("{a}:{b}"));
    wait_in_sync(&zk, a, t, &[(0, vec![a, b])], &brokers).await;
    let input: String = (0..50).map(|i| format!("k{i}:v{i}\n")).collect();
    let (bs, ts, inp) = (bootstrap_among(&zk, &[a]).await, topic.clone(), input.clone());
    tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, &inp))
        .await
        .expect("kcat");

    let files = tempfile::tempdir().expect("tempdir");
    let plan_file = json_file(files.path(), "plan.json", &plan(t, &[(0, vec![a, target])]));
    let boot = bootstrap_among(&zk, &[a, b]).await;
    let i_target = (target - 1) as usize;
    brokers[i_target].pause().await;
    ok(&boot, &["--execute", "--reassignment-json-file", &plan_file]);
    let out = ok(&boot, &["--verify", "--reassignment-json-file", &plan_file]);
    assert!(out.contains("is still in progress."), "{out}");
    // No throttle was set, and clearing the broker-level ones (what --cancel does by default)
    // would have to reach the stopped target too.
    let out = ok(
        &boot,
        &[
            "--cancel",
            "--preserve-throttles",
            "--reassignment-json-file",
            &plan_file,
        ],
    );
    assert!(
        out.contains(&format!("Successfully cancelled partition reassignment for: {t}-0")),
        "{out}"
    );
    brokers[i_target].signal("CONT");

    let original: BTreeSet<i64> = [a, b].iter().map(|x| i64::from(*x)).collect();
    wait_until_else(
        Duration::from_secs(30),
        "the original replicas back in the topic znode",
        || async {
            let z = topic_znode(&zk, t).await;
            replicas_in(&z, 0).into_iter().collect::<BTreeSet<_>>() == original
                && !has_field(&z, "adding_replicas")
                && !has_field(&z, "removing_replicas")
        },
        || logs(&brokers),
    )
    .await;
    assert_eq!(ok(&boot, &["--list"]), "No partition reassignments found.\n");
    let last = std::cell::RefCell::new(None);
    wait_until_else(
        Duration::from_secs(30),
        "Metadata shows the original replicas in sync",
        || async {
            let seen = partition_in(&metadata(&zk, a).await, t, 0);
            let yes = seen.as_ref().is_some_and(|(l, r, isr)| {
                *l >= 0 && r.iter().map(|x| i64::from(*x)).collect::<BTreeSet<_>>() == original && isr.len() == 2
            });
            *last.borrow_mut() = Some((seen, cluster::state(&zk, t, 0).await));
            yes
        },
        || format!("last seen (metadata, state): {:?}\n{}", last.borrow(), logs(&brokers)),
    )
    .await;
    wait_no_dirs(
        &brokers[i_target].log_dir,
        t,
        Some(0),
        "the target's partial copy deleted",
        &brokers,
    )
    .await;
    let (bs, ts) = (bootstrap_among(&zk, &[a]).await, topic.clone());
    let consumed = tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, "k:last\n"))
        .await
        .expect("kcat");
    assert_eq!(consumed.lines().count(), 51, "{consumed}");
    zk.close().await;
}

/// RF 1 -> 3 and RF 3 -> 2 through `--execute` with longer and shorter replica lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_factor_changes_up_and_down() {
    let _serial = SERIAL.lock().await;
    let chroot = unique_chroot("reassign-rf");
    let brokers = cluster::start(&chroot, &[1, 2, 3, 4]);
    let zk = common::zookeeper().session(&chroot).await;
    cluster::cluster_ready(&zk, 4).await;
    let all = [1, 2, 3, 4];
    let topic = format!("rf-{}", uuid::Uuid::new_v4().simple());
    let t = topic.as_str();
    let boot = bootstrap_among(&zk, &all).await;
    // `topics --create` refuses partitions of different replication factors, as Kafka's does.
    cluster::create_topic_by_hand(&zk, t, r#"{"0":[1],"1":[1,2,3]}"#).await;
    wait_in_sync(&zk, 1, t, &[(0, vec![1]), (1, vec![1, 2, 3])], &brokers).await;
    let input: String = (0..30).map(|i| format!("k{i}:v{i}\n")).collect();
    let (bs, ts, inp) = (boot.clone(), topic.clone(), input.clone());
    tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, &inp))
        .await
        .expect("kcat");

    let targets = vec![(0, vec![1, 2, 3]), (1, vec![1, 2])];
    let files = tempfile::tempdir().expect("tempdir");
    let plan_file = json_file(files.path(), "plan.json", &plan(t, &targets));
    ok(&boot, &["--execute", "--reassignment-json-file", &plan_file]);
    verify_until_complete(&zk, &all, &plan_file, 2, Duration::from_secs(60), &brokers).await;
    let znode = topic_znode(&zk, t).await;
    assert_eq!(replicas_in(&znode, 0), vec![1, 2, 3], "{znode}");
    assert_eq!(replicas_in(&znode, 1), vec![1, 2], "{znode}");
    assert!(
        !has_field(&znode, "adding_replicas") && !has_field(&znode, "removing_replicas"),
        "{znode}"
    );
    wait_in_sync(&zk, 2, t, &targets, &brokers).await;
    wait_no_dirs(
        &brokers[2].log_dir,
        t,
        Some(1),
        "broker 3's copy of partition 1 deleted",
        &brokers,
    )
    .await;
    // Partition 0's new replicas hold its data: each of brokers 2 and 3 has a log for it.
    for b in [1usize, 2] {
        assert!(
            !dirs_of(&brokers[b].log_dir, t, Some(0)).is_empty(),
            "broker {} hosts {t}-0",
            b + 1
        );
    }
    let (bs, ts) = (boot.clone(), topic.clone());
    let consumed = tokio::task::spawn_blocking(move || common::kcat_roundtrip(&bs, &ts, "k:last\n"))
        .await
        .expect("kcat");
    assert_eq!(consumed.lines().count(), 31, "{consumed}");
    zk.close().await;
}
