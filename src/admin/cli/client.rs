//! [`Admin`]: what the operator tools need of a Kafka admin client, on the internal
//! [`KafkaClient`]: bootstrap through the first reachable `--bootstrap-server` address, learn
//! the brokers and the controller from Metadata, send to a chosen broker at the highest version
//! both sides speak, find a group's coordinator. Retriable coordinator and controller errors
//! are retried for a while, as Kafka's admin client does; nothing else is.

use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, FindCoordinatorResponse, GroupId, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::{Request, StrBytes};

use super::{fail, CliError, CliResult};
use crate::client::{BrokerRef, ClientConfig, KafkaClient};
use crate::protocol::error_codes;

/// Client id the tools send (visible in broker request logs).
pub const CLIENT_ID: &str = "kastle-admin";

/// How long retriable errors (no coordinator yet, controller moving) are retried.
const RETRY_FOR: Duration = Duration::from_secs(15);
const RETRY_BACKOFF: Duration = Duration::from_millis(100);

/// A live broker from Metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

/// A connected admin client.
#[derive(Debug)]
pub struct Admin {
    client: KafkaClient,
    bootstrap: String,
    pub brokers: Vec<Node>,
    pub controller: i32,
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

impl Admin {
    /// Connects to the first address of `bootstrap` (`host:port[,host:port...]`) that answers
    /// Metadata and learns the cluster's brokers from it.
    pub async fn connect(bootstrap: &str) -> CliResult<Admin> {
        let mut last: Option<CliError> = None;
        for addr in bootstrap.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let mut admin = Admin {
                client: KafkaClient::new(CLIENT_ID, ClientConfig::default()),
                bootstrap: addr.to_owned(),
                brokers: Vec::new(),
                controller: -1,
            };
            match admin.refresh().await {
                Ok(()) => return Ok(admin),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            CliError::Failed(format!(
                "No resolvable bootstrap urls given in bootstrap.servers: {bootstrap}"
            ))
        }))
    }

    /// Re-reads brokers and controller from the bootstrap broker.
    pub async fn refresh(&mut self) -> CliResult<()> {
        let response = self
            .metadata_from(BrokerRef::Addr(self.bootstrap.clone()), Some(Vec::new()))
            .await?;
        self.learn(&response);
        Ok(())
    }

    fn learn(&mut self, response: &MetadataResponse) {
        self.brokers = response
            .brokers
            .iter()
            .map(|b| Node {
                id: b.node_id.0,
                host: b.host.to_string(),
                port: b.port,
            })
            .collect();
        self.brokers.sort_by_key(|b| b.id);
        for b in &self.brokers {
            self.client.set_broker_address(b.id, format!("{}:{}", b.host, b.port));
        }
        self.controller = response.controller_id.0;
    }

    pub fn node(&self, id: i32) -> Option<&Node> {
        self.brokers.iter().find(|b| b.id == id)
    }

    /// Sends `request` to `broker` at the highest version within `ours` the broker speaks.
    pub async fn send<R: Request>(
        &self,
        broker: impl Into<BrokerRef>,
        request: R,
        ours: (i16, i16),
    ) -> CliResult<R::Response> {
        let api = ApiKey::try_from(R::KEY).map_err(|_| CliError::Failed(format!("unknown API key {}", R::KEY)))?;
        let connection = self.client.connection(broker).await?;
        let Some(version) = connection.version_for(api, ours) else {
            return Err(CliError::Unsupported(api));
        };
        Ok(connection.send(request, version).await?)
    }

    /// `request` to the bootstrap broker (any broker can answer it).
    pub async fn send_any<R: Request>(&self, request: R, ours: (i16, i16)) -> CliResult<R::Response> {
        self.send(BrokerRef::Addr(self.bootstrap.clone()), request, ours).await
    }

    /// The version of `api` the bootstrap broker would be sent, if it serves `api` at all.
    pub async fn version_of(&self, api: ApiKey, ours: (i16, i16)) -> CliResult<Option<i16>> {
        let connection = self.client.connection(BrokerRef::Addr(self.bootstrap.clone())).await?;
        Ok(connection.version_for(api, ours))
    }

    async fn metadata_from(&self, broker: BrokerRef, topics: Option<Vec<String>>) -> CliResult<MetadataResponse> {
        let request = MetadataRequest::default()
            .with_topics(topics.map(|ts| {
                ts.iter()
                    .map(|t| MetadataRequestTopic::default().with_name(Some(topic_name(t))))
                    .collect()
            }))
            .with_allow_auto_topic_creation(false);
        self.send(broker, request, (1, 12)).await
    }

    /// Metadata for `topics` (`None`: every topic, internal ones included).
    pub async fn metadata(&mut self, topics: Option<Vec<String>>) -> CliResult<MetadataResponse> {
        let response = self
            .metadata_from(BrokerRef::Addr(self.bootstrap.clone()), topics)
            .await?;
        self.learn(&response);
        Ok(response)
    }

    /// The names of every topic, sorted (internal ones included).
    pub async fn topic_names(&mut self) -> CliResult<Vec<String>> {
        let response = self.metadata(None).await?;
        let mut names: Vec<String> = response
            .topics
            .iter()
            .filter(|t| t.error_code == error_codes::NONE)
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Sends `request` to the controller, again (after re-learning the controller) while
    /// `moved` says the answer came from a broker that is no longer the controller.
    pub async fn send_to_controller<R: Request + Clone>(
        &mut self,
        request: R,
        ours: (i16, i16),
        moved: impl Fn(&R::Response) -> bool,
    ) -> CliResult<R::Response> {
        let deadline = tokio::time::Instant::now() + RETRY_FOR;
        loop {
            if self.controller < 0 {
                self.refresh().await?;
            }
            let target = if self.controller < 0 {
                BrokerRef::Addr(self.bootstrap.clone())
            } else {
                BrokerRef::Id(self.controller)
            };
            let response = self.send(target, request.clone(), ours).await?;
            if !moved(&response) || tokio::time::Instant::now() >= deadline {
                return Ok(response);
            }
            tokio::time::sleep(RETRY_BACKOFF).await;
            self.refresh().await?;
        }
    }

    /// The coordinator of `group` (FindCoordinator, retried while the coordinator loads).
    pub async fn coordinator(&self, group: &str) -> CliResult<i32> {
        let deadline = tokio::time::Instant::now() + RETRY_FOR;
        loop {
            // v0-3 name one key (v4 batches them in `coordinator_keys`).
            let request = FindCoordinatorRequest::default()
                .with_key(str_bytes(group))
                .with_key_type(0);
            let response: FindCoordinatorResponse = self.send_any(request, (1, 3)).await?;
            let (code, message, node, host, port) = match response.coordinators.first() {
                Some(c) => (c.error_code, c.error_message.clone(), c.node_id, c.host.clone(), c.port),
                None => (
                    response.error_code,
                    response.error_message.clone(),
                    response.node_id,
                    response.host.clone(),
                    response.port,
                ),
            };
            if code == error_codes::NONE {
                self.client.set_broker_address(node.0, format!("{host}:{port}"));
                return Ok(node.0);
            }
            if !error_codes::is_retriable(code) || tokio::time::Instant::now() >= deadline {
                return fail(super::error_message(code, message.as_deref()));
            }
            tokio::time::sleep(RETRY_BACKOFF).await;
        }
    }

    /// Sends a group request to `group`'s coordinator, finding it again while the answer is
    /// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE (`code_of`
    /// reads the response's error code).
    pub async fn send_to_coordinator<R: Request + Clone>(
        &self,
        group: &str,
        request: R,
        ours: (i16, i16),
        code_of: impl Fn(&R::Response) -> i16,
    ) -> CliResult<R::Response> {
        let deadline = tokio::time::Instant::now() + RETRY_FOR;
        loop {
            let coordinator = self.coordinator(group).await?;
            let response = self.send(coordinator, request.clone(), ours).await?;
            let code = code_of(&response);
            let retry = matches!(
                code,
                error_codes::NOT_COORDINATOR
                    | error_codes::COORDINATOR_LOAD_IN_PROGRESS
                    | error_codes::COORDINATOR_NOT_AVAILABLE
            );
            if !retry || tokio::time::Instant::now() >= deadline {
                return Ok(response);
            }
            tokio::time::sleep(RETRY_BACKOFF).await;
        }
    }

    /// The group id as the protocol types it.
    pub fn group_id(group: &str) -> GroupId {
        GroupId(str_bytes(group))
    }
}
