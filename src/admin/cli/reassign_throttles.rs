//! The replication throttles `kastle reassign-partitions` sets and clears, as Kafka 3.9's
//! `ReassignPartitionsCommand` does (KIP-73). `--execute --throttle N` sets
//! `leader.replication.throttled.rate` and `follower.replication.throttled.rate` = N on every
//! broker a move involves (old and new replicas), and per topic
//! `leader.replication.throttled.replicas` (the replicas each partition has now: the sources)
//! and `follower.replication.throttled.replicas` (the ones it gains: the destinations), both
//! `partition:broker,...`. `--verify` (and `--cancel`), once nothing of the plan is moving and
//! unless `--preserve-throttles`, deletes the broker rates on every live broker and every
//! broker of the plan, and both lists on every topic of the plan: it cannot know which brokers
//! earlier runs throttled. The move map and the config values are pure; the requests
//! (IncrementalAlterConfigs: a broker's configs to that broker, topics' to any) are at the end.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::IncrementalAlterConfigsRequest;

use super::client::{str_bytes, Admin};
use super::configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::reassignment_json::{Assignment, Ongoing, Partition};
use super::{fail, CliResult};
use crate::protocol::error_codes;

pub const BROKER_LEADER_THROTTLE: &str = "leader.replication.throttled.rate";
pub const BROKER_FOLLOWER_THROTTLE: &str = "follower.replication.throttled.rate";
pub const BROKER_LOG_DIR_THROTTLE: &str = "replica.alter.log.dirs.io.max.bytes.per.second";
pub const TOPIC_LEADER_THROTTLE: &str = "leader.replication.throttled.replicas";
pub const TOPIC_FOLLOWER_THROTTLE: &str = "follower.replication.throttled.replicas";

/// Kafka's `youMustRunVerifyPeriodicallyMessage`.
pub const RUN_VERIFY_WARNING: &str =
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.";

/// Kafka's `PartitionMove`: where a partition's data comes from and goes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionMove {
    pub sources: BTreeSet<i32>,
    pub destinations: BTreeSet<i32>,
}

/// Per topic, per partition.
pub type MoveMap = BTreeMap<String, BTreeMap<i32, PartitionMove>>;

/// Kafka's `calculateProposedMoveMap`: the moves in progress (sources: their replicas without
/// the ones being added; destinations: those), then each planned partition's, whose sources
/// are those of its move in progress if any, else its current replicas.
pub fn proposed_move_map(
    ongoing: &BTreeMap<Partition, Ongoing>,
    proposed: &Assignment,
    current: &Assignment,
) -> MoveMap {
    let mut moves = MoveMap::new();
    for ((topic, p), o) in ongoing {
        let sources = o.replicas.iter().filter(|b| !o.adding.contains(b)).copied().collect();
        let destinations = o.adding.iter().copied().collect();
        moves
            .entry(topic.clone())
            .or_default()
            .insert(*p, PartitionMove { sources, destinations });
    }
    for ((topic, p), replicas) in proposed {
        let partitions = moves.entry(topic.clone()).or_default();
        let sources: BTreeSet<i32> = match partitions.get(p) {
            Some(m) => m.sources.clone(),
            None => current
                .get(&(topic.clone(), *p))
                .into_iter()
                .flatten()
                .copied()
                .collect(),
        };
        let destinations = replicas.iter().filter(|b| !sources.contains(b)).copied().collect();
        partitions.insert(*p, PartitionMove { sources, destinations });
    }
    moves
}

/// Kafka's `calculateLeaderThrottles` / `calculateFollowerThrottles`: per topic the
/// `partition:broker` entries of the sources (leader) or destinations (follower), in the
/// order of Kafka's `TreeSet[String]` (as strings), joined by commas.
pub fn topic_throttles(moves: &MoveMap, leader: bool) -> BTreeMap<String, String> {
    moves
        .iter()
        .map(|(topic, partitions)| {
            let entries: BTreeSet<String> = partitions
                .iter()
                .flat_map(|(p, m)| {
                    let brokers: Vec<i32> = if leader {
                        m.sources.iter().copied().collect()
                    } else {
                        m.destinations.difference(&m.sources).copied().collect()
                    };
                    brokers.into_iter().map(move |b| format!("{p}:{b}"))
                })
                .collect();
            (topic.clone(), entries.into_iter().collect::<Vec<_>>().join(","))
        })
        .collect()
}

