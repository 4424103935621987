//! The pure parts of `kastle reassign-partitions`, as Kafka 3.9's `ReassignPartitionsCommand`
//! has them: the reassignment JSON (`{"version":1,"partitions":[{"topic","partition",
//! "replicas","log_dirs"}]}`) and the topics-to-move JSON (`{"version":1,"topics":[{"topic"}]}`)
//! read and written, `--generate`'s proposal (`AdminUtils.assignReplicasToBrokers` per topic,
//! kastle's [`crate::controller::assignment`]), and the texts of `--verify`, `--list` and
//! `--execute`. No I/O.
//!
//! Log-dir moves (a `log_dirs` entry other than `"any"`) are refused here: kastle cannot move a
//! replica between the log directories of one broker yet, and ignoring the entry would report
//! a move that never happens.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{fail, CliResult};
use crate::controller::assignment::{
    assign_replicas_to_brokers, AssignmentError, BrokerMetadata, PlacementStart, RackAwareMode,
};
use crate::types::BrokerId;

/// A partition, `(topic, partition)`; printed `topic-partition` as Kafka's `TopicPartition`.
pub type Partition = (String, i32);

/// Partition → replicas, in Kafka's `compareTopicPartitions` order (topic, then partition).
pub type Assignment = BTreeMap<Partition, Vec<i32>>;

/// The log-dir entry that lets the broker choose (the only one kastle accepts).
pub const ANY_LOG_DIR: &str = "any";

pub fn tp(p: &Partition) -> String {
    format!("{}-{}", p.0, p.1)
}

