//! The module graph runs one way along the pipeline (`docs/architecture.md`): every `crate::`
//! path in `src/` (code, not comments) may name only the ground floor, its own stage, or an
//! earlier stage. A lower stage naming a later one fails this test with the file, the line and
//! the offending path.

use std::path::{Path, PathBuf};

/// The stages, earliest first. A module may import modules of earlier stages; within a stage
/// only the ground floor's modules import each other (scheduler and executor are peers that talk
/// through channels, not imports).
const STAGES: &[&[&str]] = &[
    &[
        "error",
        "types",
        "policy",
        "thread_guard",
        "user_objects",
        "id_table",
    ],
    &["grid"],
    &["backend"],
    &["comm"],
    &["task"],
    &["command"],
    &["instruction"],
    &["debug"],
    &["scheduler", "executor"],
    &["runtime"],
    &["ffi"],
];

fn stage_of(module: &str) -> Option<usize> {
    STAGES.iter().position(|stage| stage.contains(&module))
}

/// Removes `//` comments (line, doc and inner doc) and the contents of string literals, keeping
/// line breaks so that line numbers stay right.
fn strip_comments_and_strings(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_string = false;
                    out.push('"');
                }
                '\n' => out.push('\n'),
                _ => {}
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for rest in chars.by_ref() {
                    if rest == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                in_string = true;
                out.push('"');
            }
            // A char literal such as '"' must not open a string.
            '\'' => {
                out.push('\'');
                let mut lookahead = chars.clone();
                let (a, b, c) = (lookahead.next(), lookahead.next(), lookahead.next());
                let skip = if a == Some('\\') && c == Some('\'') {
                    3
                } else if b == Some('\'') {
                    2
                } else {
                    0
                };
                if skip > 0 {
                    for _ in 0..skip {
                        chars.next();
                    }
                    out.push('\'');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every `crate::` path in `code` as (line, top-level module, the path as written up to its
/// second segment), expanding `crate::{a::x, b}` groups.
fn crate_paths(code: &str) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(offset) = code[search..].find("crate::") {
        let start = search + offset;
        search = start + "crate::".len();
        // `$crate::` and identifiers ending in `crate` are not crate paths.
        if code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        {
            continue;
        }
        let line = code[..start].matches('\n').count() + 1;
        let rest = &code[search..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut segment = String::new();
            let mut segments = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    segments.push(std::mem::take(&mut segment));
                    break;
                }
                if c == ',' && depth == 1 {
                    segments.push(std::mem::take(&mut segment));
                } else {
                    segment.push(c);
                }
            }
            for segment in segments {
                let segment: String = segment.split_whitespace().collect();
                let module: String = segment
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !module.is_empty() {
                    found.push((line, module, format!("crate::{segment}")));
                }
            }
        } else {
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let module = path.split("::").next().unwrap_or_default().to_owned();
            found.push((line, module, format!("crate::{path}")));
        }
    }
    found
}

/// The top-level module a file of `src/` belongs to (`src/task/manager.rs` → `task`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let first = relative.components().next()?.as_os_str().to_str()?;
    Some(first.trim_end_matches(".rs").to_owned())
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The violations in one file's source: (line, message).
fn violations(module: &str, display: &str, source: &str) -> Vec<String> {
    let Some(own) = stage_of(module) else {
        return vec![format!(
            "{display}: module `{module}` is in no stage of tests/module_graph.rs (add it where it belongs)"
        )];
    };
    let mut problems = Vec::new();
    for (line, target, path) in crate_paths(&strip_comments_and_strings(source)) {
        if target == module {
            continue;
        }
        let Some(theirs) = stage_of(&target) else {
            continue;
        };
        let allowed = theirs < own || (theirs == own && own == 0);
        if !allowed {
            problems.push(format!(
                "{display}:{line}: `{module}` (stage {own}) imports `{path}` from `{target}` \
                 (stage {theirs}); a stage may only import earlier stages (docs/architecture.md)"
            ));
        }
    }
    problems
}

#[test]
fn no_stage_imports_a_later_stage() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut problems = Vec::new();
    let mut paths_seen = 0;
    for file in &files {
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        if module == "lib" {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("read source");
        paths_seen += crate_paths(&strip_comments_and_strings(&source)).len();
        let display = file.strip_prefix(src.parent().unwrap()).unwrap().display();
        problems.extend(violations(&module, &display.to_string(), &source));
    }
    // The parser found the crate's imports at all (an empty scan would pass vacuously).
    assert!(paths_seen > 300, "only {paths_seen} crate:: paths found");
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn a_lower_stage_naming_a_later_one_is_reported_with_file_line_and_path() {
    let source = "//! Uses crate::runtime in a comment only.\n\
                  use crate::grid::Range;\n\
                  use crate::{policy::ErrorPolicy, executor::engine::Target};\n\
                  fn f() { let _ = \"crate::ffi\"; crate::runtime::config::Config::default(); }\n";
    let problems = violations("instruction", "src/instruction/x.rs", source);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("src/instruction/x.rs:3: `instruction` (stage 6) imports `crate::executor::engine::Target`"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].starts_with("src/instruction/x.rs:4: `instruction` (stage 6) imports `crate::runtime::config::Config::default`"),
        "{}",
        problems[1]
    );
}