/// Kafka's `calculateReassigningBrokers`: every source and destination.
pub fn reassigning_brokers(moves: &MoveMap) -> BTreeSet<i32> {
    moves
        .values()
        .flat_map(|ps| ps.values())
        .flat_map(|m| m.sources.iter().chain(&m.destinations).copied())
        .collect()
}

/// What `modifyInterBrokerThrottle` prints.
pub fn throttle_set_text(rate: i64) -> String {
    format!("The inter-broker throttle limit was set to {rate} B/s")
}

/// What `clearAllThrottles` prints, brokers then topics.
pub fn clearing_text(brokers: &BTreeSet<i32>, topics: &BTreeSet<String>) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let brokers_list: Vec<String> = brokers.iter().map(i32::to_string).collect();
    let topics_list: Vec<&str> = topics.iter().map(String::as_str).collect();
    format!(
        "Clearing broker-level throttles on broker{} {}\nClearing topic-level throttles on topic{} {}\n",
        plural(brokers.len()),
        brokers_list.join(","),
        plural(topics.len()),
        topics_list.join(",")
    )
}

fn set(name: &str, value: &str) -> AlterableConfig {
    AlterableConfig::default()
        .with_name(str_bytes(name))
        .with_config_operation(0)
        .with_value(Some(str_bytes(value)))
}

fn delete(name: &str) -> AlterableConfig {
    AlterableConfig::default()
        .with_name(str_bytes(name))
        .with_config_operation(1)
        .with_value(None)
}

fn resource(kind: i8, name: &str, ops: Vec<AlterableConfig>) -> AlterConfigsResource {
    AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(str_bytes(name))
        .with_configs(ops)
}

/// One IncrementalAlterConfigs; the first refused resource fails the command (Kafka's
/// `all().get()`).
async fn alter(admin: &Admin, broker: Option<i32>, resources: Vec<AlterConfigsResource>) -> CliResult<()> {
    if resources.is_empty() {
        return Ok(());
    }
    let request = IncrementalAlterConfigsRequest::default().with_resources(resources);
    let response = match broker {
        Some(id) => admin.send(id, request, (0, 1)).await?,
        None => admin.send_any(request, (0, 1)).await?,
    };
    match response.responses.iter().find(|r| r.error_code != error_codes::NONE) {
        Some(r) => fail(super::java_exception(r.error_code, r.error_message.as_deref())),
        None => Ok(()),
    }
}

/// Kafka's `modifyReassignmentThrottle`: the topics' lists, then the rate on every broker
/// involved; prints the rate set.
pub async fn set_throttles(admin: &Admin, moves: &MoveMap, rate: i64) -> CliResult<()> {
    let leaders = topic_throttles(moves, true);
    let followers = topic_throttles(moves, false);
    let topics: Vec<AlterConfigsResource> = moves
        .keys()
        .map(|t| {
            let ops = [
                (TOPIC_LEADER_THROTTLE, leaders.get(t)),
                (TOPIC_FOLLOWER_THROTTLE, followers.get(t)),
            ]
            .into_iter()
            .filter_map(|(name, value)| value.map(|v| set(name, v)))
            .collect();
            resource(RESOURCE_TOPIC, t, ops)
        })
        .collect();
    alter(admin, None, topics).await?;
    let rate = rate.to_string();
    for broker in reassigning_brokers(moves) {
        let ops = vec![set(BROKER_LEADER_THROTTLE, &rate), set(BROKER_FOLLOWER_THROTTLE, &rate)];
        alter(
            admin,
            Some(broker),
            vec![resource(RESOURCE_BROKER, &broker.to_string(), ops)],
        )
        .await?;
    }
    println!("{}", throttle_set_text(rate.parse().unwrap_or_default()));
    Ok(())
}

