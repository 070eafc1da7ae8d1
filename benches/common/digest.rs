//! Graph digests of the benchmarks' direct runs (`IG_DIGEST`, `graph_profile command-digest`).
#![allow(dead_code)]

/// The debug form `text` with the items of every `dependencies: [..]` list sorted. A dependency
/// list is a set: its order follows the order in which `RegionMap` queries report entries, which
/// a change of the map's representation may change without changing the graph.
pub fn sorted_dependency_lists(text: &str) -> String {
    const KEY: &str = "dependencies: [";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at + KEY.len()]);
        rest = &rest[at + KEY.len()..];
        // the items up to the matching `]`, split at the commas outside nested brackets
        let (mut depth, mut start, mut end) = (0usize, 0, rest.len());
        let mut items = Vec::new();
        for (i, c) in rest.char_indices() {
            match c {
                '[' | '{' | '(' => depth += 1,
                ']' if depth == 0 => {
                    end = i;
                    break;
                }
                ']' | '}' | ')' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(rest[start..i].trim());
                    start = i + 1;
                }
                _ => {}
            }
        }
        let last = rest[start..end].trim();
        if !last.is_empty() {
            items.push(last);
        }
        items.sort_unstable();
        out.push_str(&items.join(", "));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
