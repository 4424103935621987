//! SCRAM users managed with `kastle configs --entity-type users` (and kafka-python's admin
//! `alter_user_scram_credentials`) on a 3-broker cluster whose client listeners are
//! SASL_PLAINTEXT (inter-broker stays PLAINTEXT): a new user logs in on every broker within
//! 2 s, a deleted credential stops working on every broker, and a storm of 1,000 failed logins
//! does not slow an authenticated producer on the same broker.

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{cluster_ready, create_topic_by_hand};
use common::replicas::produce_request;
use common::sasl::{
    client_sasl_spec, sasl_bootstrap, scram_login, scram_login_timed, scram_login_with_a_wrong_proof,
    SASL_AUTHENTICATION_FAILED,
};
use common::{bootstrap_of, unique_chroot, wait_until, zookeeper, BrokerProcess};
use kastle::security::sasl::ScramMechanism;
use kastle::zk::ZkSession;

const SHA256: ScramMechanism = ScramMechanism::Sha256;
const SHA512: ScramMechanism = ScramMechanism::Sha512;

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("spawn");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `kastle configs ARGS` (blocking: from `spawn_blocking`).
fn kastle_configs(args: &[&str]) -> (i32, String, String) {
    run(Command::new(env!("CARGO_BIN_EXE_kastle"))
        .arg("configs")
        .args(args)
        .env("KASTLE_LOG", "warn"))
}

/// `kastle configs --bootstrap-server ADMIN --entity-type users --entity-name USER EXTRA`.
async fn configs_user(admin: &str, user: &str, extra: &[&str]) -> (i32, String, String) {
    let mut args: Vec<String> = [
        "--bootstrap-server",
        admin,
        "--entity-type",
        "users",
        "--entity-name",
        user,
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    tokio::task::spawn_blocking(move || kastle_configs(&args.iter().map(String::as_str).collect::<Vec<_>>()))
        .await
        .expect("join")
}

async fn three_brokers(test: &str) -> (ZkSession, Vec<BrokerProcess>, String, Vec<String>) {
    let chroot = unique_chroot(test);
    let zk = zookeeper().session(&chroot).await;
    let brokers: Vec<BrokerProcess> = (1..=3)
        .map(|id| BrokerProcess::start(&client_sasl_spec(&chroot, id)))
        .collect();
    cluster_ready(&zk, 3).await;
    let admin = bootstrap_of(&zk, 1).await;
    let mut sasl = Vec::new();
    for id in 1..=3 {
        sasl.push(sasl_bootstrap(&zk, id).await);
    }
    (zk, brokers, admin, sasl)
}

/// How long after `since` each broker first accepted `user`'s login (`None`: not by
/// `deadline`), timed at the broker's server-first of the login that then succeeds.
async fn first_logins(
    brokers: &[String],
    mechanism: ScramMechanism,
    user: &str,
    password: &str,
    since: Instant,
    deadline: Duration,
) -> Vec<Option<Duration>> {
    let polls = brokers.iter().map(|addr| {
        let (addr, user, password) = (addr.clone(), user.to_string(), password.to_string());
        tokio::spawn(async move {
            while since.elapsed() < deadline {
                if let Ok((_, known_at)) = scram_login_timed(&addr, mechanism, &user, &password).await {
                    return Some(known_at - since);
                }
            }
            None
        })
    });
    let mut out = Vec::new();
    for poll in polls.collect::<Vec<_>>() {
        out.push(poll.await.expect("join"));
    }
    out
}

/// Waits until `user` cannot log in with `mechanism` on any broker.
async fn refused_everywhere(brokers: &[String], mechanism: ScramMechanism, user: &str, password: &str) {
    for addr in brokers {
        wait_until(
            Duration::from_secs(10),
            &format!("{user} refused on {addr}"),
            || async {
                matches!(
                    scram_login(addr, mechanism, user, password).await,
                    Err((SASL_AUTHENTICATION_FAILED, _))
                )
            },
        )
        .await;
    }
}

/// kcat logs in on `addr` (a real client, not just the raw exchange).
async fn kcat_logs_in(addr: &str, mechanism: ScramMechanism, user: &str, password: &str) -> bool {
    let args: Vec<String> = [
        "-b",
        addr,
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        &format!("sasl.mechanisms={mechanism}"),
        "-X",
        &format!("sasl.username={user}"),
        "-X",
        &format!("sasl.password={password}"),
        "-L",
        "-m",
        "5",
    ]
    .map(String::from)
    .to_vec();
    tokio::task::spawn_blocking(move || run(Command::new("kcat").args(&args)).0 == 0)
        .await
        .expect("join")
}

/// kafka-python's KafkaAdminClient on argv[1]: `add USER PASSWORD` (SCRAM-SHA-512, 8192
/// iterations; prints the per-user error, `None` on success) or `describe USER`.
const KAFKA_PYTHON_ADMIN: &str = r#"
import sys
from kafka import KafkaAdminClient
from kafka.admin import UserScramCredentialUpsertion
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
action, user = sys.argv[2], sys.argv[3]
if action == "add":
    print(a.alter_user_scram_credentials(
        [UserScramCredentialUpsertion(user, "SCRAM-SHA-512", sys.argv[4], iterations=8192)])[user])
else:
    d = a.describe_user_scram_credentials([user])[user]
    print(d["error"] or ",".join("%s:%d" % (i["mechanism"].name, i["iterations"]) for i in d["credential_infos"]))
a.close()
"#;

async fn kafka_python_admin(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        run(Command::new(common::python())
            .arg("-c")
            .arg(KAFKA_PYTHON_ADMIN)
            .args(&args))
    })
    .await
    .expect("join");
    assert_eq!(code, 0, "kafka-python admin: {err}");
    out.trim().to_string()
}

