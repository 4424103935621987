//! `kastle consumer-groups --reset-offsets`: which partitions, the new offsets as Kafka's
//! `prepareOffsetsToReset` computes them (clamped into the log like `checkOffsetsRange`), and
//! the OffsetCommit that executes the plan; only for a group without members.

use std::collections::HashMap;

use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::OffsetCommitRequest;

use super::client::{str_bytes, topic_name, Admin};
use super::consumer_groups::{committed, describe_group, list_offsets, ConsumerGroupsArgs, ResetTo};
use super::groups_format::{self as fmt, GroupReset};
use super::topics::topics_of;
use super::{fail, java_exception, CliError, CliResult};
use crate::protocol::error_codes;

/// The partitions `--topic` / `--all-topics` select (`getPartitionsToReset`).
async fn partitions_to_reset(admin: &mut Admin, a: &ConsumerGroupsArgs, group: &str) -> CliResult<Vec<(String, i32)>> {
    if a.all_topics {
        return Ok(committed(admin, group).await?.into_iter().map(|(tp, _)| tp).collect());
    }
    let mut out = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    for arg in &a.topic {
        match arg.split_once(':') {
            Some((t, ps)) => {
                for p in ps.split(',') {
                    let n = p.trim().parse::<i32>().map_err(|_| {
                        CliError::Failed(format!("Invalid partition '{p}' specified in topic arg '{arg}''"))
                    })?;
                    out.push((t.to_owned(), n));
                }
            }
            None => whole.push(arg.clone()),
        }
    }
    if !whole.is_empty() {
        let metadata = admin.metadata(Some(whole.clone())).await?;
        for t in &metadata.topics {
            if t.error_code != error_codes::NONE {
                let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
                return fail(format!(
                    "Executing consumer group command failed due to {}",
                    java_exception(
                        t.error_code,
                        Some(&format!("This server does not host this topic-partition: {name}"))
                    )
                ));
            }
        }
        for t in topics_of(&metadata) {
            out.extend(t.partitions.iter().map(|p| (t.name.clone(), p.partition)));
        }
    }
    Ok(out)
}

/// `checkOffsetsRange`: clamps into [log start, log end], warning as Kafka logs.
fn clamp(requested: i64, tp: &(String, i32), start: Option<i64>, end: Option<i64>) -> i64 {
    match (start, end) {
        (_, Some(e)) if requested > e => {
            eprintln!("WARN New offset ({requested}) is higher than latest offset for topic partition {}-{}. Value will be set to {e}", tp.0, tp.1);
            e
        }
        (Some(s), _) if requested < s => {
            eprintln!("WARN New offset ({requested}) is lower than earliest offset for topic partition {}-{}. Value will be set to {s}", tp.0, tp.1);
            s
        }
        _ => requested,
    }
}

