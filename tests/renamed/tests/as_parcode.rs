//! Code as a user of `parcode` 0.6.1 writes it (its README's patterns),
//! compiled against binfmt-parcode renamed to `parcode` in Cargo.toml:
//! `use parcode::...` paths, the derive's generated paths, the error type's
//! name and variants.

// Test code: a panic here is a failed test, not a crash on user input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use parcode::{Parcode, ParcodeError, ParcodeObject};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, ParcodeObject, Clone, Debug, PartialEq)]
struct Player {
    level: u32,
    #[parcode(chunkable)]
    inventory: Vec<u32>,
}

#[derive(Serialize, Deserialize, ParcodeObject, Debug, PartialEq)]
struct Settings {
    difficulty: u8,
    #[parcode(chunkable)]
    history: Vec<String>,
}

#[derive(Serialize, Deserialize, ParcodeObject, Debug, PartialEq)]
struct GameWorld {
    id: u64,
    name: String,
    #[parcode(chunkable)]
    settings: Settings,
    #[parcode(chunkable, compression = "lz4")]
    terrain: Vec<u8>,
    #[parcode(map)]
    players: HashMap<String, Player>,
    #[parcode(chunkable)]
    roster: Vec<Player>,
}

fn world() -> GameWorld {
    GameWorld {
        id: 1,
        name: "Overworld".into(),
        settings: Settings {
            difficulty: 2,
            history: vec!["created".into(), "saved".into()],
        },
        terrain: vec![7; 50_000],
        players: (0..100)
            .map(|i| {
                (
                    format!("Hero{i}"),
                    Player {
                        level: i,
                        inventory: vec![i; 3],
                    },
                )
            })
            .collect(),
        roster: (0..10)
            .map(|i| Player {
                level: i,
                inventory: vec![],
            })
            .collect(),
    }
}

fn run() -> parcode::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("world.par");
    let world = world();
    Parcode::save(&path, &world)?;
    Parcode::builder()
        .compression(true)
        .save(dir.path().join("packed.par"), &world)?;

    let reader = Parcode::open(&path)?;
    let mirror = reader.root::<GameWorld>()?;
    assert_eq!(mirror.id, 1);
    assert_eq!(mirror.settings.difficulty, 2);
    assert_eq!(mirror.settings.history.load()?, world.settings.history);
    if let Some(hero) = mirror.players.get_lazy(&"Hero42".to_string())? {
        assert_eq!(hero.level, 42);
        assert_eq!(hero.inventory.load()?, vec![42; 3]);
    }
    for player in mirror.roster.iter_lazy()? {
        let player = player?;
        assert!(player.inventory.load()?.is_empty());
    }
    let mut buffer = Vec::new();
    Parcode::write(&mut buffer, &world)?;
    let loaded: GameWorld = Parcode::load_bytes(buffer)?;
    assert_eq!(loaded, world);
    let report = Parcode::inspect(&path)?;
    assert!(report.to_string().contains("PARCODE INSPECTOR REPORT"));
    Ok(())
}

#[test]
fn a_project_written_for_parcode_compiles_and_runs_unchanged() {
    run().unwrap();
}

#[test]
fn errors_match_as_the_reference_names_them() {
    match Parcode::load_bytes::<GameWorld>(vec![0u8; 64]) {
        Err(ParcodeError::Format(message)) => assert!(message.contains("Magic")),
        other => panic!("{other:?}"),
    }
    let error: ParcodeError = ParcodeError::Serialization("by hand".to_string());
    assert_eq!(error.to_string(), "Serialization Error: by hand");
}
