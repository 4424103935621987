//! Per-event unit tests of the core, named after Kafka's controller events: given a context
//! and an input, these effects (and this context after). No ZooKeeper, no tokio.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::isr_change::changed_partitions;
use super::*;
use crate::controller::channel::ControlRequest;
use crate::controller::model::TopicInfo;
use crate::controller::partition_state::PartitionState;
use crate::zk::models::BrokerRegistration;
use crate::zk::paths;

pub(super) fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().map(|i| BrokerId(*i)).collect()
}

pub(super) fn key(t: &str, p: i32) -> Key {
    (t.to_string(), p)
}

pub(super) fn broker(id: i32, epoch: i64) -> RegisteredBroker {
    RegisteredBroker {
        id: BrokerId(id),
        registration: BrokerRegistration {
            version: 5,
            host: Some(format!("h{id}")),
            port: 9092,
            jmx_port: -1,
            timestamp: 0,
            endpoints: vec![format!("PLAINTEXT://h{id}:9092")],
            rack: None,
            listener_security_protocol_map: None,
            features: None,
        },
        epoch,
    }
}

pub(super) fn brokers(v: &[(i32, i64)]) -> BTreeMap<BrokerId, RegisteredBroker> {
    v.iter().map(|(id, e)| (BrokerId(*id), broker(*id, *e))).collect()
}

pub(super) fn leadership(leader: i32, isr: &[i32], leader_epoch: i32, zk_version: i32) -> LeaderAndIsr {
    LeaderAndIsr {
        leader: Some(BrokerId(leader)),
        leader_epoch,
        isr: ids(isr),
        controller_epoch: 4,
        leader_recovery_state: 0,
        zk_version,
    }
}

/// Controller 1 of epoch 5; brokers 1-3 live; topic `t`, partition 0 on [1, 2, 3] led by 1.
pub(super) fn context() -> ControllerContext {
    let mut ctx = ControllerContext {
        controller: BrokerId(1),
        epoch: 5,
        inter_broker_listener: "PLAINTEXT".to_string(),
        live_brokers: brokers(&[(1, 10), (2, 20), (3, 30)]),
        ..Default::default()
    };
    ctx.topics.insert(
        "t".to_string(),
        TopicInfo {
            id: uuid::Uuid::nil(),
            assignment: BTreeMap::from([(0, ids(&[1, 2, 3]))]),
            reassigning: Default::default(),
        },
    );
    ctx.leaderships.insert(key("t", 0), leadership(1, &[1, 2, 3], 3, 6));
    ctx.initialize_partition_states();
    ctx.initialize_replica_states();
    ctx
}

/// (broker, request kind) of every request sent, in order.
pub(super) fn sent(fx: &Effects) -> Vec<(i32, &'static str)> {
    fx.send
        .iter()
        .map(|(b, r)| {
            let kind = match r {
                ControlRequest::LeaderAndIsr(_) => "LeaderAndIsr",
                ControlRequest::UpdateMetadata(_) => "UpdateMetadata",
                ControlRequest::StopReplica(_) => "StopReplica",
            };
            (b.0, kind)
        })
        .collect()
}

/// The brokers a step sends StopReplica(delete) to.
pub(super) fn stop_replicas(fx: &Effects) -> Vec<i32> {
    fx.send
        .iter()
        .filter_map(|(b, r)| match r {
            ControlRequest::StopReplica(r)
                if r.topic_states
                    .iter()
                    .all(|t| t.partition_states.iter().all(|p| p.delete_partition)) =>
            {
                Some(b.0)
            }
            _ => None,
        })
        .collect()
}

pub(super) fn idle(ctx: &ControllerContext) -> bool {
    matches!(ctx.pending, Pending::Idle)
}

pub(super) fn event(ctx: &mut ControllerContext, e: Event) -> Effects {
    step(ctx, Input::Event(e), Instant::now())
}

pub(super) fn read(ctx: &mut ControllerContext, r: ReadResult) -> Effects {
    step(ctx, Input::Read(r), Instant::now())
}

