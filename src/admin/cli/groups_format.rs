//! The pure half of `kastle consumer-groups`: rows and tables as Kafka 3.9's
//! `ConsumerGroupCommand` prints them (with the line layout of Kafka's fix #17058: every line
//! begins with a newline and the table ends with one), row order as its `HashMap`s give it, and
//! the `--to-datetime` / `--by-duration` parsing.

use super::java;

/// A topic and a partition number.
pub type Partition = (String, i32);

/// One group's planned offsets: `(topic, partition, new offset)` rows.
pub type GroupReset = (String, Vec<(String, i32, i64)>);

/// `ConsumerGroupCommand.MISSING_COLUMN_VALUE`.
pub const MISSING: &str = "-";

/// One row of `--describe --offsets` (`PartitionAssignmentState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetRow {
    pub group: String,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub log_end_offset: Option<i64>,
    pub consumer_id: Option<String>,
    pub host: Option<String>,
    pub client_id: Option<String>,
}

impl OffsetRow {
    /// `getLag`: only with a committed offset (not -1) and a known log end.
    pub fn lag(&self) -> Option<i64> {
        let offset = self.offset.filter(|o| *o != -1)?;
        Some(self.log_end_offset? - offset)
    }
}

/// One member (`MemberAssignmentState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberRow {
    pub group: String,
    pub consumer_id: String,
    pub host: String,
    pub client_id: String,
    pub group_instance_id: String,
    pub assignment: Vec<(String, i32)>,
}

/// `--describe --state` (`GroupState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRow {
    pub group: String,
    pub coordinator: String,
    pub assignment_strategy: String,
    pub state: String,
    pub members: usize,
}

/// Java's `%-Ns`.
fn pad(s: &str, width: usize) -> String {
    let len = s.encode_utf16().count();
    if len >= width {
        s.to_owned()
    } else {
        format!("{s}{}", " ".repeat(width - len))
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| MISSING.to_owned(), ToString::to_string)
}

