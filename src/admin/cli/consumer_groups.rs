//! `kastle consumer-groups`, shaped like Kafka 3.9's `kafka-consumer-groups.sh`
//! (`ConsumerGroupCommand`): `--list [--state]`, `--describe` (`--offsets`, the default, with
//! LAG; `--members [--verbose]`; `--state`), `--reset-offsets` (`--to-earliest`, `--to-latest`,
//! `--to-current`, `--to-offset`, `--shift-by`, `--to-datetime`, `--by-duration`; `--dry-run`
//! or `--execute`; only for an inactive group) and `--delete`. Formatting lives in
//! `groups_format`, the reset plan in `groups_reset`; this module checks the options and does
//! the other requests.
//!
//! Where Kafka's tool prints an error and still exits 0 (a group that does not exist, a reset
//! of an active group, a failed delete), kastle prints the same message and exits 1.

use std::collections::{BTreeMap, HashMap};

use bytes::Buf;
use clap::Args;
use kafka_protocol::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    BrokerId, DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, ListOffsetsRequest, OffsetFetchRequest,
};
use kafka_protocol::protocol::Decodable;

use super::client::{topic_name, Admin};
use super::groups_format::{self as fmt, MemberRow, OffsetRow, Partition, StateRow, MISSING};
use super::topics::topics_of;
use super::{fail, java_exception, require_bootstrap, CliError, CliResult};
use crate::protocol::error_codes;

/// `kastle consumer-groups`: options as `kafka-consumer-groups.sh` names them.
#[derive(Debug, Args)]
#[command(
    about = "List, describe, reset the offsets of, or delete consumer groups, like kafka-consumer-groups.sh",
    long_about = "This tool helps to list all consumer groups, describe a consumer group, delete \
        consumer group info, or reset consumer group offsets (kafka-consumer-groups.sh)."
)]
pub struct ConsumerGroupsArgs {
    /// REQUIRED: The server(s) to connect to.
    #[arg(long, value_name = "server to connect to")]
    pub bootstrap_server: Option<String>,
    /// List all consumer groups.
    #[arg(long)]
    pub list: bool,
    /// Describe consumer group and list offset lag (number of messages not yet processed)
    /// related to given group.
    #[arg(long)]
    pub describe: bool,
    /// Pass in groups to delete topic partition offsets and ownership information over the
    /// entire consumer group. For instance --group g1 --group g2
    #[arg(long)]
    pub delete: bool,
    /// Reset offsets of consumer group. Supports one consumer group at the time, and instances
    /// should be inactive. --dry-run (the default) plans, --execute updates the offsets. One of
    /// --to-datetime, --by-duration, --to-earliest, --to-latest, --shift-by, --to-current,
    /// --to-offset; the scope --all-topics or --topic.
    #[arg(long)]
    pub reset_offsets: bool,
    /// The consumer group we wish to act on (repeatable).
    #[arg(long, value_name = "consumer group")]
    pub group: Vec<String>,
    /// Apply to all consumer groups.
    #[arg(long)]
    pub all_groups: bool,
    /// The topic whose offsets are reset; partitions as `topic1:0,1,2` (repeatable).
    #[arg(long)]
    pub topic: Vec<String>,
    /// Consider all topics assigned to a group in the reset-offsets process.
    #[arg(long)]
    pub all_topics: bool,
    /// Describe members of the group.
    #[arg(long)]
    pub members: bool,
    /// Provide additional information, if any, when describing the group.
    #[arg(long)]
    pub verbose: bool,
    /// Describe the group and list all topic partitions in the group along with their offset
    /// lag (the default sub-action of --describe).
    #[arg(long)]
    pub offsets: bool,
    /// With --describe, the state of the group; with --list, the state of all groups.
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub state: Option<String>,
    /// Only show results without executing changes on Consumer Groups.
    #[arg(long)]
    pub dry_run: bool,
    /// Execute operation.
    #[arg(long)]
    pub execute: bool,
    /// Reset offsets to a specific offset.
    #[arg(long, allow_negative_numbers = true)]
    pub to_offset: Option<i64>,
    /// Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'
    #[arg(long)]
    pub to_datetime: Option<String>,
    /// Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'
    #[arg(long)]
    pub by_duration: Option<String>,
    /// Reset offsets to earliest offset.
    #[arg(long)]
    pub to_earliest: bool,
    /// Reset offsets to latest offset.
    #[arg(long)]
    pub to_latest: bool,
    /// Reset offsets to current offset.
    #[arg(long)]
    pub to_current: bool,
    /// Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.
    #[arg(long, allow_negative_numbers = true, value_name = "number-of-offsets")]
    pub shift_by: Option<i64>,
    /// The timeout that can be set for some use cases (ms).
    #[arg(long, default_value_t = 5000)]
    pub timeout: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    List,
    Describe,
    Delete,
    Reset,
}

