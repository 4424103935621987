//! The iteration order of Java's `HashMap`/`HashSet`, so the operator tools print rows in the
//! order Kafka's tools print them: `kafka-topics.sh` lists the `Configs:` of a topic (and the
//! topics of a describe) in `HashMap` order, `kafka-consumer-groups.sh` its partitions.
//!
//! A `HashMap` iterates its table's buckets in index order and each bucket's entries in
//! insertion order (resizes split buckets without reordering them); the bucket of a key is
//! `(h ^ (h >>> 16)) & (capacity - 1)` of its `hashCode()`. Pure functions, no I/O.

/// `java.lang.String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

/// `org.apache.kafka.common.TopicPartition.hashCode()`.
pub fn topic_partition_hash(topic: &str, partition: i32) -> i32 {
    31i32
        .wrapping_add(partition)
        .wrapping_mul(31)
        .wrapping_add(string_hash(topic))
}

/// The table size of a `HashMap` holding `entries` keys: `new HashMap<>()` (`initial: None`,
/// 16 buckets) or `new HashMap<>(n)` (`Some(n)`), grown by doubling whenever the size exceeds
/// three quarters of the table.
pub fn table_size(initial: Option<usize>, entries: usize) -> usize {
    let mut capacity = match initial {
        None => 16,
        Some(n) => n.max(1).next_power_of_two(),
    };
    while entries > capacity * 3 / 4 {
        capacity *= 2;
    }
    capacity
}

fn bucket(hash: i32, capacity: usize) -> usize {
    let h = hash as u32;
    ((h ^ (h >> 16)) as usize) & (capacity - 1)
}

/// `items` (in insertion order, keys distinct) in the order a `HashMap` built by inserting them
/// into `new HashMap<>()` / `new HashMap<>(initial)` iterates them.
pub fn hash_order<T>(items: Vec<T>, initial: Option<usize>, hash: impl Fn(&T) -> i32) -> Vec<T> {
    let capacity = table_size(initial, items.len());
    let mut keyed: Vec<(usize, usize, T)> = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| (bucket(hash(&item), capacity), i, item))
        .collect();
    keyed.sort_by_key(|(b, i, _)| (*b, *i));
    keyed.into_iter().map(|(_, _, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_is_javas() {
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("a"), 97);
        assert_eq!(string_hash("hello"), 99_162_322);
        // Overflows wrap as Java's int arithmetic does.
        assert_eq!(string_hash("retention.ms"), -1_339_220_362);
    }

    #[test]
    fn table_grows_past_three_quarters() {
        assert_eq!(table_size(None, 0), 16);
        assert_eq!(table_size(None, 12), 16);
        assert_eq!(table_size(None, 13), 32);
        assert_eq!(table_size(None, 40), 64);
        assert_eq!(table_size(Some(3), 3), 4);
        assert_eq!(table_size(Some(1), 1), 2);
        assert_eq!(table_size(Some(0), 1), 2);
    }

    #[test]
    fn partitions_of_one_topic_in_hash_set_order() {
        // TopicPartition("t", p).hashCode() = 1077 + 31 p: buckets 5, 4, 3, 2, 1 of 16.
        let order: Vec<i32> = hash_order((0..5).collect(), None, |p| topic_partition_hash("t", *p));
        assert_eq!(order, vec![4, 3, 2, 1, 0]);
        // Entries sharing a bucket keep their insertion order.
        let order = hash_order(vec!["Aa", "BB", "a"], None, |s| string_hash(s));
        assert_eq!(order, vec!["Aa", "BB", "a"]);
    }
}
