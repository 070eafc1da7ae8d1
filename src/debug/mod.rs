//! Observability: graph printing (Graphviz and JSON), the Chrome/Perfetto trace of executed
//! instructions, and the log formatter that puts the node id in every line.
//!
//! * [`graphviz`] and [`json`] turn the records of the task, command and instruction recorders
//!   into text. Records exist only with `print_graphs=on`, so printing costs nothing otherwise.
//! * [`trace`] collects timed slices on the executor and scheduler threads when `trace_file` is
//!   set (an `Option` checked once per instruction otherwise).
//! * [`output`] writes the files at shutdown (see `docs/graphs.md`).
//! * [`logging`] installs the `tracing` subscriber with the node id prefix.

pub mod graphviz;
pub mod json;
pub mod logging;
pub mod output;
pub mod trace;

use std::fmt::Write;

use crate::grid::{GridBox, Region};
use crate::types::BufferId;

/// `[0,0,0] - [16,1,1]`: a box as its inclusive minimum and exclusive maximum.
pub fn fmt_box(b: &GridBox) -> String {
    let (min, max) = (b.min_arr(), b.max_arr());
    format!(
        "[{},{},{}] - [{},{},{}]",
        min[0], min[1], min[2], max[0], max[1], max[2]
    )
}

/// `{[0,0,0] - [8,1,1], [12,0,0] - [16,1,1]}`: a region as its boxes.
pub fn fmt_region(r: &Region) -> String {
    let boxes: Vec<String> = r.boxes().iter().map(fmt_box).collect();
    format!("{{{}}}", boxes.join(", "))
}

/// `B3 "name"` or `B3`.
pub fn buffer_label(bid: BufferId, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{bid} \"{name}\""),
        None => bid.to_string(),
    }
}

/// Escapes text for a Graphviz HTML-like label (quotes may stay as they are there).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as a JSON string literal, quotes included.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An optional string as a JSON value (`null` when absent).
pub fn json_opt_string(text: Option<&str>) -> String {
    text.map_or_else(|| "null".to_owned(), json_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_regions_and_escapes_print_as_documented() {
        let a = GridBox::from_arrays([0, 0, 0], [8, 1, 1]);
        let b = GridBox::from_arrays([12, 0, 0], [16, 1, 1]);
        assert_eq!(fmt_box(&a), "[0,0,0] - [8,1,1]");
        assert_eq!(
            fmt_region(&Region::from_boxes([b, a])),
            "{[0,0,0] - [8,1,1], [12,0,0] - [16,1,1]}"
        );
        assert_eq!(buffer_label(BufferId(3), Some("u")), "B3 \"u\"");
        assert_eq!(escape_html("a<b>&\"c\""), "a&lt;b&gt;&amp;\"c\"");
        assert_eq!(json_string("x\"y\\\n\u{1}"), "\"x\\\"y\\\\\\n\\u0001\"");
        assert_eq!(json_opt_string(None), "null");
    }
}
