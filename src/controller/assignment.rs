//! Replica assignment for new topics and added partitions: Kafka's
//! `AdminUtils.assignReplicasToBrokers`, rack-unaware and rack-aware, plus the broker-list
//! preparation of `AdminZkClient.getBrokerMetadatas` (sort by id, `RackAwareMode`).
//!
//! Pure and deterministic: Kafka's two random draws (start index and first follower shift) are
//! parameters, so the caller owns the randomness and tests can pin it. This module must not read
//! ZooKeeper or the metadata cache; the caller passes the brokers to place replicas on.
//!
//! Goals, as Kafka states them: spread replicas evenly over brokers; spread the followers of a
//! broker's partitions over the other brokers; with racks, put a partition's replicas in
//! distinct racks while racks without a replica remain.

use std::collections::{BTreeMap, HashSet};

use crate::types::BrokerId;

/// A broker that can host replicas, with its `broker.rack` if set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerMetadata {
    pub id: BrokerId,
    pub rack: Option<String>,
}

/// Kafka's `RackAwareMode`: what to do with rack information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RackAwareMode {
    /// Use racks; refuse if some brokers have one and others do not. Kafka's default, and what
    /// CreateTopics and auto topic creation get.
    Enforced,
    /// Use racks if every broker has one, otherwise silently ignore them.
    Safe,
    /// Ignore racks (`--disable-rack-aware`).
    Disabled,
}

/// Where the round-robin starts. Kafka draws `index` and `shift` independently and uniformly
/// from `0..brokers` (`RAND.nextInt`); its `fixedStartIndex` sets both to the same value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlacementStart {
    /// Position in the (rack-alternated) broker list of partition 0's leader.
    pub index: usize,
    /// Initial `nextReplicaShift`: offset of the first follower from the leader, minus one.
    pub shift: usize,
    /// First partition id to assign: 0 for a new topic, the current partition count when adding
    /// partitions (Kafka's `startPartitionId`), so the pattern continues where it left off.
    pub first_partition: i32,
}

impl PlacementStart {
    /// Kafka's `fixedStartIndex`: index and shift both `index`, starting at partition 0.
    pub fn fixed(index: usize) -> Self {
        PlacementStart {
            index,
            shift: index,
            first_partition: 0,
        }
    }
}

/// Why no assignment could be made. Kafka maps the first two to INVALID_PARTITIONS (37) and
/// INVALID_REPLICATION_FACTOR (38); the third is an `AdminOperationException`, which CreateTopics
/// reports as UNKNOWN_SERVER_ERROR (-1) with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignmentError {
    /// Also returned when the last partition id would not fit in an `i32`.
    #[error("Number of partitions must be larger than 0 and end within i32 partition ids (got {partitions}).")]
    InvalidPartitions { partitions: i32 },
    #[error("Replication factor: {rf} must be larger than 0 and no larger than available brokers: {brokers}.")]
    InvalidReplicationFactor { rf: i32, brokers: usize },
    #[error(
        "Not all brokers have rack information for replica rack aware assignment \
         (brokers without a rack: {without_rack:?}); disable rack awareness to assign without racks."
    )]
    PartialRackInfo { without_rack: Vec<BrokerId> },
}

/// Assigns `replication_factor` replicas to each of `partitions` partitions, numbered from
/// `start.first_partition`. Each list's head is the preferred leader.
///
/// Brokers are sorted by id and deduplicated first (as `getBrokerMetadatas` hands them to Kafka),
/// so the result does not depend on the order of `brokers`. Rack-aware placement is used when
/// every broker has a rack and `mode` is not Disabled.
pub fn assign_replicas_to_brokers(
    brokers: &[BrokerMetadata],
    partitions: i32,
    replication_factor: i32,
    mode: RackAwareMode,
    start: PlacementStart,
) -> Result<BTreeMap<i32, Vec<BrokerId>>, AssignmentError> {
    let mut brokers: Vec<&BrokerMetadata> = brokers.iter().collect();
    brokers.sort_by_key(|b| b.id);
    brokers.dedup_by_key(|b| b.id);

    let first_partition = start.first_partition.max(0);
    if partitions <= 0 || first_partition.checked_add(partitions - 1).is_none() {
        return Err(AssignmentError::InvalidPartitions { partitions });
    }
    let rf = usize::try_from(replication_factor).unwrap_or(0);
    if rf == 0 || rf > brokers.len() {
        return Err(AssignmentError::InvalidReplicationFactor {
            rf: replication_factor,
            brokers: brokers.len(),
        });
    }

    let without_rack: Vec<BrokerId> = brokers.iter().filter(|b| b.rack.is_none()).map(|b| b.id).collect();
    let use_racks = match mode {
        RackAwareMode::Disabled => false,
        _ if without_rack.is_empty() => true,
        _ if without_rack.len() == brokers.len() => false,
        RackAwareMode::Safe => false,
        RackAwareMode::Enforced => return Err(AssignmentError::PartialRackInfo { without_rack }),
    };

    let ids = partition_ids(first_partition, partitions);
    if use_racks {
        let racks: Vec<(BrokerId, &str)> = brokers
            .iter()
            .filter_map(|b| b.rack.as_deref().map(|rack| (b.id, rack)))
            .collect();
        Ok(assign_rack_aware(&racks, ids, rf, start))
    } else {
        let list: Vec<BrokerId> = brokers.iter().map(|b| b.id).collect();
        Ok(assign_rack_unaware(&list, ids, rf, start))
    }
}

