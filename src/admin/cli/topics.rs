//! `kastle topics`, shaped like Kafka 3.9's `kafka-topics.sh` (`TopicCommand`): `--create`,
//! `--list`, `--describe`, `--alter --partitions`, `--delete`, the partition reports
//! (`--under-replicated-partitions`, `--unavailable-partitions`, `--under-min-isr-partitions`,
//! `--at-min-isr-partitions`) and `--topics-with-overrides`.
//!
//! `--describe` prints Kafka's lines: topics and their `Configs:` in the admin client's
//! `HashMap` order, the non-default entries of DescribeConfigs, and `Elr: N/A` /
//! `LastKnownElr: N/A` (a ZooKeeper-mode cluster answers Metadata, which has no ELR). One
//! difference: where a broker does not serve DescribeConfigs, Kafka's tool fails; kastle
//! prints the `Configs:` column empty and a warning on stderr.

use std::collections::{BTreeSet, HashMap};

use clap::Args;
use kafka_protocol::messages::create_partitions_request::{CreatePartitionsAssignment, CreatePartitionsTopic};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest, MetadataResponse,
};

use super::client::{str_bytes, topic_name, Admin};
use super::configs::{self, ConfigEntry};
use super::pattern::{is_internal, IncludeList};
use super::{fail, java, require_bootstrap, CliError, CliResult};
use crate::protocol::error_codes;

/// `kastle topics`: options as `kafka-topics.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "Create, delete, describe, or change a topic, like kafka-topics.sh",
    long_about = "This tool helps to create, delete, describe, or change a topic (kafka-topics.sh \
        with --bootstrap-server). Difference from Kafka's tool: when the broker does not serve \
        DescribeConfigs, --describe prints the Configs column empty and a warning on stderr \
        instead of failing."
)]
pub struct TopicsArgs {
    /// REQUIRED: The Kafka server to connect to.
    #[arg(long, value_name = "server to connect to")]
    pub bootstrap_server: Option<String>,
    /// List all available topics.
    #[arg(long)]
    pub list: bool,
    /// Create a new topic.
    #[arg(long)]
    pub create: bool,
    /// Delete a topic.
    #[arg(long)]
    pub delete: bool,
    /// Alter the number of partitions and replica assignment.
    #[arg(long)]
    pub alter: bool,
    /// List details for the given topics.
    #[arg(long)]
    pub describe: bool,
    /// The topic to create, alter, describe or delete. It also accepts a regular expression,
    /// except for --create option. Put topic name in double quotes and use the '\' prefix to
    /// escape regular expression symbols; e.g. "test\.topic".
    #[arg(long)]
    pub topic: Option<String>,
    /// A topic configuration override for the topic being created (name=value; repeatable).
    #[arg(long = "config", value_name = "name=value")]
    pub config: Vec<String>,
    /// The number of partitions for the topic being created or altered. If not supplied for
    /// create, defaults to the cluster default.
    #[arg(long, value_name = "# of partitions", allow_negative_numbers = true)]
    pub partitions: Option<i32>,
    /// The replication factor for each partition in the topic being created. If not supplied,
    /// defaults to the cluster default.
    #[arg(long, value_name = "replication factor", allow_negative_numbers = true)]
    pub replication_factor: Option<i32>,
    /// A list of manual partition-to-broker assignments for the topic being created or altered
    /// (broker_id_for_part1_replica1 : broker_id_for_part1_replica2 , broker_id_for_part2_replica1 : ...).
    #[arg(long)]
    pub replica_assignment: Option<String>,
    /// If set when describing topics, only show under replicated partitions.
    #[arg(long)]
    pub under_replicated_partitions: bool,
    /// If set when describing topics, only show partitions whose leader is not available.
    #[arg(long)]
    pub unavailable_partitions: bool,
    /// If set when describing topics, only show partitions whose isr count is less than the
    /// configured minimum.
    #[arg(long)]
    pub under_min_isr_partitions: bool,
    /// If set when describing topics, only show partitions whose isr count is equal to the
    /// configured minimum.
    #[arg(long)]
    pub at_min_isr_partitions: bool,
    /// If set when describing topics, only show topics that have overridden configs.
    #[arg(long)]
    pub topics_with_overrides: bool,
    /// If set when altering or deleting or describing topics, the action will only execute if
    /// the topic exists.
    #[arg(long)]
    pub if_exists: bool,
    /// If set when creating topics, the action will only execute if the topic does not already
    /// exist.
    #[arg(long)]
    pub if_not_exists: bool,
    /// Exclude internal topics when running list or describe command. The internal topics will
    /// be listed by default.
    #[arg(long)]
    pub exclude_internal: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    List,
    Alter,
    Describe,
    Delete,
}