pub(super) fn wrote(ctx: &mut ControllerContext, w: WriteResult) -> Effects {
    step(ctx, Input::Wrote(w), Instant::now())
}

/// The partition-state write a step asks for: (creates, updates).
pub(super) fn partition_write(fx: &Effects) -> (Decided, Decided) {
    match &fx.zk {
        Some(ZkOp::Write(Write::PartitionStates { creates, updates })) => (creates.clone(), updates.clone()),
        other => panic!("expected a partition state write, got {other:?}"),
    }
}

#[test]
fn broker_change_first_reads_the_live_brokers() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::BrokerChange);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::LiveBrokers)));
    assert!(fx.send.is_empty() && fx.connect.is_empty());
    assert!(!idle(&ctx));
}

#[test]
fn broker_change_with_nothing_changed_does_nothing() {
    let mut ctx = context();
    event(&mut ctx, Event::BrokerChange);
    let fx = read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 20), (3, 30)])));
    assert_eq!(fx.zk, None);
    assert!(fx.send.is_empty() && fx.disconnect.is_empty() && fx.connect.is_empty());
    assert!(idle(&ctx));
}

/// The leader dies: its channel and watch go, the hosted state znode is re-read, the next ISR
/// member leads with a bumped leader epoch (written fenced), then LeaderAndIsr to the live
/// replicas and UpdateMetadata to every live broker.
#[test]
fn broker_change_a_dead_leader_moves_leadership_to_a_live_isr_member() {
    let mut ctx = context();
    event(&mut ctx, Event::BrokerChange);
    let fx = read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(2, 20), (3, 30)])));
    assert_eq!(fx.disconnect, ids(&[1]));
    assert_eq!(fx.unwatch_brokers, ids(&[1]));
    assert!(fx.connect.is_empty() && fx.watch_brokers.is_empty());
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    assert!(!ctx.is_live(BrokerId(1)));

    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    // The election re-reads what it is about to change.
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    let (creates, updates) = partition_write(&fx);
    assert!(creates.is_empty());
    assert_eq!(updates.len(), 1);
    let next = &updates[0].1;
    assert_eq!(
        (next.leader, next.leader_epoch, next.isr.clone()),
        (Some(BrokerId(2)), 4, ids(&[2, 3]))
    );
    assert_eq!(next.controller_epoch, 5);
    assert!(fx.send.is_empty(), "nothing is announced before the write");

    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![7] });
    assert_eq!(fx.zk, None);
    assert!(idle(&ctx));
    let recorded = &ctx.leaderships[&key("t", 0)];
    assert_eq!((recorded.leader, recorded.zk_version), (Some(BrokerId(2)), 7));
    assert_eq!(ctx.partition_state(&key("t", 0)), PartitionState::Online);
    assert!(fx
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::LeaderElection { unclean: 0, .. })));
    // The election's announcement, then BrokerChange's UpdateMetadata (no broker started).
    assert_eq!(
        sent(&fx),
        vec![
            (2, "LeaderAndIsr"),
            (3, "LeaderAndIsr"),
            (2, "UpdateMetadata"),
            (3, "UpdateMetadata"),
            (2, "UpdateMetadata"),
            (3, "UpdateMetadata"),
        ]
    );
}

/// A new broker gets a channel and a watch; with nothing to elect, every broker learns the
/// cluster and the newcomer gets LeaderAndIsr for its replicas (none here).
#[test]
fn broker_change_a_new_broker_is_connected_watched_and_told() {
    let mut ctx = context();
    event(&mut ctx, Event::BrokerChange);
    let fx = read(
        &mut ctx,
        ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 20), (3, 30), (4, 40)])),
    );
    assert_eq!(fx.connect, vec![(BrokerId(4), "h4:9092".to_string())]);
    assert_eq!(fx.watch_brokers, ids(&[4]));
    assert!(fx.disconnect.is_empty());
    assert_eq!(fx.zk, None);
    assert_eq!(
        sent(&fx),
        vec![
            (1, "UpdateMetadata"),
            (2, "UpdateMetadata"),
            (3, "UpdateMetadata"),
            (4, "UpdateMetadata")
        ]
    );
    assert!(idle(&ctx));
}

