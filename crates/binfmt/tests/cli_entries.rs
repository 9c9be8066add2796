//! `binfmt info|list|get|verify` on every format, run as a real process.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::Output;

use binfmt_tests::cli::{self, arg, text};
use binfmt_tests::fixture;

fn binfmt(args: &[&str]) -> Output {
    cli::run(env!("CARGO_BIN_EXE_binfmt"), args)
}

#[test]
fn every_format_lists_reads_and_verifies_the_same_way() {
    // (file, entries, an entry, its bytes)
    let arcx = fixture("reference/sample.arcx");
    let kast = fixture("reference/all_types.kas");
    let par4 = fixture("reference/map.par4");
    let taridx = fixture("reference/taridx/golden.taridx");
    let tar = std::fs::read(fixture("reference/taridx/golden_0000.tar")).unwrap();
    let cases: [(&std::path::Path, usize, &str, Vec<u8>); 4] = [
        (&arcx, 3, "sample/0001.json", b"{\"label\": 1}\n".to_vec()),
        (
            &kast,
            10,
            "int16",
            [0i16, 1, 2, 3, 4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        ),
        (&par4, 3, "hello.txt", b"hello, world\n".to_vec()),
        // The second member of the first shard: payload at 2048, 40 bytes.
        (&taridx, 17, "s/000001.json", tar[2048..2088].to_vec()),
    ];
    for (file, count, name, bytes) in cases {
        let listing = binfmt(&["list", arg(file)]);
        assert!(
            listing.status.success(),
            "{}: {}",
            file.display(),
            text(&listing.stderr)
        );
        assert_eq!(
            text(&listing.stdout).lines().count(),
            count,
            "{}",
            file.display()
        );
        assert!(
            text(&listing.stdout).contains(&format!("{}\t{name}\n", bytes.len())),
            "{}",
            file.display()
        );

        let json: serde_json::Value =
            serde_json::from_slice(&binfmt(&["list", "--json", arg(file)]).stdout).unwrap();
        assert_eq!(json.as_array().unwrap().len(), count);

        assert_eq!(
            binfmt(&["get", arg(file), name]).stdout,
            bytes,
            "{} {name}",
            file.display()
        );
        let verified = binfmt(&["verify", arg(file)]);
        assert!(verified.status.success(), "{}", text(&verified.stderr));

        let info: serde_json::Value =
            serde_json::from_slice(&binfmt(&["info", "--json", arg(file)]).stdout).unwrap();
        assert_eq!(info["entries"], count);
    }
    let kinds: serde_json::Value =
        serde_json::from_slice(&binfmt(&["list", "--json", arg(&kast)]).stdout).unwrap();
    assert_eq!(kinds[0]["kind"], "float32");
}

#[test]
fn get_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("got.txt");
    let output = binfmt(&[
        "get",
        arg(&fixture("reference/map.par4")),
        "café.txt",
        "-o",
        arg(&out),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(std::fs::read(out).unwrap(), b"unicode name\n");
}

#[test]
fn errors_name_the_file_and_exit_1() {
    let missing = binfmt(&["get", arg(&fixture("reference/sample.arcx")), "nope"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("sample.arcx") && text(&missing.stderr).contains("nope")
    );

    let tar = binfmt(&["list", arg(&fixture("reference/sample.tar"))]);
    assert_eq!(tar.status.code(), Some(1));
    assert!(
        text(&tar.stderr).contains("taridx index"),
        "{}",
        text(&tar.stderr)
    );

    // sample.taridx has no shards named by the fold convention beside it.
    let no_shards = binfmt(&["list", arg(&fixture("reference/sample.taridx"))]);
    assert_eq!(no_shards.status.code(), Some(1));

    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"not a known format at all").unwrap();
    assert_eq!(binfmt(&["info", arg(&junk)]).status.code(), Some(1));
    assert_eq!(binfmt(&["get", arg(&junk)]).status.code(), Some(2));
}

#[test]
fn every_generic_command_has_examples() {
    let top = binfmt(&["--help"]);
    assert!(top.status.success());
    assert!(text(&top.stdout).contains("Examples:\n  binfmt tour fixtures/"));
    for command in ["info", "list", "get", "extract", "verify", "tour"] {
        assert!(
            text(&binfmt(&[command, "--help"]).stdout).contains("Examples:"),
            "{command}"
        );
    }
}

#[test]
fn convert_through_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("reference/sample.arcx");
    let listing = text(&binfmt(&["list", arg(&source)]).stdout);
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let steps = [
        (dir.path().join("s.kas"), "kast"),
        (dir.path().join("s.par4"), "par4"),
        (shards.join("fold.taridx"), "taridx"),
        (dir.path().join("back.arcx"), "arcx"),
    ];
    let mut input = source.clone();
    for (output, to) in &steps {
        let converted = binfmt(&[
            "convert",
            arg(&input),
            "-o",
            arg(output),
            "--to",
            to,
            "--dialect",
            "arcx-cli",
            "--lz4",
            "--shard-size",
            "4096",
        ]);
        assert!(
            converted.status.success(),
            "to {to}: {}",
            text(&converted.stderr)
        );
        assert!(converted.stdout.is_empty());
        let mut got: Vec<String> = text(&binfmt(&["list", arg(output)]).stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        let mut want: Vec<String> = listing.lines().map(str::to_owned).collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "after converting to {to}");
        input = output.clone();
    }
    let info: serde_json::Value =
        serde_json::from_slice(&binfmt(&["arcx", "info", "--json", arg(&steps[3].0)]).stdout)
            .unwrap();
    assert_eq!(info["dialect"], "arcx-cli");

    assert_eq!(
        binfmt(&["convert", arg(&source), "-o", "x.tar", "--to", "taridx"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        binfmt(&["convert", arg(&source), "-o", "x", "--to", "zip"])
            .status
            .code(),
        Some(2)
    );
    assert!(text(&binfmt(&["convert", "--help"]).stdout).contains("Examples:"));
}

#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = binfmt(&["completions", shell]);
        assert!(output.status.success(), "{shell}");
        let script = text(&output.stdout);
        assert!(
            script.contains("convert") && script.contains("taridx"),
            "{shell}"
        );
    }
    assert_eq!(binfmt(&["completions", "nosh"]).status.code(), Some(2));
}

#[test]
fn tour_of_the_fixtures() {
    let tour = binfmt(&[
        "tour",
        arg(&binfmt_tests::workspace_root().join("fixtures")),
    ]);
    assert!(tour.status.success(), "{}", text(&tour.stderr));
    let report = text(&tour.stdout);
    for row in [
        "| reference/sample.arcx | arcx | 3 | 556 |  |",
        "| reference/all_types.kas | kast | 10 | 210 |  |",
        "| reference/taridx/golden.taridx | taridx | 17 | 6572 | 3 tar shards beside it |",
        "| generated/par4/vec_u64.par4 | par4 | - | - | the root is not a HashMap<String, Vec<u8>>, so the file has no named entries |",
    ] {
        assert!(report.contains(row), "{row} missing from\n{report}");
    }
    assert!(!report.contains("golden_0000.tar"), "shards have no rows");
    // The archive with the most entries is carried through.
    assert!(report.contains("2. generated/arcx/multi_block.arcx-cli.arcx through every format"));
    for step in [
        "| 1 | kast | 5 |",
        "| 2 | par4 | 5 |",
        "| 3 | taridx | 5 |",
        "| 4 | arcx | 5 |",
    ] {
        let line = report
            .lines()
            .find(|line| line.starts_with(step))
            .unwrap_or_else(|| panic!("{step} missing from\n{report}"));
        assert!(line.ends_with("| yes |"), "{line}");
    }
    assert!(text(&binfmt(&["tour", "--help"]).stdout).contains("Examples:"));

    // A directory with nothing to carry through the formats is an error.
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(binfmt(&["tour", arg(empty.path())]).status.code(), Some(1));
}

#[test]
fn extract_writes_every_entry_of_every_format() {
    for file in [
        "reference/sample.arcx",
        "reference/all_types.kas",
        "reference/map.par4",
        "reference/taridx/golden.taridx",
    ] {
        let file = fixture(file);
        let out = tempfile::tempdir().unwrap();
        let dir = out.path().join("new/dir");
        let extracted = binfmt(&["extract", arg(&file), "-o", arg(&dir)]);
        assert!(
            extracted.status.success(),
            "{}: {}",
            file.display(),
            text(&extracted.stderr)
        );
        let listing = text(&binfmt(&["list", arg(&file)]).stdout);
        assert!(!listing.is_empty());
        for line in listing.lines() {
            let (_, name) = line.split_once('\t').unwrap();
            let want = binfmt(&["get", arg(&file), name]).stdout;
            assert_eq!(
                std::fs::read(dir.join(name)).unwrap(),
                want,
                "{} {name}",
                file.display()
            );
        }
    }
}

#[test]
fn extract_refuses_names_outside_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("evil.kas");
    let mut writer = binfmt_kastore::Writer::new();
    writer
        .insert_raw(
            "../escaped",
            binfmt_kastore::ItemType::Uint8,
            b"x".as_slice(),
        )
        .unwrap();
    writer.write_file(&store).unwrap();
    let target = dir.path().join("out");
    let refused = binfmt(&["extract", arg(&store), "-o", arg(&target)]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("evil.kas") && text(&refused.stderr).contains("'..'"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.path().join("escaped").exists());
    assert_eq!(
        binfmt(&[
            "extract",
            arg(&fixture("reference/sample.tar")),
            "-o",
            arg(&target)
        ])
        .status
        .code(),
        Some(1)
    );
    assert_eq!(binfmt(&["extract", arg(&store)]).status.code(), Some(2));
}

/// Every verb of every format answers `--help` with its own description
/// and examples (once, `arcx info --help` described `list`).
#[test]
fn every_verb_of_every_format_describes_itself() {
    let verbs = [
        ("info", "Show "),
        ("list", "List "),
        ("get", "Write one entry"),
        ("extract", "Write every entry"),
        ("verify", "Check everything"),
    ];
    for format in ["", "arcx", "kast", "taridx", "par4"] {
        for (verb, description) in verbs {
            let mut args: Vec<&str> = format.split_whitespace().collect();
            args.extend([verb, "--help"]);
            let help = text(&binfmt(&args).stdout);
            let first = help.lines().next().unwrap_or_default();
            let own = match (format, verb) {
                ("par4", "info") => first.starts_with("Print the chunk tree"),
                ("kast", "list") => first.starts_with("List the keys"),
                ("kast", "info") | ("taridx", "info") => first.starts_with("Show"),
                ("taridx", "get") => first.starts_with("Write one member"),
                ("arcx" | "taridx" | "par4", "verify") => {
                    first.starts_with("Check") || first.starts_with("Walk")
                }
                _ => first.starts_with(description),
            };
            assert!(own, "binfmt {format} {verb} --help: {first:?}");
            assert!(help.contains("Examples:"), "binfmt {format} {verb} --help");
        }
    }
}

/// `convert` without `--to` takes the target from the output's extension,
/// and says what to do when the extension names none.
#[test]
fn convert_takes_the_target_from_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixture("reference/sample.arcx");
    let listing = text(&binfmt(&["list", arg(&source)]).stdout);
    for name in ["s.kas", "s.trees", "s.par4", "s.arcx"] {
        let output = dir.path().join(name);
        let converted = binfmt(&["convert", arg(&source), "-o", arg(&output)]);
        assert!(
            converted.status.success(),
            "{name}: {}",
            text(&converted.stderr)
        );
        let sniffed = text(&binfmt(&["sniff", arg(&output)]).stdout);
        let want = match name.rsplit_once('.').unwrap().1 {
            "trees" => "kas",
            other => other,
        };
        assert!(sniffed.to_lowercase().contains(want), "{name}: {sniffed}");
        assert_eq!(text(&binfmt(&["list", arg(&output)]).stdout), listing);
    }
    // --to wins over the extension.
    let odd = dir.path().join("odd.kas");
    assert!(
        binfmt(&["convert", arg(&source), "-o", arg(&odd), "--to", "arcx"])
            .status
            .success()
    );
    assert!(
        text(&binfmt(&["sniff", arg(&odd)]).stdout)
            .to_lowercase()
            .contains("arcx")
    );
    // No extension to go by: a usage error naming the way out, nothing written.
    let unknown = dir.path().join("x.bin");
    let refused = binfmt(&["convert", arg(&source), "-o", arg(&unknown)]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("give --to"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!unknown.exists());
}

/// A store with tskit's keys (`nodes/metadata`, `individuals/metadata`)
/// converts to TARIDX without options: names that are paths get
/// WebDataset's key rule, said on stderr; glzn's rule is still one flag
/// away and refuses with the fix in its message. Flat names keep glzn's
/// rule, so the index is the one `--taridx-keys glzn` writes.
#[test]
fn convert_to_taridx_picks_the_key_rule_from_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tables.trees");
    let mut writer = binfmt_kastore::Writer::new();
    for key in ["nodes/metadata", "individuals/metadata", "nodes/time"] {
        writer
            .insert_raw(key, binfmt_kastore::ItemType::Uint8, key.as_bytes())
            .unwrap();
    }
    writer.write_file(&store).unwrap();
    std::fs::create_dir_all(dir.path().join("wds")).unwrap();
    let index = dir.path().join("wds/tables.taridx");
    let converted = binfmt(&["convert", arg(&store), "-o", arg(&index)]);
    assert!(converted.status.success(), "{}", text(&converted.stderr));
    assert!(
        text(&converted.stderr).contains("WebDataset rule"),
        "{}",
        text(&converted.stderr)
    );
    let got = binfmt(&["get", arg(&index), "individuals/metadata"]);
    assert_eq!(got.stdout, b"individuals/metadata");
    assert_eq!(
        text(&binfmt(&["list", arg(&index)]).stdout).lines().count(),
        3
    );

    std::fs::create_dir_all(dir.path().join("glzn")).unwrap();
    let glzn = dir.path().join("glzn/tables.taridx");
    let refused = binfmt(&[
        "convert",
        arg(&store),
        "-o",
        arg(&glzn),
        "--taridx-keys",
        "glzn",
    ]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        text(&refused.stderr).contains("--taridx-keys webdataset"),
        "{}",
        text(&refused.stderr)
    );

    let flat = fixture("reference/all_types.kas");
    for (sub, extra) in [("default", None), ("explicit", Some("glzn"))] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        let out = dir.path().join(sub).join("flat.taridx");
        let mut args = vec!["convert", arg(&flat), "-o", arg(&out)];
        if let Some(rule) = extra {
            args.extend(["--taridx-keys", rule]);
        }
        let converted = binfmt(&args);
        assert!(converted.status.success(), "{}", text(&converted.stderr));
        assert!(!text(&converted.stderr).contains("WebDataset"));
    }
    assert_eq!(
        std::fs::read(dir.path().join("default/flat.taridx")).unwrap(),
        std::fs::read(dir.path().join("explicit/flat.taridx")).unwrap()
    );
}

