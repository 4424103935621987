//! The operator subcommands shaped like Kafka 3.9's tools, over the Kafka protocol:
//! `kastle topics` (kafka-topics.sh), `kastle configs` (kafka-configs.sh), `kastle
//! consumer-groups` (kafka-consumer-groups.sh), `kastle delete-records`
//! (kafka-delete-records.sh), `kastle leader-election` (kafka-leader-election.sh) and `kastle
//! reassign-partitions` (kafka-reassign-partitions.sh).
//!
//! | module | owns |
//! |---|---|
//! | `client` | [`client::Admin`]: bootstrap, metadata, controller / coordinator / leader routing, version choice |
//! | `java` | Java `HashMap` iteration order, so rows come out in the order Kafka's tools print them |
//! | `pattern` | the `--topic` filter (Kafka's `TopicFilter.IncludeList`) |
//! | `groups_reset` | `consumer-groups --reset-offsets`: the plan and its OffsetCommit |
//! | `groups_format` | the tables of `consumer-groups`, datetime and duration parsing (pure) |
//! | `acls` | `kastle acls` (kafka-acls.sh): CreateAcls, DeleteAcls, DescribeAcls |
//! | `configs_users` | `kastle configs --entity-type users`: SCRAM credentials through Describe/AlterUserScramCredentials |
//! | `reassignment_json` | `reassign-partitions`' JSON formats, `--generate`'s placement and its texts (pure) |
//! | `topics`, `configs`, `consumer_groups`, `delete_records`, `leader_election`, `reassign_partitions` | one command each: options (clap), Kafka's checks and messages, pure formatting, then the I/O |
//!
//! Each command prints what Kafka's tool prints; the formatting functions are pure and
//! unit-tested against golden strings. Errors go to stderr and exit 1.

pub mod acls;
pub mod client;
pub mod configs;
pub mod configs_users;
pub mod consumer_groups;
pub mod delete_records;
pub mod groups_format;
pub mod groups_reset;
pub mod java;
pub mod leader_election;
pub mod pattern;
pub mod reassign_partitions;
pub mod reassign_throttles;
pub mod reassignment_json;
pub mod topics;

use kafka_protocol::messages::ApiKey;

use crate::client::ClientError;
use crate::protocol::error_codes;

/// Why a command failed; printed on stderr, exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A message as Kafka's tool prints it.
    #[error("{0}")]
    Failed(String),
    /// The broker does not serve `api` at any version the client speaks.
    #[error("The broker does not support {0:?}")]
    Unsupported(ApiKey),
    #[error("{0}")]
    Client(#[from] ClientError),
}

pub type CliResult<T> = Result<T, CliError>;

pub fn fail<T>(message: impl Into<String>) -> CliResult<T> {
    Err(CliError::Failed(message.into()))
}

/// `--bootstrap-server`, which every tool requires (`message` is that tool's complaint).
pub fn require_bootstrap<'a>(bootstrap: &'a Option<String>, message: &str) -> CliResult<&'a str> {
    match bootstrap.as_deref() {
        Some(b) if !b.trim().is_empty() => Ok(b),
        _ => fail(message),
    }
}

/// The Java exception a Kafka error code becomes in the admin client, as its `toString()`
/// prints (`org.apache.kafka.common.errors.UnknownTopicOrPartitionException: message`), with
/// the broker's message or Kafka's default one.
pub fn java_exception(code: i16, message: Option<&str>) -> String {
    let name = error_codes::name(code);
    let class: String = name
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect();
    let class = if code == error_codes::TOPIC_ALREADY_EXISTS {
        "TopicExistsException".to_owned()
    } else if class.ends_with("Exception") {
        class
    } else {
        format!("{class}Exception")
    };
    let text = match message {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => default_message(code).to_owned(),
    };
    format!("org.apache.kafka.common.errors.{class}: {text}")
}

/// Kafka's default message for an error code (`Errors.java`), for the codes the tools meet.
pub fn default_message(code: i16) -> &'static str {
    match code {
        error_codes::UNKNOWN_TOPIC_OR_PARTITION => "This server does not host this topic-partition.",
        error_codes::TOPIC_ALREADY_EXISTS => "Topic with this name already exists.",
        error_codes::INVALID_PARTITIONS => "Number of partitions is below 1.",
        error_codes::INVALID_REPLICATION_FACTOR => "Replication factor is below 1 or larger than the number of available brokers.",
        error_codes::INVALID_REPLICA_ASSIGNMENT => "Replica assignment is invalid.",
        error_codes::INVALID_CONFIG => "Configuration is invalid.",
        error_codes::INVALID_REQUEST => "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
        error_codes::NOT_CONTROLLER => "This is not the correct controller for this cluster.",
        error_codes::INVALID_TOPIC_EXCEPTION => "The request attempted to perform an operation on an invalid topic.",
        error_codes::PREFERRED_LEADER_NOT_AVAILABLE => "The preferred leader was not available.",
        error_codes::ELIGIBLE_LEADERS_NOT_AVAILABLE => "Eligible topic partition leaders are not available.",
        error_codes::ELECTION_NOT_NEEDED => "Leader election not needed for topic partition.",
        error_codes::OFFSET_OUT_OF_RANGE => "The requested offset is not within the range of offsets maintained by the server.",
        error_codes::NOT_LEADER_OR_FOLLOWER => "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.",
        error_codes::LEADER_NOT_AVAILABLE => "There is no leader for this topic-partition as we are in the middle of a leadership election.",
        error_codes::NON_EMPTY_GROUP => "The group is not empty.",
        error_codes::GROUP_ID_NOT_FOUND => "The group id does not exist.",
        error_codes::INVALID_GROUP_ID => "The configured groupId is invalid.",
        error_codes::TOPIC_DELETION_DISABLED => "Topic deletion is disabled.",
        error_codes::POLICY_VIOLATION => "Request parameters do not satisfy the configured policy.",
        error_codes::UNSUPPORTED_VERSION => "The version of API is not supported.",
        error_codes::REQUEST_TIMED_OUT => "The request timed out.",
        error_codes::NO_REASSIGNMENT_IN_PROGRESS => "No partition reassignment is in progress.",
        error_codes::CLUSTER_AUTHORIZATION_FAILED => "Cluster authorization failed.",
        _ => "Unexpected error from the server.",
    }
}

/// Kafka's message for an error code when the admin client fails a call with it (the
/// exception's `getMessage()`): the broker's message if it sent one, else the default.
pub fn error_message(code: i16, message: Option<&str>) -> String {
    match message {
        Some(m) if !m.is_empty() => m.to_owned(),
        _ => default_message(code).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceptions_print_as_javas_to_string() {
        assert_eq!(
            java_exception(error_codes::UNKNOWN_TOPIC_OR_PARTITION, None),
            "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition."
        );
        assert_eq!(
            java_exception(error_codes::INVALID_TOPIC_EXCEPTION, Some("bad")),
            "org.apache.kafka.common.errors.InvalidTopicException: bad"
        );
        assert_eq!(
            java_exception(error_codes::PREFERRED_LEADER_NOT_AVAILABLE, None),
            "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: The preferred leader was not available."
        );
    }
}