/// A bounced broker (new epoch) fails and starts again: reconnected, and told its replicas.
#[test]
fn broker_change_a_bounced_follower_is_reconnected_and_gets_leader_and_isr() {
    let mut ctx = context();
    event(&mut ctx, Event::BrokerChange);
    let fx = read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(1, 10), (2, 21), (3, 30)])));
    assert_eq!(fx.disconnect, ids(&[2]));
    assert_eq!(fx.connect, vec![(BrokerId(2), "h2:9092".to_string())]);
    assert!(fx.unwatch_brokers.is_empty(), "a bounced broker keeps its watch");
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), leadership(1, &[1, 2, 3], 3, 6))])),
    );
    assert_eq!(fx.zk, None, "leader 1 is alive and the ISR all live: nothing to elect");
    assert!(sent(&fx).contains(&(2, "LeaderAndIsr")));
    assert_eq!(ctx.live_brokers[&BrokerId(2)].epoch, 21);
}

/// Every ISR member is down: the election asks for the live unclean-election configs, and a
/// topic override that allows it elects the live replica outside the ISR, counted as unclean.
#[test]
fn broker_change_unclean_election_follows_the_topic_override() {
    let mut ctx = context();
    ctx.leaderships.insert(key("t", 0), leadership(1, &[1, 2], 3, 6));
    event(&mut ctx, Event::BrokerChange);
    read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(3, 30)])));
    let fresh = BTreeMap::from([(key("t", 0), leadership(1, &[1, 2], 3, 6))]);
    let fx = read(&mut ctx, ReadResult::Leaderships(fresh.clone()));
    // The cache already says the leader must go: the election re-reads before deciding.
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let fx = read(&mut ctx, ReadResult::Leaderships(fresh));
    let Some(ZkOp::Read(Read::UncleanConfigs { topics, controller })) = fx.zk else {
        panic!("expected unclean configs to be read, got {:?}", fx.zk);
    };
    assert_eq!(topics.into_iter().collect::<Vec<_>>(), vec!["t".to_string()]);
    assert_eq!(controller, BrokerId(1));
    let fx = read(
        &mut ctx,
        ReadResult::UncleanConfigs {
            broker_default: Some(false),
            overrides: BTreeMap::from([("t".to_string(), true)]),
        },
    );
    let (_, updates) = partition_write(&fx);
    assert_eq!(updates[0].1.leader, Some(BrokerId(3)));
    assert_eq!(updates[0].1.isr, ids(&[3]));
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![7] });
    assert!(fx
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::LeaderElection { unclean: 1, .. })));
}

/// Without an override the live broker-level value decides: false keeps the partition without
/// a leader rather than electing outside the ISR.
#[test]
fn broker_change_unclean_election_refused_by_the_broker_default() {
    let mut ctx = context();
    ctx.leaderships.insert(key("t", 0), leadership(1, &[1, 2], 3, 6));
    ctx.unclean_leader_election = true;
    event(&mut ctx, Event::BrokerChange);
    read(&mut ctx, ReadResult::LiveBrokers(brokers(&[(3, 30)])));
    let fresh = BTreeMap::from([(key("t", 0), leadership(1, &[1, 2], 3, 6))]);
    let fx = read(&mut ctx, ReadResult::Leaderships(fresh.clone()));
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let fx = read(&mut ctx, ReadResult::Leaderships(fresh));
    assert!(matches!(fx.zk, Some(ZkOp::Read(Read::UncleanConfigs { .. }))));
    let fx = read(
        &mut ctx,
        ReadResult::UncleanConfigs {
            broker_default: Some(false),
            overrides: BTreeMap::new(),
        },
    );
    if fx.zk.is_some() {
        let (_, updates) = partition_write(&fx);
        assert!(
            updates.iter().all(|(_, l)| l.leader != Some(BrokerId(3))),
            "{updates:?}"
        );
    }
}

