//! The records of `__consumer_offsets`, in Kafka's schemas, so that tools reading the topic
//! (`kafka-console-consumer --formatter OffsetsMessageFormatter`, Burrow, kcat with a decoder)
//! understand what kastle writes and kastle understands what Kafka wrote.
//!
//! Keys start with an int16 version: 0 and 1 are `OffsetCommitKey` (group, topic, partition),
//! 2 is `GroupMetadataKey` (group). Values start with their own version: `OffsetCommitValue`
//! v0–v4 (kastle writes v3, or v1 when the commit carries an explicit expiry as Kafka does) and
//! `GroupMetadataValue` v0–v4 (kastle writes v3). v4 of both is the flexible encoding (compact
//! strings and tagged fields), which Kafka 3.9 reads and kastle reads too. A null value is a
//! tombstone. Everything here is pure: bytes in, typed records out, errors for bad input.

use thiserror::Error;

/// A malformed record key or value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    #[error("record ends early")]
    Truncated,
    #[error("unknown {what} version {version}")]
    UnknownVersion { what: &'static str, version: i16 },
    #[error("invalid UTF-8 in a string field")]
    Utf8,
    #[error("negative length for a non-nullable field")]
    NegativeLength,
}

/// What a record key names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum RecordKey {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
}

impl RecordKey {
    pub fn group(&self) -> &str {
        match self {
            RecordKey::Offset { group, .. } | RecordKey::Group { group } => group,
        }
    }
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only set by OffsetCommit v2–v4 requests with a retention time (value v1).
    pub expire_timestamp: Option<i64>,
}

/// One member as stored in the group's metadata record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StoredMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// A group's metadata as stored after each completed rebalance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<StoredMember>,
}

pub fn offset_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
    let mut w = Writer::default();
    w.i16(1);
    w.string(group);
    w.string(topic);
    w.i32(partition);
    w.0
}

pub fn group_key(group: &str) -> Vec<u8> {
    let mut w = Writer::default();
    w.i16(2);
    w.string(group);
    w.0
}

pub fn parse_key(bytes: &[u8]) -> Result<RecordKey, SchemaError> {
    let mut r = Reader::new(bytes, false);
    match r.i16()? {
        0 | 1 => Ok(RecordKey::Offset {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        }),
        2 => Ok(RecordKey::Group { group: r.string()? }),
        version => Err(SchemaError::UnknownVersion { what: "key", version }),
    }
}

pub fn offset_value(v: &OffsetValue) -> Vec<u8> {
    let mut w = Writer::default();
    match v.expire_timestamp {
        Some(expire) => {
            w.i16(1);
            w.i64(v.offset);
            w.string(&v.metadata);
            w.i64(v.commit_timestamp);
            w.i64(expire);
        }
        None => {
            w.i16(3);
            w.i64(v.offset);
            w.i32(v.leader_epoch);
            w.string(&v.metadata);
            w.i64(v.commit_timestamp);
        }
    }
    w.0
}

pub fn parse_offset_value(bytes: &[u8]) -> Result<OffsetValue, SchemaError> {
    let version = Reader::new(bytes, false).i16()?;
    if !(0..=4).contains(&version) {
        return Err(SchemaError::UnknownVersion {
            what: "offset commit value",
            version,
        });
    }
    let mut r = Reader::new(&bytes[2..], version >= 4);
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string()?;
    let commit_timestamp = r.i64()?;
    let expire_timestamp = if version == 1 { Some(r.i64()?) } else { None };
    r.tagged_fields()?;
    Ok(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp: expire_timestamp.filter(|t| *t >= 0),
    })
}

pub fn group_value(v: &GroupValue) -> Vec<u8> {
    let mut w = Writer::default();
    w.i16(3);
    w.string(&v.protocol_type);
    w.i32(v.generation);
    w.nullable_string(v.protocol.as_deref());
    w.nullable_string(v.leader.as_deref());
    w.i64(v.current_state_timestamp);
    w.i32(v.members.len() as i32);
    for m in &v.members {
        w.string(&m.member_id);
        w.nullable_string(m.group_instance_id.as_deref());
        w.string(&m.client_id);
        w.string(&m.client_host);
        w.i32(m.rebalance_timeout_ms);
        w.i32(m.session_timeout_ms);
        w.bytes(&m.subscription);
        w.bytes(&m.assignment);
    }
    w.0
}

