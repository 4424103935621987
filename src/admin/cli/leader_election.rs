//! `kastle leader-election`, shaped like Kafka 3.9's `kafka-leader-election.sh`
//! (`LeaderElectionCommand`): ElectLeaders for one partition, a JSON file of partitions, or all
//! partitions, `preferred` or `unclean`; the same result lines and exit status.

use std::path::PathBuf;

use clap::Args;
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{ElectLeadersRequest, ElectLeadersResponse};

use super::client::{topic_name, Admin};
use super::{fail, java, CliError, CliResult};
use crate::protocol::error_codes;

/// `kastle leader-election`: options as `kafka-leader-election.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "Elect preferred or unclean leaders, like kafka-leader-election.sh",
    long_about = "This tool attempts to elect a new leader for a set of topic partitions. The type \
        of elections supported are preferred replicas and unclean replicas."
)]
pub struct LeaderElectionArgs {
    /// A hostname and port for the broker to connect to, in the form host:port. Multiple comma
    /// separated URLs can be given. REQUIRED.
    #[arg(long, value_name = "host:port")]
    pub bootstrap_server: Option<String>,
    /// Type of election to attempt: "preferred" or "unclean". REQUIRED.
    #[arg(long, value_name = "election type")]
    pub election_type: Option<String>,
    /// Name of topic for which to perform an election. Not allowed if --path-to-json-file or
    /// --all-topic-partitions is specified.
    #[arg(long, value_name = "topic name")]
    pub topic: Option<String>,
    /// Partition id for which to perform an election. REQUIRED if --topic is specified.
    #[arg(long, value_name = "partition id")]
    pub partition: Option<i32>,
    /// Perform election on all of the eligible topic partitions based on the type of election.
    /// Not allowed if --topic or --path-to-json-file is specified.
    #[arg(long)]
    pub all_topic_partitions: bool,
    /// The JSON file with the list of partitions for which leader elections should be performed:
    /// {"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]}.
    /// Not allowed if --all-topic-partitions or --topic flags are specified.
    #[arg(long, value_name = "Path to JSON file")]
    pub path_to_json_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

impl ElectionType {
    fn wire(self) -> i8 {
        match self {
            ElectionType::Preferred => 0,
            ElectionType::Unclean => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ElectionType::Preferred => "PREFERRED",
            ElectionType::Unclean => "UNCLEAN",
        }
    }
}

/// `LeaderElectionCommandOptions.validate`.
pub fn check_args(a: &LeaderElectionArgs) -> CliResult<ElectionType> {
    let mut missing = Vec::new();
    if a.bootstrap_server.is_none() {
        missing.push("bootstrap-server");
    }
    if a.election_type.is_none() {
        missing.push("election-type");
    }
    if !missing.is_empty() {
        return fail(format!("Missing required option(s): {}", missing.join(", ")));
    }
    let given = usize::from(a.topic.is_some())
        + usize::from(a.all_topic_partitions)
        + usize::from(a.path_to_json_file.is_some());
    if given != 1 {
        return fail(
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file",
        );
    }
    if a.topic.is_some() && a.partition.is_none() {
        return fail("Missing required option(s): partition");
    }
    if a.topic.is_none() && a.partition.is_some() {
        return fail("Option partition is only allowed if topic is used");
    }
    match a.election_type.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("preferred") => Ok(ElectionType::Preferred),
        Some("unclean") => Ok(ElectionType::Unclean),
        other => fail(format!(
            "Value [{}] is not one of [PREFERRED, UNCLEAN]",
            other.unwrap_or_default()
        )),
    }
}