#[test]
fn broker_change_a_failed_read_ends_the_event() {
    let mut ctx = context();
    event(&mut ctx, Event::BrokerChange);
    let fx = step(&mut ctx, Input::Failed, Instant::now());
    assert_eq!(fx.zk, None);
    assert!(fx.send.is_empty());
    assert!(idle(&ctx));
    assert!(ctx.is_live(BrokerId(1)), "nothing learnt, nothing changed");
}

/// A partition without a state znode gets its first leader and ISR from its live replicas.
#[test]
fn elect_creates_a_new_partitions_state_and_announces_it_as_new() {
    let mut ctx = context();
    ctx.topics.insert(
        "n".to_string(),
        TopicInfo {
            id: uuid::Uuid::nil(),
            assignment: BTreeMap::from([(0, ids(&[2, 3]))]),
            reassigning: Default::default(),
        },
    );
    ctx.change_states(&[key("n", 0)], PartitionState::New);
    let fx = event(&mut ctx, Event::Elect(vec![key("n", 0)]));
    // The re-read finds no state znode; then the create.
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("n", 0)]))));
    let fx = read(&mut ctx, ReadResult::Leaderships(BTreeMap::new()));
    let (creates, updates) = partition_write(&fx);
    assert!(updates.is_empty());
    assert_eq!(creates.len(), 1);
    assert_eq!(
        (creates[0].1.leader, creates[0].1.isr.clone()),
        (Some(BrokerId(2)), ids(&[2, 3]))
    );
    let fx = wrote(&mut ctx, WriteResult::PartitionStates { versions: vec![] });
    assert_eq!(
        sent(&fx),
        vec![
            (2, "LeaderAndIsr"),
            (3, "LeaderAndIsr"),
            (1, "UpdateMetadata"),
            (2, "UpdateMetadata"),
            (3, "UpdateMetadata")
        ]
    );
    let ControlRequest::LeaderAndIsr(r) = &fx.send[0].1 else {
        panic!("LeaderAndIsr first");
    };
    assert!(r.topic_states[0].partition_states[0].is_new);
    assert_eq!(ctx.partition_state(&key("n", 0)), PartitionState::Online);
}

/// A write that fails (not fenced: the shell resigns on that) records nothing and announces
/// nothing.
#[test]
fn elect_a_failed_write_records_nothing() {
    let mut ctx = context();
    let decided = leadership(2, &[2, 3], 4, 6);
    let fx = event(
        &mut ctx,
        Event::WriteDecided {
            since: Instant::now(),
            creates: Vec::new(),
            updates: vec![(key("t", 0), decided)],
        },
    );
    assert_eq!(partition_write(&fx).1.len(), 1);
    let fx = step(&mut ctx, Input::Failed, Instant::now());
    assert!(fx.send.is_empty() && fx.zk.is_none());
    assert_eq!(ctx.leaderships[&key("t", 0)].leader, Some(BrokerId(1)));
    assert!(idle(&ctx));
}

/// Decisions written for a step that began earlier count from when it began.
#[test]
fn write_decided_counts_the_election_from_the_steps_start() {
    let mut ctx = context();
    let since = Instant::now();
    event(
        &mut ctx,
        Event::WriteDecided {
            since,
            creates: Vec::new(),
            updates: vec![(key("t", 0), leadership(2, &[2, 3], 4, 6))],
        },
    );
    let fx = step(
        &mut ctx,
        Input::Wrote(WriteResult::PartitionStates { versions: vec![9] }),
        since + Duration::from_millis(250),
    );
    assert!(fx.metrics.contains(&Metric::LeaderElection {
        elapsed: Duration::from_millis(250),
        unclean: 0
    }));
    assert_eq!(ctx.leaderships[&key("t", 0)].zk_version, 9);
}

/// Nothing needs a change: no ZooKeeper operation at all.
#[test]
fn elect_with_nothing_to_change_reads_and_writes_nothing() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::Elect(vec![key("t", 0)]));
    assert_eq!(fx.zk, None);
    assert!(fx.send.is_empty());
    assert!(idle(&ctx));
}

