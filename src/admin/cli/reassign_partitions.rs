//! `kastle reassign-partitions`, shaped like Kafka 3.9's `kafka-reassign-partitions.sh`
//! (`ReassignPartitionsCommand`): `--generate` a plan, `--execute` it (printing the current
//! assignment to roll back with), `--verify` its progress, `--cancel` it, `--list` what is
//! being reassigned. AlterPartitionReassignments and ListPartitionReassignments go to the
//! controller (found from Metadata, again while it answers NOT_CONTROLLER), Metadata gives
//! the current replicas and the live brokers.
//!
//! `--throttle` sets the replication throttles (KIP-73) and `--verify` clears them once the
//! plan is done ([`super::reassign_throttles`]). Kastle has no moves between a broker's log
//! directories: `--replica-alter-log-dirs-throttle` and `log_dirs` entries other than `"any"`
//! are refused rather than ignored. The formats and texts are [`super::reassignment_json`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;
use kafka_protocol::messages::alter_partition_reassignments_request::{ReassignablePartition, ReassignableTopic};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsTopics;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId as WireBrokerId, ListPartitionReassignmentsRequest,
};

use super::client::{topic_name, Admin};
use super::reassign_throttles as throttles;
use super::reassignment_json::{self as plan, Assignment, Ongoing, Partition, ReassignmentState};
use super::{fail, CliError, CliResult};
use crate::controller::assignment::{BrokerMetadata, PlacementStart};
use crate::protocol::error_codes;
use crate::types::BrokerId;

/// `kastle reassign-partitions`: options as `kafka-reassign-partitions.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "Move partitions between brokers, like kafka-reassign-partitions.sh",
    long_about = "This tool helps to move topic partitions between replicas."
)]
pub struct ReassignPartitionsArgs {
    /// The server(s) to use for bootstrapping, host:port[,host:port...]. REQUIRED.
    #[arg(long, value_name = "Server(s) to use for bootstrapping")]
    pub bootstrap_server: Option<String>,
    /// Generate a candidate partition reassignment configuration. Note that this only generates
    /// a candidate assignment, it does not execute it.
    #[arg(long)]
    pub generate: bool,
    /// Kick off the reassignment as specified by the --reassignment-json-file option.
    #[arg(long)]
    pub execute: bool,
    /// Verify if the reassignment completed as specified by the --reassignment-json-file option.
    #[arg(long)]
    pub verify: bool,
    /// Cancel an active reassignment.
    #[arg(long)]
    pub cancel: bool,
    /// List all active partition reassignments.
    #[arg(long)]
    pub list: bool,
    /// The JSON file with the partition reassignment configuration:
    /// {"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}.
    /// "log_dirs" is optional; kastle accepts only "any" in it.
    #[arg(long, value_name = "manual assignment json file path")]
    pub reassignment_json_file: Option<PathBuf>,
    /// Generate a reassignment configuration to move the partitions of the specified topics to
    /// the list of brokers specified by the --broker-list option:
    /// {"version":1,"topics":[{"topic":"foo"},{"topic":"foo1"}]}.
    #[arg(long, value_name = "topics to reassign json file path")]
    pub topics_to_move_json_file: Option<PathBuf>,
    /// The list of brokers to which the partitions need to be reassigned in the form "0,1,2".
    /// Required with --topics-to-move-json-file.
    #[arg(long, value_name = "brokerlist")]
    pub broker_list: Option<String>,
    /// Disable rack aware replica assignment.
    #[arg(long)]
    pub disable_rack_aware: bool,
    /// The movement of partitions between brokers will be throttled to this value (bytes/sec).
    /// This option can be included with --execute when a reassignment is started, and it can be
    /// altered by resubmitting the current reassignment along with the --additional flag. The
    /// throttle rate should be at least 1 KB/s.
    #[arg(long, value_name = "throttle", allow_negative_numbers = true)]
    pub throttle: Option<i64>,
    /// Log-dir move throttle (bytes/sec). Not supported by kastle yet: refused.
    #[arg(long, value_name = "replicaAlterLogDirsThrottle", allow_negative_numbers = true)]
    pub replica_alter_log_dirs_throttle: Option<i64>,
    /// The maximum time in ms to wait for log directory replica assignment to begin (kastle
    /// does no log directory moves, so nothing waits).
    #[arg(long, value_name = "timeout")]
    pub timeout: Option<i64>,
    /// Execute this reassignment in addition to any other ongoing ones.
    #[arg(long)]
    pub additional: bool,
    /// Do not modify broker or topic throttles.
    #[arg(long)]
    pub preserve_throttles: bool,
}

