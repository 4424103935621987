//! `KafkaZkClient`: the typed operations brokers perform on Kafka's ZooKeeper layout, over any
//! [`ZkStore`] (the real session or the fake). Paths come from [`super::paths`], payloads from
//! [`super::models`].

use super::models::{
    BrokerRegistration, ClusterIdZNode, ConfigChangeNotification, DecodeError, EntityConfig, LogDirEventNotification,
    TopicAssignment, ZNodePayload,
};
use super::paths;
use super::store::{create_recursive, split_parent, CreateMode, Op, Stat, ZkError, ZkStore};
use crate::types::{BrokerEpoch, BrokerId, ZkVersion};

/// Failures of the typed operations.
#[derive(Debug, thiserror::Error)]
pub enum KafkaZkError {
    #[error(transparent)]
    Zk(#[from] ZkError),
    #[error("znode {path}: {source}")]
    Decode { path: String, source: DecodeError },
    #[error(
        "broker.id {id} is already registered in ZooKeeper at {path} by another live session \
         (0x{owner_session:x}); is another broker running with broker.id={id}?"
    )]
    BrokerIdInUse {
        id: BrokerId,
        path: String,
        owner_session: i64,
        /// The registration found there (`None` if it does not decode), so the caller can tell
        /// this broker's own stale registration from another broker's.
        existing: Option<Box<BrokerRegistration>>,
    },
}

/// Typed access to Kafka's znodes.
#[derive(Debug, Clone)]
pub struct KafkaZkClient<S> {
    store: S,
}