fn assert_within_2_s(what: &str, brokers: &[String], times: &[Option<Duration>]) {
    for (addr, t) in brokers.iter().zip(times) {
        println!("{what}: first login on {addr} after {t:?}");
    }
    assert!(
        times.iter().all(|t| t.is_some_and(|t| t <= Duration::from_secs(2))),
        "{what}: every broker accepts the login within 2 s: {times:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_created_with_kastle_configs_or_kafka_python_logs_in_on_every_broker_within_2_s() {
    let (zk, _brokers, admin, sasl) = three_brokers("sasl-users-create").await;
    assert!(matches!(
        scram_login(&sasl[0], SHA256, "dora", "dora-secret").await,
        Err((SASL_AUTHENTICATION_FAILED, _))
    ));

    let (code, out, err) = configs_user(
        &admin,
        "dora",
        &[
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=dora-secret],SCRAM-SHA-512=[password=dora-other]",
        ],
    )
    .await;
    let written = Instant::now();
    assert_eq!(
        (code, out.as_str()),
        (0, "Completed updating config for user dora.\n"),
        "{err}"
    );
    let times = first_logins(&sasl, SHA256, "dora", "dora-secret", written, Duration::from_secs(5)).await;
    assert_within_2_s("kastle configs, SCRAM-SHA-256", &sasl, &times);
    for addr in &sasl {
        assert!(
            scram_login(addr, SHA512, "dora", "dora-other").await.is_ok(),
            "SHA-512 on {addr}"
        );
        assert!(kcat_logs_in(addr, SHA512, "dora", "dora-other").await, "kcat on {addr}");
    }
    assert!(matches!(
        scram_login(&sasl[1], SHA256, "dora", "dora-other").await,
        Err((SASL_AUTHENTICATION_FAILED, _))
    ));

    // Stored as Kafka stores it, salted client-side; described in kafka-configs' shape.
    let (config, _) = kastle::zk::KafkaZkClient::new(zk.clone())
        .entity_config_versioned("users", "dora")
        .await
        .expect("read /config/users/dora");
    assert!(config["SCRAM-SHA-256"].ends_with(",iterations=8192"), "{config:?}");
    assert!(config["SCRAM-SHA-512"].ends_with(",iterations=4096"), "{config:?}");
    assert!(!config.values().any(|v| v.contains("dora-")), "no password stored");
    let (code, out, err) = configs_user(&admin, "dora", &["--describe"]).await;
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "SCRAM credential configs for user-principal 'dora' are SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
        ),
        "{err}"
    );

    // Refused before anything is sent, with the reason named.
    let (code, _, err) = configs_user(
        &admin,
        "dora",
        &["--alter", "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"),
        "{err}"
    );
    let (code, _, err) = configs_user(&admin, "dora", &["--alter", "--add-config", "SCRAM-SHA-1=[password=x]"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("Unexpected config names: Set(SCRAM-SHA-1)"), "{err}");

    // kafka-python 3's admin has alter_user_scram_credentials: the same path, another client.
    assert_eq!(
        kafka_python_admin(&[&admin, "add", "erin", "erin-secret"]).await,
        "None"
    );
    let written = Instant::now();
    let times = first_logins(&sasl, SHA512, "erin", "erin-secret", written, Duration::from_secs(5)).await;
    assert_within_2_s("kafka-python, SCRAM-SHA-512", &sasl, &times);
    assert_eq!(
        kafka_python_admin(&[&admin, "describe", "erin"]).await,
        "SCRAM_SHA_512:8192"
    );
    let (_, out, _) = configs_user(&admin, "erin", &["--describe"]).await;
    assert_eq!(
        out,
        "SCRAM credential configs for user-principal 'erin' are SCRAM-SHA-512=iterations=8192\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_delete_config_the_credential_no_longer_logs_in_on_any_broker() {
    let (_zk, _brokers, admin, sasl) = three_brokers("sasl-users-delete").await;
    let (code, _, err) = configs_user(
        &admin,
        "frank",
        &[
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[password=frank-secret],SCRAM-SHA-512=[password=frank-secret]",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let times = first_logins(
        &sasl,
        SHA256,
        "frank",
        "frank-secret",
        Instant::now(),
        Duration::from_secs(10),
    )
    .await;
    assert!(times.iter().all(Option::is_some), "{times:?}");

    // Deleting one mechanism leaves the other.
    let (code, out, err) = configs_user(&admin, "frank", &["--alter", "--delete-config", "SCRAM-SHA-256"]).await;
    assert_eq!(
        (code, out.as_str()),
        (0, "Completed updating config for user frank.\n"),
        "{err}"
    );
    let deleted = Instant::now();
    refused_everywhere(&sasl, SHA256, "frank", "frank-secret").await;
    println!(
        "SCRAM-SHA-256 refused on every broker {:?} after --delete-config",
        deleted.elapsed()
    );
    for addr in &sasl {
        assert!(
            scram_login(addr, SHA512, "frank", "frank-secret").await.is_ok(),
            "SHA-512 on {addr}"
        );
    }
    let (_, out, _) = configs_user(&admin, "frank", &["--describe"]).await;
    assert_eq!(
        out,
        "SCRAM credential configs for user-principal 'frank' are SCRAM-SHA-512=iterations=4096\n"
    );

    let (code, _, err) = configs_user(&admin, "frank", &["--alter", "--delete-config", "SCRAM-SHA-512"]).await;
    assert_eq!(code, 0, "{err}");
    refused_everywhere(&sasl, SHA512, "frank", "frank-secret").await;
    for addr in &sasl {
        assert!(
            !kcat_logs_in(addr, SHA512, "frank", "frank-secret").await,
            "kcat on {addr}"
        );
    }
    // No credentials left: nothing to describe; deleting again is the broker's RESOURCE_NOT_FOUND.
    let (code, out, err) = configs_user(&admin, "frank", &["--describe"]).await;
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    let (code, _, err) = configs_user(&admin, "frank", &["--alter", "--delete-config", "SCRAM-SHA-512"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "org.apache.kafka.common.errors.ResourceNotFoundException: Attempt to delete a user credential that does not exist"
        ),
        "{err}"
    );
}

/// Acknowledgement latencies of an authenticated acks=1 producer on `addr`, one request at a
/// time, on its own thread and runtime (so the storm's client tasks cannot delay it): at least
/// `min` records, and on until `stop` is set. `ready` is set once it is producing.
fn producer(
    addr: String,
    topic: &'static str,
    min: usize,
    ready: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut wire = scram_login(&addr, SHA256, "pat", "pat-secret")
                .await
                .expect("the producer logs in");
            let mut latencies = Vec::new();
            while latencies.len() < min || !stop.load(Ordering::SeqCst) {
                let value = format!("record-{}", latencies.len());
                let started = Instant::now();
                let response = wire.send(&produce_request(topic, 1, value.as_bytes()), 7).await;
                latencies.push(started.elapsed());
                let code = response.responses[0].partition_responses[0].error_code;
                assert_eq!(code, 0, "every record is acknowledged");
                ready.store(true, Ordering::SeqCst);
            }
            latencies
        })
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_failed_logins_do_not_slow_an_authenticated_producer() {
    let (zk, _brokers, admin, sasl) = three_brokers("sasl-users-storm").await;
    let (code, _, err) = configs_user(
        &admin,
        "pat",
        &["--alter", "--add-config", "SCRAM-SHA-256=[password=pat-secret]"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    create_topic_by_hand(&zk, "storm", r#"{"0":[1]}"#).await;
    let leader = sasl[0].clone();
    wait_until(
        Duration::from_secs(20),
        "pat logs in and broker 1 leads storm-0",
        || async {
            let Ok(mut wire) = scram_login(&leader, SHA256, "pat", "pat-secret").await else {
                return false;
            };
            let response = wire.send(&produce_request("storm", 1, b"warm-up"), 7).await;
            response.responses[0].partition_responses[0].error_code == 0
        },
    )
    .await;

    // A wrong password: SASL_AUTHENTICATION_FAILED with Kafka's message.
    let (code, message) = scram_login(&leader, SHA256, "pat", "not-pats")
        .await
        .err()
        .expect("a wrong password is refused");
    assert_eq!(
        (code, message.as_str()),
        (
            SASL_AUTHENTICATION_FAILED,
            "Authentication failed: Invalid user credentials"
        )
    );

    let flag = |set| Arc::new(AtomicBool::new(set));
    let baseline = producer(leader.clone(), "storm", 300, flag(false), flag(true));
    let mut baseline = baseline.join().expect("baseline producer");

    let (ready, stop) = (flag(false), flag(false));
    let during = producer(leader.clone(), "storm", 50, ready.clone(), stop.clone());
    wait_until(Duration::from_secs(10), "the producer is producing", || {
        let ready = ready.clone();
        async move { ready.load(Ordering::SeqCst) }
    })
    .await;
    let storm_started = Instant::now();
    let attempts: Vec<_> = (0..1000)
        .map(|_| {
            let addr = leader.clone();
            tokio::spawn(async move { scram_login_with_a_wrong_proof(&addr, SHA256, "pat").await })
        })
        .collect();
    let mut failed = 0;
    for attempt in attempts {
        let (code, message) = attempt.await.expect("join");
        assert_eq!(code, SASL_AUTHENTICATION_FAILED, "{message}");
        failed += 1;
    }
    let storm = storm_started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut during = during.join().expect("producer during the storm");

    baseline.sort();
    during.sort();
    let (p50_base, p99_base) = (percentile(&baseline, 0.5), percentile(&baseline, 0.99));
    let (p50_storm, p99_storm) = (percentile(&during, 0.5), percentile(&during, 0.99));
    println!(
        "{failed} failed logins in {storm:?}; producer acks latency baseline ({} records) p50 {p50_base:?} p99 {p99_base:?} max {:?}; \
         during the storm ({} records) p50 {p50_storm:?} p99 {p99_storm:?} max {:?}",
        baseline.len(),
        baseline[baseline.len() - 1],
        during.len(),
        during[during.len() - 1],
    );
    let bound = (p99_base * 10).max(Duration::from_millis(200));
    assert!(
        p99_storm < bound,
        "p99 during the storm {p99_storm:?} < max(10 x baseline p99 {p99_base:?}, 200 ms)"
    );
    // The storm ran while the producer did: each failure waits out its own delay in parallel.
    assert!(
        storm < Duration::from_secs(30),
        "1,000 failed logins each wait 100 ms, concurrently: {storm:?}"
    );
}