impl TopicsArgs {
    fn reports(&self) -> bool {
        self.under_replicated_partitions
            || self.unavailable_partitions
            || self.under_min_isr_partitions
            || self.at_min_isr_partitions
    }
}

fn invalid(used: &str, with: &str) -> CliError {
    CliError::Failed(format!("Option \"[{used}]\" can't be used with option \"[{with}]\""))
}

/// `TopicCommandOptions.checkArgs`: exactly one action, the required and the invalid options.
pub fn check_args(a: &TopicsArgs) -> CliResult<Action> {
    let actions = [
        (a.create, Action::Create),
        (a.list, Action::List),
        (a.alter, Action::Alter),
        (a.describe, Action::Describe),
        (a.delete, Action::Delete),
    ];
    let chosen: Vec<Action> = actions.iter().filter(|(on, _)| *on).map(|(_, act)| *act).collect();
    let [action] = chosen[..] else {
        return fail("Command must include exactly one action: --list, --describe, --create, --alter or --delete");
    };
    require_bootstrap(&a.bootstrap_server, "--bootstrap-server must be specified")?;
    let name = |act: Action| match act {
        Action::Create => "create",
        Action::List => "list",
        Action::Alter => "alter",
        Action::Describe => "describe",
        Action::Delete => "delete",
    };
    if !matches!(action, Action::List | Action::Describe) && a.topic.is_none() {
        return fail("Missing required argument \"[topic]\"");
    }
    if action == Action::Alter && a.partitions.is_none() {
        return fail("Missing required argument \"[partitions]\"");
    }
    let only = |set: bool, option: &str, allowed: &[Action]| -> CliResult<()> {
        if set && !allowed.contains(&action) {
            return Err(invalid(option, name(action)));
        }
        Ok(())
    };
    only(!a.config.is_empty(), "config", &[Action::Create])?;
    only(a.partitions.is_some(), "partitions", &[Action::Alter, Action::Create])?;
    only(a.replication_factor.is_some(), "replication-factor", &[Action::Create])?;
    only(
        a.replica_assignment.is_some(),
        "replica-assignment",
        &[Action::Alter, Action::Create],
    )?;
    if action == Action::Create && a.replica_assignment.is_some() {
        if a.partitions.is_some() {
            return Err(invalid("replica-assignment", "partitions"));
        }
        if a.replication_factor.is_some() {
            return Err(invalid("replica-assignment", "replication-factor"));
        }
    }
    for (set, option) in [
        (a.under_replicated_partitions, "under-replicated-partitions"),
        (a.under_min_isr_partitions, "under-min-isr-partitions"),
        (a.at_min_isr_partitions, "at-min-isr-partitions"),
        (a.unavailable_partitions, "unavailable-partitions"),
        (a.topics_with_overrides, "topics-with-overrides"),
    ] {
        only(set, option, &[Action::Describe])?;
    }
    if a.topics_with_overrides && a.reports() {
        return Err(invalid("topics-with-overrides", "under-replicated-partitions"));
    }
    only(
        a.if_exists,
        "if-exists",
        &[Action::Alter, Action::Delete, Action::Describe],
    )?;
    only(a.if_not_exists, "if-not-exists", &[Action::Create])?;
    only(
        a.exclude_internal,
        "exclude-internal",
        &[Action::List, Action::Describe],
    )?;
    Ok(action)
}