fn partition_ids(first: i32, count: i32) -> impl Iterator<Item = i32> {
    (0..count).map(move |i| first + i)
}

/// Kafka's `replicaIndex`: the follower `replica` positions after the leader, with the shift
/// spreading followers of consecutive rounds over different brokers. Never lands on the leader.
fn replica_index(first_replica_index: usize, shift: usize, replica: usize, n_brokers: usize) -> usize {
    let offset = 1 + (shift + replica) % (n_brokers - 1);
    (first_replica_index + offset) % n_brokers
}

/// The shift only ever matters modulo `n - 1` (see [`replica_index`]); keeping it reduced
/// avoids overflow for any caller-supplied value without changing the result.
fn reduce_shift(shift: usize, n_brokers: usize) -> usize {
    if n_brokers > 1 {
        shift % (n_brokers - 1)
    } else {
        0
    }
}

fn assign_rack_unaware(
    brokers: &[BrokerId],
    ids: impl Iterator<Item = i32>,
    rf: usize,
    start: PlacementStart,
) -> BTreeMap<i32, Vec<BrokerId>> {
    let n = brokers.len();
    let start_index = start.index % n;
    let mut shift = reduce_shift(start.shift, n);
    let mut out = BTreeMap::new();
    for partition in ids {
        let p = partition as usize;
        // A new round over the broker list: shift followers so rounds differ.
        if p > 0 && p % n == 0 {
            shift = reduce_shift(shift + 1, n);
        }
        let first = (p + start_index) % n;
        let mut replicas = Vec::with_capacity(rf);
        replicas.push(brokers[first]);
        replicas.extend((0..rf - 1).map(|j| brokers[replica_index(first, shift, j, n)]));
        out.insert(partition, replicas);
    }
    out
}

/// Kafka's `getRackAlternatedBrokerList`: racks in name order, brokers in id order within a rack,
/// taken one per rack in turn (rack1: 0,1,2; rack2: 3,4,5 → 0,3,1,4,2,5).
fn rack_alternated_broker_list(brokers: &[(BrokerId, &str)]) -> Vec<BrokerId> {
    let mut by_rack: BTreeMap<&str, Vec<BrokerId>> = BTreeMap::new();
    for (id, rack) in brokers {
        by_rack.entry(rack).or_default().push(*id);
    }
    let mut per_rack: Vec<std::vec::IntoIter<BrokerId>> = by_rack
        .into_values()
        .map(|mut ids| {
            ids.sort();
            ids.into_iter()
        })
        .collect();
    let mut out = Vec::with_capacity(brokers.len());
    while out.len() < brokers.len() {
        for rack in per_rack.iter_mut() {
            out.extend(rack.next());
        }
    }
    out
}

