//! Sequential notification znodes brokers leave for the controller: ISR changes
//! (`/isr_change_notification/isr_change_<seq>`, Kafka's IsrChangeNotificationHandler, decided
//! in [`super::core::isr_change`]) and, at failover, the removal of every stale notification
//! (Kafka's onControllerFailover deletes both kinds before it reads the cluster, since the full
//! read covers them). Log-dir events are decided in [`super::core::log_dir_event`].

use super::controller::Controller;
use super::store::ControllerStore;
use super::zk_ops::{self, ControllerZkError};
use crate::zk::paths;

impl<S: ControllerStore> Controller<S> {
    /// Kafka's processIsrChangeNotification: re-reads the state znodes of the partitions the
    /// notifications name (concurrently), takes their leader, ISR, epochs and zkVersion into
    /// the context, sends UpdateMetadata for them to every live broker, and deletes the
    /// notifications it read, fenced, whether or not the refresh worked.
    pub(super) async fn on_isr_change_notification(&mut self) -> Result<(), ControllerZkError> {
        self.run_core(super::core::Event::IsrChangeNotification).await
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