impl<S: ZkStore> KafkaZkClient<S> {
    pub fn new(store: S) -> Self {
        KafkaZkClient { store }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Creates Kafka's persistent top-level paths (`ZkData.PersistentZkPaths`) if missing.
    pub async fn ensure_persistent_paths(&self) -> Result<(), KafkaZkError> {
        for path in paths::PERSISTENT_PATHS {
            create_recursive(&self.store, path).await?;
        }
        Ok(())
    }

    /// Reads `/cluster/id`, creating it with `generate()` if absent. Racing brokers agree: the
    /// loser of the create reads the winner's id.
    pub async fn get_or_create_cluster_id(&self, generate: impl FnOnce() -> String) -> Result<String, KafkaZkError> {
        if let Some(id) = self.cluster_id().await? {
            return Ok(id);
        }
        create_recursive(&self.store, "/cluster").await?;
        let candidate = ClusterIdZNode::new(generate());
        match self
            .store
            .create(paths::CLUSTER_ID, &candidate.encode(), CreateMode::Persistent)
            .await
        {
            Ok(_) => Ok(candidate.id),
            Err(ZkError::NodeExists { .. }) => self.cluster_id().await?.ok_or_else(|| {
                ZkError::NoNode {
                    path: paths::CLUSTER_ID.to_string(),
                }
                .into()
            }),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn cluster_id(&self) -> Result<Option<String>, KafkaZkError> {
        match self.store.get_data(paths::CLUSTER_ID).await {
            Ok((data, _)) => Ok(Some(decode::<ClusterIdZNode>(paths::CLUSTER_ID, &data)?.id)),
            Err(ZkError::NoNode { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Generates a broker id from `/brokers/seqid`'s version, as Kafka does when `broker.id`
    /// is unset: `reserved.broker.max.id` + the new version.
    pub async fn generate_broker_id(&self, reserved_max_id: i32) -> Result<BrokerId, KafkaZkError> {
        create_recursive(&self.store, paths::BROKER_SEQID).await?;
        let stat = self.store.set_data(paths::BROKER_SEQID, &[], None).await?;
        Ok(BrokerId(reserved_max_id + stat.version.0))
    }

    /// Registers `/brokers/ids/<id>` as an ephemeral of the current session and returns the
    /// broker epoch (its czxid, KIP-380).
    ///
    /// KAFKA-7165 guard: a znode left by one of this process's earlier sessions
    /// (`own_past_sessions`) is deleted and re-created; one owned by any other live session
    /// means another broker has this id.
    pub async fn register_broker(
        &self,
        id: BrokerId,
        registration: &BrokerRegistration,
        own_past_sessions: &[i64],
    ) -> Result<BrokerEpoch, KafkaZkError> {
        let path = paths::broker_id(id);
        let data = registration.encode();
        for _ in 0..3 {
            match self.store.create(&path, &data, CreateMode::Ephemeral).await {
                Ok((_, stat)) => return Ok(BrokerEpoch(stat.czxid)),
                Err(ZkError::NodeExists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            let (existing, stat) = match self.store.get_data(&path).await {
                Ok(found) => found,
                Err(ZkError::NoNode { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            let session = self.store.session_id();
            if stat.ephemeral_owner == session {
                // Our own create, retried after a connection loss: it is ours already.
                self.store.set_data(&path, &data, Some(stat.version)).await?;
                return Ok(BrokerEpoch(stat.czxid));
            }
            if !own_past_sessions.contains(&stat.ephemeral_owner) {
                return Err(KafkaZkError::BrokerIdInUse {
                    id,
                    path,
                    owner_session: stat.ephemeral_owner,
                    existing: BrokerRegistration::decode(&existing).ok().map(Box::new),
                });
            }
            tracing::info!(path = %path, "deleting the registration left by this broker's previous ZooKeeper session");
            match self.store.delete(&path, Some(stat.version)).await {
                Ok(()) | Err(ZkError::NoNode { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(ZkError::NodeExists { path }.into())
    }

    /// Deletes this broker's registration if it is still the one with `epoch`.
    pub async fn deregister_broker(&self, id: BrokerId, epoch: BrokerEpoch) -> Result<(), KafkaZkError> {
        let path = paths::broker_id(id);
        match self.store.exists(&path).await? {
            Some(stat) if stat.czxid == epoch.0 => match self.store.delete(&path, Some(stat.version)).await {
                Ok(()) | Err(ZkError::NoNode { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            },
            _ => Ok(()),
        }
    }

    /// A broker's registration and its stat (czxid = broker epoch), if registered.
    pub async fn broker(&self, id: BrokerId) -> Result<Option<(BrokerRegistration, Stat)>, KafkaZkError> {
        let path = paths::broker_id(id);
        match self.store.get_data(&path).await {
            Ok((data, stat)) => Ok(Some((decode(&path, &data)?, stat))),
            Err(ZkError::NoNode { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A topic's config overrides from `/config/topics/<t>` (empty when the znode is missing).
    pub async fn topic_config(&self, topic: &str) -> Result<std::collections::BTreeMap<String, String>, KafkaZkError> {
        self.entity_config("topics", topic).await
    }

    /// The `config` map of `/config/<entity_type>/<entity>` (e.g. `brokers`/`<default>`); empty
    /// when the znode is missing.
    pub async fn entity_config(
        &self,
        entity_type: &str,
        entity: &str,
    ) -> Result<std::collections::BTreeMap<String, String>, KafkaZkError> {
        Ok(self.entity_config_versioned(entity_type, entity).await?.0)
    }

    /// `/config/<entity_type>/<entity>`'s config and the znode's version (`None`: no znode,
    /// an empty config). A null payload reads as empty, as Kafka's `ConfigEntityZNode.decode`.
    pub async fn entity_config_versioned(
        &self,
        entity_type: &str,
        entity: &str,
    ) -> Result<(std::collections::BTreeMap<String, String>, Option<ZkVersion>), KafkaZkError> {
        let path = paths::config_entity(entity_type, entity);
        match self.store.get_data(&path).await {
            Ok((data, stat)) if data.is_empty() || data == b"null" => Ok((Default::default(), Some(stat.version))),
            Ok((data, stat)) => Ok((decode::<EntityConfig>(&path, &data)?.config, Some(stat.version))),
            Err(ZkError::NoNode { .. }) => Ok((Default::default(), None)),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `/config/<entity_type>/<entity>` as Kafka's `AdminZkClient.changeEntityConfig`
    /// does, then announces it with a `/config/changes/config_change_<seq>` v2 notification.
    /// `expected` is the version read before (`None` = the znode did not exist): a concurrent
    /// writer makes this fail with `BadVersion`/`NodeExists` rather than be overwritten.
    pub async fn change_entity_config(
        &self,
        entity_type: &str,
        entity: &str,
        config: &std::collections::BTreeMap<String, String>,
        expected: Option<ZkVersion>,
    ) -> Result<String, KafkaZkError> {
        let path = paths::config_entity(entity_type, entity);
        let data = EntityConfig {
            version: 1,
            config: config.clone(),
        }
        .encode();
        match expected {
            Some(version) => {
                self.store.set_data(&path, &data, Some(version)).await?;
            }
            None => {
                create_recursive(&self.store, split_parent(&path).0).await?;
                self.store.create(&path, &data, CreateMode::Persistent).await?;
            }
        }
        let notification = ConfigChangeNotification::v2(format!("{entity_type}/{entity}"));
        let (created, _) = self
            .store
            .create(
                &paths::config_change_sequential(),
                &notification.encode(),
                CreateMode::PersistentSequential,
            )
            .await?;
        Ok(created)
    }

    /// Tells the controller this broker lost a log dir: a sequential
    /// `/log_dir_event_notification/log_dir_event_<seq>` with `{"version":1,"broker":N,"event":1}`.
    pub async fn create_log_dir_event_notification(&self, broker: BrokerId) -> Result<String, KafkaZkError> {
        let payload = LogDirEventNotification {
            version: 1,
            broker,
            event: LogDirEventNotification::LOG_DIR_FAILURE,
        };
        let (path, _) = self
            .store
            .create(
                &paths::log_dir_event_sequential(),
                &payload.encode(),
                CreateMode::PersistentSequential,
            )
            .await?;
        Ok(path)
    }

    /// Creates a topic as Kafka's admin path does: `/config/topics/<t>` (its config overrides)
    /// first, then `/brokers/topics/<t>` with the assignment and topic id.
    pub async fn create_topic(
        &self,
        name: &str,
        assignment: &std::collections::BTreeMap<i32, Vec<BrokerId>>,
        topic_id: uuid::Uuid,
        configs: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), KafkaZkError> {
        use base64::Engine;
        let config = EntityConfig {
            version: 1,
            config: configs.clone(),
        };
        let topic = TopicAssignment {
            version: 3,
            partitions: assignment.iter().map(|(p, r)| (p.to_string(), r.clone())).collect(),
            adding_replicas: Some(Default::default()),
            removing_replicas: Some(Default::default()),
            topic_id: Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(topic_id.as_bytes())),
        };
        let create = |path: String, data: Vec<u8>| Op::Create {
            path,
            data,
            mode: CreateMode::Persistent,
        };
        // Config first, then the topic (what the controller watches), in one round trip.
        let both = vec![
            create(paths::config_entity("topics", name), config.encode()),
            create(paths::topic(name), topic.encode()),
        ];
        match self.store.multi(both).await {
            Ok(_) => Ok(()),
            // A config left from earlier stays, as it did when the two were written one by one.
            Err(ZkError::MultiFailed { index: 0, source, .. }) if matches!(*source, ZkError::NodeExists { .. }) => {
                self.store
                    .create(&paths::topic(name), &topic.encode(), CreateMode::Persistent)
                    .await?;
                Ok(())
            }
            Err(ZkError::MultiFailed { source, .. }) => Err((*source).into()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ids of the registered (live) brokers, ascending.
    pub async fn broker_ids(&self) -> Result<Vec<BrokerId>, KafkaZkError> {
        let mut ids: Vec<BrokerId> = self
            .store
            .children(paths::BROKER_IDS)
            .await?
            .iter()
            .filter_map(|c| c.parse().ok().map(BrokerId))
            .collect();
        ids.sort();
        Ok(ids)
    }
}

fn decode<T: ZNodePayload>(path: &str, data: &[u8]) -> Result<T, KafkaZkError> {
    T::decode(data).map_err(|source| KafkaZkError::Decode {
        path: path.to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::fake::FakeZk;
    use crate::zk::models::AdvertisedEndpoint;

    fn registration() -> BrokerRegistration {
        let ep = AdvertisedEndpoint {
            listener: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092,
            security_protocol: "PLAINTEXT".into(),
        };
        BrokerRegistration::v5(&[ep], None, 1)
    }

    #[tokio::test]
    async fn racing_brokers_agree_on_one_cluster_id() {
        let zk = FakeZk::new();
        let a = KafkaZkClient::new(zk.clone());
        let b = KafkaZkClient::new(zk.with_session());
        let first = a
            .get_or_create_cluster_id(|| "AAAAAAAAAAAAAAAAAAAAAA".into())
            .await
            .expect("a");
        let second = b
            .get_or_create_cluster_id(|| "BBBBBBBBBBBBBBBBBBBBBB".into())
            .await
            .expect("b");
        assert_eq!(first, second);
    }

    #[tokio::test]
    async fn registration_returns_the_czxid_as_broker_epoch() {
        let zk = FakeZk::new();
        let client = KafkaZkClient::new(zk.clone());
        client.ensure_persistent_paths().await.expect("paths");
        let epoch = client
            .register_broker(BrokerId(1), &registration(), &[])
            .await
            .expect("register");
        let (_, stat) = client.broker(BrokerId(1)).await.expect("read").expect("present");
        assert_eq!(epoch.0, stat.czxid);
        assert_eq!(stat.ephemeral_owner, zk.session_id());
    }

    #[tokio::test]
    async fn an_id_held_by_another_live_session_is_refused() {
        let zk = FakeZk::new();
        let first = KafkaZkClient::new(zk.clone());
        first.ensure_persistent_paths().await.expect("paths");
        first
            .register_broker(BrokerId(1), &registration(), &[])
            .await
            .expect("first");
        let second = KafkaZkClient::new(zk.with_session());
        let err = second
            .register_broker(BrokerId(1), &registration(), &[])
            .await
            .expect_err("in use");
        assert!(
            matches!(&err, KafkaZkError::BrokerIdInUse { id: BrokerId(1), existing: Some(r), .. }
                if r.endpoints == registration().endpoints),
            "{err}"
        );
        assert!(err.to_string().contains("broker.id 1"));
    }

    #[tokio::test]
    async fn a_registration_left_by_our_previous_session_is_replaced() {
        let zk = FakeZk::new();
        let old = zk.with_session();
        let old_client = KafkaZkClient::new(old.clone());
        old_client.ensure_persistent_paths().await.expect("paths");
        let old_epoch = old_client
            .register_broker(BrokerId(2), &registration(), &[])
            .await
            .expect("old");
        let new_client = KafkaZkClient::new(zk.clone());
        let epoch = new_client
            .register_broker(BrokerId(2), &registration(), &[old.session_id()])
            .await
            .expect("new");
        assert!(epoch > old_epoch);
    }

    #[tokio::test]
    async fn deregistration_leaves_a_newer_registration_alone() {
        let zk = FakeZk::new();
        let client = KafkaZkClient::new(zk.clone());
        client.ensure_persistent_paths().await.expect("paths");
        let epoch = client
            .register_broker(BrokerId(3), &registration(), &[])
            .await
            .expect("register");
        client
            .deregister_broker(BrokerId(3), BrokerEpoch(epoch.0 - 1))
            .await
            .expect("stale deregister");
        assert!(client.broker(BrokerId(3)).await.expect("read").is_some());
        client.deregister_broker(BrokerId(3), epoch).await.expect("deregister");
        assert!(client.broker(BrokerId(3)).await.expect("read").is_none());
    }

    #[tokio::test]
    async fn a_log_dir_failure_becomes_a_sequential_notification() {
        let client = KafkaZkClient::new(FakeZk::new());
        client.ensure_persistent_paths().await.expect("paths");
        let path = client
            .create_log_dir_event_notification(BrokerId(2))
            .await
            .expect("notify");
        assert_eq!(path, "/log_dir_event_notification/log_dir_event_0000000000");
        let (data, _) = client.store().get_data(&path).await.expect("read");
        assert_eq!(data, br#"{"version":1,"broker":2,"event":1}"#);
    }

    #[tokio::test]
    async fn an_entity_config_change_is_written_then_announced() {
        let client = KafkaZkClient::new(FakeZk::new());
        client.ensure_persistent_paths().await.expect("paths");
        let (config, version) = client
            .entity_config_versioned("brokers", "<default>")
            .await
            .expect("read");
        assert!(config.is_empty() && version.is_none());
        let wanted: std::collections::BTreeMap<String, String> =
            [("log.retention.ms".to_string(), "1000".to_string())].into();
        let created = client
            .change_entity_config("brokers", "<default>", &wanted, None)
            .await
            .expect("create");
        assert_eq!(created, "/config/changes/config_change_0000000000");
        let (data, _) = client.store().get_data(&created).await.expect("notification");
        assert_eq!(data, br#"{"version":2,"entity_path":"brokers/<default>"}"#);
        let (config, version) = client
            .entity_config_versioned("brokers", "<default>")
            .await
            .expect("read");
        assert_eq!(config, wanted);
        let (data, _) = client
            .store()
            .get_data("/config/brokers/<default>")
            .await
            .expect("entity");
        assert_eq!(data, br#"{"version":1,"config":{"log.retention.ms":"1000"}}"#);
        // A writer holding an old version loses.
        client
            .change_entity_config("brokers", "<default>", &Default::default(), version)
            .await
            .expect("set");
        let stale = client
            .change_entity_config("brokers", "<default>", &wanted, version)
            .await
            .expect_err("stale version");
        assert!(matches!(stale, KafkaZkError::Zk(ZkError::BadVersion { .. })), "{stale}");
        assert_eq!(
            client
                .store()
                .children(paths::CONFIG_CHANGES)
                .await
                .expect("children")
                .len(),
            2,
            "nothing announced for the refused write"
        );
    }

    #[tokio::test]
    async fn generated_broker_ids_start_above_the_reserved_range() {
        let client = KafkaZkClient::new(FakeZk::new());
        assert_eq!(client.generate_broker_id(1000).await.expect("id"), BrokerId(1001));
        assert_eq!(client.generate_broker_id(1000).await.expect("id"), BrokerId(1002));
    }
}
