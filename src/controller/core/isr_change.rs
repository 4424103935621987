//! IsrChangeNotification (Kafka's `processIsrChangeNotification`): leaders that changed ISRs in
//! the state znodes themselves leave `/isr_change_notification/isr_change_<seq>`. Read the
//! notifications, re-read the state znodes of the known partitions they name, take leader, ISR,
//! epochs and zkVersion into the context, send UpdateMetadata for them to every live broker,
//! then delete the notifications read (fenced) whether or not the refresh worked. It must not
//! decide leaders. No I/O: each ZooKeeper step is an effect whose result resumes the step.

use std::collections::BTreeSet;

use super::{announce, Effects, Input, Key, Pending, Read, ReadResult, Write, WriteResult, ZkOp};
use crate::controller::requests::ControllerContext;
use crate::zk::models::{IsrChangeNotification, ZNodePayload};
use crate::zk::paths;

const PARENT: &str = paths::ISR_CHANGE_NOTIFICATION;

/// Where an ISR change notification is.
#[derive(Debug)]
pub enum Waiting {
    Names,
    Payloads {
        names: Vec<String>,
    },
    States {
        names: Vec<String>,
    },
    /// For the notifications' deletion; then the reassignments among the refreshed partitions
    /// are checked, all at once (their state-znode watches would take them one by one).
    Deleting {
        reassigning: Vec<Key>,
    },
}

/// The partitions named by ISR change notifications `(name, payload)`, deduplicated, and the
/// names of notifications that could not be read (still deleted: a malformed one would
/// otherwise be re-read on every change).
pub fn changed_partitions(payloads: &[(String, Vec<u8>)]) -> (BTreeSet<Key>, Vec<String>) {
    let mut partitions = BTreeSet::new();
    let mut malformed = Vec::new();
    for (name, data) in payloads {
        match IsrChangeNotification::decode(data) {
            Ok(n) => partitions.extend(n.partitions.into_iter().map(|p| (p.topic, p.partition))),
            Err(_) => malformed.push(name.clone()),
        }
    }
    (partitions, malformed)
}

pub fn start(ctx: &mut ControllerContext, fx: &mut Effects) {
    ctx.pending = Pending::Isr(Waiting::Names);
    fx.zk = Some(ZkOp::Read(Read::NotificationNames(PARENT)));
}

pub fn resume(ctx: &mut ControllerContext, waiting: Waiting, input: Input, fx: &mut Effects) {
    match (waiting, input) {
        (Waiting::Names, Input::Read(ReadResult::NotificationNames(names))) => {
            if !names.is_empty() {
                ctx.pending = Pending::Isr(Waiting::Payloads { names: names.clone() });
                fx.zk = Some(ZkOp::Read(Read::NotificationPayloads { parent: PARENT, names }));
            }
        }
        (Waiting::Payloads { names }, Input::Read(ReadResult::NotificationPayloads(payloads))) => {
            let known = named_known(ctx, &payloads);
            if known.is_empty() {
                delete(ctx, names, fx);
            } else {
                ctx.pending = Pending::Isr(Waiting::States { names });
                fx.zk = Some(ZkOp::Read(Read::Leaderships(known)));
            }
        }
        (Waiting::States { names }, Input::Read(ReadResult::Leaderships(states))) => {
            let refreshed: Vec<Key> = states.keys().cloned().collect();
            ctx.leaderships.extend(states);
            tracing::info!(partitions = refreshed.len(), "ISR changes announced");
            fx.send.extend(announce::update_metadata(ctx, &refreshed));
            let reassigning = refreshed
                .into_iter()
                .filter(|(t, p)| ctx.reassigning(t, *p).is_some())
                .collect();
            delete_then(ctx, names, reassigning, fx);
        }
        // The refresh failed: the notifications read are deleted all the same.
        (Waiting::Payloads { names } | Waiting::States { names }, Input::Failed) => delete(ctx, names, fx),
        (Waiting::Deleting { reassigning }, Input::Wrote(WriteResult::NotificationsDeleted)) => {
            super::reassignment::isr_changed(ctx, reassigning, fx)
        }
        (_, Input::Failed) => {}
        (_, input) => tracing::warn!(?input, "controller core: unexpected input during an ISR change"),
    }
}

/// Partitions the notifications name that the controller knows. Those of topics being created
/// or already deleted are not the controller's yet (or any more); their state is read when
/// they are created.
fn named_known(ctx: &ControllerContext, payloads: &[(String, Vec<u8>)]) -> Vec<Key> {
    let (named, malformed) = changed_partitions(payloads);
    if !malformed.is_empty() {
        tracing::warn!(?malformed, "ignoring malformed ISR change notifications");
    }
    named
        .into_iter()
        .filter(|(t, p)| ctx.topics.get(t).is_some_and(|i| i.assignment.contains_key(p)))
        .collect()
}

fn delete(ctx: &mut ControllerContext, names: Vec<String>, fx: &mut Effects) {
    delete_then(ctx, names, Vec::new(), fx)
}

fn delete_then(ctx: &mut ControllerContext, names: Vec<String>, reassigning: Vec<Key>, fx: &mut Effects) {
    ctx.pending = Pending::Isr(Waiting::Deleting { reassigning });
    fx.zk = Some(ZkOp::Write(Write::DeleteNotifications { parent: PARENT, names }));
}