async fn prepare(
    admin: &mut Admin,
    group: &str,
    parts: &[(String, i32)],
    to: &ResetTo,
) -> CliResult<Vec<((String, i32), i64)>> {
    let missing = |what: &str, tp: &(String, i32)| {
        CliError::Failed(format!("Error getting {what} of topic partition: {}-{}", tp.0, tp.1))
    };
    let mut out = Vec::new();
    match to {
        ResetTo::Earliest | ResetTo::Latest => {
            let (ts, what) = if *to == ResetTo::Earliest {
                (-2, "starting offset")
            } else {
                (-1, "ending offset")
            };
            let offsets = list_offsets(admin, parts, ts).await?;
            for tp in parts {
                out.push((tp.clone(), *offsets.get(tp).ok_or_else(|| missing(what, tp))?));
            }
        }
        ResetTo::Offset(_) | ResetTo::ShiftBy(_) => {
            let current: HashMap<(String, i32), Option<i64>> = committed(admin, group).await?.into_iter().collect();
            let starts = list_offsets(admin, parts, -2).await?;
            let ends = list_offsets(admin, parts, -1).await?;
            for tp in parts {
                let requested = match to {
                    ResetTo::ShiftBy(n) => match current.get(tp).copied().flatten() {
                        Some(c) => c + n,
                        None => {
                            return fail(format!(
                                "Cannot shift offset for partition {}-{} since there is no current committed offset",
                                tp.0, tp.1
                            ))
                        }
                    },
                    ResetTo::Offset(o) => *o,
                    _ => 0,
                };
                out.push((
                    tp.clone(),
                    clamp(requested, tp, starts.get(tp).copied(), ends.get(tp).copied()),
                ));
            }
        }
        ResetTo::Timestamp(ts) => {
            let by_time = list_offsets(admin, parts, *ts).await?;
            let empty: Vec<(String, i32)> = parts
                .iter()
                .filter(|tp| by_time.get(*tp).is_none_or(|o| *o < 0))
                .cloned()
                .collect();
            for tp in &empty {
                println!(
                    "\nWarn: Partition {} from topic {} is empty. Falling back to latest known offset.",
                    tp.1, tp.0
                );
            }
            let ends = list_offsets(admin, &empty, -1).await?;
            for tp in parts {
                let o = match by_time.get(tp).copied().filter(|o| *o >= 0) {
                    Some(o) => o,
                    None => *ends.get(tp).ok_or_else(|| missing("offset by timestamp", tp))?,
                };
                out.push((tp.clone(), o));
            }
        }
        ResetTo::Current => {
            let current: HashMap<(String, i32), Option<i64>> = committed(admin, group).await?.into_iter().collect();
            let without: Vec<(String, i32)> = parts
                .iter()
                .filter(|tp| current.get(*tp).copied().flatten().is_none())
                .cloned()
                .collect();
            let ends = list_offsets(admin, &without, -1).await?;
            for tp in parts {
                let o = match current.get(tp).copied().flatten() {
                    Some(c) => c,
                    None => *ends.get(tp).ok_or_else(|| missing("ending offset", tp))?,
                };
                out.push((tp.clone(), o));
            }
        }
    }
    Ok(out)
}

pub async fn reset_offsets(
    admin: &mut Admin,
    a: &ConsumerGroupsArgs,
    groups: &[String],
    to: &ResetTo,
) -> CliResult<()> {
    let mut results: Vec<GroupReset> = Vec::new();
    let mut refused = false;
    for group in groups {
        let state = describe_group(admin, group).await?.group_state.to_string();
        if state != "Empty" && state != "Dead" {
            eprintln!("\nError: Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}.");
            refused = true;
            results.push((group.clone(), Vec::new()));
            continue;
        }
        let mut parts = partitions_to_reset(admin, a, group).await?;
        parts.dedup();
        let prepared = prepare(admin, group, &parts, to).await?;
        if a.execute {
            commit(admin, group, &prepared).await?;
        }
        let ordered = fmt::partition_order(parts);
        let map: HashMap<(String, i32), i64> = prepared.into_iter().collect();
        let rows = ordered
            .into_iter()
            .filter_map(|tp| map.get(&tp).map(|o| (tp.0.clone(), tp.1, *o)))
            .collect();
        results.push((group.clone(), rows));
    }
    print!("{}", fmt::format_reset(&results));
    if refused {
        return fail("");
    }
    Ok(())
}

/// `alterConsumerGroupOffsets`: an OffsetCommit outside any generation.
async fn commit(admin: &Admin, group: &str, offsets: &[((String, i32), i64)]) -> CliResult<()> {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for ((t, p), o) in offsets {
        let part = OffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*o)
            .with_committed_leader_epoch(-1)
            .with_committed_metadata(Some(str_bytes("")));
        match topics.iter_mut().find(|x| x.name.0.as_str() == t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(topic_name(t))
                    .with_partitions(vec![part]),
            ),
        }
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(Admin::group_id(group))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(str_bytes(""))
        .with_retention_time_ms(-1)
        .with_topics(topics);
    let response = admin
        .send_to_coordinator(group, request, (2, 8), |r| {
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter())
                .map(|p| p.error_code)
                .find(|c| *c != error_codes::NONE)
                .unwrap_or(error_codes::NONE)
        })
        .await?;
    for t in &response.topics {
        for p in &t.partitions {
            if p.error_code != error_codes::NONE {
                return fail(format!(
                    "Executing consumer group command failed due to {}",
                    java_exception(p.error_code, None)
                ));
            }
        }
    }
    Ok(())
}
