//! The requests that announce the context's state: UpdateMetadata to every live broker and
//! LeaderAndIsr to each live replica, as [`super::Effects::send`] entries. No I/O.

use std::collections::BTreeMap;

use super::Key;
use crate::controller::channel::ControlRequest;
use crate::controller::requests::{self, ControllerContext};
use crate::types::BrokerId;

/// UpdateMetadata for `partitions` to every live broker.
pub fn update_metadata(ctx: &ControllerContext, partitions: &[Key]) -> Vec<(BrokerId, ControlRequest)> {
    ctx.live_brokers
        .iter()
        .map(|(id, b)| {
            let request = requests::update_metadata(ctx, partitions, b.epoch);
            (*id, ControlRequest::UpdateMetadata(request))
        })
        .collect()
}

/// LeaderAndIsr for `partitions` to each of their live replicas.
pub fn leader_and_isr(ctx: &ControllerContext, partitions: &[Key], is_new: bool) -> Vec<(BrokerId, ControlRequest)> {
    let mut per_broker: BTreeMap<BrokerId, Vec<Key>> = BTreeMap::new();
    for (t, p) in partitions {
        for r in ctx.replicas(t, *p) {
            if ctx.is_live(r) {
                per_broker.entry(r).or_default().push((t.clone(), *p));
            }
        }
    }
    per_broker
        .into_iter()
        .filter_map(|(broker, theirs)| leader_and_isr_to(ctx, broker, &theirs, is_new))
        .collect()
}

/// One LeaderAndIsr for `partitions` to `broker`, if it is live and there is something to say.
pub fn leader_and_isr_to(
    ctx: &ControllerContext,
    broker: BrokerId,
    partitions: &[Key],
    is_new: bool,
) -> Option<(BrokerId, ControlRequest)> {
    let b = ctx.live_brokers.get(&broker)?;
    if partitions.is_empty() {
        return None;
    }
    let request = requests::leader_and_isr(ctx, partitions, b.epoch, &ctx.inter_broker_listener, is_new);
    Some((broker, ControlRequest::LeaderAndIsr(request)))
}
