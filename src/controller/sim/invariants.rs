//! The invariants, checked against ZooKeeper's write log after every step and against the
//! whole cluster once it has quiesced.

use std::collections::{BTreeMap, BTreeSet};

use super::super::model::LeaderAndIsr;
use super::world::{locked, UncleanAsked, World};
use crate::types::{BrokerId, ZkVersion};
use crate::zk::fake::Write;
use crate::zk::models::{TopicAssignment, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::ZkStore;

#[derive(Default)]
pub struct Checker {
    /// The last `/controller_epoch` written (`None` before it exists).
    controller_epoch: Option<i32>,
    /// Each controller epoch's brokers whose controller writes succeeded.
    writers: BTreeMap<i32, BTreeSet<BrokerId>>,
    /// Each state znode's last contents.
    states: BTreeMap<String, LeaderAndIsr>,
    /// Each topic's last assignment written to `/brokers/topics/<t>`.
    assignments: BTreeMap<String, BTreeMap<i32, Vec<BrokerId>>>,
    /// Unclean elections seen.
    pub unclean: usize,
    /// Writes seen (for quiescence).
    pub writes: usize,
    /// The controlled shutdowns accepted as of the end of the last step.
    shutdowns: BTreeMap<BrokerId, (i32, u64)>,
}

/// What a state znode write may do, as the world stands.
struct Allowed<'a> {
    /// `unclean.leader.election.enable` is on.
    unclean: bool,
    asked: &'a mut UncleanAsked,
    /// Brokers in controlled shutdown since before this step, by the epoch that accepted it.
    shutting_down: BTreeMap<BrokerId, i32>,
}

/// (topic, partition) of a state znode path.
fn state_key(path: &str) -> Option<(String, i32)> {
    let rest = path.strip_prefix("/brokers/topics/")?.strip_suffix("/state")?;
    let (topic, p) = rest.split_once("/partitions/")?;
    Some((topic.to_string(), p.parse().ok()?))
}

