//! The topic filter of Kafka's tools (`TopicFilter.IncludeList`): the `--topic` value with
//! commas read as `|`, spaces and surrounding quotes dropped, matched against the whole name.
//! The regular expressions understood are literals, `.`, `\` escapes, the `*`, `+` and `?`
//! quantifiers and `|` alternation, which covers what operators type (`"test\.topic"`,
//! `orders-.*`, `a,b`).

/// Kafka's internal topics (`Topic.isInternal`).
pub fn is_internal(topic: &str) -> bool {
    topic == "__consumer_offsets" || topic == "__transaction_state"
}

#[derive(Debug, Clone, PartialEq)]
enum Atom {
    Any,
    Char(char),
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    One(Atom),
    Star(Atom),
    Plus(Atom),
    Optional(Atom),
}

/// A compiled `--topic` filter.
#[derive(Debug, Clone, PartialEq)]
pub struct IncludeList {
    alternatives: Vec<Vec<Piece>>,
}

impl IncludeList {
    pub fn new(raw: &str) -> IncludeList {
        let regex: String = raw.trim().replace(',', "|").replace(' ', "");
        let regex = regex.trim_start_matches(['"', '\'']).trim_end_matches(['"', '\'']);
        let mut alternatives = vec![Vec::new()];
        let mut chars = regex.chars().peekable();
        while let Some(c) = chars.next() {
            let atom = match c {
                '|' => {
                    alternatives.push(Vec::new());
                    continue;
                }
                '.' => Atom::Any,
                '\\' => Atom::Char(chars.next().unwrap_or('\\')),
                c => Atom::Char(c),
            };
            let piece = match chars.peek() {
                Some('*') => Piece::Star(atom),
                Some('+') => Piece::Plus(atom),
                Some('?') => Piece::Optional(atom),
                _ => Piece::One(atom),
            };
            if !matches!(piece, Piece::One(_)) {
                chars.next();
            }
            if let Some(last) = alternatives.last_mut() {
                last.push(piece);
            }
        }
        IncludeList { alternatives }
    }

    /// `isTopicAllowed`: the whole name matches, and it is not an excluded internal topic.
    pub fn allows(&self, topic: &str, exclude_internal: bool) -> bool {
        let name: Vec<char> = topic.chars().collect();
        self.alternatives.iter().any(|alt| matches(alt, &name)) && !(exclude_internal && is_internal(topic))
    }
}

fn atom_matches(atom: &Atom, c: char) -> bool {
    match atom {
        Atom::Any => true,
        Atom::Char(x) => *x == c,
    }
}

fn matches(pieces: &[Piece], name: &[char]) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return name.is_empty();
    };
    match first {
        Piece::One(a) => name.first().is_some_and(|c| atom_matches(a, *c)) && matches(rest, &name[1..]),
        Piece::Optional(a) => {
            matches(rest, name) || (name.first().is_some_and(|c| atom_matches(a, *c)) && matches(rest, &name[1..]))
        }
        Piece::Star(a) | Piece::Plus(a) => {
            let min = usize::from(matches!(first, Piece::Plus(_)));
            let run = name.iter().take_while(|c| atom_matches(a, **c)).count();
            (min..=run).rev().any(|n| matches(rest, &name[n..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_as_kafkas_include_list() {
        let exact = IncludeList::new("orders");
        assert!(exact.allows("orders", false));
        assert!(!exact.allows("orders2", false));
        let escaped = IncludeList::new("\"test\\.topic\"");
        assert!(escaped.allows("test.topic", false));
        assert!(!escaped.allows("testxtopic", false));
        let dot = IncludeList::new("test.topic");
        assert!(dot.allows("testxtopic", false));
        let list = IncludeList::new("a, b,c");
        assert!(list.allows("a", false) && list.allows("b", false) && list.allows("c", false));
        assert!(!list.allows("ab", false));
        let wild = IncludeList::new("orders-.*");
        assert!(wild.allows("orders-", false) && wild.allows("orders-eu", false));
        assert!(!wild.allows("order", false));
        let all = IncludeList::new(".*");
        assert!(all.allows("__consumer_offsets", false));
        assert!(!all.allows("__consumer_offsets", true));
        assert!(IncludeList::new("ab+c?").allows("abbb", false));
    }
}