fn assign_rack_aware(
    brokers: &[(BrokerId, &str)],
    ids: impl Iterator<Item = i32>,
    rf: usize,
    start: PlacementStart,
) -> BTreeMap<i32, Vec<BrokerId>> {
    let rack_of: BTreeMap<BrokerId, &str> = brokers.iter().copied().collect();
    let num_racks = rack_of.values().collect::<HashSet<_>>().len();
    let arranged = rack_alternated_broker_list(brokers);
    let n = arranged.len();
    let start_index = start.index % n;
    let mut shift = reduce_shift(start.shift, n);
    let mut out = BTreeMap::new();
    for partition in ids {
        let p = partition as usize;
        if p > 0 && p % n == 0 {
            shift = reduce_shift(shift + 1, n);
        }
        let first = (p + start_index) % n;
        let leader = arranged[first];
        let mut replicas = vec![leader];
        let mut racks_used: HashSet<&str> = HashSet::from([rack_of[&leader]]);
        let mut brokers_used: HashSet<BrokerId> = HashSet::from([leader]);
        // `k` keeps advancing across followers of one partition, as in Kafka. Termination: any
        // n-1 consecutive `k` visit every broker but the leader, and while fewer than rf <= n
        // replicas are placed an acceptable broker exists (one in an unused rack if any rack is
        // unused, else any unused broker).
        let mut k = 0;
        while replicas.len() < rf {
            let broker = arranged[replica_index(first, shift * num_racks, k, n)];
            let rack = rack_of[&broker];
            // Skip a broker whose rack already has a replica while some rack has none, and a
            // broker that already has a replica while some broker has none.
            if (!racks_used.contains(rack) || racks_used.len() == num_racks)
                && (!brokers_used.contains(&broker) || brokers_used.len() == n)
            {
                replicas.push(broker);
                racks_used.insert(rack);
                brokers_used.insert(broker);
            }
            k += 1;
        }
        out.insert(partition, replicas);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rack name → broker ids on it.
    type Racks = &'static [(&'static str, &'static [i32])];

    fn unracked(ids: &[i32]) -> Vec<BrokerMetadata> {
        ids.iter()
            .map(|&id| BrokerMetadata {
                id: BrokerId(id),
                rack: None,
            })
            .collect()
    }

    fn racked(racks: Racks) -> Vec<BrokerMetadata> {
        let per_broker = racks
            .iter()
            .flat_map(|(rack, ids)| ids.iter().map(move |&id| (id, *rack)));
        per_broker
            .map(|(id, rack)| BrokerMetadata {
                id: BrokerId(id),
                rack: Some(rack.to_string()),
            })
            .collect()
    }

    fn lists(expected: &[&[i32]]) -> BTreeMap<i32, Vec<BrokerId>> {
        (0..)
            .zip(expected.iter().map(|l| l.iter().copied().map(BrokerId).collect()))
            .collect()
    }

    fn assign(brokers: &[BrokerMetadata], p: i32, rf: i32, start: PlacementStart) -> BTreeMap<i32, Vec<BrokerId>> {
        match assign_replicas_to_brokers(brokers, p, rf, RackAwareMode::Enforced, start) {
            Ok(a) => a,
            Err(e) => panic!("assignment failed: {e}"),
        }
    }

    /// AdminUtilsTest.testReplicaAssignment: 5 brokers, 10 partitions, RF 3, fixedStartIndex 0.
    /// Matches the table in AdminUtils' javadoc (the shift grows by one after 5 partitions).
    #[test]
    fn rack_unaware_assignment_reproduces_kafkas_five_broker_example() {
        let want = lists(&[
            &[0, 1, 2],
            &[1, 2, 3],
            &[2, 3, 4],
            &[3, 4, 0],
            &[4, 0, 1],
            &[0, 2, 3],
            &[1, 3, 4],
            &[2, 4, 0],
            &[3, 0, 1],
            &[4, 1, 2],
        ]);
        assert_eq!(
            assign(&unracked(&[0, 1, 2, 3, 4]), 10, 3, PlacementStart::fixed(0)),
            want
        );
        // Broker order in the input does not matter: Kafka sorts by id first.
        assert_eq!(
            assign(&unracked(&[3, 0, 4, 2, 1]), 10, 3, PlacementStart::fixed(0)),
            want
        );
    }

    /// AdminUtils javadoc: brokers 0,5 on rack1, 3,4 on rack2, 1,2 on rack3 alternate as
    /// 0,3,1,5,4,2; partition 6 starts a new round with shifted followers (0,4,2, not 0,3,1).
    #[test]
    fn rack_aware_assignment_reproduces_kafkas_javadoc_example() {
        let brokers = racked(&[("rack1", &[0, 5]), ("rack3", &[1, 2]), ("rack2", &[3, 4])]);
        let want = lists(&[
            &[0, 3, 1],
            &[3, 1, 5],
            &[1, 5, 4],
            &[5, 4, 2],
            &[4, 2, 0],
            &[2, 0, 3],
            &[0, 4, 2],
        ]);
        assert_eq!(assign(&brokers, 7, 3, PlacementStart::fixed(0)), want);
    }

    /// getRackAlternatedBrokerList javadoc examples: racks by name, brokers by id within a rack.
    #[test]
    fn rack_alternated_list_takes_one_broker_per_rack_in_turn() {
        let cases: &[(Racks, &[i32])] = &[
            (
                &[("r1", &[2, 0, 1]), ("r3", &[8, 6, 7]), ("r2", &[3, 4, 5])],
                &[0, 3, 6, 1, 4, 7, 2, 5, 8],
            ),
            (
                &[("rack1", &[0, 5]), ("rack3", &[1, 2]), ("rack2", &[3, 4])],
                &[0, 3, 1, 5, 4, 2],
            ),
            (&[("b", &[9, 2, 3]), ("a", &[1])], &[1, 2, 3, 9]),
        ];
        for (racks, want) in cases {
            let brokers = racked(racks);
            let pairs: Vec<(BrokerId, &str)> = brokers
                .iter()
                .filter_map(|b| Some((b.id, b.rack.as_deref()?)))
                .collect();
            let want: Vec<BrokerId> = want.iter().copied().map(BrokerId).collect();
            assert_eq!(rack_alternated_broker_list(&pairs), want, "{racks:?}");
        }
    }

    /// Kafka's first two goals, over many shapes and random-draw values: distinct replicas, and
    /// leaders and replicas spread evenly (exactly, since partitions are whole rounds).
    #[test]
    fn every_partition_gets_rf_distinct_brokers_and_leaders_spread_evenly() {
        for n in 1..=7 {
            let ids: Vec<i32> = (0..n).map(|i| i * 10 + 1).collect();
            for rf in 1..=n {
                for (index, shift) in [(0, 0), (1, 3), (n as usize - 1, 0), (4, 9)] {
                    let start = PlacementStart {
                        index,
                        shift,
                        first_partition: 0,
                    };
                    let got = assign(&unracked(&ids), 3 * n, rf, start);
                    assert_eq!(got.len(), 3 * n as usize);
                    let mut leaders: BTreeMap<BrokerId, usize> = BTreeMap::new();
                    let mut replicas: BTreeMap<BrokerId, usize> = BTreeMap::new();
                    for list in got.values() {
                        let distinct: HashSet<_> = list.iter().collect();
                        assert_eq!(
                            (list.len(), distinct.len()),
                            (rf as usize, rf as usize),
                            "n={n} rf={rf} {list:?}"
                        );
                        *leaders.entry(list[0]).or_default() += 1;
                        for r in list {
                            *replicas.entry(*r).or_default() += 1;
                        }
                    }
                    let ctx = format!("n={n} rf={rf} start={start:?}");
                    assert!(
                        leaders.len() == n as usize && leaders.values().all(|&c| c == 3),
                        "{ctx}: {leaders:?}"
                    );
                    assert!(replicas.values().all(|&c| c == 3 * rf as usize), "{ctx}: {replicas:?}");
                }
            }
        }
    }

    /// Kafka's rack goal: a partition's replicas sit in distinct racks while racks remain, and
    /// every rack gets one when rf >= racks.
    #[test]
    fn rack_aware_assignment_puts_replicas_in_distinct_racks() {
        let layouts: &[Racks] = &[
            &[("a", &[0, 1]), ("b", &[2, 3]), ("c", &[4, 5])],
            &[("a", &[0, 6]), ("b", &[1, 2]), ("c", &[3, 4, 5])],
            &[("x", &[1]), ("y", &[2, 3, 4])],
            &[("only", &[0, 1, 2])],
        ];
        for layout in layouts {
            let brokers = racked(layout);
            let rack_of: BTreeMap<BrokerId, &str> = brokers
                .iter()
                .filter_map(|b| Some((b.id, b.rack.as_deref()?)))
                .collect();
            let n = brokers.len();
            for rf in 1..=n {
                for index in 0..n {
                    let start = PlacementStart {
                        index,
                        shift: (index * 7) % n,
                        first_partition: 0,
                    };
                    for (p, list) in assign(&brokers, 2 * n as i32, rf as i32, start) {
                        let racks: HashSet<&str> = list.iter().map(|b| rack_of[b]).collect();
                        let distinct: HashSet<_> = list.iter().collect();
                        let ctx = format!("{layout:?} rf={rf} {start:?} p{p} {list:?}");
                        assert_eq!(distinct.len(), rf, "{ctx}");
                        assert_eq!(racks.len(), rf.min(layout.len()), "{ctx}");
                    }
                }
            }
        }
    }

    /// startPartitionId (CreatePartitions): the new partitions continue the same pattern.
    #[test]
    fn added_partitions_continue_the_pattern_of_the_original_assignment() {
        let brokers = unracked(&[0, 1, 2, 3, 4]);
        let whole = assign(&brokers, 10, 3, PlacementStart::fixed(0));
        let added = assign(
            &brokers,
            5,
            3,
            PlacementStart {
                first_partition: 5,
                ..PlacementStart::fixed(0)
            },
        );
        let tail: BTreeMap<i32, Vec<BrokerId>> = whole.into_iter().filter(|(p, _)| *p >= 5).collect();
        assert_eq!(added, tail);
    }

    /// AdminUtils' argument checks, in Kafka's order (partitions, then replication factor).
    #[test]
    fn invalid_partition_counts_and_replication_factors_are_refused() {
        use AssignmentError::*;
        // (what, brokers, partitions, rf, error)
        let cases: &[(&str, &[i32], i32, i32, AssignmentError)] = &[
            ("zero partitions", &[0, 1, 2], 0, 1, InvalidPartitions { partitions: 0 }),
            (
                "negative partitions",
                &[0, 1, 2],
                -3,
                9,
                InvalidPartitions { partitions: -3 },
            ),
            (
                "zero rf",
                &[0, 1, 2],
                1,
                0,
                InvalidReplicationFactor { rf: 0, brokers: 3 },
            ),
            (
                "rf above brokers",
                &[0, 1, 2],
                1,
                4,
                InvalidReplicationFactor { rf: 4, brokers: 3 },
            ),
            (
                "duplicates count once",
                &[1, 1, 2],
                1,
                3,
                InvalidReplicationFactor { rf: 3, brokers: 2 },
            ),
            ("no brokers", &[], 1, 1, InvalidReplicationFactor { rf: 1, brokers: 0 }),
        ];
        for (what, brokers, p, rf, want) in cases {
            let got = assign_replicas_to_brokers(
                &unracked(brokers),
                *p,
                *rf,
                RackAwareMode::Enforced,
                PlacementStart::fixed(0),
            );
            assert_eq!(got.err().as_ref(), Some(want), "{what}");
        }
    }

    /// getBrokerMetadatas: partial rack information is an error under Enforced; Safe and Disabled
    /// fall back to exactly the rack-unaware assignment.
    #[test]
    fn partial_rack_information_is_refused_unless_racks_may_be_ignored() {
        let mut partial = racked(&[("a", &[0]), ("b", &[2])]);
        partial.push(BrokerMetadata {
            id: BrokerId(1),
            rack: None,
        });
        let start = PlacementStart::fixed(0);
        let unaware = assign(&unracked(&[0, 1, 2]), 3, 2, start);
        let cases = [
            (
                RackAwareMode::Enforced,
                Err(AssignmentError::PartialRackInfo {
                    without_rack: vec![BrokerId(1)],
                }),
            ),
            (RackAwareMode::Safe, Ok(unaware.clone())),
            (RackAwareMode::Disabled, Ok(unaware)),
        ];
        for (mode, want) in cases {
            assert_eq!(
                assign_replicas_to_brokers(&partial, 3, 2, mode, start),
                want,
                "{mode:?}"
            );
        }
    }

    #[test]
    fn disabled_mode_ignores_complete_rack_information() {
        let brokers = racked(&[("a", &[0, 1]), ("b", &[2, 3])]);
        let start = PlacementStart::fixed(0);
        let got = assign_replicas_to_brokers(&brokers, 4, 2, RackAwareMode::Disabled, start);
        assert_eq!(got.ok(), Some(assign(&unracked(&[0, 1, 2, 3]), 4, 2, start)));
        // Rack-aware would have put partition 0's follower in the other rack.
        assert_eq!(assign(&brokers, 4, 2, start)[&0], vec![BrokerId(0), BrokerId(2)]);
    }
}
