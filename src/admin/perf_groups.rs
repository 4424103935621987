//! `kastle perf groups`: the group coordinator's benchmarks.
//!
//! - `load`: builds one `__consumer_offsets` partition log on disk holding `groups` groups
//!   (a member each) and `offsets` committed offsets, then times what a new coordinator does
//!   with it: read the log from start to end and build the groups (`loader::load_log` +
//!   `into_groups`). No broker involved.
//! - `live`: against a running cluster, `members` members of one group (one connection each, to
//!   the group's coordinator) join, the leader assigns, everyone syncs; then, five times, one
//!   member restarts (LeaveGroup, then JoinGroup as a new member) while the others rejoin at
//!   once, as clients do when their heartbeat says REBALANCE_IN_PROGRESS, timed from the
//!   LeaveGroup to the last SyncGroup answer. Finally one connection commits `partitions_per_commit` offsets per
//!   OffsetCommit, one request after another, for `commits` requests.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    FindCoordinatorRequest, GroupId, JoinGroupRequest, LeaveGroupRequest, OffsetCommitRequest, SyncGroupRequest,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::BrokerConnection;
use crate::coordinator::group::loader;
use crate::coordinator::group::schema::{self, GroupValue, OffsetValue, StoredMember};
use crate::log::config::LogConfig;
use crate::log::failure::LogDirFailureChannel;
use crate::log::file::Faults;
use crate::log::log::{Log, LogContext};
use crate::log::log_manager::SharedLog;
use crate::protocol::error_codes as ec;
use crate::protocol::test_support::{build_batch, KeyValue};
use crate::types::TopicPartition;

fn err<E: std::fmt::Display>(e: E) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Writes the partition log and times its load, `rounds` times; returns the report lines.
pub fn load(dir: &Path, groups: usize, offsets: usize, rounds: usize) -> std::io::Result<String> {
    let tp = TopicPartition {
        topic: "__consumer_offsets".into(),
        partition: 0,
    };
    let log_dir = dir.join("__consumer_offsets-0");
    let ctx = LogContext {
        faults: Faults::default(),
        failures: LogDirFailureChannel::new(),
    };
    let (mut log, _) = Log::open(&log_dir, tp, LogConfig::default(), &ctx, 0, None, true, 0).map_err(err)?;
    let per_group = (offsets / groups.max(1)).max(1);
    let now = 1_700_000_000_000;
    let mut bytes = 0usize;
    for g in 0..groups {
        let group = format!("group-{g:05}");
        // One commit request's worth per group: its offsets in one batch, then its metadata.
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..per_group)
            .map(|i| {
                let value = OffsetValue {
                    offset: 1_000 + i as i64,
                    leader_epoch: 3,
                    metadata: String::new(),
                    commit_timestamp: now,
                    expire_timestamp: None,
                };
                (
                    schema::offset_key(&group, &format!("topic-{}", i / 100), (i % 100) as i32),
                    schema::offset_value(&value),
                )
            })
            .collect();
        let member = StoredMember {
            member_id: format!("{group}-member"),
            client_id: "perf".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: vec![0; 32],
            assignment: vec![0; 64],
            ..Default::default()
        };
        let meta = schema::group_value(&GroupValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: Some("range".into()),
            leader: Some(member.member_id.clone()),
            current_state_timestamp: now,
            members: vec![member],
        });
        let kv: Vec<KeyValue<'_>> = records.iter().map(|(k, v)| (Some(&k[..]), Some(&v[..]))).collect();
        for batch in [
            build_batch(0, 0, &kv, now),
            build_batch(0, 0, &[(Some(&schema::group_key(&group)[..]), Some(&meta[..]))], now),
        ] {
            bytes += batch.len();
            log.append_as_leader(&batch, 0, now).map_err(err)?;
        }
    }
    log.flush(now).map_err(err)?;
    let shared: SharedLog = Arc::new(std::sync::Mutex::new(log));
    let mut report = String::new();
    let _ = writeln!(
        report,
        "log: {groups} groups, {} offsets, {:.1} MiB",
        groups * per_group,
        bytes as f64 / (1 << 20) as f64
    );
    let mut times = Vec::new();
    for _ in 0..rounds.max(1) {
        let started = Instant::now();
        let state = loader::load_log(&shared, 5 * 1024 * 1024).map_err(err)?;
        let loaded = state.into_groups(now);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        let n: usize = loaded.values().map(|g| g.offsets.len()).sum();
        if loaded.len() != groups || n != groups * per_group {
            return Err(err(format!("loaded {} groups and {n} offsets", loaded.len())));
        }
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    let _ = writeln!(
        report,
        "load (ms): median {:.0}, min {:.0}, max {:.0} over {} rounds",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1],
        times.len()
    );
    Ok(report)
}