/// The partitions of a `--path-to-json-file` document.
pub fn parse_election_json(text: &str) -> CliResult<Vec<(String, i32)>> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|_| CliError::Failed("Replica election data is empty".into()))?;
    let Some(list) = json.get("partitions").and_then(|p| p.as_array()) else {
        return fail("Replica election data is missing \"partitions\" field");
    };
    let mut out: Vec<(String, i32)> = Vec::new();
    for p in list {
        let topic = p.get("topic").and_then(|t| t.as_str());
        let partition = p
            .get("partition")
            .and_then(|t| t.as_i64())
            .and_then(|n| i32::try_from(n).ok());
        let (Some(topic), Some(partition)) = (topic, partition) else {
            return fail(format!("Invalid partition entry in replica election data: {p}"));
        };
        out.push((topic.to_owned(), partition));
    }
    let mut dups: Vec<String> = out
        .iter()
        .filter(|tp| out.iter().filter(|o| o == tp).count() > 1)
        .map(|(t, p)| format!("{t}-{p}"))
        .collect();
    dups.dedup();
    if !dups.is_empty() {
        return fail(format!(
            "Replica election data contains duplicate partitions: [{}]",
            dups.join(", ")
        ));
    }
    Ok(out)
}

/// The outcome of an election, per partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub succeeded: Vec<(String, i32)>,
    pub noop: Vec<(String, i32)>,
    pub failed: Vec<((String, i32), String)>,
}

pub fn outcome_of(response: &ElectLeadersResponse) -> Outcome {
    let mut out = Outcome {
        succeeded: Vec::new(),
        noop: Vec::new(),
        failed: Vec::new(),
    };
    for t in &response.replica_election_results {
        for p in &t.partition_result {
            let tp = (t.topic.0.to_string(), p.partition_id);
            match p.error_code {
                error_codes::NONE => out.succeeded.push(tp),
                error_codes::ELECTION_NOT_NEEDED => out.noop.push(tp),
                code => out
                    .failed
                    .push((tp, super::java_exception(code, p.error_message.as_deref()))),
            }
        }
    }
    out
}