/// `parseReplicaAssignment`: `1:2,2:3` → partition 0 on [1, 2], partition 1 on [2, 3].
pub fn parse_replica_assignment(raw: &str) -> CliResult<Vec<Vec<i32>>> {
    let mut out: Vec<Vec<i32>> = Vec::new();
    for (i, part) in raw.split(',').enumerate() {
        let brokers = part
            .split(':')
            .map(|b| b.trim().parse::<i32>())
            .collect::<Result<Vec<i32>, _>>()
            .map_err(|e| CliError::Failed(format!("For input string: \"{part}\" ({e})")))?;
        let mut seen = BTreeSet::new();
        let dups: Vec<String> = brokers
            .iter()
            .filter(|b| !seen.insert(**b))
            .map(|b| b.to_string())
            .collect();
        if !dups.is_empty() {
            return fail(format!(
                "Partition replica lists may not contain duplicate entries: {}",
                dups.join(",")
            ));
        }
        if out.first().is_some_and(|first| first.len() != brokers.len()) {
            return fail(format!(
                "Partition {i} has different replication factor: [{}]",
                brokers.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        out.push(brokers);
    }
    Ok(out)
}

/// `parseTopicConfigsToBeAdded`: each `--config` is `key=value` (spaces around `=` allowed).
pub fn parse_topic_configs(raw: &[String]) -> CliResult<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for c in raw {
        let parts: Vec<&str> = c.split('=').collect();
        if parts.len() != 2 {
            return fail(
                "requirement failed: Invalid topic config: all configs to be added must be in the format \"key=val\".",
            );
        }
        let key = parts[0].trim().to_owned();
        out.retain(|(k, _)| *k != key);
        out.push((key, parts[1].trim().to_owned()));
    }
    Ok(out)
}

/// `getTopics`: the sorted names `--topic` selects, internal ones dropped with `--exclude-internal`.
pub fn select_topics(all_sorted: &[String], include: Option<&str>, exclude_internal: bool) -> Vec<String> {
    let filter = include.map(IncludeList::new);
    all_sorted
        .iter()
        .filter(|t| match &filter {
            Some(f) => f.allows(t, exclude_internal),
            None => !(exclude_internal && is_internal(t)),
        })
        .cloned()
        .collect()
}

/// `ensureTopicExists`.
pub fn ensure_exists(found: &[String], requested: Option<&str>, require: bool) -> CliResult<()> {
    match requested {
        Some(t) if !t.is_empty() && require && found.is_empty() => {
            fail(format!("Topic '{t}' does not exist as expected"))
        }
        _ => Ok(()),
    }
}

/// One partition of a topic, from Metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    /// `None` when there is no leader or the leader is not a live broker.
    pub leader: Option<i32>,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// A topic as `describeTopics` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    /// Kafka's base64 form; `None` for the zero id (not printed).
    pub topic_id: Option<String>,
    pub partitions: Vec<PartitionInfo>,
}

/// The topics of a Metadata response, partitions sorted.
pub fn topics_of(response: &MetadataResponse) -> Vec<TopicInfo> {
    use base64::Engine;
    let live: BTreeSet<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    response
        .topics
        .iter()
        .filter(|t| t.error_code == error_codes::NONE)
        .filter_map(|t| {
            let name = t.name.as_ref()?.0.to_string();
            let topic_id = (!t.topic_id.is_nil())
                .then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t.topic_id.as_bytes()));
            let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect::<Vec<i32>>();
            let mut partitions: Vec<PartitionInfo> = t
                .partitions
                .iter()
                .map(|p| PartitionInfo {
                    partition: p.partition_index,
                    leader: (p.leader_id.0 >= 0 && live.contains(&p.leader_id.0)).then_some(p.leader_id.0),
                    replicas: ids(&p.replica_nodes),
                    isr: ids(&p.isr_nodes),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            Some(TopicInfo {
                name,
                topic_id,
                partitions,
            })
        })
        .collect()
}

/// Which lines `--describe` prints (`DescribeOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescribeFilter {
    pub under_replicated: bool,
    pub unavailable: bool,
    pub under_min_isr: bool,
    pub at_min_isr: bool,
    pub with_overrides: bool,
}

impl DescribeFilter {
    fn describe_configs(&self) -> bool {
        !(self.under_replicated || self.unavailable || self.under_min_isr || self.at_min_isr)
    }
}

fn join(ids: &[i32]) -> String {
    ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
}

/// The partition line of `--describe`.
pub fn partition_line(topic: &str, p: &PartitionInfo) -> String {
    format!(
        "\tTopic: {topic}\tPartition: {}\tLeader: {}\tReplicas: {}\tIsr: {}\tElr: N/A\tLastKnownElr: N/A",
        p.partition,
        p.leader.map_or_else(|| "none".to_owned(), |l| l.to_string()),
        join(&p.replicas),
        join(&p.isr),
    )
}

/// The topic line of `--describe`: configs are the non-default entries, in `entries` order.
pub fn topic_line(t: &TopicInfo, entries: &[ConfigEntry]) -> String {
    let configs: Vec<String> = entries
        .iter()
        .filter(|e| !e.is_default())
        .map(|e| format!("{}={}", e.name, e.value_str()))
        .collect();
    let mut line = format!("Topic: {}", t.name);
    if let Some(id) = &t.topic_id {
        line.push_str(&format!("\tTopicId: {id}"));
    }
    let rf = t.partitions.first().map_or(0, |p| p.replicas.len());
    line.push_str(&format!(
        "\tPartitionCount: {}\tReplicationFactor: {rf}\tConfigs: {}",
        t.partitions.len(),
        configs.join(",")
    ));
    line
}

