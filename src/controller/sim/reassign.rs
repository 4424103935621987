//! The simulation's reassignment inputs: an operator moves a partition (AlterPartitionReassignments
//! via any broker, or `/admin/reassign_partitions` as the legacy tool writes it), sometimes onto a
//! dead broker or cancelling; and, once healed, the followers of partitions being reassigned
//! catch up (their leaders add them to the ISR, as real leaders do), so every move can finish.
//!
//! The simulated leaders read the state znode afresh before each ISR write, so they could add a
//! replica being removed right after the controller's completion took it out, which no real
//! leader can (its write is conditional on the version its last LeaderAndIsr carried, which the
//! completion superseded). So they never add replicas being removed.

use std::collections::BTreeMap;

use super::super::model::{LeaderAndIsr, TopicInfo};
use super::world::World;
use crate::types::BrokerId;
use crate::zk::models::{PartitionReassignment, ReassignPartitions, ZNodePayload};
use crate::zk::paths;
use crate::zk::store::{CreateMode, ZkStore};

impl World {
    pub async fn topic_infos(&self) -> BTreeMap<String, TopicInfo> {
        let names = super::super::zk_ops::topic_names(&self.admin).await.unwrap_or_default();
        super::super::zk_ops::topic_infos(&self.admin, &names)
            .await
            .unwrap_or_default()
    }

    /// An operator reassigns one partition: to 1–3 brokers (any of them, live or not), or
    /// cancels (API only); through a random broker's AlterPartitionReassignments or the znode.
    pub async fn reassign(&mut self) {
        let keys: Vec<(String, i32)> = self
            .topic_infos()
            .await
            .into_iter()
            .flat_map(|(t, i)| i.assignment.into_keys().map(move |p| (t.clone(), p)))
            .collect();
        let Some(key) = self.rng.pick(&keys).cloned() else {
            return;
        };
        let n = self.brokers.len();
        let rf = 1 + self.rng.below(3);
        let first = self.rng.below(n);
        let target: Vec<BrokerId> = (0..rf).map(|k| BrokerId(((first + k) % n) as i32 + 1)).collect();
        if self.rng.chance(30) {
            let request = ReassignPartitions {
                version: 1,
                partitions: vec![PartitionReassignment {
                    topic: key.0.clone(),
                    partition: key.1,
                    replicas: target.clone(),
                    log_dirs: None,
                }],
            };
            let ok = self
                .admin
                .create(paths::REASSIGN_PARTITIONS, &request.encode(), CreateMode::Persistent)
                .await
                .is_ok();
            self.log(format!(
                "reassign {}-{} to {target:?} via the znode ok={ok}",
                key.0, key.1
            ));
            return;
        }
        let target = (!self.rng.chance(15)).then_some(target);
        let i = self.rng.below(n);
        let handle = self.brokers[i].controller.clone();
        self.log(format!(
            "reassign {}-{} to {target:?} via broker {}",
            key.0,
            key.1,
            i + 1
        ));
        tokio::spawn(async move {
            let _ = handle.alter_partition_reassignments(vec![(key, target)]).await;
        });
    }

    /// Leaders of partitions being reassigned add their live target replicas outside the ISR
    /// (the new ones caught up). Returns whether it wrote anything.
    pub async fn catch_up(&mut self) -> bool {
        let mut wrote = false;
        for (t, info) in self.topic_infos().await {
            for (p, r) in &info.reassigning {
                let replicas: Vec<BrokerId> = info.assignment.get(p).cloned().unwrap_or_default();
                let target: Vec<BrokerId> = replicas.into_iter().filter(|b| !r.removing.contains(b)).collect();
                wrote |= self.expand_isr(&t, *p, &target).await;
            }
        }
        wrote
    }

    async fn expand_isr(&mut self, t: &str, p: i32, replicas: &[BrokerId]) -> bool {
        let path = paths::partition_state(t, p);
        let Ok((data, stat)) = self.admin.get_data(&path).await else {
            return false;
        };
        let Ok(mut l) = LeaderAndIsr::from_znode(&data, stat.version) else {
            return false;
        };
        let live = |b: &BrokerId| self.brokers.iter().any(|x| x.id == *b && x.registered);
        if !l.leader.is_some_and(|b| live(&b)) {
            return false;
        }
        let outside: Vec<BrokerId> = replicas
            .iter()
            .copied()
            .filter(|r| !l.isr.contains(r) && live(r))
            .collect();
        if outside.is_empty() {
            return false;
        }
        l.isr.extend(outside);
        let written = self.write_isr(t, p, &l).await;
        self.log(format!("followers of {t}-{p} caught up: ISR {:?} ok={written}", l.isr));
        written
    }
}
