//! Log-dir failures (Kafka's `processLogDirEventNotification` and the replicas a broker answers
//! KAFKA_STORAGE_ERROR for). A broker that lost a log dir leaves
//! `/log_dir_event_notification/log_dir_event_<seq>`: read the notifications, send every named
//! broker LeaderAndIsr for each replica it hosts (those in the failed dir answer
//! KAFKA_STORAGE_ERROR), and delete the notifications read, fenced. The replicas it answers
//! KAFKA_STORAGE_ERROR for ([`offline`]) go Offline and their partitions are re-elected away.
//! No I/O: each ZooKeeper step is an effect.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{announce, elect, Effects, Input, Key, Pending, Read, ReadResult, Write, WriteResult, ZkOp};
use crate::controller::replica_changes;
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;
use crate::zk::models::{LogDirEventNotification, ZNodePayload};
use crate::zk::paths;

const PARENT: &str = paths::LOG_DIR_EVENT_NOTIFICATION;

/// Where a log-dir event is.
#[derive(Debug)]
pub enum Waiting {
    Names,
    Payloads { names: Vec<String> },
    Deleting,
}

pub fn start(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::LogDir(Waiting::Names);
    fx.zk = Some(ZkOp::Read(Read::NotificationNames(PARENT)));
}

/// The brokers log-dir event notifications `(name, payload)` name; malformed ones are skipped.
pub fn failed_brokers(payloads: &[(String, Vec<u8>)]) -> BTreeSet<BrokerId> {
    let mut brokers = BTreeSet::new();
    for (name, data) in payloads {
        match LogDirEventNotification::decode(data) {
            Ok(n) => {
                brokers.insert(n.broker);
            }
            Err(e) => tracing::warn!(%name, error = %e, "ignoring a malformed log dir event"),
        }
    }
    brokers
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, _now: Instant, fx: &mut Effects) {
    match (waiting, input) {
        (Waiting::Names, Input::Read(ReadResult::NotificationNames(names))) => {
            if !names.is_empty() {
                ctx.pending = Pending::LogDir(Waiting::Payloads { names: names.clone() });
                fx.zk = Some(ZkOp::Read(Read::NotificationPayloads { parent: PARENT, names }));
            }
        }
        (Waiting::Payloads { names }, Input::Read(ReadResult::NotificationPayloads(payloads))) => {
            let brokers = failed_brokers(&payloads);
            tracing::warn!(
                ?brokers,
                "log dir failure reported; asking the brokers for their replicas' state"
            );
            for broker in brokers {
                // Not for topics being deleted: their replicas get StopReplica(delete) instead.
                let theirs: Vec<Key> = ctx
                    .all_partitions()
                    .into_iter()
                    .filter(|(t, p)| ctx.replicas(t, *p).contains(&broker) && !ctx.is_queued_for_deletion(t))
                    .collect();
                fx.send.extend(announce::leader_and_isr_to(ctx, broker, &theirs, false));
            }
            delete(ctx, names, fx);
        }
        // The payloads could not be read: the notifications are deleted all the same.
        (Waiting::Payloads { names }, Input::Failed) => delete(ctx, names, fx),
        (Waiting::Deleting, Input::Wrote(WriteResult::NotificationsDeleted)) | (_, Input::Failed) => {}
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during a log dir event"),
    }
}

fn delete(ctx: &mut ControllerContext, names: Vec<String>, fx: &mut Effects) {
    ctx.pending = Pending::LogDir(Waiting::Deleting);
    fx.zk = Some(ZkOp::Write(Write::DeleteNotifications { parent: PARENT, names }));
}

/// `broker` answered KAFKA_STORAGE_ERROR for `partitions`: its replicas there are offline (they
/// cannot lead or stay in sync until it restarts); re-elect, then UpdateMetadata for them.
pub fn offline(ctx: &mut ControllerContext, broker: BrokerId, partitions: Vec<Key>, now: Instant, fx: &mut Effects) {
    for (t, p) in &partitions {
        ctx.offline_replicas.insert((t.clone(), *p, broker));
    }
    let offline: Vec<_> = partitions
        .iter()
        .filter(|(t, p)| ctx.replicas(t, *p).contains(&broker))
        .map(|k| replica_changes::replica(k, broker))
        .collect();
    ctx.replicas_went_offline(&offline);
    ctx.mark_leaderless_offline();
    tracing::warn!(%broker, partitions = partitions.len(), "replicas offline after a log dir failure");
    let after = elect::After::Announce(partitions.clone());
    elect::start(ctx, partitions, after, now, fx);
}
