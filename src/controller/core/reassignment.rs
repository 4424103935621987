//! Partition reassignment (KIP-455). Skeleton: being built.

use std::time::Instant;

use super::{Effects, Input, Key};
use crate::controller::requests::ControllerContext;
use crate::types::BrokerId;

/// A partition being reassigned, as ListPartitionReassignments shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ongoing {
    pub replicas: Vec<BrokerId>,
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

/// What runs once a reassignment step is over.
#[derive(Debug)]
pub enum Then {
    Done,
}

#[derive(Debug)]
pub enum Waiting {}

pub fn alter(_ctx: &mut ControllerContext, _requests: Vec<(Key, Option<Vec<BrokerId>>)>, _fx: &mut Effects) {}

pub fn start_znode(_ctx: &mut ControllerContext, _then: Then, _fx: &mut Effects) {}

pub fn isr_changed(_ctx: &mut ControllerContext, _partitions: Vec<Key>, _fx: &mut Effects) {}

pub fn resume(_ctx: &mut ControllerContext, w: Waiting, _input: Input, _now: Instant, _fx: &mut Effects) {
    match w {}
}

/// The partitions being reassigned among `partitions` (all when `None`).
pub fn list(ctx: &ControllerContext, partitions: Option<&[Key]>) -> Vec<(Key, Ongoing)> {
    let all = ctx.topics.iter().flat_map(|(t, info)| {
        info.reassigning.iter().map(move |(p, r)| {
            let key = (t.clone(), *p);
            let ongoing = Ongoing {
                replicas: info.assignment.get(p).cloned().unwrap_or_default(),
                adding: r.adding.clone(),
                removing: r.removing.clone(),
            };
            (key, ongoing)
        })
    });
    match partitions {
        None => all.collect(),
        Some(wanted) => all.filter(|(k, _)| wanted.contains(k)).collect(),
    }
}