pub fn parse_group_value(bytes: &[u8]) -> Result<GroupValue, SchemaError> {
    let version = Reader::new(bytes, false).i16()?;
    if !(0..=4).contains(&version) {
        return Err(SchemaError::UnknownVersion {
            what: "group metadata value",
            version,
        });
    }
    let mut r = Reader::new(&bytes[2..], version >= 4);
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable_string()?;
    let leader = r.nullable_string()?;
    let current_state_timestamp = if version >= 2 { r.i64()? } else { -1 };
    let count = r.array_len()?;
    let mut members = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let member_id = r.string()?;
        let group_instance_id = if version >= 3 { r.nullable_string()? } else { None };
        let client_id = r.string()?;
        let client_host = r.string()?;
        let rebalance_timeout_ms = if version >= 1 { r.i32()? } else { -1 };
        let session_timeout_ms = r.i32()?;
        let subscription = r.bytes()?;
        let assignment = r.bytes()?;
        r.tagged_fields()?;
        members.push(StoredMember {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    r.tagged_fields()?;
    Ok(GroupValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

/// The topics a `consumer` protocol member subscribed to (`ConsumerProtocolSubscription`: int16
/// version, then an array of topic names), for OffsetDelete. Unknown layouts give `None`.
pub fn subscribed_topics(subscription: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader::new(subscription, false);
    let _version = r.i16().ok()?;
    let count = r.array_len().ok()?;
    (0..count).map(|_| r.string().ok()).collect()
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) {
        self.0.extend(v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend(v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend(v.to_be_bytes());
    }
    fn string(&mut self, s: &str) {
        self.i16(s.len().min(i16::MAX as usize) as i16);
        self.0.extend(&s.as_bytes()[..s.len().min(i16::MAX as usize)]);
    }
    fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None => self.i16(-1),
        }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.i32(b.len() as i32);
        self.0.extend(b);
    }
}

/// A bounds-checked cursor; `flexible` switches to compact lengths and tagged fields (v4).
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    flexible: bool,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], flexible: bool) -> Self {
        Reader { buf, pos: 0, flexible }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], SchemaError> {
        let end = self.pos.checked_add(n).ok_or(SchemaError::Truncated)?;
        let out = self.buf.get(self.pos..end).ok_or(SchemaError::Truncated)?;
        self.pos = end;
        Ok(out)
    }
    fn i16(&mut self) -> Result<i16, SchemaError> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().map_err(|_| SchemaError::Truncated)?,
        ))
    }
    fn i32(&mut self) -> Result<i32, SchemaError> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().map_err(|_| SchemaError::Truncated)?,
        ))
    }
    fn i64(&mut self) -> Result<i64, SchemaError> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().map_err(|_| SchemaError::Truncated)?,
        ))
    }
    fn uvarint(&mut self) -> Result<u64, SchemaError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(SchemaError::Truncated)
    }
    /// A length: int16/int32 (-1 = null) or, flexible, uvarint of length + 1 (0 = null).
    fn len(&mut self, wide: bool) -> Result<Option<usize>, SchemaError> {
        let n: i64 = if self.flexible {
            self.uvarint()? as i64 - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        Ok((n >= 0).then_some(n as usize))
    }
    fn nullable_string(&mut self) -> Result<Option<String>, SchemaError> {
        match self.len(false)? {
            None => Ok(None),
            Some(n) => Ok(Some(
                String::from_utf8(self.take(n)?.to_vec()).map_err(|_| SchemaError::Utf8)?,
            )),
        }
    }
    fn string(&mut self) -> Result<String, SchemaError> {
        self.nullable_string()?.ok_or(SchemaError::NegativeLength)
    }
    fn bytes(&mut self) -> Result<Vec<u8>, SchemaError> {
        let n = self.len(true)?.ok_or(SchemaError::NegativeLength)?;
        Ok(self.take(n)?.to_vec())
    }
    fn array_len(&mut self) -> Result<usize, SchemaError> {
        self.len(true)?.ok_or(SchemaError::NegativeLength)
    }
    fn tagged_fields(&mut self) -> Result<(), SchemaError> {
        if !self.flexible {
            return Ok(());
        }
        for _ in 0..self.uvarint()? {
            let _tag = self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_match_kafkas_bytes() {
        let key = offset_key("g", "t", 3);
        assert_eq!(key, [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]);
        assert_eq!(
            parse_key(&key),
            Ok(RecordKey::Offset {
                group: "g".into(),
                topic: "t".into(),
                partition: 3
            })
        );
        assert_eq!(group_key("grp"), [0, 2, 0, 3, b'g', b'r', b'p']);
        assert_eq!(
            parse_key(&group_key("grp")),
            Ok(RecordKey::Group { group: "grp".into() })
        );
        assert_eq!(
            parse_key(&[0, 9]),
            Err(SchemaError::UnknownVersion {
                what: "key",
                version: 9
            })
        );
        assert_eq!(parse_key(&[0, 1, 0, 5, b'a']), Err(SchemaError::Truncated));
    }

    #[test]
    fn offset_values_round_trip_in_v3_and_v1() {
        let v = OffsetValue {
            offset: 42,
            leader_epoch: 7,
            metadata: "m".into(),
            commit_timestamp: 1_000,
            expire_timestamp: None,
        };
        let bytes = offset_value(&v);
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(parse_offset_value(&bytes), Ok(v.clone()));
        let with_expiry = OffsetValue {
            expire_timestamp: Some(5_000),
            leader_epoch: -1,
            ..v
        };
        let bytes = offset_value(&with_expiry);
        assert_eq!(&bytes[..2], &[0, 1]);
        assert_eq!(parse_offset_value(&bytes), Ok(with_expiry));
    }

    #[test]
    fn flexible_v4_offset_values_are_read() {
        // v4: offset, leaderEpoch, compact string "ab" (len+1 = 3), commitTimestamp, no tags.
        let mut b = vec![0, 4];
        b.extend(9i64.to_be_bytes());
        b.extend(2i32.to_be_bytes());
        b.extend([3, b'a', b'b']);
        b.extend(77i64.to_be_bytes());
        b.push(0);
        let v = parse_offset_value(&b).expect("v4");
        assert_eq!(
            (v.offset, v.leader_epoch, v.metadata.as_str(), v.commit_timestamp),
            (9, 2, "ab", 77)
        );
    }

    #[test]
    fn group_values_round_trip_and_old_versions_parse() {
        let v = GroupValue {
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 123,
            members: vec![StoredMember {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 10_000,
                subscription: vec![1, 2],
                assignment: vec![3],
            }],
        };
        assert_eq!(parse_group_value(&group_value(&v)), Ok(v));
        // v0: no rebalance timeout, no timestamp, no instance id; an empty group.
        let mut b = vec![0, 0, 0, 8];
        b.extend(b"consumer");
        b.extend(0i32.to_be_bytes());
        b.extend([0xff, 0xff, 0xff, 0xff]); // null protocol, null leader
        b.extend(0i32.to_be_bytes());
        let old = parse_group_value(&b).expect("v0");
        assert_eq!((old.generation, old.protocol, old.members.len()), (0, None, 0));
        assert_eq!(old.current_state_timestamp, -1);
    }

    #[test]
    fn consumer_subscriptions_name_their_topics() {
        let mut b = vec![0, 1, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c'];
        b.extend([0xff, 0xff, 0xff, 0xff]);
        assert_eq!(subscribed_topics(&b), Some(vec!["a".to_string(), "bc".to_string()]));
        assert_eq!(subscribed_topics(&[0]), None);
    }
}