/// The reset specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetTo {
    Offset(i64),
    Earliest,
    Latest,
    Current,
    ShiftBy(i64),
    Timestamp(i64),
}

/// `ConsumerGroupCommandOptions.checkArgs` and the action count of `main`.
pub fn check_args(a: &ConsumerGroupsArgs, now_ms: i64) -> CliResult<(Action, Option<ResetTo>)> {
    let actions = [
        (a.list, Action::List),
        (a.describe, Action::Describe),
        (a.delete, Action::Delete),
        (a.reset_offsets, Action::Reset),
    ];
    let chosen: Vec<Action> = actions.iter().filter(|(on, _)| *on).map(|(_, x)| *x).collect();
    let [action] = chosen[..] else {
        return fail(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, --delete-offsets",
        );
    };
    require_bootstrap(&a.bootstrap_server, "Missing required argument \"[bootstrap-server]\"")?;
    let has_group = !a.group.is_empty() || a.all_groups;
    if !a.group.is_empty() && a.all_groups {
        return fail("Option \"[group]\" can't be used with option \"[all-groups]\"");
    }
    if !a.group.is_empty() && action == Action::List {
        return fail("Option \"[group]\" can't be used with option \"[list]\"");
    }
    if !a.topic.is_empty() && matches!(action, Action::List | Action::Describe) {
        return fail(format!(
            "Option \"[topic]\" can't be used with option \"[{}]\"",
            if action == Action::List { "list" } else { "describe" }
        ));
    }
    if (a.members || a.offsets || a.verbose) && action != Action::Describe {
        return fail("Option members, offsets and verbose are only allowed with --describe");
    }
    match action {
        Action::Describe => {
            if !has_group {
                return fail("Option [describe] takes one of these options: [all-groups], [group]");
            }
            let subs = usize::from(a.members) + usize::from(a.offsets) + usize::from(a.state.is_some());
            if subs > 1 {
                return fail("Option [describe] takes at most one of these options: [members], [offsets], [state]");
            }
            if a.state.as_deref().is_some_and(|s| !s.is_empty()) {
                return fail("Option [describe] does not take a value for [state]");
            }
        }
        Action::Delete => {
            if !has_group {
                return fail("Option [delete] takes one of these options: [all-groups], [group]");
            }
            if !a.topic.is_empty() {
                return fail("The consumer does not support topic-specific offset deletion from a consumer group.");
            }
        }
        Action::Reset => {
            if a.dry_run && a.execute {
                return fail("Option [reset-offsets] only accepts one of [execute] and [dry-run]");
            }
            if !has_group {
                return fail("Option [reset-offsets] takes one of these options: [all-groups], [group]");
            }
        }
        Action::List => {}
    }
    if action != Action::Reset {
        return Ok((action, None));
    }
    let mut specs: Vec<ResetTo> = Vec::new();
    if let Some(o) = a.to_offset {
        specs.push(ResetTo::Offset(o));
    }
    if a.to_earliest {
        specs.push(ResetTo::Earliest);
    }
    if a.to_latest {
        specs.push(ResetTo::Latest);
    }
    if a.to_current {
        specs.push(ResetTo::Current);
    }
    if let Some(n) = a.shift_by {
        specs.push(ResetTo::ShiftBy(n));
    }
    if let Some(d) = &a.to_datetime {
        let ts = fmt::parse_datetime(d)
            .map_err(|e| CliError::Failed(format!("Executing consumer group command failed due to {e}")))?;
        specs.push(ResetTo::Timestamp(ts));
    }
    if let Some(d) = &a.by_duration {
        let ms = fmt::parse_duration(d)
            .map_err(|e| CliError::Failed(format!("Executing consumer group command failed due to {e}")))?;
        specs.push(ResetTo::Timestamp(now_ms - ms));
    }
    match specs.len() {
        1 => {}
        0 => return fail("Option '[reset-offsets]' requires one of the following scenarios: [to-offset], [shift-by], [to-datetime], [by-duration], [to-earliest], [to-latest], [to-current], [from-file]"),
        _ => return fail("Option [reset-offsets] takes at most one reset scenario"),
    }
    if a.topic.is_empty() && !a.all_topics {
        return fail("One of the reset scopes should be defined: --all-topics, --topic.");
    }
    Ok((action, specs.pop()))
}