/// What the command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Generate,
    Execute,
    Verify,
    Cancel,
    List,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Generate => "generate",
            Action::Execute => "execute",
            Action::Verify => "verify",
            Action::Cancel => "cancel",
            Action::List => "list",
        }
    }
}

/// `validateAndParseArgs`: exactly one action, its required options, no option it does not
/// permit (Kafka's messages), then kastle's refusal of the log-dir throttle.
pub fn check_args(a: &ReassignPartitionsArgs) -> CliResult<Action> {
    let actions: Vec<Action> = [
        (a.generate, Action::Generate),
        (a.execute, Action::Execute),
        (a.verify, Action::Verify),
        (a.cancel, Action::Cancel),
        (a.list, Action::List),
    ]
    .into_iter()
    .filter_map(|(given, action)| given.then_some(action))
    .collect();
    let [action] = actions[..] else {
        return fail("Command must include exactly one action: --generate, --execute, --verify, --cancel, --list");
    };
    if a.bootstrap_server.is_none() {
        return fail("Please specify --bootstrap-server");
    }
    let required: &[&str] = match action {
        Action::Generate => &["topics-to-move-json-file", "broker-list"],
        Action::Execute | Action::Verify | Action::Cancel => &["reassignment-json-file"],
        Action::List => &[],
    };
    let given: Vec<(&str, bool)> = vec![
        ("reassignment-json-file", a.reassignment_json_file.is_some()),
        ("topics-to-move-json-file", a.topics_to_move_json_file.is_some()),
        ("broker-list", a.broker_list.is_some()),
        ("disable-rack-aware", a.disable_rack_aware),
        ("throttle", a.throttle.is_some()),
        (
            "replica-alter-log-dirs-throttle",
            a.replica_alter_log_dirs_throttle.is_some(),
        ),
        ("timeout", a.timeout.is_some()),
        ("additional", a.additional),
        ("preserve-throttles", a.preserve_throttles),
    ];
    for name in required {
        if !given.iter().any(|(n, g)| n == name && *g) {
            return fail(format!("Missing required argument \"[{name}]\""));
        }
    }
    let permitted: &[&str] = match action {
        Action::Verify => &["preserve-throttles"],
        Action::Generate => &["disable-rack-aware"],
        Action::Execute => &["additional", "throttle", "replica-alter-log-dirs-throttle", "timeout"],
        Action::Cancel => &["preserve-throttles", "timeout"],
        Action::List => &[],
    };
    if let Some((name, _)) = given
        .iter()
        .find(|(n, g)| *g && !required.contains(n) && !permitted.contains(n))
    {
        return fail(format!(
            "Option \"[{name}]\" can't be used with action \"[{}]\"",
            action.name()
        ));
    }
    if a.replica_alter_log_dirs_throttle.is_some_and(|t| t >= 0) {
        return fail(
            "Moves between log directories are not supported by this kastle build: \
             --replica-alter-log-dirs-throttle would throttle nothing. Run without it.",
        );
    }
    Ok(action)
}

pub async fn run(a: &ReassignPartitionsArgs) -> CliResult<()> {
    let action = check_args(a)?;
    let mut admin = Admin::connect(a.bootstrap_server.as_deref().unwrap_or_default()).await?;
    let json_file = || read(a.reassignment_json_file.as_deref());
    match action {
        Action::Generate => {
            let topics = plan::parse_topics(&read(a.topics_to_move_json_file.as_deref())?)?;
            let brokers = plan::parse_broker_list(a.broker_list.as_deref().unwrap_or_default())?;
            generate(&mut admin, &topics, &brokers, !a.disable_rack_aware).await
        }
        Action::Execute => {
            let target = plan::check_execute_plan(plan::parse_reassignment(&json_file()?)?)?;
            // Kafka's default -1 (and any negative value): no throttle.
            let throttle = a.throttle.filter(|t| *t >= 0);
            execute(&mut admin, &target, a.additional, throttle).await
        }
        Action::Verify => {
            verify(
                &mut admin,
                plan::parse_reassignment(&json_file()?)?,
                a.preserve_throttles,
            )
            .await
        }
        Action::Cancel => {
            cancel(
                &mut admin,
                plan::parse_reassignment(&json_file()?)?,
                a.preserve_throttles,
            )
            .await
        }
        Action::List => {
            print!("{}", plan::list_text(&list_reassignments(&mut admin, None).await?));
            Ok(())
        }
    }
}

