//! tskit users' files through every format: msprime simulates tree
//! sequences (mutations, two populations, JSON metadata), `binfmt convert`
//! carries each `.trees` file to ARCX (both dialects), PAR4 and KAST and
//! back to KAST, and the result is the original file byte for byte and
//! `tskit.load` gives tables equal to the original's.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use binfmt::{ConvertOptions, Format, convert};
use binfmt_tests::interop;

fn python(args: &[&str]) {
    let Some(python) = interop::python() else {
        return;
    };
    let output = Command::new(python)
        .arg(interop::python_script("tskit_trees.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "tskit_trees.py {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn trees_files_survive_every_format() {
    if interop::python().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for seed in [1, 7] {
        let trees = dir.path().join(format!("sim{seed}.trees"));
        python(&["simulate", arg(&trees), &seed.to_string()]);
        let original = std::fs::read(&trees).unwrap();
        let mut vias: Vec<(String, PathBuf, ConvertOptions)> = vec![
            (
                "arcx".into(),
                dir.path().join(format!("{seed}.arcx")),
                ConvertOptions::default(),
            ),
            (
                "arcx-cli".into(),
                dir.path().join(format!("{seed}.cli.arcx")),
                ConvertOptions::default().arcx_dialect(binfmt_arcx::Dialect::ArcxCli),
            ),
            (
                "par4".into(),
                dir.path().join(format!("{seed}.par4")),
                ConvertOptions::default(),
            ),
        ];
        // glzn's key rule makes `nodes/metadata` and `individuals/metadata`
        // one sample, which TARIDX refuses; WebDataset's keeps the paths.
        vias.push((
            "taridx".into(),
            dir.path().join(format!("{seed}-fold/fold.taridx")),
            ConvertOptions::default().taridx_keys(binfmt_taridx::KeyRule::WebDataset),
        ));
        vias.push((
            "kast".into(),
            dir.path().join(format!("{seed}.copy.trees")),
            ConvertOptions::default(),
        ));
        for (name, there, options) in vias {
            let to = match name.as_str() {
                "par4" => Format::Par4,
                "taridx" => Format::Taridx,
                "kast" => Format::Kast,
                _ => Format::Arcx,
            };
            convert(&trees, &there, to, &options).unwrap();
            let back = dir.path().join(format!("{seed}.{name}.back.trees"));
            if to == Format::Kast {
                std::fs::copy(&there, &back).unwrap();
            } else {
                convert(&there, &back, Format::Kast, &ConvertOptions::default()).unwrap();
            }
            assert!(
                std::fs::read(&back).unwrap() == original,
                "seed {seed}, through {name}: the bytes changed"
            );
            python(&["equal", arg(&trees), arg(&back)]);
        }
    }
}
