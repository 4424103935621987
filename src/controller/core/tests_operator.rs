//! Unit tests of the operator-facing events in the core (ControlledShutdown, ElectLeaders,
//! `/admin/preferred_replica_election`, auto leader rebalance, LogDirEventNotification and
//! offline replicas): given a context and inputs, these effects. No ZooKeeper, no tokio.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::tests::{brokers, event, idle, ids, key, read, wrote};
use super::timers::{AutoRebalance, Timer, TimerKind};
use super::*;
use crate::controller::channel::ControlRequest;
use crate::controller::model::TopicInfo;
use crate::controller::replica_state::ReplicaState;
use crate::zk::models::{LogDirEventNotification, PreferredReplicaElection, TopicPartitionRef, ZNodePayload};
use crate::zk::paths;

use ControllerError::*;

/// `leader` -1 = none.
fn leadership(leader: i32, isr: &[i32]) -> LeaderAndIsr {
    LeaderAndIsr {
        leader: LeaderAndIsr::leader_from_wire(BrokerId(leader)),
        leader_epoch: 3,
        isr: ids(isr),
        controller_epoch: 4,
        leader_recovery_state: 0,
        zk_version: 6,
    }
}

/// Controller 1 of epoch 5, brokers 1-3 live (epochs 10, 20, 30). Topic `t`:
/// 0 on [1, 2, 3] led by 1, ISR all; 1 on [2, 1, 3] led by 1 (not its preferred 2), ISR all;
/// 2 on [1, 3] led by 1, ISR [1] (3 out of sync); 3 on [2, 1] led by 2, ISR [2, 1].
/// Topic `solo`: 0 on [1] led by 1.
fn context() -> ControllerContext {
    let mut ctx = ControllerContext {
        controller: BrokerId(1),
        epoch: 5,
        inter_broker_listener: "PLAINTEXT".to_string(),
        live_brokers: brokers(&[(1, 10), (2, 20), (3, 30)]),
        ..Default::default()
    };
    let topic = |assignment: &[(i32, &[i32])]| TopicInfo {
        id: uuid::Uuid::nil(),
        assignment: assignment.iter().map(|(p, r)| (*p, ids(r))).collect(),
        reassigning: Default::default(),
    };
    ctx.topics.insert(
        "t".into(),
        topic(&[(0, &[1, 2, 3]), (1, &[2, 1, 3]), (2, &[1, 3]), (3, &[2, 1])]),
    );
    ctx.topics.insert("solo".into(), topic(&[(0, &[1])]));
    for (k, l) in [
        (key("t", 0), leadership(1, &[1, 2, 3])),
        (key("t", 1), leadership(1, &[1, 2, 3])),
        (key("t", 2), leadership(1, &[1])),
        (key("t", 3), leadership(2, &[2, 1])),
        (key("solo", 0), leadership(1, &[1])),
    ] {
        ctx.leaderships.insert(k, l);
    }
    ctx.initialize_partition_states();
    ctx.initialize_replica_states();
    ctx
}

/// The cached leaderships of `keys`, as a re-read finds them unchanged.
fn unchanged(ctx: &ControllerContext, fx: &Effects) -> ReadResult {
    let Some(ZkOp::Read(Read::Leaderships(keys))) = &fx.zk else {
        panic!("expected a re-read of leaderships, got {:?}", fx.zk);
    };
    ReadResult::Leaderships(keys.iter().map(|k| (k.clone(), ctx.leaderships[k].clone())).collect())
}

fn updates(fx: &Effects) -> BTreeMap<Key, (Option<BrokerId>, Vec<BrokerId>)> {
    match &fx.zk {
        Some(ZkOp::Write(Write::PartitionStates { creates, updates })) => {
            assert!(creates.is_empty());
            updates
                .iter()
                .map(|(k, l)| (k.clone(), (l.leader, l.isr.clone())))
                .collect()
        }
        other => panic!("expected a partition state write, got {other:?}"),
    }
}

fn versions(n: usize) -> WriteResult {
    WriteResult::PartitionStates { versions: vec![7; n] }
}

fn led(b: i32, isr: &[i32]) -> (Option<BrokerId>, Vec<BrokerId>) {
    (Some(BrokerId(b)), ids(isr))
}

#[test]
fn controlled_shutdown_refuses_an_unknown_broker_and_a_stale_epoch_without_marking_it() {
    for (broker, epoch, want) in [(9, -1, BrokerNotAvailable), (2, 19, StaleBrokerEpoch)] {
        let mut ctx = context();
        let fx = event(
            &mut ctx,
            Event::ControlledShutdown {
                broker: BrokerId(broker),
                broker_epoch: epoch,
            },
        );
        assert_eq!(fx.reply, Some(Reply::ControlledShutdown(Err(want))));
        assert_eq!(fx.zk, None);
        assert!(idle(&ctx) && ctx.shutting_down.is_empty());
    }
}