/// Kafka's `clearAllThrottles`: the broker rates on every live broker and every broker of the
/// plan, both lists on every topic of the plan.
pub async fn clear_all_throttles(admin: &mut Admin, target: &[(Partition, Vec<i32>)]) -> CliResult<()> {
    admin.refresh().await?;
    let mut brokers: BTreeSet<i32> = admin.brokers.iter().map(|b| b.id).collect();
    brokers.extend(target.iter().flat_map(|(_, r)| r.iter().copied()));
    let topics: BTreeSet<String> = target.iter().map(|((t, _), _)| t.clone()).collect();
    print!("{}", clearing_text(&brokers, &topics));
    for broker in &brokers {
        let ops = [
            BROKER_LEADER_THROTTLE,
            BROKER_FOLLOWER_THROTTLE,
            BROKER_LOG_DIR_THROTTLE,
        ]
        .into_iter()
        .map(delete)
        .collect();
        alter(
            admin,
            Some(*broker),
            vec![resource(RESOURCE_BROKER, &broker.to_string(), ops)],
        )
        .await?;
    }
    let resources = topics
        .iter()
        .map(|t| {
            resource(
                RESOURCE_TOPIC,
                t,
                vec![delete(TOPIC_LEADER_THROTTLE), delete(TOPIC_FOLLOWER_THROTTLE)],
            )
        })
        .collect();
    alter(admin, None, resources).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(entries: &[(&str, i32, &[i32])]) -> Assignment {
        entries
            .iter()
            .map(|(t, p, r)| ((t.to_string(), *p), r.to_vec()))
            .collect()
    }

    #[test]
    fn sources_are_the_current_replicas_and_destinations_the_new_ones() {
        // ReassignPartitionsCommandTest.testMoveMap's shape: the leader list throttles the
        // replicas data comes from, the follower list the ones it goes to.
        let current = assignment(&[("foo", 0, &[1, 2, 3]), ("foo", 1, &[4, 5, 6]), ("bar", 0, &[2, 3])]);
        let proposed = assignment(&[("foo", 0, &[1, 2, 4]), ("foo", 1, &[4, 5, 6]), ("bar", 0, &[3, 4, 5])]);
        let moves = proposed_move_map(&BTreeMap::new(), &proposed, &current);
        assert_eq!(
            topic_throttles(&moves, true),
            [
                ("bar".to_string(), "0:2,0:3".to_string()),
                ("foo".to_string(), "0:1,0:2,0:3,1:4,1:5,1:6".to_string()),
            ]
            .into()
        );
        assert_eq!(
            topic_throttles(&moves, false),
            [
                ("bar".to_string(), "0:4,0:5".to_string()),
                ("foo".to_string(), "0:4".to_string()),
            ]
            .into()
        );
        assert_eq!(reassigning_brokers(&moves), [1, 2, 3, 4, 5, 6].into());
    }

    #[test]
    fn a_move_in_progress_keeps_its_sources() {
        // Resubmitting with --additional: the sources are the replicas before the first move.
        let ongoing: BTreeMap<Partition, Ongoing> = [(
            ("foo".to_string(), 0),
            Ongoing {
                replicas: vec![3, 1, 2],
                adding: vec![3],
                removing: vec![1],
            },
        )]
        .into();
        let current = assignment(&[("foo", 0, &[3, 1, 2])]);
        let proposed = assignment(&[("foo", 0, &[3, 4])]);
        let moves = proposed_move_map(&ongoing, &proposed, &current);
        let m = &moves["foo"][&0];
        assert_eq!(m.sources, [1, 2].into());
        assert_eq!(m.destinations, [3, 4].into());
        assert_eq!(topic_throttles(&moves, false)["foo"], "0:3,0:4");
    }

    #[test]
    fn entries_sort_as_kafkas_string_tree_set() {
        let current = assignment(&[("t", 2, &[1]), ("t", 10, &[1])]);
        let proposed = assignment(&[("t", 2, &[1, 2]), ("t", 10, &[1, 2])]);
        let moves = proposed_move_map(&BTreeMap::new(), &proposed, &current);
        assert_eq!(topic_throttles(&moves, true)["t"], "10:1,2:1");
    }

    #[test]
    fn the_texts_are_kafkas() {
        assert_eq!(
            throttle_set_text(5_000_000),
            "The inter-broker throttle limit was set to 5000000 B/s"
        );
        assert_eq!(
            clearing_text(&[1].into(), &["a".to_string()].into()),
            "Clearing broker-level throttles on broker 1\nClearing topic-level throttles on topic a\n"
        );
        assert_eq!(
            clearing_text(&[1, 2, 3].into(), &["a".to_string(), "b".to_string()].into()),
            "Clearing broker-level throttles on brokers 1,2,3\nClearing topic-level throttles on topics a,b\n"
        );
    }
}