/// The partitions of a member assignment (the consumer protocol, version-prefixed).
pub fn assigned_partitions(bytes: &bytes::Bytes) -> Vec<(String, i32)> {
    let mut buf = bytes.clone();
    if buf.remaining() < 2 {
        return Vec::new();
    }
    let version = buf.get_i16().clamp(0, 3);
    match ConsumerProtocolAssignment::decode(&mut buf, version) {
        Ok(a) => a
            .assigned_partitions
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), *p)))
            .collect(),
        Err(_) => Vec::new(),
    }
}

pub async fn run(a: &ConsumerGroupsArgs) -> CliResult<()> {
    let now = crate::clock::now_ms();
    let (action, reset) = check_args(a, now)?;
    let mut admin = Admin::connect(a.bootstrap_server.as_deref().unwrap_or_default()).await?;
    if action == Action::List {
        return list(&admin, a).await;
    }
    let groups: Vec<String> = if a.all_groups {
        list_groups(&admin).await?.into_iter().map(|(g, _)| g).collect()
    } else {
        a.group.clone()
    };
    match action {
        Action::Describe => describe(&mut admin, a, &groups).await,
        Action::Delete => delete(&admin, &groups).await,
        Action::Reset => {
            if !a.dry_run && !a.execute {
                eprintln!("WARN: No action will be performed as the --execute option is missing.In a future major release, the default behavior of this command will be to prompt the user before executing the reset rather than doing a dry run. You should add the --dry-run option explicitly if you are scripting this command and want to keep the current default behavior without prompting.");
            }
            let to = reset.ok_or_else(|| CliError::Failed("no reset scenario".into()))?;
            super::groups_reset::reset_offsets(&mut admin, a, &groups, &to).await
        }
        Action::List => Ok(()),
    }
}

/// Consumer groups (protocol type `consumer` or empty) of every broker, with their state.
async fn list_groups(admin: &Admin) -> CliResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for b in &admin.brokers {
        let response = admin.send(b.id, ListGroupsRequest::default(), (0, 4)).await?;
        if response.error_code != error_codes::NONE {
            return fail(java_exception(response.error_code, None));
        }
        for g in &response.groups {
            if g.protocol_type.is_empty() || g.protocol_type.as_str() == "consumer" {
                out.push((g.group_id.0.to_string(), g.group_state.to_string()));
            }
        }
    }
    Ok(out)
}

async fn list(admin: &Admin, a: &ConsumerGroupsArgs) -> CliResult<()> {
    let groups = list_groups(admin).await?;
    match a.state.as_deref() {
        None => groups.iter().for_each(|(g, _)| println!("{g}")),
        Some(filter) => {
            let wanted: Vec<String> = filter
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect();
            let shown: Vec<(String, String)> = groups
                .into_iter()
                .filter(|(_, s)| wanted.is_empty() || wanted.contains(&s.to_ascii_lowercase()))
                .collect();
            print!("{}", fmt::format_list_with_state(&shown));
        }
    }
    Ok(())
}

pub(super) async fn describe_group(admin: &Admin, group: &str) -> CliResult<DescribedGroup> {
    let request = DescribeGroupsRequest::default().with_groups(vec![Admin::group_id(group)]);
    let response = admin
        .send_to_coordinator(group, request, (0, 5), |r| r.groups.first().map_or(0, |g| g.error_code))
        .await?;
    let Some(described) = response.groups.into_iter().next() else {
        return fail(format!("The broker did not describe group {group}"));
    };
    if described.error_code != error_codes::NONE {
        return fail(java_exception(described.error_code, None));
    }
    if !described.protocol_type.is_empty() && described.protocol_type.as_str() != "consumer" {
        return fail(format!("Group {group} is not a consumer group."));
    }
    Ok(described)
}