/// Broker 1 shuts down: what it leads moves to another live ISR member (never to itself), it
/// leaves the ISR it follows in, it gets StopReplica (no delete) for that one, and the answer
/// is the replicated partition nobody else can take (t-2: its only other replica is out of
/// sync); the single-replica `solo-0` neither moves nor counts.
#[test]
fn controlled_shutdown_moves_leaders_off_the_broker_and_answers_what_it_still_leads() {
    let mut ctx = context();
    let fx = event(
        &mut ctx,
        Event::ControlledShutdown {
            broker: BrokerId(1),
            broker_epoch: 10,
        },
    );
    assert!(ctx.shutting_down.contains(&BrokerId(1)));
    assert_eq!(fx.reply, None, "no answer before the write");
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    let written = updates(&fx);
    let want: BTreeMap<Key, _> = [
        (key("t", 0), led(2, &[2, 3])),
        (key("t", 1), led(2, &[2, 3])),
        (key("t", 3), led(2, &[2])),
    ]
    .into();
    assert_eq!(written, want);
    assert!(fx.send.is_empty(), "nothing is sent before the write");

    let fx = wrote(&mut ctx, versions(3));
    assert_eq!(fx.reply, Some(Reply::ControlledShutdown(Ok(vec![key("t", 2)]))));
    let stops: Vec<_> = fx
        .send
        .iter()
        .filter_map(|(b, r)| match r {
            ControlRequest::StopReplica(s) => Some((b.0, s.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(stops.len(), 1, "{stops:?}");
    let (to, stop) = &stops[0];
    assert_eq!(*to, 1);
    let parts: Vec<(String, i32, bool)> = stop
        .topic_states
        .iter()
        .flat_map(|t| {
            let topic = t.topic_name.0.to_string();
            t.partition_states
                .iter()
                .map(move |p| (topic.clone(), p.partition_index, p.delete_partition))
        })
        .collect();
    assert_eq!(parts, vec![("t".to_string(), 3, false)]);
    let replica = crate::controller::replica_changes::replica(&key("t", 3), BrokerId(1));
    assert_eq!(ctx.replica_states.state(&replica), ReplicaState::Offline);
    assert!(idle(&ctx));
}

#[test]
fn controlled_shutdown_that_cannot_reread_gives_no_answer() {
    let mut ctx = context();
    event(
        &mut ctx,
        Event::ControlledShutdown {
            broker: BrokerId(1),
            broker_epoch: -1,
        },
    );
    let fx = step(&mut ctx, Input::Failed, Instant::now());
    assert_eq!((fx.reply, fx.zk), (None, None));
    assert!(idle(&ctx));
}

/// ElectLeaders PREFERRED: each partition's answer as Kafka gives it; only t-1 is written.
#[test]
fn elect_leaders_preferred_answers_per_partition() {
    let mut ctx = context();
    ctx.topics_to_delete.insert("solo".into());
    // t-3's preferred replica 2 already leads; make t-2's (1) lead nobody's ISR: 3 leads it.
    ctx.leaderships.insert(key("t", 2), leadership(3, &[3]));
    let asked = vec![
        key("t", 0),
        key("t", 1),
        key("t", 2),
        key("t", 3),
        key("solo", 0),
        key("x", 0),
    ];
    let fx = event(
        &mut ctx,
        Event::ElectLeaders {
            partitions: Some(asked.clone()),
            unclean: false,
        },
    );
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(updates(&fx), [(key("t", 1), led(2, &[1, 2, 3]))].into());
    let fx = wrote(&mut ctx, versions(1));
    let want = vec![
        (key("t", 0), Err(ElectionNotNeeded)),
        (key("t", 1), Ok(())),
        (key("t", 2), Err(PreferredLeaderNotAvailable)),
        (key("t", 3), Err(ElectionNotNeeded)),
        (key("solo", 0), Err(TopicBeingDeleted)),
        (key("x", 0), Err(UnknownTopicOrPartition)),
    ];
    assert_eq!(fx.reply, Some(Reply::ElectLeaders(want)));
    assert_eq!(ctx.leaderships[&key("t", 1)].leader, Some(BrokerId(2)));
}

/// A preferred replica that is shutting down is not online (Kafka's `isReplicaOnline`).
#[test]
fn elect_leaders_preferred_skips_a_shutting_down_preferred_replica() {
    let mut ctx = context();
    ctx.shutting_down.insert(BrokerId(2));
    let fx = event(
        &mut ctx,
        Event::ElectLeaders {
            partitions: Some(vec![key("t", 1)]),
            unclean: false,
        },
    );
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(fx.zk, None, "nothing to write");
    assert_eq!(
        fx.reply,
        Some(Reply::ElectLeaders(vec![(
            key("t", 1),
            Err(PreferredLeaderNotAvailable)
        )]))
    );
}

/// ElectLeaders UNCLEAN: a partition whose leader and ISR are dead gets a live replica from
/// outside the ISR, counted as an unclean election; one with a live leader needs nothing, one
/// with no live replica has no eligible leader.
#[test]
fn elect_leaders_unclean_elects_outside_the_isr_and_counts_it() {
    let mut ctx = context();
    ctx.live_brokers.remove(&BrokerId(1));
    ctx.leaderships.insert(key("t", 2), leadership(-1, &[1]));
    let fx = event(
        &mut ctx,
        Event::ElectLeaders {
            partitions: Some(vec![key("t", 2), key("t", 3), key("solo", 0)]),
            unclean: true,
        },
    );
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(updates(&fx), [(key("t", 2), led(3, &[3]))].into());
    let fx = wrote(&mut ctx, versions(1));
    assert!(fx
        .metrics
        .iter()
        .any(|m| matches!(m, Metric::LeaderElection { unclean: 1, .. })));
    assert_eq!(
        fx.reply,
        Some(Reply::ElectLeaders(vec![
            (key("t", 2), Ok(())),
            (key("t", 3), Err(ElectionNotNeeded)),
            (key("solo", 0), Err(EligibleLeadersNotAvailable)),
        ]))
    );
}

/// Legacy `/admin/preferred_replica_election`: read it, elect, delete it (fenced); no answer.
#[test]
fn preferred_replica_election_znode_elects_then_deletes_the_znode() {
    let mut ctx = context();
    let fx = event(&mut ctx, Event::PreferredReplicaElectionZNode);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::PreferredReplicaElection)));
    let data = PreferredReplicaElection {
        version: 1,
        partitions: vec![TopicPartitionRef {
            topic: "t".into(),
            partition: 1,
        }],
    }
    .encode();
    let fx = read(&mut ctx, ReadResult::PreferredReplicaElection(Some(data)));
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(updates(&fx), [(key("t", 1), led(2, &[1, 2, 3]))].into());
    let fx = wrote(&mut ctx, versions(1));
    assert_eq!(fx.zk, Some(ZkOp::Write(Write::DeletePreferredReplicaElection)));
    assert_eq!(fx.reply, None);
    let fx = wrote(&mut ctx, WriteResult::PreferredReplicaElectionDeleted);
    assert_eq!(fx.zk, None);
    assert!(idle(&ctx));

    // Gone by the time it is read: nothing to do.
    event(&mut ctx, Event::PreferredReplicaElectionZNode);
    let fx = read(&mut ctx, ReadResult::PreferredReplicaElection(None));
    assert_eq!(fx.zk, None);
    assert!(idle(&ctx));
}

/// A malformed znode elects nothing but is still deleted.
#[test]
fn a_malformed_preferred_replica_election_znode_is_deleted() {
    let mut ctx = context();
    event(&mut ctx, Event::PreferredReplicaElectionZNode);
    let fx = read(&mut ctx, ReadResult::PreferredReplicaElection(Some(b"{".to_vec())));
    assert_eq!(fx.zk, Some(ZkOp::Write(Write::DeletePreferredReplicaElection)));
}

/// LogDirEventNotification: the named broker gets LeaderAndIsr for every replica it hosts
/// (those in the failed dir will answer KAFKA_STORAGE_ERROR), then the notifications read are
/// deleted, malformed ones too.
#[test]
fn log_dir_event_asks_the_broker_about_its_replicas_then_deletes_the_notifications() {
    let mut ctx = context();
    let parent = paths::LOG_DIR_EVENT_NOTIFICATION;
    let fx = event(&mut ctx, Event::LogDirEventNotification);
    assert_eq!(fx.zk, Some(ZkOp::Read(Read::NotificationNames(parent))));
    let names = vec!["log_dir_event_1".to_string(), "log_dir_event_2".to_string()];
    let fx = read(&mut ctx, ReadResult::NotificationNames(names.clone()));
    assert_eq!(
        fx.zk,
        Some(ZkOp::Read(Read::NotificationPayloads {
            parent,
            names: names.clone()
        }))
    );
    let good = LogDirEventNotification {
        version: 1,
        broker: BrokerId(3),
        event: LogDirEventNotification::LOG_DIR_FAILURE,
    }
    .encode();
    let fx = read(
        &mut ctx,
        ReadResult::NotificationPayloads(vec![(names[0].clone(), good), (names[1].clone(), b"?".to_vec())]),
    );
    let asked: Vec<(i32, Vec<(String, i32)>)> = fx
        .send
        .iter()
        .map(|(b, r)| {
            let ControlRequest::LeaderAndIsr(l) = r else {
                panic!("expected LeaderAndIsr, got {r:?}");
            };
            let parts = l
                .topic_states
                .iter()
                .flat_map(|t| {
                    let topic = t.topic_name.0.to_string();
                    t.partition_states
                        .iter()
                        .map(move |p| (topic.clone(), p.partition_index))
                })
                .collect();
            (b.0, parts)
        })
        .collect();
    assert_eq!(
        asked,
        vec![(3, vec![("t".into(), 0), ("t".into(), 1), ("t".into(), 2)])]
    );
    assert_eq!(fx.zk, Some(ZkOp::Write(Write::DeleteNotifications { parent, names })));
    let fx = wrote(&mut ctx, WriteResult::NotificationsDeleted);
    assert_eq!(fx.zk, None);
    assert!(idle(&ctx));
}

/// A broker answered KAFKA_STORAGE_ERROR for t-0, which it leads: its replica is offline and
/// the partition is re-elected to a live ISR member, then announced.
#[test]
fn offline_replicas_are_elected_away_from() {
    let mut ctx = context();
    let fx = event(
        &mut ctx,
        Event::OfflineReplicas {
            broker: BrokerId(1),
            partitions: vec![key("t", 0)],
        },
    );
    assert!(ctx.offline_replicas.contains(&("t".into(), 0, BrokerId(1))));
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(updates(&fx), [(key("t", 0), led(2, &[2, 3]))].into());
    let fx = wrote(&mut ctx, versions(1));
    let um = fx
        .send
        .iter()
        .filter(|(_, r)| matches!(r, ControlRequest::UpdateMetadata(_)))
        .count();
    assert_eq!(
        um, 6,
        "the election's UpdateMetadata and the offline replicas' own, to 3 brokers"
    );
    assert!(idle(&ctx));
}

fn auto(ctx: &mut ControllerContext) -> AutoRebalance {
    let a = AutoRebalance {
        interval: Duration::from_secs(300),
        imbalance_percentage: 10,
    };
    ctx.auto_rebalance = Some(a);
    a
}

/// The auto rebalance timer is armed one interval after the failover, only when enabled.
#[test]
fn failover_done_arms_the_imbalance_check_when_enabled() {
    let now = Instant::now();
    let mut ctx = context();
    let fx = step(&mut ctx, Input::Event(Event::FailoverDone), now);
    assert!(fx.timers.is_empty());
    let a = auto(&mut ctx);
    let fx = step(&mut ctx, Input::Event(Event::FailoverDone), now);
    let want = Timer {
        kind: TimerKind::AutoLeaderRebalance,
        at: now + a.interval,
    };
    assert_eq!(fx.timers, vec![want]);
    assert!(idle(&ctx));
}

/// When it fires it arms itself again from the `now` it is given, and runs preferred
/// elections for the partitions of brokers over the imbalance ratio (broker 2 should lead t-1
/// and t-3 but leads only t-3: 50 % > 10 %): t-1 moves back to 2.
#[test]
fn the_imbalance_check_rearms_and_moves_leaders_back_to_preferred_replicas() {
    let now = Instant::now();
    let mut ctx = context();
    let a = auto(&mut ctx);
    assert_eq!(timers::imbalanced(&ctx, a.imbalance_percentage), vec![key("t", 1)]);
    assert!(timers::imbalanced(&ctx, 50).is_empty(), "50 % is not over 50 %");
    let fx = step(&mut ctx, Input::Timer(TimerKind::AutoLeaderRebalance), now);
    assert_eq!(
        fx.timers,
        vec![Timer {
            kind: TimerKind::AutoLeaderRebalance,
            at: now + a.interval
        }]
    );
    let fresh = unchanged(&ctx, &fx);
    let fx = read(&mut ctx, fresh);
    assert_eq!(updates(&fx), [(key("t", 1), led(2, &[1, 2, 3]))].into());
    let fx = wrote(&mut ctx, versions(1));
    assert_eq!(fx.reply, None, "nobody to answer");
    assert!(idle(&ctx));

    // A broker shutting down is not moved back to.
    ctx.leaderships.insert(key("t", 1), leadership(1, &[1, 2, 3]));
    ctx.shutting_down.insert(BrokerId(2));
    assert!(timers::imbalanced(&ctx, a.imbalance_percentage).is_empty());
}
