//! `outfile::remove_live` clears every temporary of the process: alone in its own test binary,
//! since it would remove the temporaries of tests running beside it.

use bagscope_bag::outfile::{create_temp, create_temp_dir, live_temporaries, remove_live};

#[test]
fn remove_live_removes_unfinished_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let stage = dir.path().join(".stage.tmp");
    // A stage left by a killed run, with a file in it: replaced by an empty one.
    std::fs::create_dir(&stage).unwrap();
    std::fs::write(stage.join("old.png"), b"x").unwrap();
    create_temp_dir(&stage).unwrap();
    assert!(std::fs::read_dir(&stage).unwrap().next().is_none());
    std::fs::write(stage.join("a.png"), b"x").unwrap();
    let f = dir.path().join("t.parquet.tmp");
    drop(create_temp(&f).unwrap());
    assert_eq!(live_temporaries().len(), 2);
    remove_live();
    assert!(!stage.exists() && !f.exists());
    assert!(live_temporaries().is_empty());
}