/// Committed offsets of `group`: partition → offset (`None`: no committed offset).
pub(super) async fn committed(admin: &Admin, group: &str) -> CliResult<Vec<((String, i32), Option<i64>)>> {
    let request = OffsetFetchRequest::default()
        .with_group_id(Admin::group_id(group))
        .with_topics(None);
    let response = admin
        .send_to_coordinator(group, request, (2, 7), |r| r.error_code)
        .await?;
    if response.error_code != error_codes::NONE {
        return fail(java_exception(response.error_code, None));
    }
    Ok(response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    (t.name.0.to_string(), p.partition_index),
                    (p.committed_offset >= 0).then_some(p.committed_offset),
                )
            })
        })
        .collect())
}

/// ListOffsets for `partitions` at `timestamp` (-1 latest, -2 earliest), from each leader;
/// partitions that fail are missing from the answer (`Unknown` in Kafka's tool).
pub(super) async fn list_offsets(
    admin: &mut Admin,
    partitions: &[(String, i32)],
    timestamp: i64,
) -> CliResult<HashMap<(String, i32), i64>> {
    let mut topics: Vec<String> = partitions.iter().map(|(t, _)| t.clone()).collect();
    topics.sort();
    topics.dedup();
    let mut out = HashMap::new();
    if topics.is_empty() {
        return Ok(out);
    }
    let metadata = topics_of(&admin.metadata(Some(topics)).await?);
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    for (t, p) in partitions {
        let leader = metadata
            .iter()
            .find(|x| x.name == *t)
            .and_then(|x| x.partitions.iter().find(|y| y.partition == *p))
            .and_then(|y| y.leader);
        if let Some(l) = leader {
            by_leader.entry(l).or_default().push((t.clone(), *p));
        }
    }
    for (leader, list) in by_leader {
        let mut req_topics: Vec<ListOffsetsTopic> = Vec::new();
        for (t, p) in &list {
            let part = ListOffsetsPartition::default()
                .with_partition_index(*p)
                .with_timestamp(timestamp)
                .with_current_leader_epoch(-1);
            match req_topics.iter_mut().find(|x| x.name.0.as_str() == t) {
                Some(x) => x.partitions.push(part),
                None => req_topics.push(
                    ListOffsetsTopic::default()
                        .with_name(topic_name(t))
                        .with_partitions(vec![part]),
                ),
            }
        }
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(req_topics);
        let response = admin.send(leader, request, (1, 8)).await?;
        for t in &response.topics {
            for p in &t.partitions {
                if p.error_code == error_codes::NONE {
                    out.insert((t.name.0.to_string(), p.partition_index), p.offset);
                }
            }
        }
    }
    Ok(out)
}

