//! The soak (reliability.md §3, "soak variant"): three brokers (RF 3, min ISR 2) under an
//! idempotent acks=all producer, a plain acks=all producer and a two-member consumer group
//! (kafka-python and confluent-kafka, committing), while faults drawn from a seeded RNG hit the
//! cluster one at a time, each followed by a recovery deadline (the ISR whole again and both
//! producers acknowledging). At the end the matrix's checker judges both topics (its rows go to
//! the reliability table), the group's records are checked against the final read, and a summary
//! (faults per kind with their unavailability windows, records, anomalies, the seed) is printed.
//!
//! `scripts/soak --minutes N [--seed S]` runs it (`KASTLE_SOAK_MINUTES`, `KASTLE_SOAK_SEED`);
//! `scripts/test` runs 3 minutes. A run that finds an anomaly or misses a recovery deadline
//! fails, and prints the seed that replays its fault sequence.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::cluster::controller_of;
use common::faults::{dirs, disrupt, netns_cluster, private_cluster, registered, Fault, NetCluster, Target, SAFE};
use common::groups::Member;
use common::netns::Lab;
use common::reliability::{consume, finish, table, Case, CaseReport, Read, Workload};
use common::replicas::{bootstrap, create_topic, isr, leader, SESSION_MS};
use common::soak::{fault_table, group_check, plan, rng, unavailability, GroupAnomalies, Kind, Planned, Ran};
use common::wait_until;

/// The idempotent producer's topic, then the plain producer's; one partition each, RF 3.
const TOPICS: [&str; 2] = ["soak-idempotent", "soak-plain"];

/// Records per second of each producer.
const RATE: u32 = 150;