#[test]
fn scheduler_and_executor_do_not_import_each_other() {
    let problems = violations(
        "scheduler",
        "src/scheduler/mod.rs",
        "use crate::executor::X;\n",
    );
    assert_eq!(problems.len(), 1, "{problems:#?}");
}

/// The module path of a file of `src/` (`src/task/access.rs` → `task::access`,
/// `src/task/mod.rs` → `task`), or `None` for `lib.rs` and test files.
fn module_path_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let relative = file.strip_prefix(src).ok()?.with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.iter().any(|segment| segment == "tests") {
        return None;
    }
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    (!path.is_empty() && path != ["lib"]).then_some(path)
}

/// Every `crate::` and `super::` path of `code` before its test module, resolved to a full path
/// from the crate root; `crate::a::{b, c::d}` yields `a::b` and `a::c::d`.
fn file_level_paths(own: &[String], code: &str) -> Vec<Vec<String>> {
    let code = code.split("#[cfg(test)]").next().unwrap_or_default();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    for (start, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        if code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| ident(c) || c == '$' || c == ':')
        {
            continue;
        }
        let written: String = code[start..]
            .chars()
            .take_while(|&c| ident(c) || c == ':')
            .collect();
        let mut base: Vec<String> = Vec::new();
        let mut segments = written.split("::").filter(|s| !s.is_empty()).peekable();
        if segments.peek() == Some(&"crate") {
            segments.next();
        } else {
            base = own.to_vec();
            while segments.peek() == Some(&"super") {
                segments.next();
                base.pop();
            }
        }
        base.extend(segments.map(str::to_owned));
        let rest = &code[start + written.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = &group[..group.find('}').unwrap_or(group.len())];
                for item in group.split(',') {
                    let mut full = base.clone();
                    full.extend(
                        item.split("::")
                            .map(|s| s.trim().trim_start_matches('{'))
                            .take_while(|s| !s.is_empty() && s.chars().all(ident))
                            .map(str::to_owned),
                    );
                    found.push(full);
                }
            }
            None => found.push(base),
        }
    }
    found
}

/// Files that import each other, directly or through others, are one unit split in two: the
/// shared part belongs in a file both import (a child naming its own parent module does not
/// count: a parent declares and re-exports its children).
#[test]
fn no_two_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: Vec<(Vec<String>, PathBuf)> = files
        .iter()
        .filter_map(|file| Some((module_path_of(&src, file)?, file.clone())))
        .collect();
    let known: std::collections::BTreeSet<&[String]> = modules
        .iter()
        .map(|(module, _)| module.as_slice())
        .collect();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for (module, file) in &modules {
        let source = std::fs::read_to_string(file).expect("read source");
        let code = strip_comments_and_strings(&source);
        let entry = edges.entry(module.join("::")).or_default();
        for path in file_level_paths(module, &code) {
            let Some(target) = (1..=path.len())
                .rev()
                .map(|k| &path[..k])
                .find(|prefix| known.contains(prefix))
            else {
                continue;
            };
            if target != module.as_slice() && !module.starts_with(target) {
                entry.insert(target.join("::"));
            }
        }
    }
    let mut cycles = Vec::new();
    for (from, targets) in &edges {
        for to in targets {
            // A path back from `to` to `from` closes a cycle.
            let mut stack = vec![to.clone()];
            let mut seen = std::collections::BTreeSet::new();
            while let Some(next) = stack.pop() {
                if next == *from {
                    cycles.push(format!("{from} -> {to} -> ... -> {from}"));
                    break;
                }
                if seen.insert(next.clone()) {
                    stack.extend(edges.get(&next).into_iter().flatten().cloned());
                }
            }
        }
    }
    let edge_count: usize = edges.values().map(|t| t.len()).sum();
    assert!(
        edge_count > 100,
        "only {edge_count} file-level imports found"
    );
    assert!(
        cycles.is_empty(),
        "file-level import cycles:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn super_and_grouped_crate_paths_resolve_to_full_module_paths() {
    let own: Vec<String> = ["task", "access"].map(String::from).to_vec();
    let paths = file_level_paths(
        &own,
        "use super::task::TaskGeometry;\nuse crate::grid::{BoxVec, region::Region};\n",
    );
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert!(
        joined.contains(&"task::task::TaskGeometry".to_owned()),
        "{joined:?}"
    );
    assert!(joined.contains(&"grid::BoxVec".to_owned()), "{joined:?}");
    assert!(
        joined.contains(&"grid::region::Region".to_owned()),
        "{joined:?}"
    );
}