fn read(path: Option<&Path>) -> CliResult<String> {
    let path = path.ok_or_else(|| CliError::Failed("a JSON file is required".into()))?;
    std::fs::read_to_string(path).map_err(|e| CliError::Failed(format!("Error: {}: {e}", path.display())))
}

/// `generateAssignment`: the topics' current replicas, and a new placement on `brokers`.
async fn generate(admin: &mut Admin, topics: &[String], brokers: &[i32], rack_aware: bool) -> CliResult<()> {
    let current = replicas_of_topics(admin, topics).await?;
    let metadata = admin.metadata(Some(Vec::new())).await?;
    let chosen: Vec<BrokerMetadata> = metadata
        .brokers
        .iter()
        .filter(|b| brokers.contains(&b.node_id.0))
        .map(|b| BrokerMetadata {
            id: BrokerId(b.node_id.0),
            rack: b.rack.as_ref().filter(|_| rack_aware).map(|r| r.to_string()),
        })
        .collect();
    plan::check_racks(&chosen, rack_aware)?;
    let proposed = plan::propose(&current, &chosen, rack_aware, random_start)?;
    print!("{}", plan::generate_text(&current, &proposed));
    Ok(())
}

/// Kafka's two independent random draws of `assignReplicasToBrokers` (start and shift).
fn random_start(brokers: usize) -> PlacementStart {
    let seed = uuid::Uuid::new_v4().as_u128();
    let n = brokers.max(1) as u128;
    PlacementStart {
        index: (seed % n) as usize,
        shift: ((seed >> 64) % n) as usize,
        first_partition: 0,
    }
}

/// `executeAssignment`: refuse while other reassignments run (unless `--additional`), check
/// the brokers exist, print the rollback plan, set the throttles if asked, send the
/// reassignment.
async fn execute(admin: &mut Admin, target: &Assignment, additional: bool, throttle: Option<i64>) -> CliResult<()> {
    let ongoing = list_reassignments(admin, None).await?;
    if !additional && !ongoing.is_empty() {
        return fail(
            "Cannot execute because there is an existing partition assignment.  Use --additional to \
             override this and create a new partition assignment in addition to the existing one. The \
             --additional flag can also be used to change the throttle by resubmitting the current \
             reassignment.",
        );
    }
    admin.refresh().await?;
    let known: Vec<i32> = admin.brokers.iter().map(|b| b.id).collect();
    if let Some(unknown) = target.values().flatten().find(|b| !known.contains(b)) {
        return fail(format!("Error: Unknown broker id {unknown}"));
    }
    let current = replicas_of_partitions(admin, target.keys()).await?;
    print!("{}", plan::rollback_text(&current));
    if let Some(rate) = throttle {
        println!("{}", throttles::RUN_VERIFY_WARNING);
        let moves = throttles::proposed_move_map(&ongoing, target, &current);
        throttles::set_throttles(admin, &moves, rate).await?;
    }
    let errors = alter(
        admin,
        target.iter().map(|(p, r)| (p.clone(), Some(r.clone()))).collect(),
    )
    .await?;
    if !errors.is_empty() {
        return fail(plan::errors_text("Error reassigning partition(s):", &errors));
    }
    print!("{}", plan::started_text(target));
    Ok(())
}