/// Runs `binfmt args` with its stdout on a terminal (util-linux `script`
/// gives it a pseudo-terminal): whether it succeeded and what the terminal
/// showed.
fn on_a_terminal(args: &[&str]) -> (bool, String) {
    let command = std::iter::once(env!("CARGO_BIN_EXE_binfmt"))
        .chain(args.iter().copied())
        .map(|word| format!("'{}'", word.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let done = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    (done.status.success(), text(&done.stdout))
}

/// Issue 28: `get` wrote binary bytes to a terminal. Not text (a NUL, or
/// not UTF-8) is refused there with the way out; text is printed; `-o -`
/// prints anything; to a pipe nothing changes, and `-o -` is stdout, never
/// a file named `-`.
#[test]
fn get_to_a_terminal_refuses_binary_unless_asked() {
    let kast = fixture("reference/all_types.kas");
    let par4 = fixture("reference/map.par4");
    let fold = fixture("reference/taridx/golden.taridx");
    let (ok, shown) = on_a_terminal(&["get", arg(&kast), "int16"]);
    assert!(!ok, "{shown}");
    assert!(
        shown.contains("binary") && shown.contains("-o -"),
        "{shown}"
    );
    let (ok, shown) = on_a_terminal(&["get", arg(&kast), "int16", "-o", "-"]);
    assert!(ok, "{shown}");
    let (ok, shown) = on_a_terminal(&["get", arg(&par4), "hello.txt"]);
    assert!(ok && shown.contains("hello, world"), "{shown}");
    let (ok, shown) = on_a_terminal(&["taridx", "get", arg(&fold), "s/000001.jpg"]);
    assert!(!ok && shown.contains("-o -"), "{shown}");
    let (ok, shown) = on_a_terminal(&["taridx", "get", arg(&fold), "s/000001.cls"]);
    assert!(ok, "{shown}");

    let dir = tempfile::tempdir().unwrap();
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_binfmt"))
        .args(["get", arg(&kast), "int16", "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert_eq!(piped.stdout, binfmt(&["get", arg(&kast), "int16"]).stdout);
    assert_eq!(piped.stdout.len(), 10);
    assert!(!dir.path().join("-").exists());
}

/// Issue 28: `extract -o EXISTING_FILE` said only "File exists (os error
/// 17)". Every format's extraction now names what is there and what to do.
#[test]
fn extract_onto_a_file_says_what_is_there_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let there = dir.path().join("afile");
    std::fs::write(&there, b"mine").unwrap();
    for source in [
        "reference/sample.arcx",
        "reference/all_types.kas",
        "reference/map.par4",
    ] {
        let refused = binfmt(&["extract", arg(&fixture(source)), "-o", arg(&there)]);
        assert_eq!(refused.status.code(), Some(1), "{source}");
        let said = text(&refused.stderr);
        assert_eq!(said.lines().count(), 1, "{said}");
        assert!(
            said.contains("a file is there, not a directory") && said.contains("give -o"),
            "{source}: {said}"
        );
    }
    assert_eq!(std::fs::read(&there).unwrap(), b"mine");
}

/// Issue 28: the tour printed two bundled fixtures' errors without saying
/// they are deliberate. Every file it cannot open is either of a kind with
/// no entries (a bare tar, a PAR4 root that is not a map) or listed in
/// `fixtures/tour-notes.tsv`, and shown as refused on purpose with why.
#[test]
fn the_tour_labels_every_refusal_it_shows() {
    let tour = binfmt(&[
        "tour",
        arg(&binfmt_tests::workspace_root().join("fixtures")),
    ]);
    assert!(tour.status.success(), "{}", text(&tour.stderr));
    let report = text(&tour.stdout);
    let refused: Vec<&str> = report
        .lines()
        .filter(|line| line.contains(" | - | - | "))
        .collect();
    assert!(refused.len() >= 4, "{report}");
    for row in &refused {
        assert!(
            row.contains("refused, as meant: ")
                || row.contains("the root is not a HashMap")
                || row.contains("a tar file: index it"),
            "an unlabelled refusal: {row}"
        );
    }
    for file in [
        "reference/converted/unicode.taridx",
        "reference/sample.taridx",
    ] {
        assert!(
            refused
                .iter()
                .any(|row| row.starts_with(&format!("| {file} |")) && row.contains("as meant")),
            "{file}: {report}"
        );
    }
    assert!(report.contains("2 of these files are meant to be refused"));
}