fn epoch_of(data: &[u8]) -> i32 {
    std::str::from_utf8(data)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Paths a broker's session writes for itself, not as controller.
fn own_path(path: &str) -> bool {
    path.starts_with("/brokers/ids/") || path == paths::CONTROLLER || path == paths::CONTROLLER_EPOCH
}

impl Checker {
    /// Checks every write since the last call.
    pub fn after_step(&mut self, world: &mut World) -> Result<(), String> {
        let admin = world.admin.session_id();
        let now = locked(&world.shutdowns).accepted.clone();
        // Only shutdowns accepted before this step and still standing: a write earlier in the
        // step that accepted one may rightly have elected the broker.
        let shutting_down = now
            .iter()
            .filter(|(b, v)| self.shutdowns.get(b) == Some(v))
            .map(|(b, (epoch, _))| (*b, *epoch))
            .collect();
        let asked = world.unclean_asked.clone();
        let mut asked = locked(&asked);
        let mut allowed = Allowed {
            unclean: world.unclean,
            asked: &mut asked,
            shutting_down,
        };
        for w in world.admin.take_writes() {
            self.writes += 1;
            // `/controller` carries a wall-clock timestamp: left out so traces replay exactly.
            let data = match &w.data {
                Some(_) if w.path == paths::CONTROLLER => "(elected)".into(),
                Some(d) => String::from_utf8_lossy(d).into_owned(),
                None => "(deleted)".into(),
            };
            world.log(format!("zk write s{} {} {data}", w.session, w.path));
            let owner = world.session_owner.get(&w.session).copied();
            self.check_deletion(&w, admin, &world.deleted)?;
            self.check(&w, admin, owner, &mut allowed)?;
        }
        self.shutdowns = now;
        for (t, p, b) in std::mem::take(&mut world.replica_deletes) {
            self.check_replica_delete(&t, p, b, &world.deleting)?;
        }
        // Every unclean election written was counted, and nothing else; but one whose write's
        // reply was lost (one lost reply may cover several partitions) is not known to be written.
        let counted = crate::controller::stats::UNCLEAN_COUNTED.with(|c| c.get());
        if counted > self.unclean || (self.unclean > counted && world.lost_replies == 0) {
            return Err(format!(
                "{} unclean elections written but {counted} counted ({} write replies lost)",
                self.unclean, world.lost_replies
            ));
        }
        Ok(())
    }

    fn check(&mut self, w: &Write, admin: i64, owner: Option<BrokerId>, allowed: &mut Allowed) -> Result<(), String> {
        let epoch_now = epoch_of(&w.controller_epoch);
        if w.path == paths::CONTROLLER_EPOCH {
            if let Some(before) = self.controller_epoch.filter(|e| epoch_now <= *e) {
                return Err(format!("/controller_epoch went from {before} to {epoch_now}"));
            }
            self.controller_epoch = Some(epoch_now);
        }
        if w.session != admin && !own_path(&w.path) {
            let writers = self.writers.entry(epoch_now).or_default();
            writers.insert(owner.unwrap_or(BrokerId(-1)));
            if writers.len() > 1 {
                return Err(format!(
                    "two controllers' writes succeeded in epoch {epoch_now}: brokers {writers:?}"
                ));
            }
        }
        if !(w.path.starts_with("/brokers/topics/") && w.path.ends_with("/state")) {
            return Ok(());
        }
        let Some(data) = &w.data else {
            self.states.remove(&w.path);
            return Ok(());
        };
        let l = LeaderAndIsr::from_znode(data, ZkVersion(0)).map_err(|e| format!("{}: {e}", w.path))?;
        if l.isr.is_empty() {
            return Err(format!("{}: empty ISR", w.path));
        }
        if let Some(leader) = l.leader {
            if !l.isr.contains(&leader) {
                return Err(format!("{}: leader {leader} outside ISR {:?}", w.path, l.isr));
            }
        }
        if w.session != admin {
            self.check_assigned(&w.path, &l)?;
        }
        if w.session != admin && l.controller_epoch != epoch_now {
            return Err(format!(
                "{}: written with controller epoch {} while /controller_epoch is {epoch_now}",
                w.path, l.controller_epoch
            ));
        }
        if let Some(prev) = self.states.get(&w.path) {
            if l.leader_epoch < prev.leader_epoch {
                return Err(format!(
                    "{}: leader epoch went back from {} to {}",
                    w.path, prev.leader_epoch, l.leader_epoch
                ));
            }
            if let Some(leader) = l.leader {
                let shut = allowed.shutting_down.get(&leader) == Some(&l.controller_epoch);
                if l.leader != prev.leader && shut && w.session != admin {
                    return Err(format!(
                        "{}: broker {leader} elected in epoch {} after that controller accepted its controlled shutdown",
                        w.path, l.controller_epoch
                    ));
                }
                if l.leader != prev.leader && !prev.isr.contains(&leader) {
                    let asked = state_key(&w.path).is_some_and(|k| allowed.asked.allows(&k));
                    if !allowed.unclean && !asked {
                        return Err(format!(
                            "{}: leader {leader} elected from outside the ISR {:?} with unclean election off",
                            w.path, prev.isr
                        ));
                    }
                    self.unclean += 1;
                }
            }
            if l.leader != prev.leader && l.leader_epoch == prev.leader_epoch {
                return Err(format!("{}: leader changed without a new leader epoch", w.path));
            }
        }
        self.states.insert(w.path.clone(), l);
        Ok(())
    }

    /// A controller's ISR holds only assigned replicas (RS ⊇ ISR; RS is the union of the original
    /// and target replicas while a partition is reassigned), except when none of the ISR is
    /// assigned: those copies are the data's last, kept rather than dropped.
    fn check_assigned(&self, path: &str, l: &LeaderAndIsr) -> Result<(), String> {
        let Some((t, p)) = state_key(path) else { return Ok(()) };
        let Some(rs) = self.assignments.get(&t).and_then(|a| a.get(&p)) else {
            return Ok(());
        };
        let outside: Vec<&BrokerId> = l.isr.iter().filter(|b| !rs.contains(b)).collect();
        if !outside.is_empty() && outside.len() < l.isr.len() {
            return Err(format!(
                "{path}: ISR {:?} holds {outside:?}, not in the replicas {rs:?}",
                l.isr
            ));
        }
        Ok(())
    }

    /// A replica is deleted (StopReplica with delete, outside a topic deletion) only while
    /// another replica is in sync: no acknowledged data loses its last in-sync copy.
    fn check_replica_delete(&self, t: &str, p: i32, b: BrokerId, deleting: &BTreeSet<String>) -> Result<(), String> {
        if deleting.contains(t) {
            return Ok(());
        }
        let Some(l) = self.states.get(&paths::partition_state(t, p)) else {
            return Ok(());
        };
        if l.isr.iter().all(|r| *r == b) {
            return Err(format!("{t}-{p}: replica on {b} deleted while the ISR is {:?}", l.isr));
        }
        Ok(())
    }

    /// A controller deletes a partition's state znode (completing a topic deletion) only once
    /// every replica of the partition confirmed its StopReplica(delete).
    fn check_deletion(
        &mut self,
        w: &Write,
        admin: i64,
        deleted: &BTreeSet<(String, i32, BrokerId)>,
    ) -> Result<(), String> {
        let Some(rest) = w.path.strip_prefix("/brokers/topics/") else {
            return Ok(());
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match (parts.as_slice(), &w.data) {
            ([topic], Some(data)) => {
                if let Ok(a) = TopicAssignment::decode(data) {
                    let assignment = a
                        .partitions
                        .iter()
                        .filter_map(|(p, r)| Some((p.parse().ok()?, r.clone())));
                    self.assignments.insert(topic.to_string(), assignment.collect());
                }
            }
            ([topic, "partitions", p, "state"], None) if w.session != admin => {
                let p: i32 = p.parse().unwrap_or(-1);
                let replicas = self.assignments.get(*topic).and_then(|a| a.get(&p)).cloned();
                let unconfirmed: Vec<BrokerId> = replicas
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|b| !deleted.contains(&(topic.to_string(), p, *b)))
                    .collect();
                if !unconfirmed.is_empty() {
                    return Err(format!(
                        "{}: deleted before replicas {unconfirmed:?} confirmed their StopReplica(delete)",
                        w.path
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Once quiet with every broker up: one controller, every partition led by a live ISR
    /// member, every deletion done, no illegal state change.
    pub async fn at_quiescence(&self, world: &World) -> Result<(), String> {
        let Some(c) = world.controller_id().await else {
            return Err("no controller".into());
        };
        let active: Vec<BrokerId> = world
            .brokers
            .iter()
            .filter(|b| b.controller.is_active())
            .map(|b| b.id)
            .collect();
        if active != vec![c] {
            return Err(format!("/controller names {c} but active controllers are {active:?}"));
        }
        let queued = world.admin.children(paths::DELETE_TOPICS).await.unwrap_or_default();
        if !queued.is_empty() {
            return Err(format!("deletions not done: {queued:?}"));
        }
        if world
            .admin
            .exists(paths::REASSIGN_PARTITIONS)
            .await
            .ok()
            .flatten()
            .is_some()
        {
            return Err(format!("{} not deleted", paths::REASSIGN_PARTITIONS));
        }
        for (t, info) in world.topic_infos().await {
            if let Some((p, r)) = info.reassigning.iter().next() {
                return Err(format!("{t}-{p} still being reassigned: {r:?}"));
            }
            let assignment = info.assignment;
            for p in assignment.keys() {
                let path = paths::partition_state(&t, *p);
                let Ok((data, stat)) = world.admin.get_data(&path).await else {
                    return Err(format!("{t}-{p} has no state znode"));
                };
                let l = LeaderAndIsr::from_znode(&data, stat.version)?;
                let live = |b: BrokerId| world.brokers.iter().any(|x| x.id == b && x.registered);
                if !l.leader.is_some_and(live) {
                    return Err(format!("{t}-{p} has no live leader: {l:?}"));
                }
                if l.isr.iter().any(|b| !assignment[p].contains(b)) {
                    return Err(format!(
                        "{t}-{p}: ISR {:?} not within the replicas {:?}",
                        l.isr, assignment[p]
                    ));
                }
            }
        }
        Ok(())
    }
}