/// `verifyAssignment`: per partition in progress, completed, or done elsewhere, then, when all
/// are done, the throttles cleared (unless preserved). Exit 0 either way.
async fn verify(admin: &mut Admin, target: Vec<(Partition, Vec<i32>)>, preserve_throttles: bool) -> CliResult<()> {
    let ongoing = list_reassignments(admin, None).await?;
    let settled: Vec<String> = target
        .iter()
        .filter(|(p, _)| !ongoing.contains_key(p))
        .map(|((t, _), _)| t.clone())
        .collect();
    let described = describe(admin, &settled).await?;
    let mut states = BTreeMap::new();
    let all_done = target.iter().all(|(p, _)| !ongoing.contains_key(p));
    let targets = target.clone();
    for (p, replicas) in target {
        let state = match ongoing.get(&p) {
            Some(o) => ReassignmentState {
                current: o.replicas.clone(),
                target: replicas,
                done: false,
            },
            None => ReassignmentState {
                current: described
                    .get(&p.0)
                    .and_then(|t| t.as_ref())
                    .and_then(|t| t.get(&p.1))
                    .cloned()
                    .unwrap_or_default(),
                target: replicas,
                done: true,
            },
        };
        states.insert(p, state);
    }
    // Kafka prints the (here always empty) log-dir move states after the partitions.
    println!("{}", plan::status_text(&states));
    if all_done && !preserve_throttles {
        throttles::clear_all_throttles(admin, &targets).await?;
    }
    Ok(())
}

/// `cancelAssignment`: cancel those of the plan's partitions that are being reassigned, then
/// clear the throttles (unless preserved).
async fn cancel(admin: &mut Admin, target: Vec<(Partition, Vec<i32>)>, preserve_throttles: bool) -> CliResult<()> {
    let mut asked: Vec<Partition> = target.iter().map(|(p, _)| p.clone()).collect();
    asked.sort();
    asked.dedup();
    let active: Vec<Partition> = list_reassignments(admin, Some(asked))
        .await?
        .into_iter()
        .filter(|(_, o)| !o.adding.is_empty() || !o.removing.is_empty())
        .map(|(p, _)| p)
        .collect();
    if active.is_empty() {
        println!("None of the specified partition reassignments are active.");
    } else {
        let errors = alter(admin, active.iter().map(|p| (p.clone(), None)).collect()).await?;
        if !errors.is_empty() {
            let s = if errors.len() == 1 { "" } else { "s" };
            return fail(plan::errors_text(
                &format!("Error cancelling partition reassignment{s} for:"),
                &errors,
            ));
        }
        println!(
            "Successfully cancelled partition reassignment{} for: {}",
            if active.len() == 1 { "" } else { "s" },
            active.iter().map(plan::tp).collect::<Vec<_>>().join(",")
        );
    }
    println!("None of the specified partition moves are active.");
    if !preserve_throttles {
        throttles::clear_all_throttles(admin, &target).await?;
    }
    Ok(())
}

/// ListPartitionReassignments (`None`: all), from the controller.
async fn list_reassignments(
    admin: &mut Admin,
    partitions: Option<Vec<Partition>>,
) -> CliResult<BTreeMap<Partition, Ongoing>> {
    let topics = partitions.map(|list| {
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p) in list {
            by_topic.entry(t).or_default().push(p);
        }
        by_topic
            .into_iter()
            .map(|(t, ps)| {
                ListPartitionReassignmentsTopics::default()
                    .with_name(topic_name(&t))
                    .with_partition_indexes(ps)
            })
            .collect()
    });
    let request = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(topics);
    let response = admin
        .send_to_controller(request, (0, 0), |r| r.error_code == error_codes::NOT_CONTROLLER)
        .await?;
    if response.error_code != error_codes::NONE {
        return fail(format!(
            "Error: {}",
            super::java_exception(response.error_code, response.error_message.as_deref())
        ));
    }
    let plain = |l: &[WireBrokerId]| l.iter().map(|b| b.0).collect::<Vec<i32>>();
    Ok(response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    (t.name.0.to_string(), p.partition_index),
                    Ongoing {
                        replicas: plain(&p.replicas),
                        adding: plain(&p.adding_replicas),
                        removing: plain(&p.removing_replicas),
                    },
                )
            })
        })
        .collect())
}