fn ids(list: &[i32]) -> String {
    list.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn parse_json(text: &str) -> CliResult<Value> {
    serde_json::from_str(text).or_else(|e| fail(format!("The input string is not a valid JSON: {e}")))
}

/// `version`, default 1; Kafka knows only 1.
fn check_version(json: &Value) -> CliResult<()> {
    match json.get("version") {
        None => Ok(()),
        Some(v) if v.as_i64() == Some(1) => Ok(()),
        Some(v) => fail(format!("Not supported version field value {v}")),
    }
}

fn int(v: Option<&Value>, what: &str, entry: &Value) -> CliResult<i32> {
    v.and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
        .map_or_else(|| fail(format!("Missing or invalid \"{what}\" in {entry}")), Ok)
}

/// A reassignment JSON's partitions in file order (duplicates kept, so `--execute` can refuse
/// them). A `log_dirs` list must be as long as `replicas`, and every entry `"any"`.
pub fn parse_reassignment(text: &str) -> CliResult<Vec<(Partition, Vec<i32>)>> {
    let json = parse_json(text)?;
    check_version(&json)?;
    let Some(list) = json.get("partitions") else {
        return Ok(Vec::new());
    };
    let Some(list) = list.as_array() else {
        return fail("\"partitions\" must be a JSON array");
    };
    let mut out = Vec::new();
    for entry in list {
        let Some(topic) = entry.get("topic").and_then(Value::as_str) else {
            return fail(format!("Missing or invalid \"topic\" in {entry}"));
        };
        let partition = int(entry.get("partition"), "partition", entry)?;
        let Some(replicas) = entry.get("replicas").and_then(Value::as_array) else {
            return fail(format!("Missing or invalid \"replicas\" in {entry}"));
        };
        let replicas = replicas
            .iter()
            .map(|r| int(Some(r), "replicas", entry))
            .collect::<CliResult<Vec<i32>>>()?;
        let part = (topic.to_owned(), partition);
        if let Some(dirs) = entry.get("log_dirs") {
            let Some(dirs) = dirs.as_array() else {
                return fail(format!("Missing or invalid \"log_dirs\" in {entry}"));
            };
            if dirs.len() != replicas.len() {
                return fail(format!(
                    "Size of replicas list [{}] is different from size of log dirs list [{}] for partition {}",
                    replicas.iter().map(i32::to_string).collect::<Vec<_>>().join(", "),
                    dirs.iter()
                        .map(|d| d.as_str().unwrap_or("?"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    tp(&part)
                ));
            }
            if let Some((replica, dir)) = replicas.iter().zip(dirs).find(|(_, d)| d.as_str() != Some(ANY_LOG_DIR)) {
                return fail(format!(
                    "Moving replicas between log directories is not supported by this kastle build: \
                     partition {} names log dir {dir} for broker {replica}; use \"{ANY_LOG_DIR}\"",
                    tp(&part)
                ));
            }
        }
        out.push((part, replicas));
    }
    Ok(out)
}

/// `parseExecuteAssignmentArgs`' checks: something to do, no empty replica list, no partition
/// twice, no broker twice in a list.
pub fn check_execute_plan(plan: Vec<(Partition, Vec<i32>)>) -> CliResult<Assignment> {
    if plan.is_empty() {
        return fail("Error: Partition reassignment list cannot be empty");
    }
    if plan.iter().any(|(_, r)| r.is_empty()) {
        return fail("Error: Partition replica list cannot be empty");
    }
    let mut seen = BTreeSet::new();
    let dups: BTreeSet<&Partition> = plan.iter().map(|(p, _)| p).filter(|p| !seen.insert(*p)).collect();
    if !dups.is_empty() {
        return fail(format!(
            "Error: Partition reassignment contains duplicate topic partitions: {}",
            dups.iter().map(|p| tp(p)).collect::<Vec<_>>().join(",")
        ));
    }
    let repeated: Vec<String> = plan
        .iter()
        .filter_map(|(p, replicas)| {
            let mut seen = BTreeSet::new();
            let d: BTreeSet<i32> = replicas.iter().copied().filter(|r| !seen.insert(*r)).collect();
            (!d.is_empty()).then(|| {
                format!(
                    "{} contains multiple entries for {}",
                    tp(p),
                    ids(&d.into_iter().collect::<Vec<_>>())
                )
            })
        })
        .collect();
    if !repeated.is_empty() {
        return fail(format!(
            "Error: Partition replica lists may not contain duplicate entries: {}",
            repeated.join(". ")
        ));
    }
    Ok(plan.into_iter().collect())
}

/// Kafka's `formatAsReassignmentJson`, every log dir `"any"`: compact, partitions sorted.
pub fn format_reassignment(assignment: &Assignment) -> String {
    // Built by hand: serde_json's maps sort their keys unless `preserve_order` is on, and Kafka
    // writes topic, partition, replicas, log_dirs in that order.
    let partitions: Vec<String> = assignment
        .iter()
        .map(|((topic, p), replicas)| {
            format!(
                r#"{{"topic":{},"partition":{p},"replicas":[{}],"log_dirs":[{}]}}"#,
                Value::String(topic.clone()),
                ids(replicas),
                vec![r#""any""#; replicas.len()].join(",")
            )
        })
        .collect();
    format!(r#"{{"version":1,"partitions":[{}]}}"#, partitions.join(","))
}

/// The topics of a `--topics-to-move-json-file`, refusing duplicates as `parseGenerateAssignmentArgs`.
pub fn parse_topics(text: &str) -> CliResult<Vec<String>> {
    let json = parse_json(text)?;
    check_version(&json)?;
    let mut out: Vec<String> = Vec::new();
    if let Some(list) = json.get("topics") {
        let Some(list) = list.as_array() else {
            return fail("\"topics\" must be a JSON array");
        };
        for entry in list {
            let Some(topic) = entry.get("topic").and_then(Value::as_str) else {
                return fail(format!("Missing or invalid \"topic\" in {entry}"));
            };
            out.push(topic.to_owned());
        }
    }
    let mut seen = BTreeSet::new();
    let dups: BTreeSet<&String> = out.iter().filter(|t| !seen.insert(*t)).collect();
    if !dups.is_empty() {
        return fail(format!(
            "Error: List of topics to reassign contains duplicate entries: [{}]",
            dups.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(out)
}

/// `--broker-list 1,2,3`, refusing duplicates.
pub fn parse_broker_list(list: &str) -> CliResult<Vec<i32>> {
    let brokers = list
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<i32>()
                .or_else(|_| fail(format!("Error: For input string: \"{s}\"")))
        })
        .collect::<CliResult<Vec<i32>>>()?;
    let mut seen = BTreeSet::new();
    let dups: BTreeSet<i32> = brokers.iter().copied().filter(|b| !seen.insert(*b)).collect();
    if !dups.is_empty() {
        return fail(format!(
            "Error: Broker list contains duplicate entries: [{}]",
            dups.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(brokers)
}

/// `getBrokerMetadata`'s rack check: with rack awareness, every chosen broker has a rack or none.
pub fn check_racks(brokers: &[BrokerMetadata], rack_aware: bool) -> CliResult<()> {
    let rackless = brokers.iter().filter(|b| b.rack.is_none()).count();
    if rack_aware && rackless != 0 && rackless != brokers.len() {
        return fail(
            "Error: Not all brokers have rack information. Add --disable-rack-aware in command line \
             to make replica assignment without rack information.",
        );
    }
    Ok(())
}

/// `calculateAssignment`: each topic's partitions placed anew on `brokers` with the topic's
/// replication factor (its partition 0's), as CreateTopics would place a new topic; `start`
/// draws each topic's start (Kafka draws it at random per topic).
pub fn propose(
    current: &Assignment,
    brokers: &[BrokerMetadata],
    rack_aware: bool,
    mut start: impl FnMut(usize) -> PlacementStart,
) -> CliResult<Assignment> {
    let mut by_topic: BTreeMap<&str, Vec<(i32, &Vec<i32>)>> = BTreeMap::new();
    for ((t, p), replicas) in current {
        by_topic.entry(t).or_default().push((*p, replicas));
    }
    let mode = if rack_aware {
        RackAwareMode::Enforced
    } else {
        RackAwareMode::Disabled
    };
    let mut out = Assignment::new();
    for (topic, partitions) in by_topic {
        let rf = partitions.first().map_or(0, |(_, r)| r.len()) as i32;
        let placed = assign_replicas_to_brokers(brokers, partitions.len() as i32, rf, mode, start(brokers.len()))
            .or_else(|e| match e {
                AssignmentError::InvalidReplicationFactor { rf, brokers } => fail(format!(
                    "Error: Replication factor: {rf} larger than available brokers: {brokers}."
                )),
                e => fail(format!("Error: {e}")),
            })?;
        for (p, replicas) in placed {
            out.insert((topic.to_owned(), p), replicas.iter().map(|b: &BrokerId| b.0).collect());
        }
    }
    Ok(out)
}

/// What `--generate` prints.
pub fn generate_text(current: &Assignment, proposed: &Assignment) -> String {
    format!(
        "Current partition replica assignment\n{}\n\nProposed partition reassignment configuration\n{}\n",
        format_reassignment(current),
        format_reassignment(proposed)
    )
}

/// `currentPartitionReplicaAssignmentToString`: the current replicas of the partitions about to
/// move, to roll back with.
pub fn rollback_text(current: &Assignment) -> String {
    format!(
        "Current partition replica assignment\n\n{}\n\nSave this to use as the --reassignment-json-file option during rollback\n",
        format_reassignment(current)
    )
}

/// `Successfully started partition reassignment(s) for t-0,t-1`.
pub fn started_text(plan: &Assignment) -> String {
    format!(
        "Successfully started partition reassignment{} for {}\n",
        if plan.len() == 1 { "" } else { "s" },
        plan.keys().map(tp).collect::<Vec<_>>().join(",")
    )
}

/// Per-partition failures, as `--execute` and `--cancel` list them under their heading.
pub fn errors_text(heading: &str, errors: &BTreeMap<Partition, String>) -> String {
    let lines: Vec<String> = errors.iter().map(|(p, e)| format!("{}: {e}", tp(p))).collect();
    format!("{heading}\n{}", lines.join("\n"))
}

/// A partition's state for `--verify`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentState {
    /// The replica set now (with the ones being added, while in progress); empty for an
    /// unknown partition.
    pub current: Vec<i32>,
    pub target: Vec<i32>,
    /// No reassignment of the partition is in progress.
    pub done: bool,
}

/// `partitionReassignmentStatesToString`.
pub fn status_text(states: &BTreeMap<Partition, ReassignmentState>) -> String {
    let mut out = String::from("Status of partition reassignment:\n");
    for (p, s) in states {
        if !s.done {
            out.push_str(&format!("Reassignment of partition {} is still in progress.\n", tp(p)));
        } else if s.current == s.target {
            out.push_str(&format!("Reassignment of partition {} is completed.\n", tp(p)));
        } else {
            out.push_str(&format!(
                "There is no active reassignment of partition {}, but replica set is {} rather than {}.\n",
                tp(p),
                ids(&s.current),
                ids(&s.target)
            ));
        }
    }
    out
}

/// A reassignment as ListPartitionReassignments answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ongoing {
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

/// `curReassignmentsToString`, what `--list` prints.
pub fn list_text(ongoing: &BTreeMap<Partition, Ongoing>) -> String {
    if ongoing.is_empty() {
        return "No partition reassignments found.\n".to_owned();
    }
    let mut out = String::from("Current partition reassignments:\n");
    for (p, o) in ongoing {
        out.push_str(&format!("{}: replicas: {}.", tp(p), ids(&o.replicas)));
        if !o.adding.is_empty() {
            out.push_str(&format!(" adding: {}.", ids(&o.adding)));
        }
        if !o.removing.is_empty() {
            out.push_str(&format!(" removing: {}.", ids(&o.removing)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "reassignment_json_tests.rs"]
mod tests;
