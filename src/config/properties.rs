//! A reader for Java `.properties` text with `java.util.Properties.load` semantics, so an
//! unchanged Kafka `server.properties` loads: `#`/`!` comment lines, `key=value`, `key: value`
//! and `key value`, leading whitespace, trailing-backslash continuation, `\t \n \r \f \\ \uXXXX`
//! escapes (any other `\x` is `x`), last duplicate wins. Pure: text in, pairs out.

/// One `key=value` pair with the 1-based line its logical line starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PropertyLine {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// A malformed `\uXXXX` escape (the only thing Java's loader rejects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PropertiesSyntax {
    pub line: usize,
    pub message: String,
}

/// Parses properties text. Duplicate keys keep only the last value, at the position of that
/// last occurrence (so errors about it point at the line that counts).
pub(crate) fn parse_properties(text: &str) -> Result<Vec<PropertyLine>, PropertiesSyntax> {
    let mut out: Vec<PropertyLine> = Vec::new();
    for (line, logical) in logical_lines(text) {
        let (raw_key, raw_value) = split_key_value(&logical);
        let key = unescape(raw_key, line)?;
        let value = unescape(raw_value, line)?;
        out.retain(|p| p.key != key);
        out.push(PropertyLine { key, value, line });
    }
    Ok(out)
}

const BLANK: [char; 3] = [' ', '\t', '\u{c}'];

/// Joins continuation lines and drops blank and comment lines. Yields (start line, text) where
/// the text keeps its escapes but has leading whitespace (of every joined line) removed.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Java splits on \n, \r and \r\n.
    let normalised = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut lines = normalised.split('\n').enumerate();
    while let Some((idx, first)) = lines.next() {
        let first = first.trim_start_matches(BLANK);
        if first.is_empty() || first.starts_with('#') || first.starts_with('!') {
            continue;
        }
        let mut logical = String::new();
        let mut current = first;
        loop {
            if ends_with_odd_backslashes(current) {
                logical.push_str(&current[..current.len() - 1]);
                match lines.next() {
                    // A continuation line's leading whitespace is dropped; it is never a comment.
                    Some((_, next)) => current = next.trim_start_matches(BLANK),
                    None => break,
                }
            } else {
                logical.push_str(current);
                break;
            }
        }
        out.push((idx + 1, logical));
    }
    out
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// Splits at the first unescaped `=`, `:` or blank; blanks around a single `=`/`:` separator
/// belong to neither side. Returns still-escaped key and value.
fn split_key_value(line: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' || BLANK.contains(&c) {
            key_end = i;
            break;
        }
    }
    let key = &line[..key_end];
    let mut rest = line[key_end..].trim_start_matches(BLANK);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches(BLANK);
    }
    (key, rest)
}

/// Resolves escapes. Works in UTF-16 units so `\uD83D\uDE00` pairs combine as in Java.
fn unescape(s: &str, line: usize) -> Result<String, PropertiesSyntax> {
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            continue;
        }
        match chars.next() {
            Some('t') => units.push(u16::from(b'\t')),
            Some('n') => units.push(u16::from(b'\n')),
            Some('r') => units.push(u16::from(b'\r')),
            Some('f') => units.push(0x0c),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = (hex.len() == 4)
                    .then(|| u16::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .ok_or_else(|| PropertiesSyntax {
                        line,
                        message: format!("malformed \\uxxxx escape \"\\u{hex}\""),
                    })?;
                units.push(unit);
            }
            Some(other) => {
                let mut buf = [0u16; 2];
                units.extend_from_slice(other.encode_utf16(&mut buf));
            }
            // A lone trailing backslash (end of file during continuation) is dropped, as in Java.
            None => {}
        }
    }
    String::from_utf16(&units).map_err(|_| PropertiesSyntax {
        line,
        message: "\\u escapes form an unpaired UTF-16 surrogate".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse_properties(text)
            .expect("valid")
            .into_iter()
            .map(|p| (p.key, p.value))
            .collect()
    }

    fn p(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn all_three_separators_and_surrounding_blanks_are_accepted() {
        assert_eq!(
            pairs("a=1\nb: 2\nc 3\n  d  =  4\ne\t:\tfive six\nf\ng=\n"),
            vec![
                p("a", "1"),
                p("b", "2"),
                p("c", "3"),
                p("d", "4"),
                p("e", "five six"),
                p("f", ""),
                p("g", "")
            ]
        );
    }

    #[test]
    fn comments_and_blank_lines_are_skipped_but_hash_inside_a_value_is_kept() {
        assert_eq!(
            pairs("# comment\n! also\n\n   \t\nkey=value # not a comment\n"),
            vec![p("key", "value # not a comment")]
        );
    }

    #[test]
    fn backslash_continuation_joins_lines_and_strips_their_indent() {
        assert_eq!(
            pairs("list=a,\\\n    b,\\\n    # c\nnext=1\n"),
            vec![p("list", "a,b,# c"), p("next", "1")]
        );
        // An even number of backslashes is an escaped backslash, not a continuation.
        assert_eq!(pairs("path=C:\\\\\nx=1"), vec![p("path", "C:\\"), p("x", "1")]);
    }

    #[test]
    fn escapes_are_resolved_in_keys_and_values() {
        assert_eq!(
            pairs("tab=a\\tb\nnl=a\\nb\nuni=caf\\u00e9\nemoji=\\uD83D\\uDE00\nodd=\\q\nkey\\ with\\=eq=v\n"),
            vec![
                p("tab", "a\tb"),
                p("nl", "a\nb"),
                p("uni", "café"),
                p("emoji", "😀"),
                p("odd", "q"),
                p("key with=eq", "v")
            ]
        );
    }

    #[test]
    fn the_last_duplicate_wins_and_reports_its_own_line() {
        let parsed = parse_properties("a=1\nb=2\na=3\n").expect("valid");
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            parsed[1],
            PropertyLine {
                key: "a".into(),
                value: "3".into(),
                line: 3
            }
        );
    }

    #[test]
    fn crlf_and_cr_line_endings_work() {
        assert_eq!(pairs("a=1\r\nb=2\rc=3"), vec![p("a", "1"), p("b", "2"), p("c", "3")]);
    }

    #[test]
    fn a_malformed_unicode_escape_is_a_syntax_error_with_its_line() {
        let err = parse_properties("ok=1\n\nbad=\\u12G4\n").expect_err("malformed");
        assert_eq!(err.line, 3);
        assert!(err.message.contains("\\u12G4"), "{}", err.message);
    }
}