#[test]
fn isr_change_notification_refreshes_named_partitions_announces_and_deletes() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::IsrChangeNotification);
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::NotificationNames(paths::ISR_CHANGE_NOTIFICATION)))
    );
    let names = vec!["isr_change_0000000001".to_string()];
    let fx = read(&mut ctx, ReadResult::NotificationNames(names.clone()));
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::NotificationPayloads {
            parent: paths::ISR_CHANGE_NOTIFICATION,
            names: names.clone()
        }))
    );
    // One known partition, one of a topic the controller does not know.
    let payload = br#"{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":0}]}"#.to_vec();
    let fx = read(
        &mut ctx,
        ReadResult::NotificationPayloads(vec![(names[0].clone(), payload)]),
    );
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::Leaderships(vec![key("t", 0)]))));
    let shrunk = leadership(1, &[1, 3], 3, 7);
    let fx = read(
        &mut ctx,
        ReadResult::Leaderships(BTreeMap::from([(key("t", 0), shrunk.clone())])),
    );
    assert_eq!(ctx.leaderships[&key("t", 0)], shrunk);
    assert_eq!(
        sent(&fx),
        vec![(1, "UpdateMetadata"), (2, "UpdateMetadata"), (3, "UpdateMetadata")]
    );
    assert_eq!(
        fx.zk,
        Some(ZkOp::Write(Write::DeleteNotifications {
            parent: paths::ISR_CHANGE_NOTIFICATION,
            names
        }))
    );
    let fx = wrote(&mut ctx, WriteResult::NotificationsDeleted);
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert!(idle(&ctx));
}

#[test]
fn isr_change_notification_with_none_left_does_nothing() {
    let mut ctx = context();
    event(&mut ctx, Event::IsrChangeNotification);
    let fx = read(&mut ctx, ReadResult::NotificationNames(Vec::new()));
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert!(idle(&ctx));
}

/// The notifications read are deleted even when the refresh fails, and a notification naming
/// only unknown partitions is deleted without a read.
#[test]
fn isr_change_notification_deletes_what_it_read_even_when_the_refresh_fails() {
    let mut ctx = context();
    event(&mut ctx, Event::IsrChangeNotification);
    let names = vec!["isr_change_0000000002".to_string()];
    read(&mut ctx, ReadResult::NotificationNames(names.clone()));
    let fx = step(&mut ctx, Input::Failed, Instant::now());
    assert!(matches!(fx.zk, Some(ZkOp::Write(Write::DeleteNotifications { .. }))));

    let mut ctx = context();
    event(&mut ctx, Event::IsrChangeNotification);
    read(&mut ctx, ReadResult::NotificationNames(names.clone()));
    let unknown = br#"{"version":1,"partitions":[{"topic":"u","partition":0}]}"#.to_vec();
    let fx = read(
        &mut ctx,
        ReadResult::NotificationPayloads(vec![(names[0].clone(), unknown)]),
    );
    assert_eq!(
        fx.zk,
        Some(ZkOp::Write(Write::DeleteNotifications {
            parent: paths::ISR_CHANGE_NOTIFICATION,
            names
        }))
    );
    assert!(fx.send.is_empty());
}

#[test]
fn notifications_name_each_partition_once_and_bad_ones_are_set_aside() {
    let payloads = vec![
        (
            "isr_change_0000000000".to_string(),
            br#"{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"b","partition":2}]}"#.to_vec(),
        ),
        ("isr_change_0000000001".to_string(), b"not json".to_vec()),
        (
            "isr_change_0000000002".to_string(),
            br#"{"version":1,"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":1}]}"#.to_vec(),
        ),
    ];
    let (partitions, malformed) = changed_partitions(&payloads);
    let want: std::collections::BTreeSet<Key> = [key("a", 0), key("a", 1), key("b", 2)].into_iter().collect();
    assert_eq!(partitions, want);
    assert_eq!(malformed, vec!["isr_change_0000000001".to_string()]);
}

#[test]
fn an_input_without_a_pending_step_is_ignored() {
    let mut ctx = context();
    let fx = read(&mut ctx, ReadResult::NotificationNames(vec!["x".to_string()]));
    assert!(fx.zk.is_none() && fx.send.is_empty());
    assert!(idle(&ctx));
}
