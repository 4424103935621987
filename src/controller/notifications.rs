//! Sequential notification znodes brokers leave for the controller: ISR changes
//! (`/isr_change_notification/isr_change_<seq>`, Kafka's IsrChangeNotificationHandler) and, at
//! failover, the removal of every stale notification (Kafka's onControllerFailover deletes both
//! kinds before it reads the cluster, since the full read covers them).
//!
//! Log-dir events are handled in [`super::operations`]; this module only clears them at
//! failover. It must not decide leaders: an ISR change refreshes what the controller knows and
//! tells the brokers, nothing more.

use std::collections::BTreeSet;

use super::controller::Controller;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::zk::models::{IsrChangeNotification, ZNodePayload};
use crate::zk::paths;

/// The partitions named by ISR change notifications `(name, payload)`, deduplicated, and the
/// names of notifications that could not be read (still deleted: a malformed one would
/// otherwise be re-read on every change).
pub fn changed_partitions(payloads: &[(String, Vec<u8>)]) -> (BTreeSet<(String, i32)>, Vec<String>) {
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

impl<S: ControllerStore> Controller<S> {
    /// Kafka's processIsrChangeNotification: re-reads the state znodes of the partitions the
    /// notifications name (concurrently), takes their leader, ISR, epochs and zkVersion into
    /// the context, sends UpdateMetadata for them to every live broker, and deletes the
    /// notifications it read, fenced, whether or not the refresh worked.
    pub(super) async fn on_isr_change_notification(&mut self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        let epoch_version = active.epoch_version;
        let parent = paths::ISR_CHANGE_NOTIFICATION;
        let names = zk_ops::notification_names(&self.zk, parent).await?;
        if names.is_empty() {
            return Ok(());
        }
        let refreshed = self.refresh_isrs(&names).await;
        zk_ops::delete_notifications(&self.zk, epoch_version, parent, &names).await?;
        refreshed
    }

    async fn refresh_isrs(&mut self, names: &[String]) -> Result<(), ControllerZkError> {
        let payloads = zk_ops::notification_payloads(&self.zk, paths::ISR_CHANGE_NOTIFICATION, names).await?;
        let (named, malformed) = changed_partitions(&payloads);
        if !malformed.is_empty() {
            tracing::warn!(?malformed, "ignoring malformed ISR change notifications");
        }
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        // Partitions of topics being created or already deleted are not the controller's yet
        // (or any more); their state is read when they are created.
        let known: Vec<(String, i32)> = named
            .into_iter()
            .filter(|(t, p)| active.ctx.topics.get(t).is_some_and(|i| i.assignment.contains_key(p)))
            .collect();
        if known.is_empty() {
            return Ok(());
        }
        let states = zk_ops::leaderships(&self.zk, &known).await?;
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        let refreshed: Vec<(String, i32)> = states.keys().cloned().collect();
        for (key, l) in states {
            active.ctx.leaderships.insert(key, l);
        }
        tracing::info!(partitions = refreshed.len(), "ISR changes announced");
        self.send_update_metadata(&refreshed);
        Ok(())
    }

    /// Deletes every log-dir event and ISR change notification left from before this
    /// controller's term (Kafka's onControllerFailover step 3).
    pub(super) async fn delete_stale_notifications(&self) -> Result<(), ControllerZkError> {
        let Some(active) = self.active.as_ref() else {
            return Ok(());
        };
        for parent in [paths::LOG_DIR_EVENT_NOTIFICATION, paths::ISR_CHANGE_NOTIFICATION] {
            let names = zk_ops::notification_names(&self.zk, parent).await?;
            if names.is_empty() {
                continue;
            }
            tracing::info!(
                parent,
                count = names.len(),
                "deleting notifications from before the failover"
            );
            zk_ops::delete_notifications(&self.zk, active.epoch_version, parent, &names).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let want: BTreeSet<(String, i32)> = [("a", 0), ("a", 1), ("b", 2)]
            .iter()
            .map(|(t, p)| (t.to_string(), *p))
            .collect();
        assert_eq!(partitions, want);
        assert_eq!(malformed, vec!["isr_change_0000000001".to_string()]);
    }

    /// A notification deleted by someone else meanwhile must not keep the others alive.
    #[tokio::test]
    async fn deleting_notifications_skips_ones_already_gone_and_stays_fenced() {
        use crate::types::ZkVersion;
        use crate::zk::fake::FakeZk;
        use crate::zk::store::{create_recursive, CreateMode, ZkStore};
        let zk = FakeZk::new();
        create_recursive(&zk, paths::ISR_CHANGE_NOTIFICATION)
            .await
            .expect("parent");
        zk.create(paths::CONTROLLER_EPOCH, b"1", CreateMode::Persistent)
            .await
            .expect("epoch");
        let epoch_version = zk
            .exists(paths::CONTROLLER_EPOCH)
            .await
            .expect("stat")
            .expect("epoch")
            .version;
        let mut names = Vec::new();
        for _ in 0..3 {
            let (path, _) = zk
                .create(&paths::isr_change_sequential(), b"{}", CreateMode::PersistentSequential)
                .await
                .expect("notification");
            names.push(crate::zk::store::split_parent(&path).1.to_string());
        }
        let stale = ZkVersion(epoch_version.0 + 1);
        assert!(matches!(
            zk_ops::delete_notifications(&zk, stale, paths::ISR_CHANGE_NOTIFICATION, &names).await,
            Err(ControllerZkError::ControllerMoved)
        ));
        assert_eq!(
            zk.children(paths::ISR_CHANGE_NOTIFICATION)
                .await
                .expect("children")
                .len(),
            3
        );
        zk.delete(&paths::child(paths::ISR_CHANGE_NOTIFICATION, &names[1]), None)
            .await
            .expect("delete one by hand");
        zk_ops::delete_notifications(&zk, epoch_version, paths::ISR_CHANGE_NOTIFICATION, &names)
            .await
            .expect("delete the rest");
        assert!(zk
            .children(paths::ISR_CHANGE_NOTIFICATION)
            .await
            .expect("children")
            .is_empty());
    }

    /// The deletion of notifications is applied but its reply lost: the retry's NoNode is the
    /// controller's own deletion, not a failure.
    #[tokio::test]
    async fn a_lost_reply_to_deleting_notifications_is_a_success() {
        use crate::zk::fake::FakeZk;
        use crate::zk::store::{create_recursive, CreateMode, ZkStore};
        let zk = FakeZk::new();
        create_recursive(&zk, paths::ISR_CHANGE_NOTIFICATION)
            .await
            .expect("parent");
        let (_, epoch) = zk
            .create(paths::CONTROLLER_EPOCH, b"1", CreateMode::Persistent)
            .await
            .expect("epoch");
        let (path, _) = zk
            .create(&paths::isr_change_sequential(), b"{}", CreateMode::PersistentSequential)
            .await
            .expect("notification");
        let names = vec![crate::zk::store::split_parent(&path).1.to_string()];
        zk.lose_next_write_reply();
        zk_ops::delete_notifications(&zk, epoch.version, paths::ISR_CHANGE_NOTIFICATION, &names)
            .await
            .expect("deleted");
        assert_eq!(zk.exists(&path).await.expect("exists"), None);
    }
}