/// `printOffsets` for one group's rows.
pub fn format_offsets(rows: &[OffsetRow]) -> String {
    let width =
        |f: &dyn Fn(&OffsetRow) -> String| rows.iter().map(|r| f(r).encode_utf16().count()).fold(15, usize::max);
    let g = width(&|r| r.group.clone());
    let t = width(&|r| opt(&r.topic));
    let c = width(&|r| opt(&r.consumer_id));
    let h = width(&|r| opt(&r.host));
    let line = |cols: [&str; 9]| {
        format!(
            "\n{} {} {} {} {} {} {} {} {}",
            pad(cols[0], g),
            pad(cols[1], t),
            pad(cols[2], 10),
            pad(cols[3], 15),
            pad(cols[4], 15),
            pad(cols[5], 15),
            pad(cols[6], c),
            pad(cols[7], h),
            cols[8]
        )
    };
    let mut out = line([
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for r in rows {
        out.push_str(&line([
            &r.group,
            &opt(&r.topic),
            &opt(&r.partition),
            &opt(&r.offset),
            &opt(&r.log_end_offset),
            &opt(&r.lag()),
            &opt(&r.consumer_id),
            &opt(&r.host),
            &opt(&r.client_id),
        ]));
    }
    out.push('\n');
    out
}

/// `printMembers` for one group (`printable`: shouldPrintMemberState allowed the widths).
pub fn format_members(rows: &[MemberRow], printable: bool, verbose: bool) -> String {
    let (mut g, mut c, mut i, mut h, mut cl) = (15, 15, 17, 15, 15);
    let mut with_instance = false;
    if printable {
        for r in rows {
            g = g.max(r.group.len());
            c = c.max(r.consumer_id.len());
            i = i.max(r.group_instance_id.len());
            h = h.max(r.host.len());
            cl = cl.max(r.client_id.len());
            with_instance |= !r.group_instance_id.is_empty();
        }
    }
    let line = |group: &str, consumer: &str, instance: &str, host: &str, client: &str, n: &str| {
        if with_instance {
            format!(
                "{} {} {} {} {} {} ",
                pad(group, g),
                pad(consumer, c),
                pad(instance, i),
                pad(host, h),
                pad(client, cl),
                pad(n, 15)
            )
        } else {
            format!(
                "{} {} {} {} {} ",
                pad(group, g),
                pad(consumer, c),
                pad(host, h),
                pad(client, cl),
                pad(n, 15)
            )
        }
    };
    let mut out = format!(
        "\n{}",
        line(
            "GROUP",
            "CONSUMER-ID",
            "GROUP-INSTANCE-ID",
            "HOST",
            "CLIENT-ID",
            "#PARTITIONS"
        )
    );
    if verbose {
        out.push_str("ASSIGNMENT");
    }
    out.push('\n');
    for r in rows {
        out.push_str(&line(
            &r.group,
            &r.consumer_id,
            &r.group_instance_id,
            &r.host,
            &r.client_id,
            &r.assignment.len().to_string(),
        ));
        if verbose {
            out.push_str(&assignment_text(&r.assignment));
        }
        out.push('\n');
    }
    out
}

/// The ASSIGNMENT column: per topic `(p,p,...)` with partitions sorted as strings, the topic
/// groups sorted as strings; `-` when empty.
fn assignment_text(assignment: &[(String, i32)]) -> String {
    if assignment.is_empty() {
        return MISSING.to_owned();
    }
    let mut topics: Vec<&str> = assignment.iter().map(|(t, _)| t.as_str()).collect();
    topics.dedup();
    topics.sort_unstable();
    topics.dedup();
    let mut groups: Vec<String> = topics
        .iter()
        .map(|t| {
            let mut ps: Vec<String> = assignment
                .iter()
                .filter(|(x, _)| x == t)
                .map(|(_, p)| p.to_string())
                .collect();
            ps.sort();
            format!("({})", ps.join(","))
        })
        .collect();
    groups.sort();
    groups.join(", ")
}

/// `printStates` for one group.
pub fn format_state(s: &StateRow) -> String {
    let w = s.coordinator.len().max(25);
    let line = |a: &str, b: &str, c: &str, d: &str, e: &str| {
        format!("\n{} {} {} {} {e}", pad(a, w), pad(b, 25), pad(c, 20), pad(d, 15))
    };
    let mut out = line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS");
    out.push_str(&line(
        &s.group,
        &s.coordinator,
        &s.assignment_strategy,
        &s.state,
        &s.members.to_string(),
    ));
    out.push('\n');
    out
}

/// `printOffsetsToReset`: groups in `HashMap<String>` order, each group's partitions in the
/// order given (already the `HashMap<TopicPartition>` order).
pub fn format_reset(groups: &[GroupReset]) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let line =
        |a: &str, b: &str, c: &str, d: &str| format!("\n{} {} {} {}", pad(a, 30), pad(b, 30), pad(c, 10), pad(d, 15));
    let mut out = line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET");
    let ordered = java::hash_order(groups.to_vec(), None, |(g, _)| java::string_hash(g));
    for (group, rows) in &ordered {
        for (t, p, o) in rows {
            out.push_str(&line(group, t, &p.to_string(), &o.to_string()));
        }
    }
    out.push('\n');
    out
}

/// `printGroupInfo` (`--list --state`).
pub fn format_list_with_state(groups: &[(String, String)]) -> String {
    let w = groups.iter().map(|(g, _)| g.len().max(15)).max().unwrap_or(15) + 10;
    let mut out = format!("{} {}\n", pad("GROUP", w), pad("STATE", 20));
    for (g, s) in groups {
        out.push_str(&format!("{} {}\n", pad(g, w), pad(s, 20)));
    }
    out
}

/// Partitions in the order a `HashMap<TopicPartition, _>` of them iterates.
pub fn partition_order(partitions: Vec<(String, i32)>) -> Vec<(String, i32)> {
    java::hash_order(partitions, None, |(t, p)| java::topic_partition_hash(t, *p))
}

/// The rows for one member's (or the unassigned) partitions as `describePartitions` yields
/// them: the set sorted by partition number, then collected into a `HashMap` again.
pub fn describe_order(set_order: Vec<(String, i32)>) -> Vec<(String, i32)> {
    let mut sorted = set_order;
    sorted.sort_by_key(|(_, p)| *p);
    partition_order(sorted)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = (if y >= 0 { y } else { y - 399 }) / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(s: &str, n: usize) -> Option<i64> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
}

/// `Utils.getDateTime`: `yyyy-MM-dd'T'HH:mm:ss.SSS` with an optional zone (`Z`, `+hh`,
/// `+hhmm`, `+hh:mm`; UTC when absent), strictly, to epoch milliseconds.
pub fn parse_datetime(raw: &str) -> Result<i64, String> {
    let bad = || format!("java.text.ParseException: Unparseable date: \"{raw}\"");
    let Some((date, time)) = raw.split_once('T') else {
        return Err(
            "java.text.ParseException: Error parsing timestamp. It does not contain a 'T' according to ISO8601 format"
                .into(),
        );
    };
    let (clock, zone) = match time.find(['Z', '+', '-']) {
        Some(i) => time.split_at(i),
        None => (time, "Z"),
    };
    let d: Vec<&str> = date.split('-').collect();
    let [y, mo, da] = d[..] else { return Err(bad()) };
    let (hms, millis) = clock.split_once('.').ok_or_else(bad)?;
    let t: Vec<&str> = hms.split(':').collect();
    let [h, mi, s] = t[..] else { return Err(bad()) };
    let (y, mo, da) = (
        digits(y, 4).ok_or_else(bad)?,
        digits(mo, 2).ok_or_else(bad)?,
        digits(da, 2).ok_or_else(bad)?,
    );
    let (h, mi, s) = (
        digits(h, 2).ok_or_else(bad)?,
        digits(mi, 2).ok_or_else(bad)?,
        digits(s, 2).ok_or_else(bad)?,
    );
    let ms = digits(millis, 3).ok_or_else(bad)?;
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&mo) || da < 1 || da > month_days[(mo - 1) as usize] || h > 23 || mi > 59 || s > 59 {
        return Err(bad());
    }
    let offset_minutes = match zone {
        "Z" => 0,
        z => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let rest = z[1..].replace(':', "");
            let (zh, zm) = match rest.len() {
                2 => (digits(&rest, 2).ok_or_else(bad)?, 0),
                4 => (
                    digits(&rest[..2], 2).ok_or_else(bad)?,
                    digits(&rest[2..], 2).ok_or_else(bad)?,
                ),
                _ => return Err(bad()),
            };
            sign * (zh * 60 + zm)
        }
    };
    let seconds = days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + s - offset_minutes * 60;
    Ok(seconds * 1000 + ms)
}

/// `java.time.Duration.parse` for `PnDTnHnMn.nS` (days, hours, minutes, seconds), in ms.
pub fn parse_duration(raw: &str) -> Result<i64, String> {
    let bad = || format!("java.time.format.DateTimeParseException: Text cannot be parsed to a Duration: {raw}");
    let upper = raw.to_ascii_uppercase();
    let rest = upper.strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0.0f64;
    if !days.is_empty() {
        let n: f64 = days.strip_suffix('D').ok_or_else(bad)?.parse().map_err(|_| bad())?;
        total += n * 86_400_000.0;
    }
    let mut number = String::new();
    for c in time.chars() {
        let unit = match c {
            'H' => 3_600_000.0,
            'M' => 60_000.0,
            'S' => 1000.0,
            c => {
                number.push(c);
                continue;
            }
        };
        let n: f64 = number.parse().map_err(|_| bad())?;
        total += n * unit;
        number.clear();
    }
    if !number.is_empty() || (days.is_empty() && time.is_empty()) {
        return Err(bad());
    }
    Ok(total as i64)
}

#[cfg(test)]
#[path = "groups_format_tests.rs"]
mod tests;
