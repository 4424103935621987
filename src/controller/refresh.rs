//! Reading leaderships back before deciding. Leaders rewrite their partitions' ISRs in the state
//! znodes themselves (the classic path, IBP < 2.7) and only announce it later through
//! `/isr_change_notification`, so the controller's cached ISR and zkVersion can be a few seconds
//! behind. Like Kafka's `doElectLeaderForPartitions`, every step that is about to change
//! partitions re-reads their state znodes first (pipelined) and decides on what ZooKeeper holds:
//! an election never picks a follower its leader already removed, and the conditional writes
//! carry the current version.

use super::controller::Controller;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};

impl<S: ControllerStore> Controller<S> {
    /// Replaces the cached leaderships of `keys` with their state znodes where those are newer.
    pub(super) async fn refresh_leaderships(&mut self, keys: Vec<(String, i32)>) -> Result<(), ControllerZkError> {
        if keys.is_empty() || self.active.is_none() {
            return Ok(());
        }
        let fresh = zk_ops::leaderships(&self.zk, &keys).await?;
        if let Some(active) = self.active.as_mut() {
            super::core::elect::apply_refresh(&mut active.ctx, fresh);
        }
        Ok(())
    }
}