/// Options of the live benchmark.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub bootstrap: String,
    pub group: String,
    pub topic: String,
    pub members: usize,
    pub commits: usize,
    pub partitions_per_commit: i32,
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

async fn coordinator(bootstrap: &str, group: &str) -> std::io::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let conn = BrokerConnection::connect(bootstrap, "perf-groups", Duration::from_secs(10))
        .await
        .map_err(err)?;
    loop {
        let r = conn
            .send(FindCoordinatorRequest::default().with_key(s(group)), 3)
            .await
            .map_err(err)?;
        if r.error_code == 0 {
            return Ok(format!("{}:{}", r.host.as_str(), r.port));
        }
        if Instant::now() > deadline {
            return Err(err(format!("FindCoordinator error {}", r.error_code)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn join_request(group: &str, member: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(vec![0u8; 24].into())])
}

/// One round: every member joins (with its id, or gets one first), the leader assigns, all
/// sync. Returns the member ids, the generation and how long the round took from its first
/// JoinGroup.
async fn round(
    conns: &[Arc<BrokerConnection>],
    group: &str,
    ids: &[String],
) -> std::io::Result<(Vec<String>, i32, Duration)> {
    let started = Instant::now();
    // New members first get their member id (KIP-394): a handed-out id holds the rebalance
    // open until its member joins, so nobody completes the round without them.
    let mut ids = ids.to_vec();
    for (c, id) in conns.iter().zip(ids.iter_mut()).filter(|(_, id)| id.is_empty()) {
        let r = c.send(join_request(group, ""), 5).await.map_err(err)?;
        if r.error_code != ec::MEMBER_ID_REQUIRED {
            return Err(err(format!(
                "JoinGroup without a member id: {}",
                ec::name(r.error_code)
            )));
        }
        *id = r.member_id.to_string();
    }
    let mut joins = tokio::task::JoinSet::new();
    for (i, (c, id)) in conns.iter().zip(&ids).enumerate() {
        let (c, mut id, group) = (c.clone(), id.clone(), group.to_string());
        joins.spawn(async move {
            loop {
                let r = c.send(join_request(&group, &id), 5).await.map_err(err)?;
                match r.error_code {
                    ec::NONE => return Ok::<_, std::io::Error>((i, r)),
                    ec::MEMBER_ID_REQUIRED => id = r.member_id.to_string(),
                    code => return Err(err(format!("JoinGroup error {}", ec::name(code)))),
                }
            }
        });
    }
    let mut answers = Vec::new();
    while let Some(done) = joins.join_next().await {
        answers.push(done.map_err(err)??);
    }
    answers.sort_by_key(|(i, _)| *i);
    let generation = answers[0].1.generation_id;
    let ids: Vec<String> = answers.iter().map(|(_, r)| r.member_id.to_string()).collect();
    let mut syncs = tokio::task::JoinSet::new();
    for (c, (_, r)) in conns.iter().zip(&answers) {
        let assignments = r
            .members
            .iter()
            .map(|m| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(m.member_id.clone())
                    .with_assignment(vec![0u8; 40].into())
            })
            .collect();
        let req = SyncGroupRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_generation_id(generation)
            .with_member_id(r.member_id.clone())
            .with_assignments(assignments);
        let c = c.clone();
        syncs.spawn(async move {
            let r = c.send(req, 3).await.map_err(err)?;
            if r.error_code != 0 {
                return Err(err(format!("SyncGroup error {}", r.error_code)));
            }
            Ok(())
        });
    }
    while let Some(done) = syncs.join_next().await {
        done.map_err(err)??;
    }
    Ok((ids, generation, started.elapsed()))
}

pub async fn live(o: &LiveOptions) -> std::io::Result<String> {
    let addr = coordinator(&o.bootstrap, &o.group).await?;
    let mut conns = Vec::new();
    for i in 0..o.members.max(1) {
        conns.push(Arc::new(
            BrokerConnection::connect(addr.as_str(), &format!("perf-member-{i}"), Duration::from_secs(10))
                .await
                .map_err(err)?,
        ));
    }
    let mut report = String::new();
    let (mut ids, mut generation, first) = round(&conns, &o.group, &vec![String::new(); conns.len()]).await?;
    let _ = writeln!(
        report,
        "first rebalance of {} members (includes group.initial.rebalance.delay.ms): {:.0} ms",
        conns.len(),
        first.as_secs_f64() * 1e3
    );
    let mut times = Vec::new();
    for k in 0..5 {
        // A member restarts: it leaves (the group starts rebalancing) and joins again as a new
        // member while the others rejoin, as they do when their heartbeat says so.
        let started = Instant::now();
        let i = (k + 1) % conns.len();
        let left = conns[i]
            .send(
                LeaveGroupRequest::default()
                    .with_group_id(GroupId(s(&o.group)))
                    .with_member_id(s(&ids[i])),
                0,
            )
            .await
            .map_err(err)?;
        if left.error_code != 0 {
            return Err(err(format!("LeaveGroup error {}", left.error_code)));
        }
        ids[i].clear();
        let (next, g, _) = round(&conns, &o.group, &ids).await?;
        (ids, generation) = (next, g);
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let _ = writeln!(
        report,
        "rebalance of {} members after one leaves and comes back, from its LeaveGroup to the last SyncGroup answer (ms): median {:.1}, max {:.1} over {} rounds",
        conns.len(),
        times[times.len() / 2],
        times[times.len() - 1],
        times.len()
    );
    // Commits: the first member, current generation, one request after another.
    let mut latencies = Vec::with_capacity(o.commits);
    let started = Instant::now();
    for i in 0..o.commits {
        let partitions = (0..o.partitions_per_commit)
            .map(|p| {
                OffsetCommitRequestPartition::default()
                    .with_partition_index(p)
                    .with_committed_offset(i as i64)
                    .with_committed_leader_epoch(0)
                    .with_committed_metadata(Some(s("")))
            })
            .collect();
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(s(&o.group)))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(&ids[0]))
            .with_topics(vec![OffsetCommitRequestTopic::default()
                .with_name(TopicName(s(&o.topic)))
                .with_partitions(partitions)]);
        let t = Instant::now();
        let r = conns[0].send(req, 8).await.map_err(err)?;
        latencies.push(t.elapsed().as_secs_f64() * 1e3);
        if let Some(code) = r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|c| *c != 0)
        {
            return Err(err(format!("OffsetCommit error {code}")));
        }
    }
    let secs = started.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let n = o.commits.max(1);
    let _ = writeln!(
        report,
        "offset commits, {} partitions each, sequential: {:.0} requests/s, {:.0} offsets/s, latency p50 {:.2} ms p99 {:.2} ms",
        o.partitions_per_commit,
        o.commits as f64 / secs,
        o.commits as f64 * f64::from(o.partitions_per_commit) / secs,
        latencies.get(n / 2).copied().unwrap_or(0.0),
        latencies.get(n * 99 / 100).copied().unwrap_or(0.0)
    );
    Ok(report)
}