/// AlterPartitionReassignments (`None`: cancel); the partitions that failed, with the message
/// the admin client's exception carries (the broker's, else the error's default).
async fn alter(
    admin: &mut Admin,
    reassignments: Vec<(Partition, Option<Vec<i32>>)>,
) -> CliResult<BTreeMap<Partition, String>> {
    let mut by_topic: BTreeMap<String, Vec<ReassignablePartition>> = BTreeMap::new();
    for ((t, p), replicas) in &reassignments {
        by_topic.entry(t.clone()).or_default().push(
            ReassignablePartition::default()
                .with_partition_index(*p)
                .with_replicas(replicas.as_ref().map(|r| r.iter().map(|b| WireBrokerId(*b)).collect())),
        );
    }
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(t, ps)| {
                    ReassignableTopic::default()
                        .with_name(topic_name(&t))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let response = admin
        .send_to_controller(request, (0, 0), |r| r.error_code == error_codes::NOT_CONTROLLER)
        .await?;
    let mut errors = BTreeMap::new();
    if response.error_code != error_codes::NONE {
        let message = super::error_message(response.error_code, response.error_message.as_deref());
        for (p, _) in reassignments {
            errors.insert(p, message.clone());
        }
        return Ok(errors);
    }
    let mut answered = BTreeMap::new();
    for t in &response.responses {
        for p in &t.partitions {
            answered.insert((t.name.0.to_string(), p.partition_index), p);
        }
    }
    for (p, _) in reassignments {
        match answered.get(&p) {
            Some(r) if r.error_code == error_codes::NONE => {}
            Some(r) => {
                errors.insert(p, super::error_message(r.error_code, r.error_message.as_deref()));
            }
            None => {
                errors.insert(p, "The broker's response did not include this partition.".to_owned());
            }
        }
    }
    Ok(errors)
}

/// Each topic's partitions → replicas from Metadata (`None`: the topic does not exist).
async fn describe(
    admin: &mut Admin,
    topics: &[String],
) -> CliResult<BTreeMap<String, Option<BTreeMap<i32, Vec<i32>>>>> {
    let mut names = topics.to_vec();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Ok(BTreeMap::new());
    }
    let response = admin.metadata(Some(names.clone())).await?;
    let mut out: BTreeMap<String, Option<BTreeMap<i32, Vec<i32>>>> = names.into_iter().map(|n| (n, None)).collect();
    for t in &response.topics {
        let Some(name) = t.name.as_ref().map(|n| n.0.to_string()) else {
            continue;
        };
        if t.error_code != error_codes::NONE {
            continue;
        }
        let partitions = t
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.replica_nodes.iter().map(|b| b.0).collect()))
            .collect();
        out.insert(name, Some(partitions));
    }
    Ok(out)
}

fn topic_not_found(topic: &str) -> CliError {
    CliError::Failed(format!(
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic {topic} not found."
    ))
}

/// `getReplicaAssignmentForTopics`: every partition of `topics`; an unknown topic fails.
async fn replicas_of_topics(admin: &mut Admin, topics: &[String]) -> CliResult<Assignment> {
    let mut out = Assignment::new();
    for (topic, partitions) in describe(admin, topics).await? {
        let partitions = partitions.ok_or_else(|| topic_not_found(&topic))?;
        for (p, replicas) in partitions {
            out.insert((topic.clone(), p), replicas);
        }
    }
    Ok(out)
}

/// `getReplicaAssignmentForPartitions`: the current replicas of `partitions`; an unknown topic
/// or partition fails.
async fn replicas_of_partitions<'a>(
    admin: &mut Admin,
    partitions: impl Iterator<Item = &'a Partition>,
) -> CliResult<Assignment> {
    let partitions: Vec<&Partition> = partitions.collect();
    let topics: Vec<String> = partitions.iter().map(|(t, _)| t.clone()).collect();
    let described = describe(admin, &topics).await?;
    let mut out = Assignment::new();
    let mut missing = Vec::new();
    for p in partitions {
        let topic = described
            .get(&p.0)
            .and_then(|t| t.as_ref())
            .ok_or_else(|| topic_not_found(&p.0))?;
        match topic.get(&p.1) {
            Some(replicas) => {
                out.insert(p.clone(), replicas.clone());
            }
            None => missing.push(plan::tp(p)),
        }
    }
    if !missing.is_empty() {
        return fail(format!(
            "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Unable to find partition: {}",
            missing.join(", ")
        ));
    }
    Ok(out)
}
