//! The workspace's layout rules, checked on the sources themselves: no
//! file under a crate's `src/` over 900 lines, and no file-level import
//! cycle inside a crate (file `a` naming an item of file `b` while `b`,
//! directly or through other files, names one of `a`).
//!
//! A file "names an item of" another when a `use` or a path in code
//! (`crate::x::Y`, `super::Y`, `self::x::Y`, or `x::Y` for a child module
//! `x`) resolves to it: to the deepest module file the path reaches, and
//! through a `pub use` re-export to the file that defines the item. `mod x;`
//! declarations are not uses, and neither are doc links or macros invoked
//! through `crate::` (`#[macro_export]` puts them at the crate root).
//! Inline modules (`mod tests { ... }`) count as the file they are in.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_LINES: usize = 900;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_owned()
}

/// Every crate's `src/` directory, by crate directory name.
fn crate_sources() -> BTreeMap<String, PathBuf> {
    let crates = workspace().join("crates");
    let mut found = BTreeMap::new();
    for entry in fs::read_dir(&crates).expect("crates/ is readable") {
        let entry = entry.expect("crates/ is readable");
        let src = entry.path().join("src");
        if src.is_dir() {
            found.insert(entry.file_name().to_string_lossy().into_owned(), src);
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("source directory is readable") {
        let path = entry.expect("source directory is readable").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// A module path inside a crate: `[]` is the crate root.
type ModPath = Vec<String>;

/// The module a file is: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`;
/// `lib.rs` and `main.rs` the root.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).expect("file is under src/");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The source with comments, string and character literals removed
/// (lifetimes stay), so that only code is scanned.
fn strip(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = at(i);
        let previous_is_ident = i > 0 && (at(i - 1).is_alphanumeric() || at(i - 1) == '_');
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if !previous_is_ident && (c == 'r' || (c == 'b' && at(i + 1) == 'r')) && {
            let mut j = i + if c == 'b' { 2 } else { 1 };
            while at(j) == '#' {
                j += 1;
            }
            at(j) == '"'
        } {
            // A raw string: r"..", r#".."#, br"..".
            let mut j = i + if c == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if at(j) == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && at(i) != '"' {
                if at(i) == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && at(i + 1) == '\\' {
            // An escaped character literal: '\n', '\'', '\u{..}'.
            i += 2;
            while i < chars.len() && at(i) != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && at(i + 2) == '\'' {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Identifiers and the punctuation that matters here.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while chars
                .get(i)
                .is_some_and(|&c| c.is_alphanumeric() || c == '_')
            {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// One path a file names: where it is named (the inline modules around it),
/// its segments, and whether it is a top-level `pub use` (a re-export).
#[derive(Debug)]
struct Named {
    inline: Vec<String>,
    segments: Vec<String>,
    reexport: bool,
}

/// Parses a use tree from `tokens[*at..]` under `prefix`, adding each leaf
/// path (its last segment the name it is imported as, `*` for a glob).
fn use_tree(tokens: &[String], at: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(*at).map(String::as_str) {
            Some("{") => {
                *at += 1;
                loop {
                    match tokens.get(*at).map(String::as_str) {
                        Some("}") => {
                            *at += 1;
                            return;
                        }
                        Some(",") => *at += 1,
                        None => return,
                        _ => use_tree(tokens, at, &path, out),
                    }
                }
            }
            Some("::") => *at += 1,
            Some("as") => {
                *at += 2;
                out.push(path);
                return;
            }
            Some("," | "}" | ";") | None => {
                out.push(path);
                return;
            }
            Some(segment) => {
                path.push(segment.to_owned());
                *at += 1;
            }
        }
    }
}

/// Every path a file names, from its code.
fn named_paths(code: &str) -> Vec<Named> {
    let tokens = tokens(code);
    let token = |i: usize| tokens.get(i).map(String::as_str).unwrap_or("");
    let mut named = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        match token(i) {
            "mod" if token(i + 2) == "{" => {
                depth += 1;
                inline.push((token(i + 1).to_owned(), depth));
                i += 3;
            }
            // Not `impl Trait + use<'a>`.
            "use" if token(i + 1) != "<" => {
                let reexport = inline.is_empty()
                    && (token(i.wrapping_sub(1)) == "pub"
                        || (token(i.wrapping_sub(1)) == ")" && token(i.wrapping_sub(4)) == "pub"));
                let mut at = i + 1;
                let mut leaves = Vec::new();
                use_tree(&tokens, &mut at, &[], &mut leaves);
                let around: Vec<String> = inline.iter().map(|(name, _)| name.clone()).collect();
                named.extend(leaves.into_iter().map(|segments| Named {
                    inline: around.clone(),
                    segments,
                    reexport,
                }));
                i = at;
            }
            "crate" | "super" | "self"
                if token(i + 1) == "::" && token(i.wrapping_sub(1)) != "::" =>
            {
                let mut segments = vec![token(i).to_owned()];
                let mut at = i + 1;
                while token(at) == "::"
                    && token(at + 1)
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
                {
                    segments.push(token(at + 1).to_owned());
                    at += 2;
                }
                if token(at) != "!" {
                    named.push(Named {
                        inline: inline.iter().map(|(name, _)| name.clone()).collect(),
                        segments,
                        reexport: false,
                    });
                }
                i = at;
            }
            "{" => {
                depth += 1;
                i += 1;
            }
            "}" => {
                if inline.last().is_some_and(|&(_, open)| open == depth) {
                    inline.pop();
                }
                depth -= 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    named
}

/// One crate's file-level import graph: each module file and the module
/// files it names.
fn import_graph(src: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let scanned: HashMap<ModPath, Vec<Named>> = files
        .iter()
        .map(|file| {
            let source = fs::read_to_string(file).expect("source file is UTF-8");
            (module_of(src, file), named_paths(&strip(&source)))
        })
        .collect();
    let modules: BTreeSet<&ModPath> = scanned.keys().collect();
    // A named path made absolute (from the crate root), or `None` when it
    // leaves the crate.
    let absolute = |module: &ModPath, named: &Named| -> Option<Vec<String>> {
        let mut here = module.clone();
        here.extend(named.inline.iter().cloned());
        let mut segments = named.segments.iter().peekable();
        match segments.peek().map(|s| s.as_str()) {
            Some("crate") => {
                segments.next();
                Some(segments.cloned().collect())
            }
            Some("super" | "self") => {
                while let Some(step) = segments.next_if(|s| *s == "super" || *s == "self") {
                    if step == "super" {
                        here.pop();
                    }
                }
                here.extend(segments.cloned());
                Some(here)
            }
            Some(first) => {
                let mut child = here.clone();
                child.push(first.to_owned());
                modules.contains(&child).then(|| {
                    here.extend(segments.cloned());
                    here
                })
            }
            None => None,
        }
    };
    // Re-exports: module -> name -> the absolute path it stands for.
    let mut reexports: HashMap<&ModPath, HashMap<String, Vec<String>>> = HashMap::new();
    for (module, names) in &scanned {
        for named in names.iter().filter(|named| named.reexport) {
            let (Some(path), Some(name)) = (absolute(module, named), named.segments.last()) else {
                continue;
            };
            if name != "*" && name != "self" {
                reexports
                    .entry(module)
                    .or_default()
                    .insert(name.clone(), path);
            }
        }
    }
    // The module file a path ends in, following re-exports (a few deep).
    let resolve = |path: Vec<String>| -> ModPath {
        let mut path = path;
        for _ in 0..8 {
            let mut depth = 0;
            while depth < path.len() && modules.contains(&path[..=depth].to_vec()) {
                depth += 1;
            }
            let file = path[..depth].to_vec();
            let Some(segment) = path.get(depth) else {
                return file;
            };
            match reexports.get(&file).and_then(|names| names.get(segment)) {
                Some(target) => {
                    let mut next = target.clone();
                    next.extend(path[depth + 1..].iter().cloned());
                    path = next;
                }
                None => return file,
            }
        }
        Vec::new()
    };
    scanned
        .iter()
        .map(|(module, names)| {
            let targets = names
                .iter()
                .filter_map(|named| absolute(module, named))
                .map(&resolve)
                .filter(|target| target != module)
                .collect();
            (module.clone(), targets)
        })
        .collect()
}

/// One cycle of `graph`, as the module names around it, if it has one.
fn find_cycle(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit<'g>(
        node: &'g ModPath,
        graph: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
        marks: &mut HashMap<&'g ModPath, Mark>,
        stack: &mut Vec<&'g ModPath>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::Open);
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = stack.iter().position(|&n| n == next).unwrap_or(0);
                    let mut cycle: Vec<String> = stack[from..].iter().map(|m| name(m)).collect();
                    cycle.push(name(next));
                    return Some(cycle);
                }
                Mark::New if graph.contains_key(next) => {
                    if let Some(cycle) = visit(next, graph, marks, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = HashMap::new();
    for node in graph.keys() {
        if marks.get(node).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

fn name(module: &ModPath) -> String {
    if module.is_empty() {
        "crate root".to_owned()
    } else {
        module.join("::")
    }
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let root = workspace();
    let mut over = BTreeSet::new();
    for src in crate_sources().values() {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        for file in files {
            let lines = fs::read_to_string(&file)
                .expect("source file is UTF-8")
                .lines()
                .count();
            if lines > MAX_LINES {
                let relative = file.strip_prefix(&root).expect("under the workspace");
                over.insert((relative.to_string_lossy().replace('\\', "/"), lines));
            }
        }
    }
    assert!(over.is_empty(), "over {MAX_LINES} lines: {over:?}");
}

#[test]
fn no_crate_has_a_file_level_import_cycle() {
    let mut cycles = BTreeMap::new();
    for (krate, src) in crate_sources() {
        if let Some(cycle) = find_cycle(&import_graph(&src)) {
            cycles.insert(krate, cycle.join(" -> "));
        }
    }
    assert!(cycles.is_empty(), "file-level import cycles: {cycles:#?}");
}

/// The checker itself: a two-file cycle through `super`, a re-export that
/// hides none, and what is not a use (a `mod` line, a doc link, a string).
#[test]
fn the_checker_sees_cycles_and_only_cycles() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let path = src.join(path);
        fs::create_dir_all(path.parent().expect("has a parent")).expect("create directory");
        fs::write(path, text).expect("write source");
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod leaf;\npub use leaf::Thing;\n/// [`crate::a::X`]\nfn f() { let _ = \"crate::b::Y\"; }\n",
    );
    write("leaf.rs", "pub struct Thing;\n");
    write("a.rs", "use crate::Thing;\npub struct X;\n");
    write(
        "b.rs",
        "use crate::a::X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    let graph = import_graph(src);
    assert_eq!(find_cycle(&graph), None, "{graph:?}");
    let a: ModPath = vec!["a".to_owned()];
    assert_eq!(
        graph.get(&a),
        Some(&BTreeSet::from([vec!["leaf".to_owned()]]))
    );
    write("a.rs", "pub struct X;\nfn g() -> crate::b::Z { todo!() }\n");
    write("b.rs", "use super::a::{self, X};\npub struct Z;\n");
    let cycle = find_cycle(&import_graph(src)).expect("a and b name each other");
    assert!(
        cycle.contains(&"a".to_owned()) && cycle.contains(&"b".to_owned()),
        "{cycle:?}"
    );
}