/// Everything `--describe` prints for `topics` (already in print order), given each topic's
/// config entries (in `Config.entries()` order; missing: none) and the live brokers.
pub fn describe_output(
    topics: &[TopicInfo],
    configs: &HashMap<String, Vec<ConfigEntry>>,
    live: &BTreeSet<i32>,
    filter: &DescribeFilter,
) -> String {
    let mut out = String::new();
    let none = Vec::new();
    for t in topics {
        let entries = configs.get(&t.name).unwrap_or(&none);
        let min_isr: usize = entries
            .iter()
            .find(|e| e.name == "min.insync.replicas")
            .and_then(|e| e.value.as_deref()?.parse().ok())
            .unwrap_or(1);
        if filter.describe_configs() && (!filter.with_overrides || entries.iter().any(|e| !e.is_default())) {
            out.push_str(&topic_line(t, entries));
            out.push('\n');
        }
        if filter.with_overrides {
            continue;
        }
        for p in &t.partitions {
            let has_leader = p.leader.is_some();
            let print = filter.describe_configs()
                || (filter.under_replicated && p.replicas.len() > p.isr.len())
                || (filter.unavailable && !p.leader.is_some_and(|l| live.contains(&l)))
                || (filter.under_min_isr && (!has_leader || p.isr.len() < min_isr))
                || (filter.at_min_isr && p.isr.len() == min_isr);
            if print {
                out.push_str(&partition_line(&t.name, p));
                out.push('\n');
            }
        }
    }
    out
}

/// `System.out.println(topics.joinToString("\n"))`: one line even when empty.
pub fn list_output(topics: &[String]) -> String {
    format!("{}\n", topics.join("\n"))
}

/// Runs the command; Kafka's "Error while executing topic command : ..." on failure.
pub async fn run(a: &TopicsArgs) -> CliResult<()> {
    let action = check_args(a)?;
    let result = async {
        let bootstrap = a.bootstrap_server.as_deref().unwrap_or_default();
        let mut admin = Admin::connect(bootstrap).await?;
        match action {
            Action::Create => create(&mut admin, a).await,
            Action::List => {
                let all = admin.topic_names().await?;
                print!(
                    "{}",
                    list_output(&select_topics(&all, a.topic.as_deref(), a.exclude_internal))
                );
                Ok(())
            }
            Action::Describe => describe(&mut admin, a).await,
            Action::Alter => alter(&mut admin, a).await,
            Action::Delete => delete(&mut admin, a).await,
        }
    }
    .await;
    result.map_err(|e| CliError::Failed(format!("Error while executing topic command : {e}")))
}

async fn create(admin: &mut Admin, a: &TopicsArgs) -> CliResult<()> {
    let name = a.topic.clone().unwrap_or_default();
    let configs = parse_topic_configs(&a.config)?;
    let assignment = match a.replica_assignment.as_deref().filter(|s| !s.is_empty()) {
        Some(raw) => Some(parse_replica_assignment(raw)?),
        None => None,
    };
    if name.contains('.') || name.contains('_') {
        println!("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. To avoid issues it is best to use either, but not both.");
    }
    if a.replication_factor
        .is_some_and(|rf| !(1..=i32::from(i16::MAX)).contains(&rf))
    {
        return fail(format!(
            "The replication factor must be between 1 and {} inclusive",
            i16::MAX
        ));
    }
    if a.partitions.is_some_and(|p| p < 1) {
        return fail("The partitions must be greater than 0");
    }
    let mut topic = CreatableTopic::default().with_name(topic_name(&name)).with_configs(
        configs
            .iter()
            .map(|(k, v)| {
                CreatableTopicConfig::default()
                    .with_name(str_bytes(k))
                    .with_value(Some(str_bytes(v)))
            })
            .collect(),
    );
    topic = match &assignment {
        Some(assignment) => topic
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(
                assignment
                    .iter()
                    .enumerate()
                    .map(|(i, brokers)| {
                        CreatableReplicaAssignment::default()
                            .with_partition_index(i as i32)
                            .with_broker_ids(brokers.iter().map(|b| BrokerId(*b)).collect())
                    })
                    .collect(),
            ),
        None => topic
            .with_num_partitions(a.partitions.unwrap_or(-1))
            .with_replication_factor(a.replication_factor.map_or(-1, |rf| rf as i16)),
    };
    let request = CreateTopicsRequest::default()
        .with_topics(vec![topic])
        .with_timeout_ms(30_000);
    let response = admin
        .send_to_controller(request, (2, 7), |r| {
            r.topics.iter().any(|t| t.error_code == error_codes::NOT_CONTROLLER)
        })
        .await?;
    for t in &response.topics {
        match t.error_code {
            error_codes::NONE => {}
            error_codes::TOPIC_ALREADY_EXISTS if a.if_not_exists => return Ok(()),
            code => return fail(super::error_message(code, t.error_message.as_deref())),
        }
    }
    println!("Created topic {name}.");
    Ok(())
}

