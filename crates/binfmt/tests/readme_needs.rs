//! Issue 28: the README's test command installs reference tools and
//! servers without saying so. Every package `.ci/setup-interop` and
//! `.ci/servers` install (pip's `name==version`, `apt-get install`,
//! `cargo install`) is named next to the command in README.md.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The packages a setup script installs, by name.
fn installed(script: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
    {
        // pip: "name==1.2.3" (quoted), or "name>=1.2" for numpy and xxhash,
        // which are dependencies rather than tools.
        for quoted in line.split('"').skip(1).step_by(2) {
            if let Some((name, _)) = quoted.split_once("==") {
                // "fsspec[http]": the package is fsspec (with an extra).
                let name = name.split('[').next().unwrap_or(name);
                if !name.contains(['$', ' ', '/']) {
                    names.push(name.to_owned());
                }
            }
        }
        if let Some(rest) = line.split("apt-get install").nth(1) {
            names.extend(
                rest.split_whitespace()
                    .filter(|word| !word.starts_with('-') && *word != ">" && *word != "/dev/null")
                    .map(str::to_owned),
            );
        }
        if let Some(rest) = line.split("cargo install").nth(1) {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let Some(name) = words.iter().find(|word| !word.starts_with('-')) {
                names.push((*name).to_owned());
            }
        }
    }
    names
}

#[test]
fn the_readme_names_everything_the_test_command_installs() {
    let root = binfmt_tests::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut names = Vec::new();
    for script in [".ci/setup-interop", ".ci/servers"] {
        names.extend(installed(
            &std::fs::read_to_string(root.join(script)).unwrap(),
        ));
    }
    for expected in [
        "kastore",
        "msprime",
        "tskit",
        "webdataset",
        "wids",
        "ratarmountcore",
        "maturin",
        "arcx",
        "nginx",
        "openssl",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in the scripts: {names:?}"
        );
    }
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !readme.contains(&format!("`{name}`")))
        .collect();
    assert!(missing.is_empty(), "README.md does not name {missing:?}");
    assert!(readme.contains("Python 3.11 or newer"));
}