async fn describe(admin: &mut Admin, a: &ConsumerGroupsArgs, groups: &[String]) -> CliResult<()> {
    let mut sorted: Vec<String> = groups.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut failed = false;
    for group in &sorted {
        let described = describe_group(admin, group).await?;
        let state = described.group_state.to_string();
        if a.state.is_some() {
            if !print_member_state(group, &state, 1) {
                failed |= state == "Dead";
                continue;
            }
            let coordinator = admin.coordinator(group).await?;
            let node = admin.node(coordinator).cloned();
            let coordinator = match node {
                Some(n) => format!("{}:{}  ({})", n.host, n.port, n.id),
                None => format!(":-1  ({coordinator})"),
            };
            print!(
                "{}",
                fmt::format_state(&StateRow {
                    group: group.clone(),
                    coordinator,
                    assignment_strategy: described.protocol_data.to_string(),
                    state,
                    members: described.members.len(),
                })
            );
            continue;
        }
        if a.members {
            let rows: Vec<MemberRow> = described
                .members
                .iter()
                .map(|m| MemberRow {
                    group: group.clone(),
                    consumer_id: m.member_id.to_string(),
                    host: m.client_host.to_string(),
                    client_id: m.client_id.to_string(),
                    group_instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                    assignment: if a.verbose {
                        fmt::partition_order(assigned_partitions(&m.member_assignment))
                    } else {
                        assigned_partitions(&m.member_assignment)
                    },
                })
                .collect();
            let printable = print_member_state(group, &state, rows.len());
            failed |= state == "Dead";
            print!("{}", fmt::format_members(&rows, printable, a.verbose));
            continue;
        }
        let committed = committed(admin, group).await?;
        let offset_of: HashMap<(String, i32), Option<i64>> = committed.iter().cloned().collect();
        let mut members: Vec<(String, String, String, Vec<Partition>)> = described
            .members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.client_host.to_string(),
                    m.client_id.to_string(),
                    assigned_partitions(&m.member_assignment),
                )
            })
            .filter(|m| !m.3.is_empty())
            .collect();
        members.sort_by_key(|m| std::cmp::Reverse(m.3.len()));
        let mut rows: Vec<OffsetRow> = Vec::new();
        let mut assigned: Vec<(String, i32)> = Vec::new();
        let mut blocks: Vec<(Option<[String; 3]>, Vec<Partition>)> = Vec::new();
        for (id, host, client, parts) in members {
            assigned.extend(parts.iter().cloned());
            blocks.push((
                Some([id, host, client]),
                fmt::describe_order(fmt::partition_order(parts)),
            ));
        }
        let unassigned: Vec<(String, i32)> = committed
            .iter()
            .map(|(tp, _)| tp.clone())
            .filter(|tp| !assigned.contains(tp))
            .collect();
        if !unassigned.is_empty() {
            blocks.push((None, fmt::describe_order(fmt::partition_order(unassigned))));
        }
        let all: Vec<(String, i32)> = blocks.iter().flat_map(|(_, p)| p.iter().cloned()).collect();
        let ends = list_offsets(admin, &all, -1).await?;
        for (member, parts) in blocks {
            for tp in parts {
                let (id, host, client) = match &member {
                    Some([i, h, c]) => (i.clone(), h.clone(), c.clone()),
                    None => (MISSING.to_owned(), MISSING.to_owned(), MISSING.to_owned()),
                };
                rows.push(OffsetRow {
                    group: group.clone(),
                    topic: Some(tp.0.clone()),
                    partition: Some(tp.1),
                    offset: offset_of.get(&tp).copied().flatten(),
                    log_end_offset: ends.get(&tp).copied(),
                    consumer_id: Some(id),
                    host: Some(host),
                    client_id: Some(client),
                });
            }
        }
        failed |= state == "Dead";
        if print_member_state(group, &state, rows.len()) {
            print!("{}", fmt::format_offsets(&rows));
        }
    }
    if failed {
        return fail("");
    }
    Ok(())
}

/// `shouldPrintMemberState`: the group's state notes, and whether there is a table to print.
fn print_member_state(group: &str, state: &str, rows: usize) -> bool {
    match state {
        "Dead" => eprintln!("\nError: Consumer group '{group}' does not exist."),
        "Empty" => eprintln!("\nConsumer group '{group}' has no active members."),
        "PreparingRebalance" | "CompletingRebalance" | "Assigning" | "Reconciling" => {
            eprintln!("\nWarning: Consumer group '{group}' is rebalancing.")
        }
        _ => {}
    }
    state != "Dead" && rows > 0
}

async fn delete(admin: &Admin, groups: &[String]) -> CliResult<()> {
    let mut ok: Vec<String> = Vec::new();
    let mut failed: Vec<(String, i16)> = Vec::new();
    for group in groups {
        let request = DeleteGroupsRequest::default().with_groups_names(vec![Admin::group_id(group)]);
        let response = admin
            .send_to_coordinator(group, request, (0, 2), |r| {
                r.results.first().map_or(0, |g| g.error_code)
            })
            .await?;
        match response.results.first().map_or(error_codes::NONE, |r| r.error_code) {
            error_codes::NONE => ok.push(group.clone()),
            code => failed.push((group.clone(), code)),
        }
    }
    if failed.is_empty() {
        println!(
            "Deletion of requested consumer groups ('{}') was successful.",
            ok.join(", ")
        );
        return Ok(());
    }
    println!("\nError: Deletion of some consumer groups failed:");
    for (group, code) in &failed {
        let exception = match *code {
            error_codes::NON_EMPTY_GROUP => {
                "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.".to_owned()
            }
            error_codes::GROUP_ID_NOT_FOUND => {
                "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.".to_owned()
            }
            c => java_exception(c, None),
        };
        println!("* Group '{group}' could not be deleted due to: java.util.concurrent.ExecutionException: {exception}");
    }
    if !ok.is_empty() {
        println!(
            "\nThese consumer groups were deleted successfully: '{}', '",
            ok.join("'")
        );
    }
    fail("")
}

#[cfg(test)]
#[path = "consumer_groups_tests.rs"]
mod tests;