/// Partitions as a Java `HashSet<TopicPartition>` joins them (`topic-partition, ...`).
fn joined(set: &[(String, i32)]) -> String {
    java::hash_order(set.to_vec(), None, |(t, p)| java::topic_partition_hash(t, *p))
        .iter()
        .map(|(t, p)| format!("{t}-{p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the tool prints for `outcome`, and the failure message if any partition failed.
pub fn format_outcome(kind: ElectionType, outcome: &Outcome) -> (String, Option<String>) {
    let mut out = String::new();
    if !outcome.succeeded.is_empty() {
        out.push_str(&format!(
            "Successfully completed leader election ({}) for partitions {}\n",
            kind.name(),
            joined(&outcome.succeeded)
        ));
    }
    if !outcome.noop.is_empty() {
        out.push_str(&format!(
            "Valid replica already elected for partitions {}\n",
            joined(&outcome.noop)
        ));
    }
    let failed = java::hash_order(outcome.failed.clone(), None, |((t, p), _)| {
        java::topic_partition_hash(t, *p)
    });
    for ((t, p), error) in &failed {
        out.push_str(&format!(
            "Error completing leader election ({}) for partition: {t}-{p}: {error}\n",
            kind.name()
        ));
    }
    let error = (!failed.is_empty()).then(|| format!("{} replica(s) could not be elected", failed.len()));
    (out, error)
}

pub async fn run(a: &LeaderElectionArgs) -> CliResult<()> {
    let kind = check_args(a)?;
    let partitions: Option<Vec<(String, i32)>> = match (&a.path_to_json_file, &a.topic, a.partition) {
        (Some(path), _, _) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            Some(parse_election_json(&text)?)
        }
        (None, Some(topic), Some(partition)) => Some(vec![(topic.clone(), partition)]),
        _ => None,
    };
    let mut admin = Admin::connect(a.bootstrap_server.as_deref().unwrap_or_default()).await?;
    let topic_partitions = partitions.map(|list| {
        let mut by_topic: Vec<TopicPartitions> = Vec::new();
        for (t, p) in list {
            match by_topic.iter_mut().find(|tp| tp.topic.0.as_str() == t) {
                Some(tp) => tp.partitions.push(p),
                None => by_topic.push(
                    TopicPartitions::default()
                        .with_topic(topic_name(&t))
                        .with_partitions(vec![p]),
                ),
            }
        }
        by_topic
    });
    let request = ElectLeadersRequest::default()
        .with_election_type(kind.wire())
        .with_topic_partitions(topic_partitions)
        .with_timeout_ms(30_000);
    let response = admin
        .send_to_controller(request, (0, 2), |r| r.error_code == error_codes::NOT_CONTROLLER)
        .await?;
    if response.error_code != error_codes::NONE {
        return fail(super::java_exception(response.error_code, None));
    }
    let (out, error) = format_outcome(kind, &outcome_of(&response));
    print!("{out}");
    match error {
        Some(e) => fail(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};

    fn response(results: &[(&str, i32, i16)]) -> ElectLeadersResponse {
        ElectLeadersResponse::default().with_replica_election_results(
            results
                .iter()
                .map(|(t, p, code)| {
                    ReplicaElectionResult::default()
                        .with_topic(topic_name(t))
                        .with_partition_result(vec![PartitionResult::default()
                            .with_partition_id(*p)
                            .with_error_code(*code)])
                })
                .collect(),
        )
    }

    #[test]
    fn prints_kafkas_result_lines() {
        let r = response(&[
            ("t", 0, error_codes::NONE),
            ("t", 1, error_codes::NONE),
            ("u", 0, error_codes::ELECTION_NOT_NEEDED),
            ("v", 3, error_codes::UNKNOWN_TOPIC_OR_PARTITION),
        ]);
        let (out, error) = format_outcome(ElectionType::Preferred, &outcome_of(&r));
        // HashSet order: TopicPartition("t", 1) hashes to bucket 4, ("t", 0) to bucket 5.
        assert_eq!(
            out,
            "Successfully completed leader election (PREFERRED) for partitions t-1, t-0\n\
             Valid replica already elected for partitions u-0\n\
             Error completing leader election (PREFERRED) for partition: v-3: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.\n"
        );
        assert_eq!(error.as_deref(), Some("1 replica(s) could not be elected"));
    }

    fn args(list: &[&str]) -> LeaderElectionArgs {
        use clap::Parser;
        #[derive(Debug, clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            a: LeaderElectionArgs,
        }
        let mut argv = vec!["leader-election"];
        argv.extend_from_slice(list);
        Wrap::try_parse_from(argv).expect("parse").a
    }

    #[test]
    fn option_checks_give_kafkas_messages() {
        let msg = |l: &[&str]| check_args(&args(l)).expect_err("invalid").to_string();
        assert_eq!(msg(&[]), "Missing required option(s): bootstrap-server, election-type");
        assert_eq!(
            msg(&["--bootstrap-server", "h:1", "--election-type", "preferred"]),
            "One and only one of the following options is required: topic, all-topic-partitions, path-to-json-file"
        );
        assert_eq!(
            msg(&[
                "--bootstrap-server",
                "h:1",
                "--election-type",
                "preferred",
                "--topic",
                "t"
            ]),
            "Missing required option(s): partition"
        );
        assert_eq!(
            check_args(&args(&[
                "--bootstrap-server",
                "h:1",
                "--election-type",
                "UNCLEAN",
                "--all-topic-partitions"
            ]))
            .expect("ok"),
            ElectionType::Unclean
        );
    }

    #[test]
    fn election_json_as_kafka() {
        assert_eq!(
            parse_election_json(r#"{"partitions":[{"topic":"a","partition":1}]}"#).expect("ok"),
            vec![("a".to_owned(), 1)]
        );
        assert_eq!(
            parse_election_json("{}").expect_err("missing").to_string(),
            "Replica election data is missing \"partitions\" field"
        );
        assert!(
            parse_election_json(r#"{"partitions":[{"topic":"a","partition":1},{"topic":"a","partition":1}]}"#)
                .expect_err("dup")
                .to_string()
                .contains("duplicate partitions")
        );
    }
}