const GROUP: &str = "soak-group";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Lets `d` pass (a fault's planned duration), polling.
async fn hold(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A broker that follows `topic` and, when it can be helped, leads neither topic and is not the
/// controller.
async fn follower(c: &NetCluster, topic: &str) -> i32 {
    let l = leader(&c.zk, topic).await;
    let mut leaders = Vec::new();
    for t in TOPICS {
        leaders.push(leader(&c.zk, t).await);
    }
    let controller = controller_of(&c.zk).await.unwrap_or(-1);
    (1..=c.brokers.len() as i32)
        .filter(|id| *id != l)
        .min_by_key(|id| (leaders.contains(id), *id == controller))
        .expect("a follower")
}

/// Injects one fault and returns once it has been undone (the broker restarted, resumed or
/// healed); the caller then waits for recovery.
async fn inject(c: &mut NetCluster, p: &Planned) -> String {
    let topic = TOPICS[p.topic];
    let process = match p.kind {
        Kind::LeaderTerm => Some((Target::Leader, Fault::Term)),
        Kind::LeaderKill => Some((Target::Leader, Fault::Kill)),
        Kind::LeaderPause => Some((Target::Leader, Fault::Pause)),
        Kind::ControllerTerm => Some((Target::Controller, Fault::Term)),
        Kind::ControllerKill => Some((Target::Controller, Fault::Kill)),
        Kind::ControllerPause => Some((Target::Controller, Fault::Pause)),
        _ => None,
    };
    if let Some((target, fault)) = process {
        let old = match target {
            Target::Leader => leader(&c.zk, topic).await,
            Target::Controller => controller_of(&c.zk).await.unwrap_or(-1),
        };
        assert!(old > 0, "a {target:?} to disrupt");
        disrupt(&c.zk, &mut c.brokers, &c.specs, old, target, fault, topic).await;
        return match target {
            Target::Leader => format!("broker {old} (leader of {topic})"),
            Target::Controller => format!("broker {old} (the controller)"),
        };
    }
    match p.kind {
        Kind::FollowerPauseShort => {
            let f = follower(c, topic).await;
            let b = &c.brokers[(f - 1) as usize];
            b.pause().await;
            hold(p.hold).await;
            b.signal("CONT");
            format!("broker {f} (follower of {topic}) for {:?}", p.hold)
        }
        Kind::ZooKeeperPauseShort => {
            let paused = c.server.pause();
            hold(p.hold).await;
            drop(paused);
            format!("the ZooKeeper server for {:?}", p.hold)
        }
        Kind::FollowerCut => {
            let f = follower(c, topic).await;
            let lab = c.lab();
            for other in (1..=c.brokers.len()).filter(|o| *o != f as usize) {
                lab.cut(f as usize, other);
            }
            wait_until(Duration::from_secs(20), "the cut follower out of the ISR", || async {
                !isr(&c.zk, topic).await.contains(&f)
            })
            .await;
            hold(p.hold).await;
            lab.heal();
            format!("broker {f} (follower of {topic}), {:?} after leaving the ISR", p.hold)
        }
        Kind::LeaderCut => {
            let l = leader(&c.zk, topic).await;
            assert!(l > 0, "a leader to isolate");
            let lab = c.lab();
            for other in (1..=c.brokers.len()).filter(|o| *o != l as usize) {
                lab.cut(l as usize, other);
            }
            lab.cut_from_host(l as usize);
            wait_until(
                Duration::from_millis(SESSION_MS + 20_000),
                "another leader elected and the isolated one's session gone",
                || async {
                    let now = leader(&c.zk, topic).await;
                    now > 0 && now != l && !registered(&c.zk, l).await
                },
            )
            .await;
            lab.heal();
            format!("broker {l} (leader of {topic})")
        }
        _ => unreachable!("process faults handled above"),
    }
}

/// Recovery: every topic's ISR whole with a leader, a controller, and both producers
/// acknowledging again.
async fn recover(c: &NetCluster, producers: &[&Workload]) {
    let n = c.brokers.len();
    wait_until(
        Duration::from_secs(90),
        "every ISR whole again and a controller",
        || async {
            for t in TOPICS {
                if isr(&c.zk, t).await.len() != n || leader(&c.zk, t).await < 0 {
                    return false;
                }
            }
            controller_of(&c.zk).await.is_some()
        },
    )
    .await;
    for (w, topic) in producers.iter().zip(TOPICS) {
        w.wait_more(
            100,
            Duration::from_secs(60),
            &format!("100 more acknowledged on {topic} after the fault"),
        )
        .await;
    }
}

/// What a failed soak leaves behind: a directory that outlives the run, holding the producers'
/// acknowledgements and logs (hard links made at the start, so they survive the workloads' temp
/// dirs), the final reads, the group members' output, and (written on drop) every incarnation of
/// each broker's log. Removed when the soak passes.
/// Declared after the cluster, so it drops first, while the brokers' files still exist.
struct Evidence {
    seed: u64,
    dir: std::path::PathBuf,
    /// Each broker's stderr.log and those of its earlier incarnations (stderr.<n>.log).
    brokers: Vec<std::path::PathBuf>,
    passed: bool,
}

impl Evidence {
    fn new(seed: u64, c: &NetCluster, producers: &[(&str, &Workload)]) -> Evidence {
        let dir = std::env::temp_dir().join(format!("kastle-soak-{seed}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("evidence dir");
        for (name, w) in producers {
            let _ = std::fs::hard_link(w.acked_path(), dir.join(format!("{name}.acked")));
            let _ = std::fs::hard_link(w.stderr_path(), dir.join(format!("{name}.log")));
        }
        Evidence {
            seed,
            dir,
            brokers: c.brokers.iter().map(|b| b.dir.path().to_path_buf()).collect(),
            passed: false,
        }
    }

    /// Records a final read (`offset value` lines).
    fn reads(&self, topic: &str, reads: &[Read]) {
        let text: String = reads.iter().map(|r| format!("{} {}\n", r.offset, r.value)).collect();
        let _ = std::fs::write(self.dir.join(format!("{topic}.reads")), text);
    }

    /// Records what each group member printed (assignments, records, client errors).
    fn members(&self, members: &[Member]) {
        for (i, m) in members.iter().enumerate() {
            let _ = std::fs::write(
                self.dir.join(format!("member-{}-{}.log", i + 1, m.name)),
                m.output().join("\n"),
            );
        }
    }
}

impl Drop for Evidence {
    fn drop(&mut self) {
        if self.passed && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
            return;
        }
        for (i, dir) in self.brokers.iter().enumerate() {
            let mut log = Vec::new();
            for n in 1.. {
                match std::fs::read(dir.join(format!("stderr.{n}.log"))) {
                    Ok(text) => log.extend(text),
                    Err(_) => break,
                }
            }
            log.extend(std::fs::read(dir.join("stderr.log")).unwrap_or_default());
            let _ = std::fs::write(self.dir.join(format!("broker-{}.log", i + 1)), log);
        }
        eprintln!(
            "soak failed (seed {}): acknowledgements, reads and logs kept in {}",
            self.seed,
            self.dir.display()
        );
    }
}

fn ack_times(w: &Workload) -> Vec<i64> {
    let mut t: Vec<i64> = w.acks().iter().map(|a| a.at_ms).collect();
    t.sort();
    t
}

/// The schedule is a function of the seed alone, so `--seed` replays it.
#[test]
fn the_fault_schedule_replays_from_its_seed() {
    let draw = |seed, lab| {
        let mut r = rng(seed);
        (0..40).map(|_| plan(&mut r, &Kind::available(lab))).collect::<Vec<_>>()
    };
    assert_eq!(draw(7, true), draw(7, true));
    assert_ne!(draw(7, true), draw(8, true));
    let kinds: std::collections::HashSet<Kind> = draw(1, true).iter().map(|p| p.kind).collect();
    assert!(kinds.len() >= 8, "40 draws cover the kinds: {kinds:?}");
    assert!(draw(1, false).iter().all(|p| !p.kind.needs_lab()));
    for p in draw(3, true) {
        if matches!(p.kind, Kind::FollowerPauseShort | Kind::ZooKeeperPauseShort) {
            assert!(p.hold < Duration::from_millis(SESSION_MS / 2), "{p:?}");
        }
    }
}

#[test]
fn unavailability_is_the_longest_gap_between_acks_around_a_fault() {
    let times = [1_000, 1_100, 1_200, 4_200, 4_300, 9_000];
    // The fault from 1_150 to 4_300: 1_100 -> 1_200 -> 4_200 -> 4_300.
    assert_eq!(unavailability(&times, 1_150, 4_300), Duration::from_millis(3_000));
    // No acknowledgement after the fault began up to its end: the whole window counts.
    assert_eq!(unavailability(&times, 5_000, 8_000), Duration::from_millis(3_700));
    assert_eq!(unavailability(&[], 5_000, 8_000), Duration::from_millis(3_000));
}

#[test]
fn the_group_check_reports_skipped_mismatched_and_behind() {
    let reads: Vec<Read> = (0..6)
        .map(|o| Read {
            offset: o,
            value: o * 10,
        })
        .collect();
    let clean = group_check(&[(0, 0), (1, 10), (2, 20), (2, 20), (3, 30), (4, 40), (5, 50)], &reads);
    assert_eq!((clean.redelivered, clean.anomalies()), (1, 0), "{clean:?}");
    let bad = group_check(&[(0, 0), (2, 20), (3, 31)], &reads);
    assert_eq!((bad.skipped, bad.mismatched, bad.behind), (1, 1, true), "{bad:?}");
    assert_eq!(bad.anomalies(), 3);
    // A record processed that the final read does not hold (read above the high watermark).
    assert_eq!(group_check(&[(6, 60)], &reads).mismatched, 1);
}

/// Acknowledged offsets out of send order fail an idempotent producer only; an offset holding
/// another value than acknowledged fails both.
#[test]
fn acks_out_of_send_order_fail_only_an_idempotent_producer() {
    use common::reliability::{check, Ack};
    let ack = |value, offset| Ack {
        value,
        offset,
        at_ms: 1_000 + value,
    };
    // 0 in flight to the old leader is retried after 1 went to the new one: 1 at offset 1,
    // 0 again at offset 2 (the old leader had written it at 0 before it moved).
    let acks = [ack(0, 2), ack(1, 1)];
    let reads = [(0, 0), (1, 1), (2, 0)].map(|(offset, value)| Read { offset, value });
    let a = check(&acks, &reads);
    assert_eq!((a.ack_order, a.inconsistent, a.duplicated.clone()), (1, 0, vec![0]));
    let report = |idempotent| CaseReport {
        case: "t".into(),
        faults: "-".into(),
        anomalies: a.clone(),
        divergent: 0,
        controllers: 1,
        zk_violations: 0,
        expect_loss: false,
        idempotent,
    };
    assert!(!report(true).passed());
    assert!(report(false).passed());
    let wrong = check(&[ack(0, 1)], &reads);
    assert_eq!(wrong.inconsistent, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes long: scripts/soak (scripts/test runs 3 minutes)"]
async fn soak_randomized_faults_lose_nothing() {
    let minutes: f64 = std::env::var("KASTLE_SOAK_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(5.0);
    let seed: u64 = std::env::var("KASTLE_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| now_ms() as u64 % 1_000_000);
    let replay = format!("scripts/soak --minutes {minutes} --seed {seed}");
    eprintln!("soak: seed {seed}, {minutes} minutes of faults (replay: {replay})");
    let mut extra = SAFE.to_vec();
    extra.extend([
        ("offsets.topic.num.partitions", "3"),
        ("group.initial.rebalance.delay.ms", "0"),
    ]);
    let lab = Lab::unavailable();
    let mut c = match &lab {
        None => netns_cluster("soak", "soak", 3, &extra).await.expect("a lab"),
        Some(reason) => {
            eprintln!("soak: network faults left out: {reason}");
            private_cluster("soak", 3, &extra).await
        }
    };
    let kinds = Kind::available(lab.is_none());
    for t in TOPICS {
        create_topic(&c.zk, t, "[1,2,3]").await;
    }
    let boot = bootstrap(&c.zk).await;
    let idempotent = Workload::start(&boot, TOPICS[0], "all", true, RATE);
    let plain = Workload::start(&boot, TOPICS[1], "all", false, RATE);
    let subscribed = TOPICS.join(",");
    let members = [
        Member::start_with("kafka-python", &boot, &subscribed, GROUP, 10_000, "", ""),
        // Asynchronous commits: with synchronous ones librdkafka 2.16 once blocked the member's
        // thread in a commit for good (no error, heartbeats going on) after coordinator moves,
        // and the group check then failed on a client that had stopped consuming.
        Member::start_with_env(
            "confluent-kafka",
            &boot,
            &subscribed,
            GROUP,
            10_000,
            "",
            "roundrobin",
            &[("KASTLE_MEMBER_COMMIT", "async")],
        ),
    ];
    let mut evidence = Evidence::new(seed, &c, &[(TOPICS[0], &idempotent), (TOPICS[1], &plain)]);
    for w in [&idempotent, &plain] {
        w.wait_more(500, Duration::from_secs(90), "500 acknowledged before the first fault")
            .await;
    }

    let mut r = rng(seed);
    let mut ran: Vec<Ran> = Vec::new();
    let end = Instant::now() + Duration::from_secs_f64(minutes * 60.0);
    while Instant::now() < end {
        let p = plan(&mut r, &kinds);
        let (from, started) = (now_ms(), Instant::now());
        let on = inject(&mut c, &p).await;
        eprintln!("soak fault {}: {} on {on}; recovering", ran.len() + 1, p.kind.name());
        recover(&c, &[&idempotent, &plain]).await;
        let to = now_ms();
        let unavailable = [&idempotent, &plain]
            .iter()
            .map(|w| unavailability(&ack_times(w), from, to))
            .max()
            .unwrap_or_default();
        eprintln!(
            "soak fault {}: recovered in {:.1}s, longest gap between acks {:.1}s",
            ran.len() + 1,
            started.elapsed().as_secs_f64(),
            unavailable.as_secs_f64()
        );
        ran.push(Ran {
            kind: p.kind,
            unavailable,
        });
        hold(p.rest).await;
    }

    let faults = format!("{} random (seed {seed})", ran.len());
    let mut reports: Vec<CaseReport> = Vec::new();
    for (w, (topic, idem)) in [idempotent, plain]
        .into_iter()
        .zip([(TOPICS[0], true), (TOPICS[1], false)])
    {
        let name = if idem { "soak idempotent" } else { "soak plain" };
        let case = Case {
            name,
            faults: &faults,
            topic,
            idempotent: idem,
            expect_loss: false,
        };
        reports.push(finish(&case, &c.zk, &dirs(&c.brokers), &c.metrics, &boot, w).await);
    }

    // The group: caught up with the final read of both topics, then judged against it.
    let mut finals: Vec<Vec<Read>> = Vec::new();
    for t in TOPICS {
        let reads = consume(&boot, t).await;
        evidence.reads(t, &reads);
        finals.push(reads);
    }
    let processed = |members: &[Member], topic: &str| -> Vec<(i64, i64)> {
        members
            .iter()
            .flat_map(|m| m.topic_records())
            .filter(|(t, p, _, _)| t == topic && *p == 0)
            .filter_map(|(_, _, o, v)| Some((o, v.parse().ok()?)))
            .collect()
    };
    let caught_up = Instant::now();
    while caught_up.elapsed() < Duration::from_secs(60)
        && TOPICS
            .iter()
            .zip(&finals)
            .any(|(t, f)| group_check(&processed(&members, t), f).behind)
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let groups: Vec<GroupAnomalies> = TOPICS
        .iter()
        .zip(&finals)
        .map(|(t, f)| group_check(&processed(&members, t), f))
        .collect();
    evidence.members(&members);
    let mut rebalances = 0;
    for m in members {
        rebalances += m.assignments();
        m.stop().await;
    }

    let mut rows = vec![
        "producer\tacknowledged\tlost\tduplicated\treordered\tinconsistent\tack order\tdivergent\tmax unavailable\tverdict"
            .to_string(),
    ];
    for rep in &reports {
        let a = &rep.anomalies;
        rows.push(format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:.1}s\t{}",
            rep.case,
            a.acknowledged,
            a.lost.len(),
            a.duplicated.len(),
            a.reordered,
            a.inconsistent,
            a.ack_order,
            rep.divergent,
            a.max_gap.as_secs_f64(),
            rep.verdict()
        ));
    }
    let mut group_rows = vec!["group topic\tprocessed\tredelivered\tskipped\tmismatched\tbehind".to_string()];
    for (t, g) in TOPICS.iter().zip(&groups) {
        group_rows.push(format!(
            "{t}\t{}\t{}\t{}\t{}\t{}",
            g.processed, g.redelivered, g.skipped, g.mismatched, g.behind
        ));
    }
    let group_anomalies: usize = groups.iter().map(GroupAnomalies::anomalies).sum();
    let passed = reports.iter().all(CaseReport::passed) && group_anomalies == 0 && !ran.is_empty();
    let summary = format!(
        "\nSoak: seed {seed}, {minutes} minutes, {} faults{}, {rebalances} assignments seen by the group, \
         controllers {}, ZooKeeper violations {}\n{}\n\n{}\n\n{}\n\nverdict: {} (replay: {replay})\n",
        ran.len(),
        if lab.is_some() {
            " (no network faults: not root)"
        } else {
            ""
        },
        reports.last().map_or(0, |r| r.controllers),
        reports.last().map_or(0, |r| r.zk_violations),
        fault_table(&ran),
        table(&rows),
        table(&group_rows),
        if passed { "pass" } else { "FAIL" },
    );
    eprintln!("{summary}");
    if let Some(path) = std::env::var_os("KASTLE_SOAK_SUMMARY") {
        let _ = std::fs::write(path, &summary);
    }
    evidence.passed = passed;
    c.zk.close().await;
    assert!(passed, "the soak found anomalies{summary}");
}