async fn describe(admin: &mut Admin, a: &TopicsArgs) -> CliResult<()> {
    let all = admin.topic_names().await?;
    let names = select_topics(&all, a.topic.as_deref(), a.exclude_internal);
    ensure_exists(&names, a.topic.as_deref(), !a.if_exists)?;
    if names.is_empty() {
        return Ok(());
    }
    let response = admin.metadata(Some(names.clone())).await?;
    let live: BTreeSet<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    // describeTopics(...).allTopicNames(): a HashMap sized for the topics asked for.
    let topics = java::hash_order(topics_of(&response), Some(names.len()), |t| java::string_hash(&t.name));
    let mut configs = HashMap::new();
    match configs::describe_entries(admin, configs::RESOURCE_TOPIC, &names, false).await {
        Ok(results) => {
            for (name, entries) in results {
                let entries = entries.map_err(CliError::Failed)?;
                configs.insert(name, configs::java_config_order(entries));
            }
        }
        Err(CliError::Unsupported(_)) => {
            eprintln!("WARNING: the broker does not serve DescribeConfigs; the Configs column is left empty.");
        }
        Err(e) => return Err(e),
    }
    let filter = DescribeFilter {
        under_replicated: a.under_replicated_partitions,
        unavailable: a.unavailable_partitions,
        under_min_isr: a.under_min_isr_partitions,
        at_min_isr: a.at_min_isr_partitions,
        with_overrides: a.topics_with_overrides,
    };
    print!("{}", describe_output(&topics, &configs, &live, &filter));
    Ok(())
}

async fn alter(admin: &mut Admin, a: &TopicsArgs) -> CliResult<()> {
    let all = admin.topic_names().await?;
    let names = select_topics(&all, a.topic.as_deref(), a.exclude_internal);
    ensure_exists(&names, a.topic.as_deref(), !a.if_exists)?;
    if names.is_empty() {
        return Ok(());
    }
    let count = a.partitions.unwrap_or_default();
    let assignment = match a.replica_assignment.as_deref().filter(|s| !s.is_empty()) {
        Some(raw) => Some(parse_replica_assignment(raw)?),
        None => None,
    };
    let current: HashMap<String, usize> = topics_of(&admin.metadata(Some(names.clone())).await?)
        .into_iter()
        .map(|t| (t.name, t.partitions.len()))
        .collect();
    let topics = names
        .iter()
        .map(|n| {
            let assignments = assignment.as_ref().map(|asg| {
                asg.iter()
                    .skip(current.get(n).copied().unwrap_or(0))
                    .map(|brokers| {
                        CreatePartitionsAssignment::default()
                            .with_broker_ids(brokers.iter().map(|b| BrokerId(*b)).collect())
                    })
                    .collect()
            });
            CreatePartitionsTopic::default()
                .with_name(topic_name(n))
                .with_count(count)
                .with_assignments(assignments)
        })
        .collect();
    let request = CreatePartitionsRequest::default()
        .with_topics(topics)
        .with_timeout_ms(30_000);
    let response = admin
        .send_to_controller(request, (0, 3), |r| {
            r.results.iter().any(|t| t.error_code == error_codes::NOT_CONTROLLER)
        })
        .await?;
    for t in &response.results {
        if t.error_code != error_codes::NONE {
            return fail(super::error_message(t.error_code, t.error_message.as_deref()));
        }
    }
    Ok(())
}

async fn delete(admin: &mut Admin, a: &TopicsArgs) -> CliResult<()> {
    let all = admin.topic_names().await?;
    let names = select_topics(&all, a.topic.as_deref(), a.exclude_internal);
    ensure_exists(&names, a.topic.as_deref(), !a.if_exists)?;
    if names.is_empty() {
        return Ok(());
    }
    // v1-5 name the topics in `topic_names` (v6 would take `DeleteTopicState`s).
    let request = DeleteTopicsRequest::default()
        .with_topic_names(names.iter().map(|n| topic_name(n)).collect())
        .with_timeout_ms(30_000);
    let response = admin
        .send_to_controller(request, (1, 5), |r| {
            r.responses.iter().any(|t| t.error_code == error_codes::NOT_CONTROLLER)
        })
        .await?;
    for t in &response.responses {
        if t.error_code != error_codes::NONE {
            return fail(super::error_message(t.error_code, t.error_message.as_deref()));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "topics_tests.rs"]
mod tests;
